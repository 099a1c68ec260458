// An RC QP brought to RTS with timeout 40 (the field is 5 bits: 0..=31).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::QueuePair;

fn main() {
    report((|| -> Res<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, b) = (rc_qp(&pd, &cq, 1)?, rc_qp(&pd, &cq, 1)?);
        to_init(&mut a)?;
        to_rts(&ctx, &mut a, b.qp_number(), 40, 7)?;
        Ok(("silent", "the QP reached RTS with timeout 40".into()))
    })());
}
