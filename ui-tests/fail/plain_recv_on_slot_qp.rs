// A plain receive on a QP in slot mode, whose receive CQ is a slot CQ.
use typed_verbs::{wc_flags, Access, AccessFlags, ConnectedInit, Context, Cq, CqEx, Mr, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let plain = Cq::builder(&ctx).cqe(8).build()?;
    let slots = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(8).slots().build()?;
    let qp = Qp::<Rc>::slot_builder(&pd, &plain, &slots).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = qp.to_init(init)?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    Ok(())
}
