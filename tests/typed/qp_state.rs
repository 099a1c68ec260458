//! QP state transitions (RESET → INIT → RTR → RTS, ERR and RESET from anywhere) on the device
//! the tests run on, with the attributes each QP type requires; a refused transition gives the
//! QP back in its old state.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{av_to, feature, open, with_gid_pd_cq, REMOTE_WRITE_INIT};
use typed_verbs::ffi::sys::ibv_qp_state::*;
use typed_verbs::qp_state::{ErrorState, Init, Reset, Rts};
use typed_verbs::software;
use typed_verbs::{
    Access, AccessFlags, AddressVector, AltPath, ConnectedInit, ConnectedInitModify, Context, Cq,
    ErrorKind, Gid, Mr, Mtu, PageBuf, PathMigState, Pd, Qp, QpStateName, RawPacket, RawPacketInit,
    Rc, RcRtr, RcRts, RcRtsModify, SendWr, SqPsn, Uc, UcRtr, Ud, UdInit, UdInitModify, UdRtsModify,
    Verb, WcStatus, WorkCompletion,
};

fn rc_rtr(av: AddressVector, dest: u32) -> RcRtr {
    common::rc_rtr_to(av, dest, 0x1234)
}

const RC_RTS: RcRts = common::rc_rts_from(0x1234);

#[test]
fn rc_pair_goes_to_rts_and_back_through_error_and_reset() {
    with_gid_pd_cq(16, |_, gid, pd, cq| {
        let a = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let b = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let (an, bn) = (a.qp_num(), b.qp_num());
        assert_eq!(a.query_state().unwrap(), IBV_QPS_RESET);
        let a = a.to_init(REMOTE_WRITE_INIT).unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_INIT);
        let a = a.to_rtr(rc_rtr(av_to(gid, 0), bn)).unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_RTR);
        let a = a.to_rts(RC_RTS).unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_RTS);
        let b = rc_up_to(gid, b, AccessFlags::REMOTE_WRITE, an);
        assert_eq!(b.query_state().unwrap(), IBV_QPS_RTS);
        let a = a.to_error().unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_ERR);
        let a: Qp<'_, Rc, _, _, _, Reset> = a.to_reset().unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_RESET);
        // From RESET the QP can be brought up again.
        let a = a.to_init(REMOTE_WRITE_INIT).unwrap();
        assert_eq!(a.query_state().unwrap(), IBV_QPS_INIT);
        a.destroy().unwrap();
        b.destroy().unwrap();
    });
}

#[test]
fn uc_and_ud_go_to_rts_with_their_own_attributes() {
    with_gid_pd_cq(16, |_, gid, pd, cq| {
        let uc = Qp::<Uc>::builder(pd, cq, cq).build().unwrap();
        let dest = uc.qp_num();
        let uc = uc
            .to_init(REMOTE_WRITE_INIT)
            .unwrap()
            .to_rtr(UcRtr {
                av: av_to(gid, 0),
                path_mtu: Mtu::Mtu1024,
                dest_qp_num: dest,
                rq_psn: 7,
            })
            .unwrap()
            .to_rts(SqPsn { sq_psn: 7 })
            .unwrap();
        assert_eq!(uc.query_state().unwrap(), IBV_QPS_RTS);
        let ud = Qp::<Ud>::builder(pd, cq, cq).build().unwrap();
        let ud: Qp<'_, Ud, _, _, _, Rts> = ud
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: 0x1111_1111,
            })
            .unwrap()
            .to_rtr(())
            .unwrap()
            .to_rts(SqPsn { sq_psn: 0 })
            .unwrap();
        assert_eq!(ud.query_state().unwrap(), IBV_QPS_RTS);
    });
}

