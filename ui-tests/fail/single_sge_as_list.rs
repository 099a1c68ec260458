// One SGE given where a scatter/gather list is taken.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let sge = mr.sge(0..64).unwrap();
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    qp.post_recv(1, &sge)?;
    Ok(())
}
