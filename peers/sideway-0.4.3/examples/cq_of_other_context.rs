// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx1, pd) = open()?;
        let (ctx2, _) = open()?;
        let own = GenericCompletionQueue::from(ctx1.create_cq_builder().setup_cqe(8).build()?);
        let cq = GenericCompletionQueue::from(ctx2.create_cq_builder().setup_cqe(8).build()?);
        // The same QP with its own context's CQ is created.
        let _control = rc_qp(&pd, &own, 1)?;
        let _qp = pd
            .create_qp_builder()
            .setup_max_send_wr(8)
            .setup_max_recv_wr(8)
            .setup_max_send_sge(1)
            .setup_max_recv_sge(1)
            .setup_send_cq(cq.clone())
            .setup_recv_cq(cq.clone())
            .build()
            .misuse(
                "create_qp with the other context's CQ (with its own context's, it was created)",
            )?;
        Ok(("silent", "the QP was created".into()))
    })());
}
