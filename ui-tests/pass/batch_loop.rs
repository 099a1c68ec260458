// Neighbour of completion_after_advance, completion_after_batch and two_batches_one_cq: each
// completion used within its step, inside poll_batch's closure; a second batch after the first
// ended.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    for id in 0..3 {
        software::inject(&cq, InjectedCompletion::success(id, WcOpcode::SEND))?;
    }
    let mut seen = Vec::new();
    cq.poll_batch(|batch| -> typed_verbs::Result<()> {
        let mut next = Some(batch);
        while let Some(batch) = next {
            seen.push(batch.completion().wr_id());
            next = batch.advance()?;
        }
        Ok(())
    })?
    .expect("a first batch")?; // the batch has ended and the borrow of `cq` with it
    assert_eq!(seen, [0, 1, 2]);
    assert_eq!(cq.poll_batch(|batch| batch.completion().wr_id())?, None);
    Ok(())
}
