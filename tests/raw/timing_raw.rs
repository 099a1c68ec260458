//! What rxe decides where the outcome used to be left to timing, as rxe0 shows it, on the device
//! the tests run on: a QP moved to SQD while its head request waits after an RNR NAK, a QP in
//! ERR forced back to RTS with `IBV_QP_CUR_STATE`, the attributes a move to RESET keeps, and a
//! request to a peer that is not ready with `timeout` 0 (no retransmit timer).
//!
//! Each test states what rxe0 did, with every outcome compared at once (statuses per request,
//! QP states, events), so that a difference shows all of what differs; the times only bound
//! the waits (rxe's timers are the QPs' own: an RNR timer of 491.52 ms, an ACK timeout of a few
//! milliseconds).
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use super::data_raw::{
    init, poll_for, post_recv, post_send, send_wr, state, Env, Qp, Spec, QUIET, WAIT,
};
use crate::common::raw::{ah_attr, qp_attr, query_qp, LOCAL_WRITE, SIGNALED};
use std::time::{Duration, Instant};
use sys::ibv_qp_state::*;
use sys::ibv_qp_type::*;
use sys::ibv_wc_status::*;
use sys::ibv_wr_opcode::*;
use typed_verbs::ffi::qp_attr_mask::{
    ACCESS_FLAGS as M_ACCESS_FLAGS, AV as M_AV, CUR_STATE as M_CUR_STATE, DEST_QPN as M_DEST_QPN,
    MAX_DEST_RD_ATOMIC as M_MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC as M_MAX_QP_RD_ATOMIC,
    MIN_RNR_TIMER as M_MIN_RNR_TIMER, PATH_MTU as M_PATH_MTU, QKEY as M_QKEY,
    RETRY_CNT as M_RETRY_CNT, RNR_RETRY as M_RNR_RETRY, RQ_PSN as M_RQ_PSN, SQ_PSN as M_SQ_PSN,
    STATE as M_STATE, TIMEOUT as M_TIMEOUT,
};
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::AsyncEvent;

/// The RNR timer of 491.52 ms (the largest of the IB table): long enough that a modify made
/// after the NAK comes while the requester still waits for it.
const RNR_TIMER_LONG: u8 = 31;
/// How long a wait for the long RNR timer to fire lasts (its period with a margin).
const AFTER_RNR_TIMER: Duration = Duration::from_millis(1200);

/// The attributes of a connection: what RTR and RTS set beyond the path.
#[derive(Clone, Copy)]
struct Conn {
    /// The RNR timer this QP sends in its NAKs.
    min_rnr_timer: u8,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    /// The PSN this QP expects first (its peer's `sq_psn`).
    rq_psn: u32,
    /// The PSN this QP sends first (its peer's `rq_psn`).
    sq_psn: u32,
}

impl Conn {
    fn new() -> Conn {
        Conn {
            min_rnr_timer: 1,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            rq_psn: 0x1234,
            sq_psn: 0x1234,
        }
    }
}

fn modify(q: &Qp, attr: &mut sys::ibv_qp_attr, mask: i32) -> Result<(), i32> {
    // SAFETY: a live QP; attr valid.
    unsafe { raw::ibv_modify_qp(q.raw, attr, mask) }
}

fn to_state(q: &Qp, s: u32) -> Result<(), i32> {
    let mut a = qp_attr();
    a.qp_state = s;
    modify(q, &mut a, M_STATE)
}

/// INIT -> RTR with `c`, towards `dest`.
fn rtr(e: &Env, q: &Qp, dest: u32, c: Conn) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_RTR;
    a.path_mtu = sys::ibv_mtu::IBV_MTU_1024;
    a.dest_qp_num = dest;
    a.rq_psn = c.rq_psn;
    a.ah_attr = ah_attr(e.gid, 0);
    a.max_dest_rd_atomic = 1;
    a.min_rnr_timer = c.min_rnr_timer;
    let mask = M_STATE
        | M_AV
        | M_PATH_MTU
        | M_DEST_QPN
        | M_RQ_PSN
        | M_MAX_DEST_RD_ATOMIC
        | M_MIN_RNR_TIMER;
    modify(q, &mut a, mask).expect("modify_qp to RTR");
}

