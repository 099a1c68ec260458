// One SRQ shared by an RC and a UD QP.
use typed_verbs::{Context, Cq, Pd, Qp, Rc, Srq, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(16).max_sge(2).build()?;
    let rc = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let ud = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    rc.destroy()?;
    ud.destroy()?;
    srq.destroy()?;
    Ok(())
}
