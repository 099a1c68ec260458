//! A dead peer, on every device: an RC request whose destination never answers completes with
//! `RETRY_EXC_ERR` after `retry_cnt` retransmissions, each when the local ACK timeout
//! (4.096 µs × 2^`timeout`) expires; the QP moves to ERR and every other request it holds, and
//! every receive, is flushed (`WR_FLUSH_ERR`), in posting order. Each kind of silent peer is
//! covered: a QP destroyed before the send, one left in RESET, one in INIT that was never
//! connected, one moved to ERR, and one of another context that was closed. The same module runs
//! on rxe0 in the VM lane, and the outcomes (statuses, their order, the QP's state) are what rxe
//! gives; the times are checked only against a lower bound that both devices keep and a
//! generous upper one.

use crate::common::pair::{loopback_av, rc_rtr_to};
use crate::common::{note, open, poll_n, NO_REMOTE_INIT};
use std::time::{Duration, Instant};
use typed_verbs::ffi::sys::ibv_qp_state;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    AccessFlags, ConnectedInit, Context, Cq, OwnRq, Pd, Qp, Rc, RcRts, SendWr, Sge, Shared, SqPsn,
    Uc, UcRtr, WcStatus,
};

/// `timeout` 10: 4.19 ms a try.
const TIMEOUT: u8 = 10;

/// The local ACK timeout of `timeout`: 4.096 µs × 2^timeout.
fn period(timeout: u8) -> Duration {
    Duration::from_nanos(4096 << timeout)
}

/// An RC QP of `pd` in RTS towards QP number `dest` (loopback address), with `retry_cnt`.
fn sender<'a>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_>,
    dest: u32,
    retry_cnt: u8,
) -> Qp<'a, Rc, OwnRq, Shared, (), Rts> {
    sender_with(ctx, pd, cq, dest, TIMEOUT, retry_cnt, 7)
}

/// [`sender`] with its `timeout` and `rnr_retry`.
fn sender_with<'a>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_>,
    dest: u32,
    timeout: u8,
    retry_cnt: u8,
    rnr_retry: u8,
) -> Qp<'a, Rc, OwnRq, Shared, (), Rts> {
    let init = ConnectedInit {
        port_num: 1,
        pkey_index: 0,
        access: AccessFlags::LOCAL_WRITE,
    };
    let rts = RcRts {
        sq_psn: 0,
        timeout,
        retry_cnt,
        rnr_retry,
        max_rd_atomic: 1,
    };
    Qp::<Rc>::builder(pd, cq, cq)
        .max_send_wr(4)
        .max_recv_wr(4)
        .build()
        .unwrap()
        .to_init(init)
        .unwrap()
        .to_rtr(rc_rtr_to(loopback_av(ctx), dest, 0))
        .unwrap()
        .to_rts(rts)
        .unwrap()
}

/// Posts two receives (wr_ids 10, 11) and three signaled sends (wr_ids 1, 2, 3) on `qp`, whose
/// peer never answers, and checks what every device gives: the first send RETRY_EXC_ERR after
/// at least half of `retry_cnt + 1` ACK timeouts, the other two flushed in order, the receives
/// flushed in order, the QP in ERR.
fn assert_dead(qp: &Qp<'_, Rc, OwnRq, Shared, (), Rts>, cq: &Cq<'_>, retry_cnt: u8, what: &str) {
    qp.post_recv(10, &[] as &[Sge; 0]).unwrap();
    qp.post_recv(11, &[] as &[Sge; 0]).unwrap();
    let start = Instant::now();
    for id in 1..=3 {
        qp.post_send(&SendWr::send(id, &[] as &[Sge; 0]).signaled())
            .unwrap();
    }
    let got = poll_n(cq, 5, Duration::from_secs(20), Duration::ZERO, |w| {
        (w.wr_id(), w.status(), start.elapsed())
    });
    let statuses: Vec<(u64, WcStatus)> = got.iter().map(|&(id, s, _)| (id, s)).collect();
    let sends: Vec<_> = statuses
        .iter()
        .filter(|(id, _)| *id < 10)
        .copied()
        .collect();
    let recvs: Vec<_> = statuses
        .iter()
        .filter(|(id, _)| *id >= 10)
        .copied()
        .collect();
    assert_eq!(
        sends,
        [
            (1, WcStatus::RETRY_EXC_ERR),
            (2, WcStatus::WR_FLUSH_ERR),
            (3, WcStatus::WR_FLUSH_ERR)
        ],
        "{what}: the sends"
    );
    assert_eq!(
        recvs,
        [(10, WcStatus::WR_FLUSH_ERR), (11, WcStatus::WR_FLUSH_ERR)],
        "{what}: the receives"
    );
    let failed_at = got.iter().find(|&&(id, _, _)| id == 1).unwrap().2;
    let least = period(TIMEOUT) * u32::from(retry_cnt + 1) / 2;
    assert!(
        failed_at >= least,
        "{what}: RETRY_EXC_ERR after {failed_at:?}, before {retry_cnt} retries could expire ({least:?})"
    );
    assert_eq!(
        qp.query_state().unwrap(),
        ibv_qp_state::IBV_QPS_ERR,
        "{what}"
    );
    note(
        "dead_peer",
        format_args!(
            "{what}: RETRY_EXC_ERR after {failed_at:.2?} (timeout {TIMEOUT}, retry_cnt {retry_cnt}: {} expiries of {:.2?})",
            retry_cnt + 1,
            period(TIMEOUT)
        ),
    );
}

