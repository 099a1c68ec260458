// Reading imm_data from an extended CQ created without IBV_WC_EX_WITH_IMM.
use std::time::{Duration, Instant};

use peer_sideway::*;
use sideway::ibverbs::completion::{
    CreateCompletionQueueWorkCompletionFlags as Wc, GenericCompletionQueue,
};
use sideway::ibverbs::queue_pair::{PostSendGuard, QueuePair, WorkRequestFlags};

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = ctx
            .create_cq_builder()
            .setup_cqe(8)
            .setup_wc_flags(Wc::ByteLength)
            .build_ex()?;
        let (mut a, mut b) = pair(&ctx, &pd, &GenericCompletionQueue::from(cq.clone()), 1)?;
        let mut guard = b.start_post_recv();
        guard.construct_wr(1); // a zero-length receive
        guard.post().setup("post_recv")?;
        let mut guard = a.start_post_send();
        guard
            .construct_wr(2, WorkRequestFlags::Signaled)
            .setup_send_imm(0xbeef);
        guard.post().setup("post_send")?;
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(5) {
            let Ok(poller) = cq.start_poll() else {
                continue;
            };
            for wc in poller {
                if wc.status() != 0 {
                    let e = format!("completion {} status {}", wc.wr_id(), wc.status());
                    return Err(Failure::Setup(e));
                }
                if wc.wr_id() == 1 {
                    return Ok((
                        "silent",
                        format!("imm_data() returned {:#x} (0xbeef was sent)", wc.imm_data()),
                    ));
                }
            }
        }
        Err(Failure::Setup("no receive completion within 5 s".into()))
    })());
}