/// RTR -> RTS with `c`.
fn rts(q: &Qp, c: Conn) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = c.sq_psn;
    a.timeout = c.timeout;
    a.retry_cnt = c.retry_cnt;
    a.rnr_retry = c.rnr_retry;
    a.max_rd_atomic = 1;
    let mask = M_STATE | M_SQ_PSN | M_TIMEOUT | M_RETRY_CNT | M_RNR_RETRY | M_MAX_QP_RD_ATOMIC;
    modify(q, &mut a, mask).expect("modify_qp to RTS");
}

/// RESET (or INIT) -> RTS towards `peer` with `c`.
fn connect(e: &Env, q: &Qp, peer: &Qp, c: Conn) {
    init(q, 0);
    rtr(e, q, peer.num, c);
    rts(q, c);
}

/// Two RC QPs connected to each other: `a` with `ca`, `b` with `cb`.
fn rc_pair(e: &mut Env, ca: Conn, cb: Conn) -> (Qp, Qp) {
    let a = e.qp(Spec::new(IBV_QPT_RC));
    let b = e.qp(Spec::new(IBV_QPT_RC));
    connect(e, &a, &b, ca);
    connect(e, &b, &a, cb);
    (a, b)
}

/// The (wr_id, status) of each completion `cq` gives within `within` (at least `n` awaited).
fn statuses(cq: *mut sys::ibv_cq, n: usize, within: Duration) -> Vec<(u64, u32)> {
    poll_for(cq, n, within)
        .iter()
        .map(|w| (w.wr_id, w.status))
        .collect()
}

fn sq_draining(q: &Qp) -> u8 {
    // SAFETY: a live QP.
    unsafe { query_qp(q.raw, M_STATE) }.sq_draining
}

/// How many IBV_EVENT_SQ_DRAINED naming `q` arrive within `within` (other events are dropped).
fn sq_drained_events(e: &Env, q: &Qp, within: Duration) -> usize {
    let deadline = Instant::now() + within;
    let mut n = 0;
    loop {
        match e.ctx.try_get_async_event().expect("ibv_get_async_event") {
            Some(ev) => {
                if matches!(*ev, AsyncEvent::SqDrained(r) if r.as_raw() == q.raw) {
                    n += 1;
                }
            }
            None if Instant::now() >= deadline => return n,
            None => std::thread::sleep(Duration::from_millis(1)),
        }
    }
}

/// What happened to a request that waits after an RNR NAK when its QP moved to SQD.
#[derive(Debug, PartialEq, Eq)]
struct SqdAfterRnr {
    /// `sq_draining` right after the modify (the RNR timer has not fired yet).
    draining_at_once: u8,
    /// SQ_DRAINED events, and `sq_draining`, once the RNR timer fired.
    drained_events: usize,
    draining_after_timer: u8,
    /// The sender's completions by then.
    early: Vec<(u64, u32)>,
    /// After a receive is posted at the responder: the sender's completions, the receiver's.
    after_recv: Vec<(u64, u32)>,
    received: Vec<(u64, u32)>,
    /// SQD -> RTS, and the completions after it.
    back_to_rts: Result<(), i32>,
    after_rts: Vec<(u64, u32)>,
    /// After one more send (a post runs the requester): the sender's and the receiver's.
    after_post: Vec<(u64, u32)>,
    received_after_post: Vec<(u64, u32)>,
    state: u32,
}

