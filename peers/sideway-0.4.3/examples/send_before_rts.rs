// A send posted on an RC QP that is only in INIT.
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{PostSendGuard, QueuePair, WorkRequestFlags};

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let mut qp = rc_qp(&pd, &cq, 1)?;
        to_init(&mut qp)?;
        let mut guard = qp.start_post_send();
        guard
            .construct_wr(1, WorkRequestFlags::Signaled)
            .setup_send(); // a zero-length send
        guard.post().misuse("post_send on the QP in INIT")?;
        std::thread::sleep(std::time::Duration::from_millis(100));
        let polled = cq
            .start_poll()
            .map(|p| p.map(|wc| wc.status()).collect::<Vec<_>>())
            .unwrap_or_default();
        Ok((
            "silent",
            format!("the post returned Ok; completion statuses polled: {polled:?}"),
        ))
    })());
}
