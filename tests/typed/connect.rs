//! `Qp::endpoint` and `Qp::connect` (src/qp/connect.rs): an RC pair and a UC pair connected in one
//! call carry data; bad input is refused before any call. Runs on sw0 and, in the VM lane, on rxe0.

use crate::common;
use std::time::Duration;
use typed_verbs::connect::Connectable;
use typed_verbs::connect::RcParams;
use typed_verbs::wr::RdmaWriteCapable;
use typed_verbs::{Access, AccessFlags, ErrorKind, Mr, Qp, QpStateName, Rc, SendWr, Uc, Verb};

#[test]
fn a_connected_pair_carries_a_send_and_an_rdma_write() {
    carries_a_send_and_an_rdma_write::<Rc>();
}

#[test]
fn a_connected_uc_pair_carries_a_send_and_an_rdma_write() {
    carries_a_send_and_an_rdma_write::<Uc>();
}

fn carries_a_send_and_an_rdma_write<T: Connectable + RdmaWriteCapable>() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let build = || Qp::<T>::builder(pd, cq, cq).max_send_wr(4).build().unwrap();
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        assert_eq!((ea.qp_num, ea.port_num, ea.gid_index), (a.qp_num(), 1, 0));
        assert_eq!(ea.gid, ctx.query_gid(1, 0).unwrap());
        assert!(ea.psn < 1 << 24 && eb.psn < 1 << 24);
        let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
        let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE).unwrap();
        let access = Access::LOCAL_WRITE | Access::REMOTE_WRITE;
        let (src, dst) = (
            Mr::new(pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap(),
            Mr::new(pd, vec![0u8; 64], access).unwrap(),
        );
        src.write(0, b"connected").unwrap();
        b.post_recv(1, &[dst.sge(0..32).unwrap()]).unwrap();
        let sge = [src.sge(0..9).unwrap()];
        a.post_send(&SendWr::<T>::send(2, &sge).signaled()).unwrap();
        let at = dst.remote().at(32, 9).unwrap();
        a.post_send(&SendWr::<T>::rdma_write(3, &sge, at).signaled())
            .unwrap();
        common::expect_successes(cq, 3, Duration::from_secs(5), "three completions");
        let mut got = [0u8; 41];
        dst.read(0, &mut got).unwrap();
        assert_eq!(
            (&got[..9], &got[32..41]),
            (&b"connected"[..], &b"connected"[..])
        );
    });
}

