// Neighbour of the access-rights cases (recv_into_region_without_local_write,
// srq_recv_into_region_without_local_write, rdma_read_into_region_without_local_write,
// atomic_result_without_local_write, rdma_write_to_region_without_remote_write,
// rdma_read_from_region_without_remote_read, atomic_on_region_without_remote_atomic,
// remote_write_without_local_write, slot_region_with_remote_access,
// region_rights_from_access_flags, recv_in_generic_code_without_local_write,
// access_macro_unknown_flag): every work request posted with regions that have the
// rights it needs, on an RC pair of the software device, and each completes.
use std::sync::Arc;
use typed_verbs::prelude::*;
use typed_verbs::access::No;

/// Generic code over a region's rights: `LocalWriteAccess` lets it receive into the region.
fn recv_into<A: typed_verbs::access::LocalWriteAccess>(
    qp: &Qp<'_, Rc, OwnRq, Shared, (), Rts>,
    wr_id: u64,
    mr: &Mr<'_, PageBuf, A>,
    at: std::ops::Range<usize>,
) -> Result<()> {
    qp.post_recv(wr_id, &[mr.sge(at).unwrap()])
}

/// Regions kept in a struct, their rights named with `access!`.
struct Regions<'pd> {
    inbox: Mr<'pd, PageBuf, access!(LOCAL_WRITE)>,
    payload: Mr<'pd, PageBuf, access!(NONE)>,
    table: Mr<'pd, PageBuf, access!(REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC)>,
}

fn main() -> Result<()> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(32).build()?;
    let (cq, mut poller) = cq.split();
    let a = Qp::<Rc>::builder(&pd, cq, cq).send_sge_cap::<2>().max_send_wr(8).build()?;
    let b = Qp::<Rc>::builder(&pd, cq, cq).max_recv_wr(4).build()?;
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    let all = Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC;
    let (a, b) = (a.connect(&ea, &eb, all)?, b.connect(&eb, &ea, all)?); // QP flags from the same value
    let r = Regions {
        inbox: Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?,
        payload: Mr::new(&pd, PageBuf::new(4096)?, Access::NONE)?,
        table: Mr::new(&pd, PageBuf::new(4096)?, all)?,
    };
    let srq = Srq::builder(&pd).max_wr(4).build()?;
    srq.post_recv(1, &[r.inbox.sge(1024..2048).unwrap()])?; // LOCAL_WRITE: may be received into

    // Receives into LOCAL_WRITE memory; a gather list mixing in a region without it.
    b.post_recv(2, &[r.inbox.sge(0..64).unwrap()])?;
    recv_into(&b, 3, &r.inbox, 64..128)?;
    let gather: [Sge<'_, No>; 2] = [r.inbox.sge(512..520).unwrap().read_only(), r.payload.sge(0..8).unwrap()];
    a.post_send(&SendWr::send(4, &gather).signaled())?;
    let one = [r.payload.sge(0..8).unwrap()];
    a.post_send(&SendWr::send(5, &one).signaled())?;
    // RDMA write (REMOTE_WRITE), read (REMOTE_READ, into LOCAL_WRITE), atomic (REMOTE_ATOMIC,
    // its result in LOCAL_WRITE).
    let table = r.table.remote();
    a.post_send(&SendWr::rdma_write(6, &one, table.at(0, 8).unwrap()).signaled())?;
    a.post_send(&SendWr::rdma_read(7, &[r.inbox.sge(128..136).unwrap()], table.at(0, 8).unwrap()).signaled())?;
    let old = r.inbox.atomic_result(256).unwrap();
    a.post_send(&SendWr::fetch_add(8, &old, table.atomic_at(64).unwrap(), 1).signaled())?;
    // A peer's region, from what the peer sent.
    let told = RemoteMr::from_peer(table.addr(), table.len(), table.rkey(), Access::REMOTE_READ);
    a.post_send(&SendWr::rdma_read(9, &[r.inbox.sge(136..144).unwrap()], told.at(8, 8).unwrap()).signaled())?;

    // Slots: LOCAL_WRITE, and no remote right.
    let _slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;

    let mut ids = Vec::new();
    let start = std::time::Instant::now();
    while ids.len() < 8 && start.elapsed() < std::time::Duration::from_secs(5) {
        poller.poll_batch(|batch| -> Result<()> {
            let mut next = Some(batch);
            while let Some(batch) = next {
                let wc = batch.completion();
                let id = wc.wr_id();
                assert!(wc.result().is_ok(), "request {id} has the rights it needs");
                ids.push(id);
                next = batch.advance()?;
            }
            Ok(())
        })?
        .transpose()?;
    }
    ids.sort();
    assert_eq!(ids, [2, 3, 4, 5, 6, 7, 8, 9]);
    Ok(())
}
