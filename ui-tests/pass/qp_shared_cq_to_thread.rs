// Neighbour of qp_on_single_threaded_cq_to_thread: a QP on Shared CQs moves to another thread;
// a QP on a SINGLE_THREADED CQ stays on its thread.
use typed_verbs::{Context, CqEx, Pd, Qp, Rc, SingleThreaded, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    std::thread::scope(|s| s.spawn(move || qp.destroy()).join().unwrap())?;
    let local = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(4).build()?;
    let qp = Qp::<Rc>::builder(&pd, &local, &local).build()?;
    qp.destroy()?;
    Ok(())
}