/// The peer QP was destroyed before the send: its number names no QP.
#[test]
fn destroyed_peer_gives_retry_exc_err_and_flushes_the_rest() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let dest = peer.qp_num();
    peer.destroy().unwrap();
    let qp = sender(&ctx, &pd, &cq, dest, 2);
    assert_dead(&qp, &cq, 2, "destroyed peer");
}

/// The peer QP exists in RESET, and in INIT (never connected): it drops every packet.
#[test]
fn peer_in_reset_or_never_connected_gives_retry_exc_err() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let in_reset = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let qp = sender(&ctx, &pd, &cq, in_reset.qp_num(), 1);
    assert_dead(&qp, &cq, 1, "peer in RESET");
    let in_init = in_reset
        .to_init(ConnectedInit {
            port_num: 1,
            pkey_index: 0,
            access: AccessFlags::REMOTE_WRITE,
        })
        .unwrap();
    let qp = sender(&ctx, &pd, &cq, in_init.qp_num(), 0);
    assert_dead(&qp, &cq, 0, "peer in INIT, never connected");
}

/// The peer QP was connected (RTS towards the sender) and then moved to ERR: it drops every
/// packet, as a QP whose own completion failed does.
#[test]
fn peer_in_err_gives_retry_exc_err() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let qp = sender(&ctx, &pd, &cq, peer.qp_num(), 3);
    let peer = peer
        .to_init(ConnectedInit {
            port_num: 1,
            pkey_index: 0,
            access: AccessFlags::REMOTE_WRITE,
        })
        .unwrap()
        .to_rtr(rc_rtr_to(loopback_av(&ctx), qp.qp_num(), 0))
        .unwrap()
        .to_error()
        .unwrap();
    assert_dead(&qp, &cq, 3, "peer in ERR");
    drop(peer);
}

/// The peer lived in another context of the device, which was closed with its QP (as a peer
/// process that exits): its number names no QP.
#[test]
fn peer_of_a_closed_context_gives_retry_exc_err() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let dest = {
        let other = open();
        let opd = Pd::new(&other).unwrap();
        let ocq = Cq::builder(&other).cqe(4).build().unwrap();
        let peer = Qp::<Rc>::builder(&opd, &ocq, &ocq).build().unwrap();
        let n = peer
            .to_init(ConnectedInit {
                port_num: 1,
                pkey_index: 0,
                access: AccessFlags::REMOTE_WRITE,
            })
            .unwrap()
            .to_rtr(rc_rtr_to(loopback_av(&other), 0, 0))
            .unwrap()
            .qp_num();
        n
        // the QP, its CQ, PD and context are gone here
    };
    let qp = sender(&ctx, &pd, &cq, dest, 1);
    assert_dead(&qp, &cq, 1, "peer of a closed context");
}

/// Brings QP `peer` (in RESET) to RTR towards `qp`, with one receive (wr_id 20) posted.
fn peer_up<'a>(
    ctx: &Context,
    peer: Qp<'a, Rc, OwnRq, Shared, (), typed_verbs::Reset>,
    to: u32,
) -> impl Drop + 'a {
    let peer = peer
        .to_init(ConnectedInit {
            port_num: 1,
            pkey_index: 0,
            access: AccessFlags::REMOTE_WRITE,
        })
        .unwrap();
    peer.post_recv(20, &[] as &[Sge; 0]).unwrap();
    peer.to_rtr(rc_rtr_to(loopback_av(ctx), to, 0)).unwrap()
}

/// A request that waits for a peer not ready yet is delivered, at a retransmission, once the
/// peer comes up (retry_cnt 7: rxe retries without limit): no error, nothing lost.
#[test]
fn a_peer_that_comes_up_later_gets_the_request() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let qp = sender(&ctx, &pd, &cq, peer.qp_num(), 7);
    qp.post_send(&SendWr::send(1, &[] as &[Sge; 0]).signaled())
        .unwrap();
    let _peer = peer_up(&ctx, peer, qp.qp_num());
    let mut got = poll_n(&cq, 2, Duration::from_secs(10), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    got.sort_by_key(|&(id, _)| id);
    assert_eq!(got, [(1, WcStatus::SUCCESS), (20, WcStatus::SUCCESS)]);
    assert_eq!(qp.query_state().unwrap(), ibv_qp_state::IBV_QPS_RTS);
}

