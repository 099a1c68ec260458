// A fixed-size list of two SGEs posted as a receive on a QP whose type promises one receive SGE
// (the default).
mod common;
use typed_verbs::{Access, Mr, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_sge(2).build()?;
    let qp = qp.to_init(common::INIT)?;
    let sgl = [mr.sge(0..32).unwrap(), mr.sge(32..64).unwrap()];
    qp.post_recv(1, &sgl)?;
    Ok(())
}
