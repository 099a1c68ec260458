// A QP on Shared CQs may be moved to and shared with other threads, and its user context with
// it: an `Rc` context does not compile. Neighbour: single_threaded_qp_non_send_context.
use std::rc::Rc as StdRc;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).context(StdRc::new(5)).build()?;
    drop(qp);
    Ok(())
}
