//! Bad input is refused before the call: each transition attribute outside its documented range
//! or past a limit the device reports is an `OutOfRange` naming the attribute, the transition
//! and the range, and the QP comes back unchanged (`try_to_*`). tests/agree_rxe.rs shows what
//! the device itself answers to the same requests at the raw level.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{av_to, note, open, with_gid_pd_cq, REMOTE_WRITE_INIT};
use typed_verbs::ffi::sys::ibv_qp_state::*;
use typed_verbs::qp_state::{Init, Rtr};
use typed_verbs::{
    AddressHandle, AddressVector, AltPath, ConnectedInit, ConnectedInitModify, Context, Cq, Error,
    ErrorKind, Gid, Pd, Qp, QpStateName, Rc, RcRtr, RcRts, RcRtsModify, Ud, UdInit, Verb,
};

fn rtr(gid: Gid, dest: u32) -> RcRtr {
    common::rc_rtr_to(av_to(gid, 0), dest, 1)
}

const RTS: RcRts = common::rc_rts_from(1);

/// Asserts `e` is the `OutOfRange` of `what` with `value` and the range `min..=max`, from the
/// transition `from -> to` (common's check), and that it reads as such.
#[track_caller]
fn out_of_range(
    e: &Error,
    (from, to): (QpStateName, QpStateName),
    what: &str,
    value: u64,
    (min, max): (u64, u64),
) {
    common::assert_out_of_range::<()>(
        Err(e.clone()),
        Verb::ModifyQp { from, to },
        what,
        value,
        min,
        max,
    );
    let text = e.to_string();
    assert!(
        text.starts_with(&format!(
            "ibv_modify_qp {from}->{to}: {what} = {value} is out of range"
        )),
        "{text}"
    );
}

const RESET_INIT: (QpStateName, QpStateName) = (QpStateName::Reset, QpStateName::Init);
const INIT_RTR: (QpStateName, QpStateName) = (QpStateName::Init, QpStateName::Rtr);
const RTR_RTS: (QpStateName, QpStateName) = (QpStateName::Rtr, QpStateName::Rts);

/// An RC QP of `pd` in RTR, connected to itself.
fn rc_in_rtr<'a>(
    ctx: &Context,
    pd: &'a Pd<'a>,
    cq: &'a Cq<'a>,
) -> Qp<'a, Rc, typed_verbs::OwnRq, typed_verbs::Shared, (), Rtr> {
    let gid = ctx.query_gid(1, 0).unwrap();
    let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
    let n = qp.qp_num();
    qp.to_init(REMOTE_WRITE_INIT)
        .unwrap()
        .to_rtr(rtr(gid, n))
        .unwrap()
}

#[test]
fn rts_attributes_outside_their_ranges_are_refused_before_the_call() {
    common::with_pd_cq(Some(8), |ctx, pd, cq| {
        let mut qp = rc_in_rtr(ctx, pd, cq);
        let init_rd_atom = u64::from(ctx.attr().max_qp_init_rd_atom);
        let mut cases = vec![
            (
                RcRts {
                    retry_cnt: 8,
                    ..RTS
                },
                "retry_cnt",
                8,
                (0, 7),
            ),
            (
                RcRts {
                    rnr_retry: 8,
                    ..RTS
                },
                "rnr_retry",
                8,
                (0, 7),
            ),
            (RcRts { timeout: 32, ..RTS }, "timeout", 32, (0, 31)),
        ];
        if init_rd_atom < 255 {
            cases.push((
                RcRts {
                    max_rd_atomic: (init_rd_atom + 1) as u8,
                    ..RTS
                },
                "max_rd_atomic",
                init_rd_atom + 1,
                (0, init_rd_atom),
            ));
        }
        for (attr, what, value, range) in cases {
            let e = qp.try_to_rts(attr).expect_err(what);
            out_of_range(&e.error, RTR_RTS, what, value, range);
            qp = e.qp;
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTR, "{what}: unchanged");
        }
        let qp = qp
            .to_rts(RcRts { timeout: 31, ..RTS })
            .expect("the edges are in range");
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTS);
    });
}