#[test]
fn fixed_sqd_while_the_head_request_waits_after_an_rnr_nak() {
    // rxe0: the move to SQD finds the request in progress (sent, NAKed, waiting for the RNR
    // timer), so the QP reports sq_draining. When the timer fires the requester rewinds the
    // request (req_retry: it is "posted" again, not in progress), and the drain, which sends
    // nothing new, ends there: SQ_DRAINED, sq_draining 0, the request not sent again. A
    // receive posted then changes nothing, nor does the move back to RTS (nothing runs the
    // requester); the next post sends both, in order.
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE);
    src.write(0, &super::data_raw::pattern(16, 3));
    let cb = Conn {
        min_rnr_timer: RNR_TIMER_LONG,
        ..Conn::new()
    };
    let (a, b) = rc_pair(&mut e, Conn::new(), cb);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    // The NAK comes at once (loopback); the timer then runs for 491.52 ms.
    std::thread::sleep(Duration::from_millis(50));
    to_state(&a, IBV_QPS_SQD).expect("RTS -> SQD");
    let draining_at_once = sq_draining(&a);
    let drained_events = sq_drained_events(&e, &a, AFTER_RNR_TIMER);
    let draining_after_timer = sq_draining(&a);
    let early = statuses(a.send_cq, 0, Duration::ZERO);
    post_recv(&b, 9, &[dst.sge(0, 64)]);
    let after_recv = statuses(a.send_cq, usize::MAX, AFTER_RNR_TIMER);
    let received = statuses(b.recv_cq, 0, Duration::ZERO);
    let back_to_rts = to_state(&a, IBV_QPS_RTS);
    let after_rts = statuses(a.send_cq, usize::MAX, QUIET);
    post_recv(&b, 10, &[dst.sge(0, 64)]);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    let mut after_post = after_rts.clone();
    after_post.extend(statuses(a.send_cq, 2 - after_rts.len().min(2), WAIT));
    let mut received_after_post = received.clone();
    received_after_post.extend(statuses(b.recv_cq, 2 - received.len().min(2), WAIT));
    let got = SqdAfterRnr {
        draining_at_once,
        drained_events,
        draining_after_timer,
        early,
        after_recv,
        received,
        back_to_rts,
        after_rts,
        after_post,
        received_after_post,
        state: state(&a),
    };
    assert_eq!(
        got,
        SqdAfterRnr {
            draining_at_once: 1,
            drained_events: 1,
            draining_after_timer: 0,
            early: vec![],
            after_recv: vec![],
            received: vec![],
            back_to_rts: Ok(()),
            after_rts: vec![],
            after_post: vec![(1, IBV_WC_SUCCESS), (2, IBV_WC_SUCCESS)],
            received_after_post: vec![(9, IBV_WC_SUCCESS), (10, IBV_WC_SUCCESS)],
            state: IBV_QPS_RTS,
        }
    );
}

/// What happened to a request that waits for a retransmission when its QP moved to SQD.
#[derive(Debug, PartialEq, Eq)]
struct SqdAfterTimeout {
    draining_at_once: u8,
    drained_events: usize,
    draining_after_timeout: u8,
    /// The sender's completions once the peer is ready (receives posted, RTR).
    after_peer_ready: Vec<(u64, u32)>,
    back_to_rts: Result<(), i32>,
    after_rts: Vec<(u64, u32)>,
    /// After one more send: the sender's and the receiver's.
    after_post: Vec<(u64, u32)>,
    received: Vec<(u64, u32)>,
}

#[test]
fn fixed_sqd_while_the_head_request_waits_for_a_retransmission() {
    // As after an RNR NAK: the request sent to a peer in INIT waits for the ACK timeout
    // (timeout 14: 67 ms); moved to SQD meanwhile, the QP drains when the timeout expires (the
    // requester rewinds the request and sends nothing new), and neither the peer becoming
    // ready nor the move back to RTS sends it; the next post sends both.
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE);
    let a = e.qp(Spec::new(IBV_QPT_RC));
    let b = e.qp(Spec::new(IBV_QPT_RC));
    connect(&e, &a, &b, Conn::new());
    init(&b, 0);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    std::thread::sleep(Duration::from_millis(20));
    to_state(&a, IBV_QPS_SQD).expect("RTS -> SQD");
    let draining_at_once = sq_draining(&a);
    let drained_events = sq_drained_events(&e, &a, QUIET);
    let draining_after_timeout = sq_draining(&a);
    post_recv(&b, 10, &[dst.sge(0, 64)]);
    post_recv(&b, 11, &[dst.sge(64, 64)]);
    rtr(&e, &b, a.num, Conn::new());
    let after_peer_ready = statuses(a.send_cq, usize::MAX, QUIET);
    let back_to_rts = to_state(&a, IBV_QPS_RTS);
    let after_rts = statuses(a.send_cq, usize::MAX, QUIET);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(16, 16)]));
    let after_post = statuses(a.send_cq, 2, WAIT);
    let received = statuses(b.recv_cq, 2, WAIT);
    let got = SqdAfterTimeout {
        draining_at_once,
        drained_events,
        draining_after_timeout,
        after_peer_ready,
        back_to_rts,
        after_rts,
        after_post,
        received,
    };
    assert_eq!(
        got,
        SqdAfterTimeout {
            draining_at_once: 1,
            drained_events: 1,
            draining_after_timeout: 0,
            after_peer_ready: vec![],
            back_to_rts: Ok(()),
            after_rts: vec![],
            after_post: vec![(1, IBV_WC_SUCCESS), (2, IBV_WC_SUCCESS)],
            received: vec![(10, IBV_WC_SUCCESS), (11, IBV_WC_SUCCESS)],
        }
    );
}