#[test]
fn raw_packet_goes_to_rts_where_the_device_has_it() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let test = "raw_packet_goes_to_rts_where_the_device_has_it";
        let Some(raw) = feature(
            ctx,
            test,
            "RAW_PACKET QPs",
            Qp::<RawPacket>::builder(pd, cq, cq).build(),
        ) else {
            return;
        };
        let raw = raw
            .to_init(RawPacketInit { port_num: 1 })
            .unwrap()
            .to_rtr(())
            .unwrap()
            .to_rts(())
            .unwrap();
        assert_eq!(raw.query_state().unwrap(), IBV_QPS_RTS);
    });
}

#[test]
fn a_refused_transition_returns_the_qp_in_its_old_state() {
    with_gid_pd_cq(16, |ctx, gid, pd, cq| {
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let dest = qp.qp_num();
        // A port the device does not have.
        let bad_port = ConnectedInit {
            port_num: ctx.attr().phys_port_cnt + 1,
            ..REMOTE_WRITE_INIT
        };
        let e = qp.try_to_init(bad_port).expect_err("port out of range");
        assert_eq!(
            (e.error.verb, e.error.kind.clone()),
            (
                Verb::ModifyQp {
                    from: QpStateName::Reset,
                    to: QpStateName::Init
                },
                ErrorKind::OutOfRange {
                    what: "port_num",
                    value: (ctx.attr().phys_port_cnt + 1).into(),
                    min: 1,
                    max: ctx.attr().phys_port_cnt.into(),
                }
            ),
            "checked before the call"
        );
        let qp: Qp<'_, Rc, _, _, _, Reset> = e.qp;
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RESET);
        let qp: Qp<'_, Rc, _, _, _, Init> = qp.to_init(REMOTE_WRITE_INIT).unwrap();
        // On RoCE an address vector needs a global route (the kernel's rdma_check_ah_attr).
        let link_layer = ctx.query_port(1).unwrap().link_layer;
        if link_layer == 2 {
            let no_grh = AddressVector {
                grh: None,
                ..av_to(gid, 0)
            };
            let e = qp
                .try_to_rtr(rc_rtr(no_grh, dest))
                .expect_err("RoCE needs a GRH");
            assert_eq!(e.error.errno(), libc::EINVAL);
            let qp = e.qp;
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_INIT);
            let qp = qp.to_rtr(rc_rtr(av_to(gid, 0), dest)).unwrap();
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTR);
        }
    });
}

#[test]
fn a_refused_to_transition_names_it_and_destroys_the_qp() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let qps = || software::live_objects(ctx).map(|l| l.qps);
        let before = qps();
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        assert_eq!(qps(), before.map(|n| n + 1));
        let bad_port = ConnectedInit {
            port_num: ctx.attr().phys_port_cnt + 1,
            ..REMOTE_WRITE_INIT
        };
        // `to_init` returns the crate's Error (so `?` works anywhere) and the QP is gone. The
        // port is checked before the call.
        let e: typed_verbs::Error = qp.to_init(bad_port).expect_err("port out of range");
        assert_eq!(
            e.verb,
            Verb::ModifyQp {
                from: QpStateName::Reset,
                to: QpStateName::Init
            }
        );
        assert!(
            matches!(
                e.kind,
                ErrorKind::OutOfRange {
                    what: "port_num",
                    min: 1,
                    ..
                }
            ),
            "{e:?}"
        );
        assert_eq!(e.errno(), libc::EINVAL);
        let text = e.to_string();
        assert!(
            text.starts_with("ibv_modify_qp RESET->INIT: port_num = "),
            "{text}"
        );
        assert_eq!(qps(), before, "the refused QP is destroyed");
        // A refusal by the device names the transition too: a source GID index inside the table
        // that holds no GID (ENODATA, the kernel's rdma_get_gid_attr).
        let gid = ctx.query_gid(1, 0).unwrap();
        let gids = ctx.query_port(1).unwrap().gid_tbl_len;
        let mut empty = av_to(gid, 0);
        empty.grh.as_mut().unwrap().sgid_index = 200;
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let qp = qp.to_init(REMOTE_WRITE_INIT).unwrap();
        let e = qp.to_rtr(rc_rtr(empty, 1)).expect_err("an empty GID entry");
        if gids > 200 {
            assert_eq!(e.kind, ErrorKind::Os(libc::ENODATA), "{e}");
            assert_eq!(e.to_string(), "ibv_modify_qp INIT->RTR failed: ENODATA");
            let source = std::error::Error::source(&e).expect("the io::Error as the source");
            assert_eq!(
                source.to_string(),
                std::io::Error::from_raw_os_error(libc::ENODATA).to_string()
            );
        }
        assert_eq!(qps(), before, "the refused QP is destroyed");
        // A `try_to_*` error converts the same way, dropping the QP.
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let qp = qp.to_init(REMOTE_WRITE_INIT).unwrap();
        let e: typed_verbs::Error = qp
            .try_to_rtr(rc_rtr(empty, 1))
            .map(drop)
            .map_err(Into::into)
            .unwrap_err();
        assert_ne!(e.errno(), 0);
        assert_eq!(qps(), before);
    });
}

