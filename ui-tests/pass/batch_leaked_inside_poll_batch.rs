// A batch lives only inside poll_batch: whatever the closure does with it (reads, advances,
// leaks it with mem::forget), the batch is ended before poll_batch returns, so the next batch
// opens and the CQ's provider lock is never left held.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    for wr_id in [1, 2] {
        software::inject(&cq, InjectedCompletion::success(wr_id, WcOpcode::RECV))?;
    }
    let first = cq.poll_batch(|batch| {
        let wr_id = batch.completion().wr_id();
        std::mem::forget(batch);
        wr_id
    })?;
    assert_eq!(first, Some(1));
    let second = cq.poll_batch(|batch| batch.completion().wr_id())?;
    assert_eq!(second, Some(2));
    assert_eq!(cq.poll_batch(|_| ())?, None);
    Ok(())
}
