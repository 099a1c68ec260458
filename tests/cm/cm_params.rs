//! The connection parameters of an RC connection made by the typed rdma_cm layer reach its QPs
//! (src/cm/connection.rs, `ConnParam`): the ACK timeout set with `rdma_set_option` on each side,
//! the RNR timer the crate writes into each side's RTR, the retry counts as the IB CM passes
//! them (the active side's `retry_count` for both QPs; each side's `rnr_retry_count` for the
//! other's QP), read back with `Qp::query_rc_params`. Out-of-range values are refused before any
//! call. A UD connect skips the ACK timeout, which the kernel refuses on a UD id (cm.rs's UD
//! tests connect with the default parameters). Runs on sw0 (the software CM) and, in the VM
//! lane, on rxe0 (the kernel's).

use crate::common;
use common::cm_addr;
use std::net::SocketAddr;
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnParam, Connection, Tcp};
use typed_verbs::ffi::sys;
use typed_verbs::{raw, ErrorKind, Qp, Rc, Verb};

const T: Duration = Duration::from_secs(10);

/// An RC connection in one process, the server accepting with `server` and the client
/// connecting with `client`: (client, server).
fn rc_pair(
    s: &common::CmSetup,
    client: ConnParam<'static>,
    server: ConnParam<'static>,
) -> (Connection<'static, Tcp>, Connection<'static, Tcp>) {
    let l = CmId::<Tcp>::new(&s.ch)
        .unwrap()
        .bind(SocketAddr::new(cm_addr(), 0))
        .unwrap()
        .listen(4)
        .unwrap();
    let addr = l.local_addr().unwrap();
    let qp = Qp::<Rc>::builder(&s.pd, &s.cq, &s.cq).build().unwrap();
    let accepted = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        req.accept(qp, &server, T).unwrap()
    });
    let id = CmId::<Tcp>::new(&s.ch)
        .unwrap()
        .resolve_addr(None, addr, T)
        .unwrap()
        .resolve_route(T)
        .unwrap();
    let qp = Qp::<Rc>::builder(&s.pd, &s.cq, &s.cq).build().unwrap();
    let client = id.connect(qp, &client, T).unwrap();
    (client, accepted.join().unwrap())
}

#[test]
fn the_default_connection_parameters_reach_both_qps_bounded() {
    let Some(s) = common::cm_setup("the_default_connection_parameters_reach_both_qps") else {
        return;
    };
    let (client, server) = rc_pair(&s, ConnParam::default(), ConnParam::default());
    for (side, conn) in [("client", &client), ("server", &server)] {
        let p = conn.qp().query_rc_params().unwrap();
        assert_eq!(
            (p.timeout, p.retry_cnt, p.rnr_retry, p.min_rnr_timer),
            (14, 6, 7, 12),
            "{side}: {p:?}"
        );
        assert!(p.dead_peer_bound().is_some(), "{side}: {p:?}");
    }
}

#[test]
fn each_sides_connection_parameters_reach_the_qps_they_govern() {
    let Some(s) = common::cm_setup("each_sides_connection_parameters_reach_the_qps") else {
        return;
    };
    let client = ConnParam {
        retry_count: 3,
        rnr_retry_count: 5,
        ack_timeout: 12,
        min_rnr_timer: 20,
        ..ConnParam::default()
    };
    let server = ConnParam {
        retry_count: 1, // an accept's is not used: the REQ's is
        rnr_retry_count: 4,
        ack_timeout: 16,
        min_rnr_timer: 25,
        ..ConnParam::default()
    };
    let (c, sv) = rc_pair(&s, client, server);
    let (cp, sp) = (
        c.qp().query_rc_params().unwrap(),
        sv.qp().query_rc_params().unwrap(),
    );
    // Each side's own ACK timeout and RNR timer.
    assert_eq!((cp.timeout, cp.min_rnr_timer), (12, 20), "client {cp:?}");
    assert_eq!((sp.timeout, sp.min_rnr_timer), (16, 25), "server {sp:?}");
    // The active side's retry count for both; each side's RNR retry count for the other's QP.
    assert_eq!((cp.retry_cnt, cp.rnr_retry), (3, 4), "client {cp:?}");
    assert_eq!((sp.retry_cnt, sp.rnr_retry), (3, 5), "server {sp:?}");
    assert_eq!(
        cp.dead_peer_bound(),
        Some(Duration::from_nanos(4 * (4096 << 12))),
        "4 tries of 16.8 ms"
    );
}

