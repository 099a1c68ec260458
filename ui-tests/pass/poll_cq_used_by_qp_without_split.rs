// Neighbour of two_batches_one_cq: a CQ that QPs use is polled as it is, through `&self`, with
// no `split` (one batch at a time: the gate refuses a second, tests/typed/ownership.rs).
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Pd, Qp, Rc, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    software::inject(&cq, InjectedCompletion::success(7, WcOpcode::SEND))?;
    let polled = cq.poll_batch(|batch| batch.completion().wr_id())?;
    assert_eq!(polled, Some(7));
    assert_eq!(cq.poll_batch(|_| ())?, None);
    qp.destroy()?;
    cq.destroy()?;
    Ok(())
}
