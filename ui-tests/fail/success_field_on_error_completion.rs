// Reading byte_len from a failed completion: only wr_id, status and vendor_err are valid there.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Err(failed) = batch.completion().result() {
            println!("{:?} {}", failed.status(), failed.byte_len());
        }
    })?;
    Ok(())
}
