// A receive buffer dropped while the receive is posted (the device may still write it).
use peer_sideway::*;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::queue_pair::QueuePair;
use sideway::ibverbs::queue_pair::SetScatterGatherEntry;
use sideway::ibverbs::AccessFlags;

fn main() -> Res<()> {
    let (ctx, pd) = open()?;
    let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(8).build()?);
    let (_a, mut b) = pair(&ctx, &pd, &cq, 1)?;
    let mut buf = vec![0u8; 4096];
    let mr = pd.reg_mr(
        buf.as_mut_ptr() as usize,
        buf.len(),
        AccessFlags::LocalWrite,
    )?;
    let mut guard = b.start_post_recv();
    guard
        .construct_wr(1)
        .setup_sge(mr.lkey(), buf.as_mut_ptr() as u64, 4096);
    guard.post()?;
    drop(buf);
    Ok(())
}
