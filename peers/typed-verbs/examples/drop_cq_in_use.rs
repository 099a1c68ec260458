// Dropping a CQ that a QP still uses.
use typed_verbs::{Context, Cq, Pd, Qp, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    drop(cq);
    let _ = qp.qp_num();
    Ok(())
}
