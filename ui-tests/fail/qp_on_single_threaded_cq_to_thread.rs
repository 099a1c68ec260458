// Moving a QP whose CQ is SINGLE_THREADED to another thread (destroying it there would touch
// the CQ without a lock).
use typed_verbs::{Context, CqEx, Pd, Qp, Rc, SingleThreaded, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(4).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    std::thread::scope(|s| {
        s.spawn(move || drop(qp));
    });
    Ok(())
}
