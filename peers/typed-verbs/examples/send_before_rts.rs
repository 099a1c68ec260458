// Posting a send on a QP that is only in INIT.
mod common;
use typed_verbs::{Access, Mr, Qp, Rc, SendWr};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .build()?
        .to_init(common::INIT)?;
    let sgl = [mr.sge(0..64).unwrap()];
    qp.post_send(&SendWr::send(1, &sgl))?;
    Ok(())
}