#[test]
fn query_gid_checks_the_port_first() {
    let ctx = open();
    let e = ctx.query_gid(0, 0).expect_err("port 0");
    assert_eq!((e.verb, e.errno()), (Verb::QueryGid, libc::EINVAL));
    assert!(matches!(
        e.kind,
        ErrorKind::OutOfRange {
            what: "port_num",
            ..
        }
    ));
    let g = ctx.query_gid(1, 0).unwrap();
    assert_ne!(g, Gid([0; 16]), "port 1 has a GID at index 0");
}

#[test]
fn error_state_is_reachable_from_reset_only_through_init() {
    // The kernel's table has no RESET -> ERR: `to_error` from RESET does not compile
    // (ui-tests/fail/to_error_from_reset.rs), and the device refuses it at the raw level, the
    // QP staying in RESET.
    common::with_pd_cq(Some(16), |_, pd, cq| {
        let qp = Qp::<Ud>::builder(pd, cq, cq).build().unwrap();
        // SAFETY: plain C data.
        let mut attr: typed_verbs::ffi::sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = IBV_QPS_ERR;
        // SAFETY: a live QP; `attr` valid for the call; IBV_QP_STATE only.
        let r = unsafe { typed_verbs::raw::ibv_modify_qp(qp.as_raw(), &mut attr, 1) };
        assert_eq!(
            r,
            Err(libc::EINVAL),
            "RESET -> ERR is not in the state table"
        );
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RESET);
        let qp = qp
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: 1,
            })
            .unwrap();
        let qp: Qp<'_, Ud, _, _, _, ErrorState> = qp.to_error().unwrap();
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_ERR);
    });
}

/// The attributes a QP has, as the device reports them (`ibv_query_qp`).
fn query_attr<T: typed_verbs::qp::QpType, St: typed_verbs::QpState>(
    qp: &Qp<'_, T, typed_verbs::OwnRq, typed_verbs::Shared, (), St>,
) -> typed_verbs::ffi::sys::ibv_qp_attr {
    // SAFETY: plain C data.
    let (mut attr, mut init) = unsafe { std::mem::zeroed() };
    // SAFETY: a live QP; out-pointers valid for the call. Every attribute the tests read is
    // in the mask.
    unsafe { typed_verbs::raw::ibv_query_qp(qp.as_raw(), &mut attr, 0x7f_ffff, &mut init) }
        .expect("ibv_query_qp");
    attr
}

/// Polls `cq` for one completion, at most 2 s; its status.
fn one_status(cq: &Cq<'_>) -> WcStatus {
    let start = std::time::Instant::now();
    let mut wc: [WorkCompletion; 1] = [WorkCompletion::new()];
    while start.elapsed() < std::time::Duration::from_secs(2) {
        if let Some(w) = cq.poll(&mut wc).unwrap().first() {
            return w.status();
        }
    }
    panic!("no completion within 2 s");
}