#[test]
fn rtr_attributes_outside_their_ranges_are_refused_before_the_call() {
    with_gid_pd_cq(8, |ctx, gid, pd, cq| {
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let n = qp.qp_num();
        let mut qp: Qp<'_, Rc, _, _, _, Init> = qp.to_init(REMOTE_WRITE_INIT).unwrap();
        let rd_atom = u64::from(ctx.attr().max_qp_rd_atom);
        let ports = u64::from(ctx.attr().phys_port_cnt);
        let mut cases = vec![
            (
                RcRtr {
                    min_rnr_timer: 99,
                    ..rtr(gid, n)
                },
                "min_rnr_timer",
                99,
                (0, 31),
            ),
            (
                RcRtr {
                    av: AddressVector {
                        port_num: 0,
                        ..av_to(gid, 0)
                    },
                    ..rtr(gid, n)
                },
                "ah_attr.port_num",
                0,
                (1, ports),
            ),
        ];
        if rd_atom < 255 {
            // rxe0 takes 255 at the raw level (tests/agree_rxe.rs), past its own max_qp_rd_atom.
            cases.push((
                RcRtr {
                    max_dest_rd_atomic: 255,
                    ..rtr(gid, n)
                },
                "max_dest_rd_atomic",
                255,
                (0, rd_atom),
            ));
        }
        let gids = ctx.query_port(1).unwrap().gid_tbl_len;
        if let Ok(past) = u8::try_from(gids) {
            cases.push((
                RcRtr {
                    av: av_to(gid, past),
                    ..rtr(gid, n)
                },
                "ah_attr.grh.sgid_index",
                past.into(),
                (0, u64::from(past) - 1),
            ));
        } else {
            note(
                "rtr_attributes_outside_their_ranges_are_refused_before_the_call",
                format!("gid_tbl_len {gids}: every u8 sgid_index is inside the table"),
            );
        }
        for (attr, what, value, range) in cases {
            let e = qp.try_to_rtr(attr).expect_err(what);
            out_of_range(&e.error, INIT_RTR, what, value, range);
            qp = e.qp;
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_INIT, "{what}: unchanged");
        }
        let edge = RcRtr {
            min_rnr_timer: 31,
            max_dest_rd_atomic: rd_atom.min(255) as u8,
            ..rtr(gid, n)
        };
        let qp = qp.to_rtr(edge).expect("the edges are in range");
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTR);
    });
}

#[test]
fn pkey_index_past_the_port_table_is_refused_before_the_call() {
    // rxe0 takes a P_Key index of 500 at the raw level (tests/agree_rxe.rs); the typed layer
    // holds it to the table the port reports.
    let ctx = open();
    let pkeys = u64::from(ctx.query_port(1).unwrap().pkey_tbl_len);
    if pkeys == 0 {
        common::skip(
            "pkey_index_past_the_port_table_is_refused_before_the_call",
            "the port reports no P_Key table length",
        );
        return;
    }
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let e = qp
        .try_to_init(ConnectedInit {
            pkey_index: 500,
            ..REMOTE_WRITE_INIT
        })
        .expect_err("pkey_index 500");
    out_of_range(&e.error, RESET_INIT, "pkey_index", 500, (0, pkeys - 1));
    let qp = e.qp.to_init(REMOTE_WRITE_INIT).unwrap();
    let e = qp
        .modify_init(ConnectedInitModify {
            pkey_index: Some(500),
            ..Default::default()
        })
        .expect_err("REMOTE_WRITE_INIT -> REMOTE_WRITE_INIT with pkey_index 500");
    out_of_range(
        &e,
        (QpStateName::Init, QpStateName::Init),
        "pkey_index",
        500,
        (0, pkeys - 1),
    );
    let ud = Qp::<Ud>::builder(&pd, &cq, &cq).build().unwrap();
    let e = ud
        .try_to_init(UdInit {
            port_num: 1,
            pkey_index: 500,
            qkey: 1,
        })
        .expect_err("UD pkey_index 500");
    out_of_range(&e.error, RESET_INIT, "pkey_index", 500, (0, pkeys - 1));
    assert_eq!(e.qp.query_state().unwrap(), IBV_QPS_RESET);
}

