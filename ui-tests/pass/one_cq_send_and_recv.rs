// One CQ as both send and receive CQ, plain and extended; and a plain + an extended CQ mixed.
use typed_verbs::{Context, Cq, CqEx, Pd, Qp, Rc, Standard, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let plain = Cq::builder(&ctx).cqe(8).build()?;
    let ext = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let a = Qp::<Rc>::builder(&pd, &plain, &plain).build()?;
    let b = Qp::<Ud>::builder(&pd, &ext, &ext).build()?;
    let c = Qp::<Rc>::builder(&pd, &plain, &ext).build()?;
    assert!(a.qp_num() != b.qp_num() && b.qp_num() != c.qp_num());
    Ok(())
}
