// A QP whose CQs are SINGLE_THREADED stays on its thread (it is neither Send nor Sync), so its
// user context need not be Send + Sync either: an `Rc` works, as for the CQ's own context.
// Neighbour of shared_qp_non_send_context.
use std::rc::Rc as StdRc;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(8).context(StdRc::new("cq")).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).context(StdRc::new(5)).build()?;
    assert_eq!(**qp.user_context(), 5);
    Ok(())
}
