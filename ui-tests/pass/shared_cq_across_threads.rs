// Neighbour of single_threaded_cq_across_threads: a Shared CQ used from another thread.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    std::thread::scope(|s| {
        s.spawn(|| software::inject(&cq, InjectedCompletion::success(9, WcOpcode::SEND))).join().unwrap()
    })?;
    assert_eq!(cq.poll_batch(|batch| batch.completion().wr_id())?, Some(9));
    Ok(())
}
