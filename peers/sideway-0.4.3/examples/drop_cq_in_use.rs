// Dropping a CQ while a QP uses it.
use std::sync::Arc;

use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = ctx.create_cq_builder().setup_cqe(8).build()?;
        let mut qp = rc_qp(&pd, &GenericCompletionQueue::from(cq.clone()), 1)?;
        let held = Arc::strong_count(&cq) - 1;
        drop(cq);
        to_init(&mut qp)?; // the QP is still usable
        Ok((
            "kept-alive",
            format!("the QP holds {held} references to the CQ, destroyed after the QP"),
        ))
    })());
}
