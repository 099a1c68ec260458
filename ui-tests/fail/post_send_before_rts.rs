// Posting a send on a QP that is only in INIT.
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, Rc, SendWr};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = qp.to_init(init)?;
    let sgl = [mr.sge(0..64).unwrap()];
    qp.post_send(&SendWr::send(1, &sgl))?;
    Ok(())
}
