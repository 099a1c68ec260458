//! Programs of the comparison (scripts/peers.sh, docs/peers.md): examples/first.rs and one
//! example per misuse, with the set-up they share. The run-time ones print one `PEER-VERDICT` line.
use std::error::Error;
use std::sync::Arc;

use sideway::ibverbs::address::AddressHandleAttribute;
use sideway::ibverbs::completion::GenericCompletionQueue;
use sideway::ibverbs::device::DeviceList;
use sideway::ibverbs::device_context::DeviceContext;
use sideway::ibverbs::protection_domain::ProtectionDomain;
use sideway::ibverbs::queue_pair::{BasicQueuePair, QueuePair, QueuePairAttribute, QueuePairState};
use sideway::ibverbs::AccessFlags;

pub type Res<T> = Result<T, Box<dyn Error>>;

/// The first RDMA device, and a PD on it.
pub fn open() -> Res<(Arc<DeviceContext>, Arc<ProtectionDomain>)> {
    let devices = DeviceList::new()?;
    let ctx = devices.iter().next().ok_or("no RDMA device")?.open()?;
    let pd = ctx.alloc_pd()?;
    Ok((ctx, pd))
}

/// An RC QP on `cq` with room for 8 requests of `max_sge` SGEs each way.
pub fn rc_qp(
    pd: &Arc<ProtectionDomain>,
    cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<BasicQueuePair> {
    let mut builder = pd.create_qp_builder();
    builder
        .setup_max_send_wr(8)
        .setup_max_recv_wr(8)
        .setup_max_send_sge(max_sge)
        .setup_max_recv_sge(max_sge);
    Ok(builder
        .setup_send_cq(cq.clone())
        .setup_recv_cq(cq.clone())
        .build()?)
}

/// RESET -> INIT, with remote write allowed.
pub fn to_init(qp: &mut impl QueuePair) -> Res<()> {
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::Init)
        .setup_pkey_index(0)
        .setup_port(1);
    attr.setup_access_flags(AccessFlags::LocalWrite | AccessFlags::RemoteWrite);
    Ok(qp.modify(&attr)?)
}

/// INIT -> RTR -> RTS towards QP `dest` on the same port (GID index 1: rxe's RoCE v2 GID), with
/// the RTS `timeout` and `retry_cnt` given.
pub fn to_rts(
    ctx: &DeviceContext,
    qp: &mut impl QueuePair,
    dest: u32,
    timeout: u8,
    retry_cnt: u8,
) -> Res<()> {
    let (port, gid) = (ctx.query_port(1)?, ctx.query_gid_table()?[1].gid());
    let mut av = AddressHandleAttribute::new();
    av.setup_dest_lid(port.lid())
        .setup_port(1)
        .setup_grh_src_gid_index(1)
        .setup_grh_dest_gid(&gid);
    av.setup_grh_hop_limit(64);
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::ReadyToReceive)
        .setup_path_mtu(port.active_mtu())
        .setup_dest_qp_num(dest);
    attr.setup_rq_psn(0)
        .setup_max_dest_read_atomic(1)
        .setup_min_rnr_timer(12)
        .setup_address_vector(&av);
    qp.modify(&attr)?;
    let mut attr = QueuePairAttribute::new();
    attr.setup_state(QueuePairState::ReadyToSend)
        .setup_sq_psn(0)
        .setup_timeout(timeout);
    attr.setup_retry_cnt(retry_cnt)
        .setup_rnr_retry(7)
        .setup_max_read_atomic(1);
    Ok(qp.modify(&attr)?)
}

/// Two RC QPs on `cq`, connected to each other.
pub fn pair(
    ctx: &DeviceContext,
    pd: &Arc<ProtectionDomain>,
    cq: &GenericCompletionQueue,
    max_sge: u32,
) -> Res<(BasicQueuePair, BasicQueuePair)> {
    let (mut a, mut b) = (rc_qp(pd, cq, max_sge)?, rc_qp(pd, cq, max_sge)?);
    let (qa, qb) = (a.qp_number(), b.qp_number());
    to_init(&mut a)?;
    to_init(&mut b)?;
    to_rts(ctx, &mut a, qb, 14, 7)?;
    to_rts(ctx, &mut b, qa, 14, 7)?;
    Ok((a, b))
}

/// Prints the program's verdict: `runtime-error` with the error, or, when it ran through, the
/// verdict and what happened that it returned.
pub fn report(result: Res<(&str, String)>) {
    match result {
        Ok((verdict, what)) => println!("PEER-VERDICT {verdict} {what}"),
        Err(e) => {
            // The error with its sources (a wrapper's message alone may hide the errno).
            let mut text = e.to_string();
            let mut source = e.source();
            while let Some(s) = source {
                text += &format!(": {s}");
                source = s.source();
            }
            println!("PEER-VERDICT runtime-error {text}")
        }
    }
}