#[test]
fn bad_endpoints_are_refused_before_any_call() {
    common::with_pd_cq(Some(4), |ctx, pd, cq| {
        let (a, b) = (
            Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
            Qp::<Rc>::builder(pd, cq, cq).build().unwrap(),
        );
        let ports = ctx.attr().phys_port_cnt;
        let e = a.endpoint(ports + 1, 0).unwrap_err();
        assert_eq!((e.verb, e.errno()), (Verb::QueryPort, libc::EINVAL));
        let table = ctx.query_port(1).unwrap().gid_tbl_len;
        if let Ok(index) = u8::try_from(table) {
            let e = a.endpoint(1, index).unwrap_err();
            assert!(
                matches!(
                    e.kind,
                    ErrorKind::OutOfRange {
                        what: "gid_index",
                        ..
                    }
                ),
                "{e}"
            );
        }
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        // `a` given `b`'s endpoint as its own: refused, and `a` (taken by value) is destroyed.
        let e = a.connect(&eb, &ea, AccessFlags::LOCAL_WRITE).unwrap_err();
        assert!(
            matches!(
                e.kind,
                ErrorKind::OutOfRange {
                    what: "local.qp_num",
                    ..
                }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("RESET->INIT"), "{e}");
    });
}

#[test]
fn the_connection_parameters_reach_the_qp() {
    common::with_pd_cq(Some(4), |_, pd, cq| {
        let build = || Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        // The defaults: bounded on every device (retry_cnt 6, not rxe's unlimited 7).
        let qp = build();
        let e = qp.endpoint(1, 0).unwrap();
        let qp = qp.connect(&e, &e, AccessFlags::LOCAL_WRITE).unwrap();
        let got = qp.query_rc_params().unwrap();
        assert_eq!(got, RcParams::default());
        assert_eq!(
            (got.timeout, got.retry_cnt, got.rnr_retry, got.min_rnr_timer),
            (14, 6, 7, 12)
        );
        // The caller's, each field away from its default (depths powers of two: rxe rounds
        // them up to one).
        let mine = RcParams {
            timeout: 10,
            retry_cnt: 2,
            rnr_retry: 3,
            min_rnr_timer: 20,
            max_rd_atomic: 2,
            max_dest_rd_atomic: 4,
        };
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        let a = a
            .connect_with(&ea, &eb, AccessFlags::LOCAL_WRITE, mine)
            .unwrap();
        assert_eq!(a.query_rc_params().unwrap(), mine);
        let b = b
            .connect_with(
                &eb,
                &ea,
                AccessFlags::LOCAL_WRITE,
                RcParams { timeout: 0, ..mine },
            )
            .unwrap();
        assert_eq!(b.query_rc_params().unwrap().timeout, 0, "0: no timeout");
        // UC takes `()`: it has none.
        let uc = Qp::<Uc>::builder(pd, cq, cq).build().unwrap();
        let eu = uc.endpoint(1, 0).unwrap();
        uc.connect_with(&eu, &eu, AccessFlags::LOCAL_WRITE, ())
            .unwrap();
    });
}

#[test]
fn connection_parameters_outside_their_ranges_are_refused_before_the_transitions() {
    common::with_pd_cq(Some(4), |ctx, pd, cq| {
        let init_rd = u64::from(ctx.attr().max_qp_init_rd_atom);
        let rd = u64::from(ctx.attr().max_qp_rd_atom);
        let ok = RcParams::default();
        let (rtr, rts) = (
            Verb::ModifyQp {
                from: QpStateName::Init,
                to: QpStateName::Rtr,
            },
            Verb::ModifyQp {
                from: QpStateName::Rtr,
                to: QpStateName::Rts,
            },
        );
        let mut cases = vec![
            (
                RcParams { timeout: 32, ..ok },
                rts,
                "params.timeout",
                32,
                31,
            ),
            (
                RcParams { retry_cnt: 8, ..ok },
                rts,
                "params.retry_cnt",
                8,
                7,
            ),
            (
                RcParams { rnr_retry: 8, ..ok },
                rts,
                "params.rnr_retry",
                8,
                7,
            ),
            (
                RcParams {
                    min_rnr_timer: 32,
                    ..ok
                },
                rtr,
                "params.min_rnr_timer",
                32,
                31,
            ),
        ];
        if init_rd < 255 {
            cases.push((
                RcParams {
                    max_rd_atomic: (init_rd + 1) as u8,
                    ..ok
                },
                rts,
                "params.max_rd_atomic",
                init_rd + 1,
                init_rd,
            ));
        }
        if rd < 255 {
            cases.push((
                RcParams {
                    max_dest_rd_atomic: (rd + 1) as u8,
                    ..ok
                },
                rtr,
                "params.max_dest_rd_atomic",
                rd + 1,
                rd,
            ));
        }
        for (params, verb, what, value, max) in cases {
            let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
            let e = qp.endpoint(1, 0).unwrap();
            let r = qp.connect_with(&e, &e, AccessFlags::LOCAL_WRITE, params);
            common::assert_out_of_range(r, verb, what, value, 0, max);
        }
        // None of the refused QPs is left (each was destroyed with its error).
        #[cfg(feature = "software-device")]
        if let Some(live) = typed_verbs::software::live_objects(ctx) {
            assert_eq!(live.qps, 0, "{live:?}");
        }
    });
}

#[test]
fn rc_params_express_durations() {
    let p = RcParams::default();
    assert_eq!(p.ack_timeout(), Some(Duration::from_nanos(4096 << 14)));
    assert_eq!(
        p.dead_peer_bound(),
        Some(Duration::from_nanos(7 * (4096 << 14)))
    );
    assert_eq!(p.rnr_timer(), Duration::from_micros(640));
    assert_eq!(
        RcParams {
            min_rnr_timer: 0,
            ..p
        }
        .rnr_timer(),
        Duration::from_micros(655_360)
    );
    for t in 1..=31u8 {
        let d = Duration::from_nanos(4096 << t);
        assert_eq!(RcParams::timeout_at_least(d), t, "exactly {d:?}");
        assert_eq!(
            RcParams::timeout_at_least(d + Duration::from_nanos(1)),
            (t + 1).min(31)
        );
    }
    assert_eq!(RcParams::timeout_at_least(Duration::from_secs(1 << 20)), 31);
    assert_eq!(
        RcParams { retry_cnt: 7, ..p }.dead_peer_bound(),
        None,
        "unbounded on rxe"
    );
    assert_eq!(RcParams { timeout: 0, ..p }.dead_peer_bound(), None);
}
