// Destroying a CQ that a QP still uses ("ibv_destroy_cq() fails if any queue pair is still
// associated with this CQ").
use typed_verbs::{Context, CqEx, Pd, Qp, Rc, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let _ = cq.destroy();
    drop(qp);
    Ok(())
}
