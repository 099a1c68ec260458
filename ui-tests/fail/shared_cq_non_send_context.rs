// A Shared CQ (for several threads) with a user context that is not Send + Sync.
use std::cell::RefCell;
use std::rc::Rc;
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let _cq = CqEx::<Standard>::builder(&ctx).context(Rc::new(RefCell::new(0))).build()?;
    Ok(())
}
