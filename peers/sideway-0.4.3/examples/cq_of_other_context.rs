// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;

fn main() {
    report((|| -> Res<_> {
        let (ctx1, pd) = open()?;
        let (ctx2, _) = open()?;
        let _own = GenericCompletionQueue::from(ctx1.create_cq_builder().setup_cqe(8).build()?);
        let cq = GenericCompletionQueue::from(ctx2.create_cq_builder().setup_cqe(8).build()?);
        let _qp = rc_qp(&pd, &cq, 1)?;
        Ok(("silent", "the QP was created".into()))
    })());
}
