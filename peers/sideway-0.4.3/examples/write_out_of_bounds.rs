// An RDMA write of 8 bytes at offset 4092 of a 4096-byte remote region (4 bytes past its end).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{
    PostSendGuard, QueuePair, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

fn main() {
    report((|| -> Res<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, _b) = pair(&ctx, &pd, &cq, 1)?;
        let (mut src, mut target) = (vec![0u8; 4096], vec![0u8; 4096]);
        let access = AccessFlags::LocalWrite | AccessFlags::RemoteWrite;
        // Safety: both buffers outlive their registrations and the request.
        let src_mr = unsafe { pd.reg_mr(src.as_mut_ptr() as usize, src.len(), access)? };
        let target_mr = unsafe { pd.reg_mr(target.as_mut_ptr() as usize, target.len(), access)? };
        let mut guard = a.start_post_send();
        let wr = guard
            .construct_wr(1, WorkRequestFlags::Signaled)
            .setup_write(target_mr.rkey(), target.as_mut_ptr() as u64 + 4092);
        unsafe { wr.setup_sge(src_mr.lkey(), src.as_mut_ptr() as u64, 8) };
        guard.post()?;
        loop {
            let Ok(poller) = cq.start_poll() else {
                continue;
            };
            if let Some(wc) = poller.into_iter().next() {
                return match wc.status() {
                    0 => Ok(("silent", "the write completed successfully".into())),
                    s => {
                        Err(format!("the write's completion has status {s} (ibv_wc_status)").into())
                    }
                };
            }
        }
    })());
}
