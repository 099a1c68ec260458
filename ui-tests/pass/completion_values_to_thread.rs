// Neighbour of batch_to_thread and completion_to_thread: the completion's fields copied out
// inside the batch, and those values handed to another thread.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV).byte_len(8))?;
    let (wr_id, len) = cq
        .poll_batch(|batch| {
            let wc = batch.completion().result().expect("success");
            (wc.wr_id(), wc.byte_len())
        })?
        .expect("a completion");
    let seen = std::thread::scope(|s| s.spawn(move || (wr_id, len)).join().unwrap());
    assert_eq!(seen, (7, 8));
    Ok(())
}
