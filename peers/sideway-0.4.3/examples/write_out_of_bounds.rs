// An RDMA write of 8 bytes at offset 4092 of a 4096-byte remote region (4 bytes past its end),
// after the same write of the region's last 8 bytes (at offset 4088), which must land.
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::{
    PostSendGuard, QueuePair, SetScatterGatherEntry, WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx, pd) = open()?;
        let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
        let (mut a, _b) = pair(&ctx, &pd, &cq, 1)?;
        let (mut src, mut target) = (vec![7u8; 4096], vec![0u8; 4096]);
        let access = AccessFlags::LocalWrite | AccessFlags::RemoteWrite;
        // Safety: both buffers outlive their registrations and the requests.
        let src_mr = unsafe { pd.reg_mr(src.as_mut_ptr() as usize, src.len(), access)? };
        let target_mr = unsafe { pd.reg_mr(target.as_mut_ptr() as usize, target.len(), access)? };
        let mut write = |wr_id, offset: u64| -> Res<u32> {
            let mut guard = a.start_post_send();
            let wr = guard
                .construct_wr(wr_id, WorkRequestFlags::Signaled)
                .setup_write(target_mr.rkey(), target.as_ptr() as u64 + offset);
            unsafe { wr.setup_sge(src_mr.lkey(), src.as_ptr() as u64, 8) };
            guard.post()?;
            Ok(wait(&cq, 1)?[0].1)
        };
        match write(1, 4088).setup("the write at 4088")? {
            0 if target[4088..] == [7; 8] => {}
            0 => {
                return Err(Failure::Setup(
                    "the write at 4088 completed, but did not land".into(),
                ))
            }
            s => {
                return Err(Failure::Setup(format!(
                    "the write at 4088: completion status {s}"
                )))
            }
        }
        match write(2, 4092).setup("the write at 4092")? {
            0 => Ok(("silent", "the write at 4092 completed successfully".into())),
            s => Err(Failure::Misuse(format!(
                "RDMA write of 8 bytes at 4092 (the same write at 4088, the last 8 bytes, landed): completion status {s}{}",
                if s == 10 { " (IBV_WC_REM_ACCESS_ERR)" } else { "" }
            ))),
        }
    })());
}