/// An RDMA write of 8 bytes from `a` into `target` (registered with remote write) through
/// `b`, `a`'s peer; the status of the write's completion on `cq`.
fn rdma_write_status(
    pd: &Pd<'_>,
    cq: &Cq<'_>,
    a: &Qp<'_, Rc, typed_verbs::OwnRq, typed_verbs::Shared, (), Rts>,
    target: &Mr<'_, typed_verbs::PageBuf, typed_verbs::access!(REMOTE_WRITE)>,
) -> WcStatus {
    let src = Mr::new(pd, PageBuf::new(64).unwrap(), Access::LOCAL_WRITE).unwrap();
    src.write(0, b"modified").unwrap();
    let sgl = [src.sge(0..8).unwrap()];
    let wr = SendWr::rdma_write(9, &sgl, target.remote().at(0, 8).unwrap());
    a.post_send(&wr.signaled()).unwrap();
    one_status(cq)
}

#[test]
fn modify_init_changes_what_the_peer_may_do() {
    with_gid_pd_cq(16, |ctx, gid, pd, cq| {
        let target = Mr::new(pd, PageBuf::new(64).unwrap(), Access::REMOTE_WRITE).unwrap();
        let no_remote = ConnectedInit {
            access: AccessFlags::NONE,
            ..REMOTE_WRITE_INIT
        };
        // Two pairs whose responder `b` comes up without remote write; the second one's is given
        // remote write by INIT -> INIT.
        for modify in [false, true] {
            let a = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
            let b = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
            let (an, bn) = (a.qp_num(), b.qp_num());
            let b = b.to_init(no_remote).unwrap();
            if modify {
                b.modify_init(ConnectedInitModify {
                    access: Some(AccessFlags::REMOTE_WRITE),
                    ..Default::default()
                })
                .expect("INIT -> INIT with access flags");
                assert_eq!(b.query_state().unwrap(), IBV_QPS_INIT, "still in INIT");
                assert_eq!(
                    query_attr(&b).qp_access_flags,
                    AccessFlags::REMOTE_WRITE.bits()
                );
            }
            let b = b
                .to_rtr(rc_rtr(av_to(gid, 0), an))
                .unwrap()
                .to_rts(RC_RTS)
                .unwrap();
            let a = rc_up_to(gid, a, AccessFlags::REMOTE_WRITE, bn);
            let status = rdma_write_status(pd, cq, &a, &target);
            if modify {
                assert_eq!(status, WcStatus::SUCCESS);
                let mut out = [0u8; 8];
                target.read(0, &mut out).unwrap();
                assert_eq!(&out, b"modified");
            } else {
                assert_eq!(status, WcStatus::REM_INV_REQ_ERR, "no remote write on b");
            }
            drop((a, b));
        }
        // A port the device lacks is refused, naming INIT -> INIT, and the QP stays as it was.
        let qp = Qp::<Ud>::builder(pd, cq, cq).build().unwrap();
        let qp = qp
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: 0x1111,
            })
            .unwrap();
        let e = qp
            .modify_init(UdInitModify {
                port_num: Some(ctx.attr().phys_port_cnt + 1),
                ..Default::default()
            })
            .expect_err("no such port");
        assert_eq!(
            (e.verb, e.errno()),
            (
                Verb::ModifyQp {
                    from: QpStateName::Init,
                    to: QpStateName::Init
                },
                libc::EINVAL
            )
        );
        assert!(
            e.to_string()
                .starts_with("ibv_modify_qp INIT->INIT: port_num = "),
            "checked before the call: {e}"
        );
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_INIT);
        // A UD QP's Q_Key changes in INIT.
        qp.modify_init(UdInitModify {
            qkey: Some(0x2222),
            ..Default::default()
        })
        .expect("INIT -> INIT with a qkey");
        assert_eq!(query_attr(&qp).qkey, 0x2222);
    });
}

/// Brings `qp` to RTS with `access` and `dest` as its peer.
fn rc_up<'a>(
    ctx: &Context,
    qp: Qp<'a, Rc>,
    access: AccessFlags,
    dest: u32,
) -> Qp<'a, Rc, typed_verbs::OwnRq, typed_verbs::Shared, (), Rts> {
    let gid = ctx.query_gid(1, 0).unwrap();
    rc_up_to(gid, qp, access, dest)
}

