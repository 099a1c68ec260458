// A batch kept past its poll_batch: it could then be ended (or leaked) where nothing ends it,
// holding the provider's CQ lock. Its lifetime is the closure's own, so it cannot leave.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let mut kept = None;
    cq.poll_batch(|batch| kept = Some(batch))?;
    drop(kept);
    Ok(())
}