/// With no retry left, a peer that comes up before the last ACK timeout expires is too late:
/// the request is sent again only at an expiry, and at that one it fails (RETRY_EXC_ERR), as
/// rxe's completer decides; the peer's receive stays posted.
#[test]
fn a_peer_that_comes_up_after_the_last_transmission_is_too_late() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    // timeout 14: 67 ms, while the peer comes up; retry_cnt 0: no retransmission.
    let qp = sender_with(&ctx, &pd, &cq, peer.qp_num(), 14, 0, 7);
    qp.post_send(&SendWr::send(1, &[] as &[Sge; 0]).signaled())
        .unwrap();
    let _peer = peer_up(&ctx, peer, qp.qp_num());
    let got = poll_n(&cq, 1, Duration::from_secs(10), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    assert_eq!(got, [(1, WcStatus::RETRY_EXC_ERR)]);
    std::thread::sleep(Duration::from_millis(100));
    let more = poll_n(&cq, 1, Duration::ZERO, Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    assert!(more.is_empty(), "the peer's receive completed: {more:?}");
    assert_eq!(qp.query_state().unwrap(), ibv_qp_state::IBV_QPS_ERR);
}

/// UC has no acknowledgements: a send to a dead peer completes successfully, the QP stays in
/// RTS, and the loss is the application's to notice (as UD's).
#[test]
fn uc_to_a_dead_peer_completes_and_the_loss_is_silent() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let peer = Qp::<Uc>::builder(&pd, &cq, &cq).build().unwrap();
    let dest = peer.qp_num();
    peer.destroy().unwrap();
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq)
        .build()
        .unwrap()
        .to_init(NO_REMOTE_INIT)
        .unwrap()
        .to_rtr(UcRtr {
            av: loopback_av(&ctx),
            path_mtu: typed_verbs::Mtu::Mtu1024,
            dest_qp_num: dest,
            rq_psn: 0,
        })
        .unwrap()
        .to_rts(SqPsn { sq_psn: 0 })
        .unwrap();
    for id in 1..=2 {
        qp.post_send(&SendWr::send(id, &[] as &[Sge; 0]).signaled())
            .unwrap();
    }
    let got = poll_n(&cq, 2, Duration::from_secs(10), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    assert_eq!(got, [(1, WcStatus::SUCCESS), (2, WcStatus::SUCCESS)]);
    assert_eq!(qp.query_state().unwrap(), ibv_qp_state::IBV_QPS_RTS);
}

/// The software device's timers at 64 times real time (`SwConfig::timer_speedup`): a program's
/// own attributes (`timeout` 20, 4.3 s a try; an RNR timer of 655 ms) give the same outcomes in
/// milliseconds, so a test of them needs no seconds.
#[cfg(feature = "software-device")]
#[test]
fn sped_up_timers_give_the_same_outcomes_in_milliseconds() {
    use crate::common::registered_for;
    use typed_verbs::software::SwConfig;
    let config = SwConfig {
        timer_speedup: 64,
        ..SwConfig::default()
    };
    let test = "sped_up_timers_give_the_same_outcomes_in_milliseconds";
    let Some(ctx) = registered_for(test, "SwConfig::timer_speedup", "sw-fast-timers", config)
    else {
        return;
    };
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();

    // A dead peer: timeout 20 (4.3 s a try) and one retry would be 8.6 s; here 134 ms. (The
    // bound is far from both: under valgrind an expiry costs up to 150 ms more.)
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let dest = peer.qp_num();
    peer.destroy().unwrap();
    let qp = sender_with(&ctx, &pd, &cq, dest, 20, 1, 7);
    let start = Instant::now();
    qp.post_send(&SendWr::send(1, &[] as &[Sge; 0]).signaled())
        .unwrap();
    let got = poll_n(&cq, 1, Duration::from_secs(10), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    let took = start.elapsed();
    assert_eq!(got, [(1, WcStatus::RETRY_EXC_ERR)]);
    let real = period(20) * 2;
    assert!(
        took >= real / 64 / 2 && took < real / 4,
        "RETRY_EXC_ERR after {took:?}: 2 expiries of 4.3 s at 64 times real time"
    );

    // A peer that never posts a receive: 3 RNR retries of 655 ms (min_rnr_timer 0) would be
    // 2 s; here 31 ms.
    let peer = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let qp = sender_with(&ctx, &pd, &cq, peer.qp_num(), 14, 6, 3);
    let rtr = typed_verbs::RcRtr {
        min_rnr_timer: 0,
        ..rc_rtr_to(loopback_av(&ctx), qp.qp_num(), 0)
    };
    let _peer = peer
        .to_init(ConnectedInit {
            port_num: 1,
            pkey_index: 0,
            access: AccessFlags::REMOTE_WRITE,
        })
        .unwrap()
        .to_rtr(rtr)
        .unwrap();
    let start = Instant::now();
    qp.post_send(&SendWr::send(2, &[] as &[Sge; 0]).signaled())
        .unwrap();
    let got = poll_n(&cq, 1, Duration::from_secs(10), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    let took = start.elapsed();
    assert_eq!(got, [(2, WcStatus::RNR_RETRY_EXC_ERR)]);
    let real = Duration::from_micros(655_360) * 3;
    assert!(
        took >= real / 64 / 2 && took < real,
        "RNR_RETRY_EXC_ERR after {took:?}: 3 RNR timers of 655 ms at 64 times real time"
    );
}
