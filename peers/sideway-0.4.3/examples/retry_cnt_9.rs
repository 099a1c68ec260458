// An RC QP brought to RTS with retry_cnt 9 (the field is 3 bits: 0..=7).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::QueuePair;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, b) = (rc_qp(&pd, &cq, 1)?, rc_qp(&pd, &cq, 1)?);
        to_init(&mut a)?;
        to_rtr(&ctx, &mut a, b.qp_number())?;
        to_rts(&mut a, 14, 9).misuse("RTS with retry_cnt 9")?;
        Ok(("silent", "the QP reached RTS with retry_cnt 9".into()))
    })());
}