#[test]
fn rts_modify_attributes_outside_their_ranges_are_refused_before_the_call() {
    with_gid_pd_cq(8, |ctx, gid, pd, cq| {
        let qp = rc_in_rtr(ctx, pd, cq).to_rts(RTS).unwrap();
        let rts = (QpStateName::Rts, QpStateName::Rts);
        let e = qp
            .modify_rts(RcRtsModify {
                min_rnr_timer: Some(32),
                ..Default::default()
            })
            .expect_err("min_rnr_timer 32");
        out_of_range(&e, rts, "min_rnr_timer", 32, (0, 31));
        let alt = AltPath {
            av: av_to(gid, 0),
            pkey_index: 0,
            port_num: 1,
            timeout: 32,
        };
        let e = qp
            .modify_rts(RcRtsModify {
                alt_path: Some(alt),
                ..Default::default()
            })
            .expect_err("alt_timeout 32");
        out_of_range(&e, rts, "alt_timeout", 32, (0, 31));
        let ports = ctx.attr().phys_port_cnt;
        let e = qp
            .modify_rts(RcRtsModify {
                alt_path: Some(AltPath {
                    port_num: ports + 1,
                    timeout: 14,
                    ..alt
                }),
                ..Default::default()
            })
            .expect_err("alt_port_num past the ports");
        out_of_range(
            &e,
            rts,
            "alt_port_num",
            u64::from(ports) + 1,
            (1, ports.into()),
        );
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTS);
        qp.modify_rts(RcRtsModify {
            min_rnr_timer: Some(31),
            ..Default::default()
        })
        .expect("31 is in range");
    });
}

#[test]
fn address_handle_port_and_gid_index_are_checked_before_the_call() {
    let ctx = open();
    let gid = ctx.query_gid(1, 0).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let ports = u64::from(ctx.attr().phys_port_cnt);
    let e = AddressHandle::new(
        &pd,
        AddressVector {
            port_num: 0,
            ..av_to(gid, 0)
        },
    )
    .expect_err("port 0");
    assert_eq!(e.verb, Verb::CreateAh);
    assert_eq!(
        e.kind,
        ErrorKind::OutOfRange {
            what: "port_num",
            value: 0,
            min: 1,
            max: ports
        }
    );
    let gids = ctx.query_port(1).unwrap().gid_tbl_len;
    if gids > 200 {
        // Inside the table, but no GID there: the device's answer (rdma_get_gid_attr).
        let e = AddressHandle::new(&pd, av_to(gid, 200)).expect_err("an empty GID entry");
        common::assert_os_error(&e, Verb::CreateAh, libc::ENODATA);
    }
    if let Ok(past) = u8::try_from(gids) {
        let e = AddressHandle::new(&pd, av_to(gid, past)).expect_err("past the GID table");
        assert!(
            matches!(
                e.kind,
                ErrorKind::OutOfRange {
                    what: "grh.sgid_index",
                    ..
                }
            ),
            "{e}"
        );
    }
    AddressHandle::new(&pd, av_to(gid, 0)).expect("GID index 0");
}

#[test]
fn query_gid_past_the_table_is_refused_before_the_call() {
    let ctx = open();
    let gids = ctx.query_port(1).unwrap().gid_tbl_len;
    let e = ctx.query_gid(1, gids).expect_err("past the table");
    assert_eq!(
        (e.verb, e.kind),
        (
            Verb::QueryGid,
            ErrorKind::OutOfRange {
                what: "index",
                value: gids.into(),
                min: 0,
                max: u64::from(gids) - 1
            }
        )
    );
    let e = ctx.query_gid(1, u32::MAX).expect_err("far past the table");
    assert_eq!(e.errno(), libc::EINVAL);
    if gids > 200 {
        assert_eq!(
            ctx.query_gid(1, 200).unwrap(),
            Gid([0; 16]),
            "an empty entry"
        );
    }
}