#[test]
fn connection_parameters_outside_their_ranges_are_refused_before_the_call() {
    let Some(s) = common::cm_setup("connection_parameters_outside_their_ranges") else {
        return;
    };
    let l = CmId::<Tcp>::new(&s.ch)
        .unwrap()
        .bind(SocketAddr::new(cm_addr(), 0))
        .unwrap()
        .listen(4)
        .unwrap();
    let addr = l.local_addr().unwrap();
    let ok = ConnParam::default();
    for (param, what, value, max) in [
        (
            ConnParam {
                ack_timeout: 32,
                ..ok
            },
            "ack_timeout",
            32,
            31,
        ),
        (
            ConnParam {
                min_rnr_timer: 40,
                ..ok
            },
            "min_rnr_timer",
            40,
            31,
        ),
        (
            ConnParam {
                retry_count: 8,
                ..ok
            },
            "retry_count",
            8,
            7,
        ),
        (
            ConnParam {
                rnr_retry_count: 8,
                ..ok
            },
            "rnr_retry_count",
            8,
            7,
        ),
    ] {
        let id = CmId::<Tcp>::new(&s.ch)
            .unwrap()
            .resolve_addr(None, addr, T)
            .unwrap()
            .resolve_route(T)
            .unwrap();
        let qp = Qp::<Rc>::builder(&s.pd, &s.cq, &s.cq).build().unwrap();
        let r = id.connect(qp, &param, T);
        common::assert_out_of_range(r, Verb::Connect, what, value, 0, max);
    }
    // Nothing reached the listener.
    let e = l.get_request(Duration::from_millis(300)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CmTimedOut(_)), "{e}");
}

#[test]
fn rdma_set_option_takes_the_ack_timeout_of_an_rc_id_only() {
    let Some(s) = common::cm_setup("rdma_set_option_takes_the_ack_timeout") else {
        return;
    };
    // SAFETY: live ids of a live channel, destroyed before it; `t` one readable byte.
    unsafe {
        let ch = raw::rdma_create_event_channel(s.ctx.as_raw())
            .unwrap()
            .as_ptr();
        let null = std::ptr::null_mut();
        let rc = raw::rdma_create_id(ch, null, sys::rdma_port_space::RDMA_PS_TCP)
            .unwrap()
            .as_ptr();
        let ud = raw::rdma_create_id(ch, null, sys::rdma_port_space::RDMA_PS_UDP)
            .unwrap()
            .as_ptr();
        let mut t: u8 = 14;
        let p = (&mut t as *mut u8).cast();
        let (id_level, ack) = (raw::RDMA_OPTION_ID, raw::RDMA_OPTION_ID_ACK_TIMEOUT);
        raw::rdma_set_option(rc, id_level, ack, p, 1).expect("an RC id's ACK timeout");
        assert_eq!(
            raw::rdma_set_option(ud, id_level, ack, p, 1),
            Err(libc::EINVAL),
            "a UD id has no ACKs"
        );
        assert_eq!(
            raw::rdma_set_option(rc, id_level, ack, p, 2),
            Err(libc::EINVAL),
            "the option is one byte"
        );
        assert_eq!(
            raw::rdma_set_option(rc, id_level, 99, p, 1),
            Err(libc::ENOSYS),
            "no such option"
        );
        raw::rdma_destroy_id(ud).unwrap();
        raw::rdma_destroy_id(rc).unwrap();
        raw::rdma_destroy_event_channel(ch);
    }
}
