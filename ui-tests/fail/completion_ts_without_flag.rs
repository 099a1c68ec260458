// Reading completion_ts from a CQ with the standard flags only (no COMPLETION_TIMESTAMP).
mod common;
use typed_verbs::{CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let mut cq = CqEx::<Standard>::builder(common::sw0()).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Ok(wc) = batch.completion().result() {
            let _ = wc.completion_ts();
        }
    })?;
    Ok(())
}