/// What a QP in ERR does once forced to RTS.
#[derive(Debug, PartialEq, Eq)]
struct Forced {
    /// ERR -> RTS with CUR_STATE naming RTS, and the state then.
    modify: Result<(), i32>,
    state: u32,
    /// A send to a ready peer with a receive posted: the sender's completions, the peer's.
    sent: Vec<(u64, u32)>,
    received: Vec<(u64, u32)>,
    /// A send from the peer to it (a receive posted there): the peer's completions, its own.
    peer_sent: Vec<(u64, u32)>,
    peer_received: Vec<(u64, u32)>,
    states: (u32, u32),
}

#[test]
fn fixed_an_err_qp_forced_to_rts_with_cur_state() {
    // rxe0 takes ERR -> RTS when IBV_QP_CUR_STATE names RTS (rxe_qp_chk_attr checks the move
    // from the state given). The QP then sends (the move to RTS readies rxe's requester) but
    // takes no request (only a move to RTR readies its responder): its own send lands, its
    // peer's gets no answer and ends in RETRY_EXC_ERR.
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE);
    // The peer retries a request that gets no answer twice, 4 ms apart.
    let cb = Conn {
        timeout: 10,
        retry_cnt: 2,
        ..Conn::new()
    };
    let (a, b) = rc_pair(&mut e, Conn::new(), cb);
    to_state(&a, IBV_QPS_ERR).expect("RTS -> ERR");
    // Nothing to flush, but the move is waited for: rxe's tasks ran.
    std::thread::sleep(QUIET);
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_RTS;
    attr.cur_qp_state = IBV_QPS_RTS;
    let modify_r = modify(&a, &mut attr, M_STATE | M_CUR_STATE);
    let st = state(&a);
    post_recv(&b, 20, &[dst.sge(0, 64)]);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    let sent = statuses(a.send_cq, 1, WAIT);
    let received = statuses(b.recv_cq, 1, QUIET);
    post_recv(&a, 30, &[dst.sge(64, 64)]);
    post_send(&b, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(16, 16)]));
    let peer_sent = statuses(b.send_cq, 1, WAIT);
    let peer_received = statuses(a.recv_cq, 1, QUIET);
    let got = Forced {
        modify: modify_r,
        state: st,
        sent,
        received,
        peer_sent,
        peer_received,
        states: (state(&a), state(&b)),
    };
    assert_eq!(
        got,
        Forced {
            modify: Ok(()),
            state: IBV_QPS_RTS,
            sent: vec![(1, IBV_WC_SUCCESS)],
            received: vec![(20, IBV_WC_SUCCESS)],
            peer_sent: vec![(2, IBV_WC_RETRY_EXC_ERR)],
            peer_received: vec![],
            states: (IBV_QPS_RTS, IBV_QPS_ERR),
        }
    );
    // CUR_STATE naming a state other than the QP's own, on a transition the table lacks from
    // it (ERR -> RTS): refused.
    let (c, _d) = rc_pair(&mut e, Conn::new(), Conn::new());
    to_state(&c, IBV_QPS_ERR).expect("RTS -> ERR");
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_RTS;
    attr.cur_qp_state = IBV_QPS_ERR;
    assert_eq!(
        modify(&c, &mut attr, M_STATE | M_CUR_STATE),
        Err(libc::EINVAL)
    );
}

