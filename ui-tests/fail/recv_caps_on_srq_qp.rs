// Setting receive caps on a QP that takes its receives from an SRQ (they would be ignored).
use typed_verbs::{Context, Cq, Pd, Qp, Rc, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let _qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_recv_wr(16).build()?;
    Ok(())
}
