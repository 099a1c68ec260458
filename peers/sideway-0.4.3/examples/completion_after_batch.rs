// A completion kept past the next ibv_next_poll and past the batch's ibv_end_poll.
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{PostSendGuard, QueuePair, WorkRequestFlags};

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        // The sends complete on a CQ of their own, the receives on the extended CQ under test.
        let sends = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let cq = ctx.create_cq_builder().setup_cqe(8).build_ex()?;
        let recvs = GenericCompletionQueue::from(cq.clone());
        let (mut a, mut b) = pair_on(&ctx, &pd, &sends, &recvs, 1)?;
        let mut guard = b.start_post_recv();
        guard.construct_wr(1);
        guard.construct_wr(2);
        guard.post().setup("post_recv")?;
        let mut guard = a.start_post_send();
        guard
            .construct_wr(3, WorkRequestFlags::Signaled)
            .setup_send();
        guard
            .construct_wr(4, WorkRequestFlags::Signaled)
            .setup_send();
        guard.post().setup("post_send")?;
        // Both sends acknowledged: rxe completes a receive before it sends the ACK, so both
        // receive completions are in the CQ.
        let sent = wait(&sends, 2).setup("the sends' completions")?;
        if sent.iter().any(|&(_, status)| status != 0) {
            return Err(Failure::Setup(format!("the sends' completions: {sent:?}")));
        }
        let mut poller = cq.start_poll().setup("start_poll")?;
        let first = poller.next().ok_or("next_poll: no completion")?;
        let own = first.wr_id();
        let second = poller.next().ok_or("next_poll: one completion only")?;
        let (after_next, next_id) = (first.wr_id(), second.wr_id());
        drop(poller); // ibv_end_poll
        let after_end = first.wr_id();
        Ok(("silent", format!("the first completion's wr_id() read {own}, then {after_next} after next_poll (the second's is {next_id}), {after_end} after end_poll")))
    })());
}
