// A UC QP associated with an SRQ: ibv_create_qp fails for any type but RC and UD.
use typed_verbs::{Context, Cq, Pd, Qp, Srq, Uc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let _qp = Qp::<Uc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    Ok(())
}
