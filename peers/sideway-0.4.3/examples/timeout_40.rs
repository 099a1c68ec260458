// An RC QP brought to RTS with timeout 40 (the field is 5 bits: 0..=31).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::QueuePair;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, mut b) = (rc_qp(&pd, &cq, 1)?, rc_qp(&pd, &cq, 1)?);
        // b makes the same steps with timeout 14, and reaches RTS.
        to_init(&mut b)?;
        to_rtr(&ctx, &mut b, a.qp_number())?;
        to_rts(&mut b, 14, 7).setup("RTS with timeout 14")?;
        to_init(&mut a)?;
        to_rtr(&ctx, &mut a, b.qp_number())?;
        to_rts(&mut a, 40, 7)
            .misuse("RTS with timeout 40 (with timeout 14, the other QP reached RTS)")?;
        Ok(("silent", "the QP reached RTS with timeout 40".into()))
    })());
}