/// [`rc_up`] with the port's GID already known.
fn rc_up_to(
    gid: Gid,
    qp: Qp<'_, Rc>,
    access: AccessFlags,
    dest: u32,
) -> Qp<'_, Rc, typed_verbs::OwnRq, typed_verbs::Shared, (), Rts> {
    qp.to_init(ConnectedInit {
        access,
        ..REMOTE_WRITE_INIT
    })
    .unwrap()
    .to_rtr(rc_rtr(av_to(gid, 0), dest))
    .unwrap()
    .to_rts(RC_RTS)
    .unwrap()
}

#[test]
fn modify_rts_changes_access_rnr_timer_path_and_qkey() {
    with_gid_pd_cq(16, |ctx, gid, pd, cq| {
        let target = Mr::new(pd, PageBuf::new(64).unwrap(), Access::REMOTE_WRITE).unwrap();
        let a = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let b = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let (an, bn) = (a.qp_num(), b.qp_num());
        let b = rc_up(ctx, b, AccessFlags::NONE, an);
        let a = rc_up(ctx, a, AccessFlags::NONE, bn);
        // RTS -> RTS: remote write, another RNR timer, migration re-armed.
        b.modify_rts(RcRtsModify {
            access: Some(AccessFlags::REMOTE_WRITE),
            min_rnr_timer: Some(5),
            path_mig_state: Some(PathMigState::Rearm),
            ..Default::default()
        })
        .expect("RTS -> RTS");
        assert_eq!(b.query_state().unwrap(), IBV_QPS_RTS, "still in RTS");
        let attr = query_attr(&b);
        assert_eq!(attr.qp_access_flags, AccessFlags::REMOTE_WRITE.bits());
        assert_eq!(attr.min_rnr_timer, 5);
        assert!(
            matches!(attr.path_mig_state, 1 | 2),
            "REARM, or ARMED once armed: {}",
            attr.path_mig_state
        );
        assert_eq!(rdma_write_status(pd, cq, &a, &target), WcStatus::SUCCESS);
        // An alternate path: on RoCE the kernel refuses it ("Today the core code can only handle
        // alternate paths and APM for IB. Ban them in roce mode"), and the software device, whose
        // port is RoCE, as rxe's, does too. The refused modify changes nothing, and the error names
        // RTS -> RTS.
        let alt = AltPath {
            av: av_to(gid, 0),
            pkey_index: 0,
            port_num: 1,
            timeout: 16,
        };
        let refused = b.modify_rts(RcRtsModify {
            access: Some(AccessFlags::NONE),
            alt_path: Some(alt),
            ..Default::default()
        });
        if ctx.query_port(1).unwrap().link_layer == 2 {
            let e = refused.expect_err("an alternate path on RoCE");
            assert_eq!(
                (e.verb, e.errno()),
                (
                    Verb::ModifyQp {
                        from: QpStateName::Rts,
                        to: QpStateName::Rts
                    },
                    libc::EINVAL
                )
            );
            assert_eq!(
                query_attr(&b).qp_access_flags,
                AccessFlags::REMOTE_WRITE.bits()
            );
        } else {
            refused.expect("an alternate path on InfiniBand");
            assert_eq!(
                (query_attr(&b).alt_port_num, query_attr(&b).alt_timeout),
                (1, 16)
            );
        }
        // A UD QP's Q_Key changes in RTS.
        let ud = Qp::<Ud>::builder(pd, cq, cq)
            .build()
            .unwrap()
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: 0x1111,
            })
            .unwrap()
            .to_rtr(())
            .unwrap()
            .to_rts(SqPsn { sq_psn: 0 })
            .unwrap();
        ud.modify_rts(UdRtsModify { qkey: Some(0x3333) })
            .expect("RTS -> RTS with a qkey");
        assert_eq!(query_attr(&ud).qkey, 0x3333);
    });
}
