// A send with 2 SGEs on a QP created with max_send_sge 1.
use peer_sideway::*;
use rdma_mummy_sys::ibv_sge;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{
    PostSendGuard, QueuePair, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, mut b) = pair(&ctx, &pd, &cq, 1)?;
        let mut buf = vec![0u8; 64];
        // Safety: buf outlives the registration and the requests.
        let mr = unsafe {
            pd.reg_mr(
                buf.as_mut_ptr() as usize,
                buf.len(),
                AccessFlags::LocalWrite,
            )?
        };
        let base = buf.as_mut_ptr() as u64;
        // The same send with 1 SGE is posted and completes.
        let mut guard = b.start_post_recv();
        unsafe { guard.construct_wr(1).setup_sge(mr.lkey(), base + 32, 32) };
        guard.post().setup("post_recv")?;
        let mut guard = a.start_post_send();
        let wr = guard
            .construct_wr(2, WorkRequestFlags::Signaled)
            .setup_send();
        unsafe { wr.setup_sge(mr.lkey(), base, 8) };
        guard.post().setup("post_send of 1 SGE")?;
        let done = wait(&cq, 2).setup("the completions of the send of 1 SGE")?;
        if done.iter().any(|&(_, status)| status != 0) {
            return Err(Failure::Setup(format!("the send of 1 SGE: {done:?}")));
        }
        let sges = [
            ibv_sge {
                addr: base,
                length: 8,
                lkey: mr.lkey(),
            },
            ibv_sge {
                addr: base + 8,
                length: 8,
                lkey: mr.lkey(),
            },
        ];
        let mut guard = a.start_post_send();
        let wr = guard
            .construct_wr(3, WorkRequestFlags::Signaled)
            .setup_send();
        unsafe { wr.setup_sge_list(&sges) };
        guard
            .post()
            .misuse("post_send of 2 SGEs (max_send_sge 1; the send of 1 SGE completed)")?;
        Ok(("silent", "the post of 2 SGEs returned Ok".into()))
    })());
}
