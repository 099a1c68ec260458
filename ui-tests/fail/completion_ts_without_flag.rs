// Reading completion_ts from a CQ with the standard flags only (no COMPLETION_TIMESTAMP).
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Ok(wc) = batch.completion().result() {
            let _ = wc.completion_ts();
        }
    })?;
    Ok(())
}
