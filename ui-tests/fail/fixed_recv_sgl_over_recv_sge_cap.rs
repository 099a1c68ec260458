// A fixed-size list of two SGEs posted as a receive on a QP whose type promises one receive SGE
// (the default).
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_sge(2).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = qp.to_init(init)?;
    let sgl = [mr.sge(0..32).unwrap(), mr.sge(32..64).unwrap()];
    qp.post_recv(1, &sgl)?;
    Ok(())
}
