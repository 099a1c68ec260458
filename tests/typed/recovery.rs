//! Back into service after a failed completion: a QP whose peer died gets RETRY_EXC_ERR, its
//! other work flushed (every posted slot handed back by its flush, once), and goes ERR → RESET →
//! connected again to a new peer, on the same CQ, with the same slots; the traffic then flows.
//! Runs on the test device (sw0 by default, rxe0 in the VM lane).

use crate::common::open;
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::slots::{SlotPoller, SlotSends};
use typed_verbs::{
    wc_flags, Access, AccessFlags, CqEx, Endpoint, Pd, Qp, Rc, RcParams, Shared, Slot, SlotRq,
    WcOpcode, WcStatus,
};

type Flags = wc_flags!(BYTE_LEN | QP_NUM);
type SlotQp<'a, St> = Qp<'a, Rc, SlotRq<SlotSends>, Shared, (), St>;

/// Connects `qp` (endpoint `local`) to `remote` with `timeout` 10 (4 ms) and 2 transport
/// retries, so that a dead peer is reported in about 12 ms on every device.
fn connect<'a>(qp: SlotQp<'a, Reset>, local: &Endpoint, remote: &Endpoint) -> SlotQp<'a, Rts> {
    let params = RcParams {
        timeout: 10,
        retry_cnt: 2,
        ..RcParams::default()
    };
    qp.connect_with(local, remote, AccessFlags::LOCAL_WRITE, params)
        .unwrap()
}

/// A completion: its status, opcode on success, and its slot.
type Back<'s> = (WcStatus, Option<WcOpcode>, Slot<'s>);

/// Polls until `n` completions came back, at most 5 s, taking each one's slot.
fn wait<'s>(poller: &mut SlotPoller<'_, 's, Flags>, n: usize) -> Vec<Back<'s>> {
    let mut got = Vec::new();
    let start = Instant::now();
    while got.len() < n && start.elapsed() < Duration::from_secs(5) {
        poller
            .poll_batch(|batch| {
                let mut next = Some(batch);
                while let Some(mut batch) = next {
                    let slot = batch.take_slot().expect("every completion carries a slot");
                    let (status, opcode) = match batch.completion().result() {
                        Ok(c) => (c.status(), Some(c.opcode())),
                        Err(c) => (c.status(), None),
                    };
                    got.push((status, opcode, slot));
                    next = batch.advance().unwrap();
                }
            })
            .unwrap();
    }
    assert_eq!(got.len(), n, "{n} completions within 5 s");
    got
}

#[test]
fn a_qp_whose_peer_died_is_reset_and_reconnected_with_its_cq_and_slots() {
    let ctx = Arc::new(open());
    let pd: Arc<Pd<'static>> = Arc::new(Pd::new(&ctx).unwrap());
    let mut cq = CqEx::<Flags>::builder(&ctx)
        .cqe(32)
        .slots()
        .build()
        .unwrap();
    let (cq, mut poller) = cq.split();
    let build = || {
        Qp::<Rc>::slot_builder(&pd, cq, cq)
            .max_send_wr(4)
            .max_recv_wr(4)
            .build()
            .unwrap()
    };
    let mut pool = Slot::register(
        &pd,
        typed_verbs::PageBuf::new(8 * 256).unwrap(),
        Access::LOCAL_WRITE,
        256,
    )
    .unwrap();
    let ptrs: HashSet<_> = pool.iter().map(|s| s.as_ptr()).collect();

    // In service: the survivor `a` and its first peer `b`.
    let (a, b) = (build(), build());
    let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
    let (a, b) = (connect(a, &ea, &eb), connect(b, &eb, &ea));
    b.post_recv_slot(pool.pop().unwrap()).unwrap();
    for _ in 0..2 {
        a.post_recv_slot(pool.pop().unwrap()).unwrap();
    }
    let mut s = pool.pop().unwrap();
    s[..5].copy_from_slice(b"hello");
    a.post_send_slot(s, 5).unwrap();
    let back = wait(&mut poller, 2);
    assert!(back.iter().all(|c| c.0 == WcStatus::SUCCESS));
    assert_eq!(
        &back.iter().find(|c| c.1 == Some(WcOpcode::RECV)).unwrap().2[..5],
        b"hello"
    );
    pool.extend(back.into_iter().map(|c| c.2));

    // The peer dies: its QP is gone. The next send is retried and fails; the QP moves to ERR,
    // and everything it holds comes back flushed: the send behind, both receives.
    b.destroy().unwrap();
    a.post_send_slot(pool.pop().unwrap(), 8).unwrap();
    a.post_send_slot(pool.pop().unwrap(), 8).unwrap();
    let back = wait(&mut poller, 4);
    let statuses: Vec<WcStatus> = back.iter().map(|c| c.0).collect();
    assert_eq!(
        statuses
            .iter()
            .filter(|&&s| s == WcStatus::RETRY_EXC_ERR)
            .count(),
        1,
        "{statuses:?}"
    );
    assert_eq!(
        statuses
            .iter()
            .filter(|&&s| s == WcStatus::WR_FLUSH_ERR)
            .count(),
        3,
        "{statuses:?}"
    );
    pool.extend(back.into_iter().map(|c| c.2));
    assert_eq!(pool.len(), 8, "every slot is back");
    assert_eq!(
        pool.iter().map(|s| s.as_ptr()).collect::<HashSet<_>>(),
        ptrs,
        "each slot once"
    );

    // Back into service: the type follows the device to ERR, then RESET, then a new peer.
    let a = a.to_error().unwrap().to_reset().unwrap();
    assert_eq!(
        a.query_state().unwrap(),
        typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_RESET
    );
    let c = build();
    let (ea, ec) = (a.endpoint(1, 0).unwrap(), c.endpoint(1, 0).unwrap());
    let (a, c) = (connect(a, &ea, &ec), connect(c, &ec, &ea));
    c.post_recv_slot(pool.pop().unwrap()).unwrap();
    let mut s = pool.pop().unwrap();
    s[..5].copy_from_slice(b"again");
    a.post_send_slot(s, 5).unwrap();
    let back = wait(&mut poller, 2);
    assert!(back.iter().all(|c| c.0 == WcStatus::SUCCESS));
    assert_eq!(
        &back.iter().find(|c| c.1 == Some(WcOpcode::RECV)).unwrap().2[..5],
        b"again"
    );
    drop((a, c));
}
