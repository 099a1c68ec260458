// A completion kept past the next ibv_next_poll and past the batch's ibv_end_poll.
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{PostSendGuard, QueuePair, WorkRequestFlags};

fn main() {
    report((|| -> Res<_> {
        let (ctx, pd) = open()?;
        let cq = ctx.create_cq_builder().setup_cqe(8).build_ex()?;
        let (mut a, mut b) = pair(&ctx, &pd, &GenericCompletionQueue::from(cq.clone()), 1)?;
        let mut guard = b.start_post_recv();
        guard.construct_wr(1);
        guard.construct_wr(2);
        guard.post()?;
        let mut guard = a.start_post_send();
        guard
            .construct_wr(3, WorkRequestFlags::Signaled)
            .setup_send();
        guard
            .construct_wr(4, WorkRequestFlags::Signaled)
            .setup_send();
        guard.post()?;
        std::thread::sleep(std::time::Duration::from_millis(200)); // all four complete
        let mut poller = cq.start_poll()?;
        let first = poller.next().ok_or("no completion")?;
        let own = first.wr_id();
        let second = poller.next().ok_or("one completion only")?;
        let (after_next, next_id) = (first.wr_id(), second.wr_id());
        drop(poller); // ibv_end_poll
        let after_end = first.wr_id();
        Ok(("silent", format!("the first completion's wr_id() read {own}, then {after_next} after next_poll (the second's is {next_id}), {after_end} after end_poll")))
    })());
}
