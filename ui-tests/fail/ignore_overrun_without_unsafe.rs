// Asking for IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN without `unsafe` ("CQEs might be lost").
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let _cq = CqEx::<Standard>::builder(&ctx).cqe(4).ignore_overrun().build()?;
    Ok(())
}
