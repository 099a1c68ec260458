// The README's first program with sideway 0.4.3: an RC pair in loopback, a 4 KiB send and
// receive, and an RDMA write of 5 bytes read back, on the first RDMA device.
use sideway::ibverbs::address::AddressHandleAttribute;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::device::DeviceList;
use sideway::ibverbs::queue_pair::{
    PostSendGuard, QueuePair, QueuePairAttribute, QueuePairState, SetScatterGatherEntry,
    WorkRequestFlags,
};
use sideway::ibverbs::AccessFlags;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let devices = DeviceList::new()?;
    let ctx = devices.iter().next().ok_or("no RDMA device")?.open()?;
    let pd = ctx.alloc_pd()?;
    let cq = GenericCompletionQueue::from(ctx.create_cq_builder().setup_cqe(16).build()?);
    let qp = || {
        pd.create_qp_builder()
            .setup_max_send_wr(4)
            .setup_send_cq(cq.clone())
            .setup_recv_cq(cq.clone())
            .build()
    };
    let (mut a, mut b) = (qp()?, qp()?);
    let (port, gid) = (ctx.query_port(1)?, ctx.query_gid_table()?[1].gid());
    let access = AccessFlags::LocalWrite | AccessFlags::RemoteWrite;
    // RESET -> INIT -> RTR -> RTS, each QP connected to the other (exchanged out of band).
    let (qpn_a, qpn_b) = (a.qp_number(), b.qp_number());
    for (qp, dest) in [(&mut a, qpn_b), (&mut b, qpn_a)] {
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::Init)
            .setup_pkey_index(0)
            .setup_port(1)
            .setup_access_flags(access);
        qp.modify(&attr)?;
        let mut av = AddressHandleAttribute::new();
        av.setup_dest_lid(port.lid())
            .setup_port(1)
            .setup_grh_src_gid_index(1)
            .setup_grh_dest_gid(&gid)
            .setup_grh_hop_limit(64);
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToReceive)
            .setup_path_mtu(port.active_mtu())
            .setup_dest_qp_num(dest)
            .setup_rq_psn(0)
            .setup_max_dest_read_atomic(1)
            .setup_min_rnr_timer(12)
            .setup_address_vector(&av);
        qp.modify(&attr)?;
        let mut attr = QueuePairAttribute::new();
        attr.setup_state(QueuePairState::ReadyToSend)
            .setup_sq_psn(0)
            .setup_timeout(14)
            .setup_retry_cnt(7)
            .setup_rnr_retry(7)
            .setup_max_read_atomic(1);
        qp.modify(&attr)?;
    }
    // One buffer for the receive, the send and the write's source; the write's target.
    let (mut buf, mut target) = (vec![0u8; 3 << 12], vec![0u8; 4096]);
    // Safety: both buffers outlive their registrations and the work requests using them.
    let mr = unsafe { pd.reg_mr(buf.as_mut_ptr() as usize, buf.len(), access)? };
    let target_mr = unsafe { pd.reg_mr(target.as_mut_ptr() as usize, target.len(), access)? };
    let base = buf.as_mut_ptr() as u64;
    let mut guard = b.start_post_recv();
    unsafe { guard.construct_wr(1).setup_sge(mr.lkey(), base, 4096) };
    guard.post()?;
    buf[4096..8192].fill(7);
    buf[8192..8192 + 5].copy_from_slice(b"hello");
    let mut guard = a.start_post_send();
    let send = guard
        .construct_wr(2, WorkRequestFlags::Signaled)
        .setup_send();
    unsafe { send.setup_sge(mr.lkey(), base + 4096, 4096) };
    let write = guard
        .construct_wr(3, WorkRequestFlags::Signaled)
        .setup_write(target_mr.rkey(), target.as_mut_ptr() as u64);
    unsafe { write.setup_sge(mr.lkey(), base + 8192, 5) };
    guard.post()?;
    let mut done = 0;
    while done < 3 {
        let Ok(poller) = cq.start_poll() else {
            continue;
        };
        for wc in poller {
            if wc.status() != 0 {
                return Err(format!("completion {}: status {}", wc.wr_id(), wc.status()).into());
            }
            done += 1;
        }
    }
    assert!(buf[..4096].iter().all(|&x| x == 7));
    assert_eq!(&target[..5], b"hello");
    println!("first: ok");
    Ok(())
}
