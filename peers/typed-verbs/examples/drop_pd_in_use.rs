// Deallocating a PD that a QP still uses.
use typed_verbs::{Context, Cq, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let _ = pd.destroy();
    drop(qp);
    Ok(())
}
