// Posting a receive on a QP still in RESET.
mod common;
use typed_verbs::{Access, Mr, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    Ok(())
}