/// The attributes `ibv_query_qp` reports that a move to RESET may keep or clear. Not the
/// address vector's hop limit: the kernel resolves it from the route to the destination GID
/// (64 on rxe0's netdev, whatever the modify gave).
#[derive(Debug, PartialEq, Eq, Clone, Copy)]
struct Kept {
    state: u32,
    access: u32,
    pkey_index: u16,
    port: u8,
    qkey: u32,
    path_mtu: u32,
    dest_qp_num: u32,
    rq_psn: u32,
    sq_psn: u32,
    max_dest_rd_atomic: u8,
    min_rnr_timer: u8,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
    max_rd_atomic: u8,
    ah_port: u8,
    ah_is_global: u8,
    en_sqd_async_notify: u8,
    path_mig_state: u32,
}

fn kept(q: &Qp) -> Kept {
    // SAFETY: a live QP.
    let a = unsafe { query_qp(q.raw, M_STATE) };
    Kept {
        state: a.qp_state,
        access: a.qp_access_flags,
        pkey_index: a.pkey_index,
        port: a.port_num,
        qkey: a.qkey,
        path_mtu: a.path_mtu,
        dest_qp_num: a.dest_qp_num,
        rq_psn: a.rq_psn,
        sq_psn: a.sq_psn,
        max_dest_rd_atomic: a.max_dest_rd_atomic,
        min_rnr_timer: a.min_rnr_timer,
        timeout: a.timeout,
        retry_cnt: a.retry_cnt,
        rnr_retry: a.rnr_retry,
        max_rd_atomic: a.max_rd_atomic,
        ah_port: a.ah_attr.port_num,
        ah_is_global: a.ah_attr.is_global,
        en_sqd_async_notify: a.en_sqd_async_notify,
        path_mig_state: a.path_mig_state,
    }
}

#[test]
fn fixed_reset_keeps_the_attributes_a_query_reports() {
    // rxe keeps the QP's attributes (qp->attr) across a move to RESET: ibv_query_qp reports
    // them, in RESET and after INIT, until a modify sets them again.
    let mut e = Env::new();
    let c = Conn {
        min_rnr_timer: 12,
        timeout: 9,
        retry_cnt: 3,
        rnr_retry: 5,
        rq_psn: 0x111,
        sq_psn: 0x222,
    };
    let (a, b) = rc_pair(&mut e, c, Conn::new());
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_RTS;
    attr.qp_access_flags = LOCAL_WRITE as u32;
    modify(&a, &mut attr, M_STATE | M_ACCESS_FLAGS).expect("RTS -> RTS, access");
    let rts_attrs = kept(&a);
    let expected_rts = Kept {
        state: IBV_QPS_RTS,
        access: LOCAL_WRITE as u32,
        pkey_index: 0,
        port: 1,
        qkey: 0,
        path_mtu: sys::ibv_mtu::IBV_MTU_1024,
        dest_qp_num: b.num,
        rq_psn: 0x111,
        sq_psn: 0x222,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
        timeout: 9,
        retry_cnt: 3,
        rnr_retry: 5,
        max_rd_atomic: 1,
        ah_port: 1,
        ah_is_global: 1,
        en_sqd_async_notify: 0,
        path_mig_state: 0,
    };
    assert_eq!(rts_attrs, expected_rts);
    to_state(&a, IBV_QPS_RESET).expect("RTS -> RESET");
    assert_eq!(
        kept(&a),
        Kept {
            state: IBV_QPS_RESET,
            ..expected_rts
        },
        "in RESET"
    );
    // INIT sets what its mask names (the access flags here), the rest stays.
    init(&a, 0);
    assert_eq!(
        kept(&a),
        Kept {
            state: IBV_QPS_INIT,
            access: 0,
            ..expected_rts
        },
        "in INIT again"
    );
    // A UD QP's qkey, likewise.
    let u = e.qp(Spec::new(IBV_QPT_UD));
    init(&u, 0);
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_INIT;
    attr.qkey = 0x4321;
    modify(&u, &mut attr, M_STATE | M_QKEY).expect("INIT -> INIT, qkey");
    to_state(&u, IBV_QPS_RESET).expect("INIT -> RESET");
    let k = kept(&u);
    assert_eq!(
        (k.state, k.qkey, k.port, k.pkey_index),
        (IBV_QPS_RESET, 0x4321, 1, 0)
    );
}