#[test]
fn sgid_index_past_a_short_gid_table_is_refused_before_the_call() {
    // sw0's and rxe0's GID tables (1024) are longer than a u8 index reaches: a software device
    // with a table of 8 shows the check.
    let ctx = common::open_short_gid_table("sw-bad-input-gids");
    let gid = ctx.query_gid(1, 0).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
    let n = qp.qp_num();
    let qp = qp.to_init(REMOTE_WRITE_INIT).unwrap();
    let e = qp
        .try_to_rtr(RcRtr {
            av: av_to(gid, 8),
            ..rtr(gid, n)
        })
        .expect_err("sgid_index 8 of 8");
    out_of_range(&e.error, INIT_RTR, "ah_attr.grh.sgid_index", 8, (0, 7));
    // Inside the table but empty: the device's ENODATA.
    let e =
        e.qp.try_to_rtr(RcRtr {
            av: av_to(gid, 7),
            ..rtr(gid, n)
        })
        .expect_err("sgid_index 7: no GID there");
    assert_eq!(e.error.kind, ErrorKind::Os(libc::ENODATA));
    e.qp.to_rtr(rtr(gid, n)).expect("sgid_index 0");
    let e = AddressHandle::new(&pd, av_to(gid, 8)).expect_err("past the table");
    assert_eq!(
        (e.verb, e.kind),
        (
            Verb::CreateAh,
            ErrorKind::OutOfRange {
                what: "grh.sgid_index",
                value: 8,
                min: 0,
                max: 7
            }
        )
    );
    let e = ctx.query_gid(1, 8).expect_err("past the table");
    assert!(
        matches!(e.kind, ErrorKind::OutOfRange { what: "index", .. }),
        "{e}"
    );
}

/// `av_to(gid, 0)` with one field changed by `f`.
fn av_with(gid: Gid, f: impl FnOnce(&mut AddressVector)) -> AddressVector {
    let mut av = av_to(gid, 0);
    f(&mut av);
    av
}

/// The fields of an address vector checked before the call, each just past its range: how to
/// set it, its name after the struct's prefix (`ah_attr.`, `alt_ah_attr.` or none), its value
/// and its range.
type AvCase = (fn(&mut AddressVector), &'static str, u64, (u64, u64));

const AV_CASES: [AvCase; 3] = [
    (|av| av.sl = 16, "sl", 16, (0, 15)),
    (|av| av.static_rate = 25, "static_rate", 25, (0, 24)),
    (
        |av| av.grh.as_mut().unwrap().flow_label = 0x10_0000,
        "grh.flow_label",
        0x10_0000,
        (0, 0xf_ffff),
    ),
];

#[test]
fn address_vector_fields_outside_their_ranges_are_refused_before_the_call() {
    with_gid_pd_cq(8, |_, gid, pd, cq| {
        // INIT -> RTR of RC and UC: `ah_attr.*`; the QP stays in INIT.
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let n = qp.qp_num();
        let mut qp = qp.to_init(REMOTE_WRITE_INIT).unwrap();
        for (set, what, value, range) in AV_CASES {
            let e = qp
                .try_to_rtr(RcRtr {
                    av: av_with(gid, set),
                    ..rtr(gid, n)
                })
                .expect_err(what);
            out_of_range(&e.error, INIT_RTR, &format!("ah_attr.{what}"), value, range);
            qp = e.qp;
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_INIT, "{what}: unchanged");
        }
        let uc = Qp::<typed_verbs::Uc>::builder(pd, cq, cq).build().unwrap();
        let un = uc.qp_num();
        let mut uc = uc.to_init(REMOTE_WRITE_INIT).unwrap();
        for (set, what, value, range) in AV_CASES {
            let attr = typed_verbs::UcRtr {
                av: av_with(gid, set),
                path_mtu: typed_verbs::Mtu::Mtu1024,
                dest_qp_num: un,
                rq_psn: 0,
            };
            let e = uc.try_to_rtr(attr).expect_err(what);
            out_of_range(&e.error, INIT_RTR, &format!("ah_attr.{what}"), value, range);
            uc = e.qp;
            assert_eq!(
                uc.query_state().unwrap(),
                IBV_QPS_INIT,
                "UC {what}: unchanged"
            );
        }
        // The edges of the ranges, and every hop limit and traffic class, pass the checks.
        let edges = av_with(gid, |av| {
            av.sl = 15;
            let g = av.grh.as_mut().unwrap();
            g.flow_label = 0xf_ffff;
            g.hop_limit = 255;
            g.traffic_class = 255;
        });
        let qp = qp
            .to_rtr(RcRtr {
                av: edges,
                ..rtr(gid, n)
            })
            .expect("sl 15, flow label 0xfffff, hop limit and traffic class 255");
        assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTR);
    });
}

