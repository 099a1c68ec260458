// A polling batch handed to another thread (the batch stands for ibv_start_poll's CQ lock, held
// by the polling thread until ibv_end_poll).
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        std::thread::scope(|s| {
            s.spawn(move || drop(batch));
        });
    })?;
    Ok(())
}