#[test]
fn fixed_reset_and_reconnect_with_matching_psns() {
    // Both QPs of a pair back through RESET and connected again with new PSNs (each one's
    // sq_psn the other's rq_psn): messages flow again both ways, as on a fresh pair.
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(256, LOCAL_WRITE);
    let (a, b) = rc_pair(&mut e, Conn::new(), Conn::new());
    post_recv(&b, 10, &[dst.sge(0, 64)]);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    assert_eq!(statuses(a.send_cq, 1, WAIT), [(1, IBV_WC_SUCCESS)]);
    assert_eq!(statuses(b.recv_cq, 1, WAIT), [(10, IBV_WC_SUCCESS)]);
    for q in [&a, &b] {
        to_state(q, IBV_QPS_RESET).expect("RTS -> RESET");
    }
    let ca = Conn {
        sq_psn: 0x5000,
        rq_psn: 0x7000,
        ..Conn::new()
    };
    let cb = Conn {
        sq_psn: 0x7000,
        rq_psn: 0x5000,
        ..Conn::new()
    };
    connect(&e, &a, &b, ca);
    connect(&e, &b, &a, cb);
    post_recv(&b, 11, &[dst.sge(64, 64)]);
    post_recv(&a, 12, &[dst.sge(128, 64)]);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    post_send(&b, send_wr(3, IBV_WR_SEND, SIGNALED, &[src.sge(16, 16)]));
    // Each QP's one CQ: its send's completion and its receive's, in either order.
    let sorted = |mut v: Vec<(u64, u32)>| {
        v.sort();
        v
    };
    assert_eq!(
        sorted(statuses(a.send_cq, 2, WAIT)),
        [(2, IBV_WC_SUCCESS), (12, IBV_WC_SUCCESS)]
    );
    assert_eq!(
        sorted(statuses(b.send_cq, 2, WAIT)),
        [(3, IBV_WC_SUCCESS), (11, IBV_WC_SUCCESS)]
    );
    assert_eq!((state(&a), state(&b)), (IBV_QPS_RTS, IBV_QPS_RTS));
}

/// What a request to a peer that is not ready does with `timeout` 0.
#[derive(Debug, PartialEq, Eq)]
struct NoTimer {
    /// The sender's completions while the peer is in INIT, then once it is in RTR (a receive
    /// posted), and the peer's receives by then.
    while_init: Vec<(u64, u32)>,
    after_rtr: Vec<(u64, u32)>,
    received: Vec<(u64, u32)>,
    /// After a second send: the sender's completions and the peer's receives.
    after_second: Vec<(u64, u32)>,
    received_after_second: Vec<(u64, u32)>,
    states: (u32, u32),
}

#[test]
fn fixed_timeout_zero_does_not_resend_to_a_peer_that_became_ready() {
    // rxe0: with timeout 0 there is no retransmit timer. The request the peer dropped (in INIT)
    // is not sent again when the peer becomes ready; the next request reaches the peer out of
    // sequence, the peer NAKs it, and the sender then sends both again, in order.
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE);
    let a = e.qp(Spec::new(IBV_QPT_RC));
    let b = e.qp(Spec::new(IBV_QPT_RC));
    let ca = Conn {
        timeout: 0,
        ..Conn::new()
    };
    connect(&e, &a, &b, ca);
    init(&b, 0);
    post_recv(&b, 10, &[dst.sge(0, 64)]);
    post_recv(&b, 11, &[dst.sge(64, 64)]);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    let while_init = statuses(a.send_cq, usize::MAX, QUIET);
    rtr(&e, &b, a.num, Conn::new());
    let after_rtr = statuses(a.send_cq, usize::MAX, QUIET);
    let received = statuses(b.recv_cq, 0, Duration::ZERO);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(16, 16)]));
    let after_second = statuses(a.send_cq, 2, WAIT);
    let received_after_second = statuses(b.recv_cq, 2, WAIT);
    let got = NoTimer {
        while_init,
        after_rtr,
        received,
        after_second,
        received_after_second,
        states: (state(&a), state(&b)),
    };
    assert_eq!(
        got,
        NoTimer {
            while_init: vec![],
            after_rtr: vec![],
            received: vec![],
            after_second: vec![(1, IBV_WC_SUCCESS), (2, IBV_WC_SUCCESS)],
            received_after_second: vec![(10, IBV_WC_SUCCESS), (11, IBV_WC_SUCCESS)],
            states: (IBV_QPS_RTS, IBV_QPS_RTR),
        }
    );
}