#[test]
fn an_alternate_path_outside_its_ranges_is_refused_before_the_call() {
    with_gid_pd_cq(8, |ctx, gid, pd, cq| {
        let qp = rc_in_rtr(ctx, pd, cq).to_rts(RTS).expect("RTS");
        let alt = AltPath {
            av: av_to(gid, 0),
            pkey_index: 0,
            port_num: 1,
            timeout: 14,
        };
        for (set, what, value, range) in AV_CASES {
            let e = qp
                .modify_rts(RcRtsModify {
                    alt_path: Some(AltPath {
                        av: av_with(gid, set),
                        ..alt
                    }),
                    ..Default::default()
                })
                .expect_err(what);
            out_of_range(
                &e,
                (QpStateName::Rts, QpStateName::Rts),
                &format!("alt_ah_attr.{what}"),
                value,
                range,
            );
            assert_eq!(qp.query_state().unwrap(), IBV_QPS_RTS, "{what}: unchanged");
        }
    });
}

#[test]
fn address_handle_fields_outside_their_ranges_are_refused_before_the_call() {
    let ctx = open();
    let gid = ctx.query_gid(1, 0).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let live = typed_verbs::software::live_objects(&ctx);
    for (set, what, value, (min, max)) in AV_CASES {
        let r = AddressHandle::new(&pd, av_with(gid, set));
        common::assert_out_of_range(r, Verb::CreateAh, what, value, min, max);
    }
    // Nothing was made for the refused ones (on the software device, which counts).
    assert_eq!(typed_verbs::software::live_objects(&ctx), live);
    AddressHandle::new(
        &pd,
        av_with(gid, |av| {
            av.sl = 15;
            let g = av.grh.as_mut().unwrap();
            g.flow_label = 0xf_ffff;
            g.hop_limit = 255;
            g.traffic_class = 255;
        }),
    )
    .expect("the edges of the ranges");
}

#[test]
fn an_endpoint_on_an_empty_gid_entry_is_refused_naming_the_index() {
    common::with_pd_cq(Some(4), |ctx, pd, cq| {
        let qp = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        if ctx.query_port(1).unwrap().gid_tbl_len <= 200 {
            return note(
                "an_endpoint_on_an_empty_gid_entry_is_refused_naming_the_index",
                "the GID table is too short for index 200",
            );
        }
        // Index 200 is empty on sw0 and rxe0 (one GID per address of the netdev).
        assert_eq!(
            ctx.query_gid(1, 200).unwrap(),
            Gid([0; 16]),
            "an empty entry"
        );
        let e = qp.endpoint(1, 200).expect_err("an empty GID entry");
        assert_eq!(
            (e.verb, &e.kind),
            (
                Verb::QueryGid,
                &ErrorKind::EmptyGid {
                    port: 1,
                    index: 200
                }
            )
        );
        assert_eq!(e.errno(), libc::ENODATA);
        assert!(
            e.to_string()
                .contains("GID index 200 of port 1 holds no GID"),
            "{e}"
        );
        qp.endpoint(1, 0).expect("index 0 holds the port's GID");
    });
}
