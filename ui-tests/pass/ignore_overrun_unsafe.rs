// Neighbour of ignore_overrun_without_unsafe: IGNORE_OVERRUN asked for inside `unsafe`.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    // SAFETY: this program posts no work requests, so the CQ cannot overrun.
    let builder = unsafe { CqEx::<Standard>::builder(&ctx).cqe(4).ignore_overrun() };
    let cq = builder.build()?;
    assert!(cq.cqe() >= 4);
    Ok(())
}
