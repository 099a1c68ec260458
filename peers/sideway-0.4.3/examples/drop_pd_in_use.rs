// Dropping a PD while a QP uses it.
use std::sync::Arc;

use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let mut qp = rc_qp(&pd, &cq, 1)?;
        let held = Arc::strong_count(&pd) - 1;
        drop(pd);
        to_init(&mut qp)?; // the QP is still usable
        Ok((
            "kept-alive",
            format!("the QP holds {held} reference to the PD, deallocated after the QP"),
        ))
    })());
}
