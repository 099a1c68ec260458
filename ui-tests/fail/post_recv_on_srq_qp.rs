// Posting a receive on a QP whose receives come from an SRQ.
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, Rc, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(4).build()?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = qp.to_init(init)?;
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    Ok(())
}
