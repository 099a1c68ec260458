// Neighbour of shared_cq_non_send_context: a SINGLE_THREADED CQ (which, with its QPs, never
// leaves its thread) holds a user context that is neither Send nor Sync, an Rc<RefCell<..>>.
use std::cell::RefCell;
use std::rc::Rc;
use typed_verbs::{software, Context, CqEx, InjectedCompletion, SingleThreaded, Standard, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let log = Rc::new(RefCell::new(Vec::new()));
    let mut cq = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(8).context(Rc::clone(&log)).build()?;
    software::inject(&cq, InjectedCompletion::success(7, WcOpcode::RECV).byte_len(8))?;
    let (shared, mut poller) = cq.split();
    poller.poll_batch(|batch| shared.user_context().borrow_mut().push(batch.completion().wr_id()))?;
    drop(poller); // the right to poll, given back
    drop(cq);
    assert_eq!(*log.borrow(), [7]);
    assert_eq!(Rc::strong_count(&log), 1, "the CQ's clone was dropped with it");
    Ok(())
}
