// Reading a slot after posting it: the receive may be writing it, and the slot moved into the
// queue with the post.
use typed_verbs::{
    wc_flags, Access, AccessFlags, ConnectedInit, Context, CqEx, PageBuf, Pd, Qp, Rc, Slot,
};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = std::sync::Arc::new(Context::open("sw0")?);
    let pd = std::sync::Arc::new(Pd::new(&ctx)?);
    let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx)
        .cqe(8)
        .slots()
        .build()?;
    let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?;
    let init = ConnectedInit {
        port_num: 1,
        pkey_index: 0,
        access: AccessFlags::LOCAL_WRITE,
    };
    let qp = qp.to_init(init)?;
    let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?;
    let slot = slots.pop().unwrap();
    qp.post_recv_slot(slot)?;
    println!("{}", slot[0]);
    Ok(())
}
