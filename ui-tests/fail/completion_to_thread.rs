// A completion read on another thread while its batch is open on this one.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        let wc = batch.completion();
        std::thread::scope(|s| {
            s.spawn(move || wc.wr_id());
        });
    })?;
    Ok(())
}
