// Neighbour of completion_after_advance, completion_after_batch and two_batches_one_cq: each
// completion used within its step; a second batch after the first ended.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    for id in 0..3 {
        software::inject(&cq, InjectedCompletion::success(id, WcOpcode::SEND))?;
    }
    let mut seen = Vec::new();
    {
        let mut next = cq.start_poll()?;
        while let Some(batch) = next {
            seen.push(batch.completion().wr_id());
            next = batch.advance()?;
        }
    } // `next` is None here; the block ends its borrow of `cq`
    assert_eq!(seen, [0, 1, 2]);
    assert!(cq.start_poll()?.is_none());
    Ok(())
}
