// A UC QP associated with an SRQ: ibv_create_qp fails for any type but RC and UD.
mod common;
use typed_verbs::{Qp, Srq, Uc};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let _qp = Qp::<Uc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    Ok(())
}
