// Destroying an SRQ that a QP still uses ("ibv_destroy_srq() fails if any queue pair is still
// associated with this SRQ").
use typed_verbs::{Context, Cq, Pd, Qp, Rc, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let _ = srq.destroy();
    drop(qp);
    Ok(())
}
