//! Shared receive queues, queue pairs and multicast membership.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{
    assert_out_of_range, destroyed, feature, open, skip, software_only, Drops, LeakCheck,
};
use std::collections::HashSet;
use typed_verbs::qp::SrqCapable;
use typed_verbs::software::{self, LiveObjects, SwConfig};
use typed_verbs::{
    wc_flags, CompChannel, Context, Cq, CqEx, Gid, OwnRq, ParentDomain, Pd, Qp, QpCap, QpType,
    RawPacket, Rc, Shared, SingleThreaded, Srq, SrqAttr, Standard, Uc, Ud, UsesSrq, Verb,
};

/// Capabilities to ask for, within the device's limits.
fn wanted(ctx: &Context) -> QpCap {
    let a = ctx.attr();
    QpCap {
        max_send_wr: 10.min(a.max_qp_wr),
        max_recv_wr: 20.min(a.max_qp_wr),
        max_send_sge: 2.min(a.max_sge),
        max_recv_sge: 3.min(a.max_sge),
        max_inline_data: 0,
    }
}

#[track_caller]
fn assert_caps_at_least(got: QpCap, want: QpCap, srq: bool) {
    assert!(got.max_send_wr >= want.max_send_wr, "{got:?} < {want:?}");
    assert!(got.max_send_sge >= want.max_send_sge, "{got:?} < {want:?}");
    assert!(
        got.max_inline_data >= want.max_inline_data,
        "{got:?} < {want:?}"
    );
    if srq {
        assert_eq!(
            (got.max_recv_wr, got.max_recv_sge),
            (0, 0),
            "a QP on an SRQ has no receive queue of its own"
        );
    } else {
        assert!(got.max_recv_wr >= want.max_recv_wr, "{got:?} < {want:?}");
        assert!(got.max_recv_sge >= want.max_recv_sge, "{got:?} < {want:?}");
    }
}

/// Builds a QP of type `T` with its own RQ asking for `want`.
fn own_rq<'a, T: QpType>(
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_>,
    want: QpCap,
) -> typed_verbs::Result<Qp<'a, T>> {
    Qp::<T>::builder(pd, cq, cq)
        .max_send_wr(want.max_send_wr)
        .max_recv_wr(want.max_recv_wr)
        .max_send_sge(want.max_send_sge)
        .max_recv_sge(want.max_recv_sge)
        .max_inline_data(want.max_inline_data)
        .build()
}

/// Builds a QP of type `T` on `srq` asking for the send caps of `want`.
fn on_srq<'a, T: QpType + SrqCapable>(
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_>,
    srq: &'a Srq<'_>,
    want: QpCap,
) -> typed_verbs::Result<Qp<'a, T, UsesSrq>> {
    Qp::<T>::builder_with_srq(pd, cq, cq, srq)
        .max_send_wr(want.max_send_wr)
        .max_send_sge(want.max_send_sge)
        .build()
}

/// Checks a created QP: actual caps, query_caps, qp_num.
#[track_caller]
fn check_qp<T: QpType, R: typed_verbs::qp::RecvSide, S: typed_verbs::Threading, C>(
    ctx: &Context,
    qp: &Qp<'_, T, R, S, C>,
    want: QpCap,
    srq: bool,
    nums: &mut HashSet<u32>,
) {
    let caps = qp.caps();
    assert_caps_at_least(caps, want, srq);
    let q = qp.query_caps().expect("ibv_query_qp");
    // A real provider may leave the receive caps of an SRQ QP unset in ibv_query_qp (rxe does):
    // check them on the software device only.
    assert_caps_at_least(q, want, srq && ctx.is_software());
    // rxe reports the work request counts as asked from ibv_create_qp and the rounded-up rings
    // from ibv_query_qp; the SGE and inline sizes are the same from both.
    assert!(q.max_send_wr >= caps.max_send_wr, "{q:?} vs {caps:?}");
    assert_eq!(
        (q.max_send_sge, q.max_inline_data),
        (caps.max_send_sge, caps.max_inline_data)
    );
    if !srq {
        assert!(q.max_recv_wr >= caps.max_recv_wr, "{q:?} vs {caps:?}");
        assert_eq!(q.max_recv_sge, caps.max_recv_sge);
    }
    assert_ne!(qp.qp_num(), 0, "qp_num");
    assert!(qp.qp_num() <= 0x00ff_ffff, "QP numbers are 24 bits");
    assert!(nums.insert(qp.qp_num()), "qp_num {} reused", qp.qp_num());
}

fn srq_supported(ctx: &Context, test: &str) -> bool {
    let a = ctx.attr();
    if a.max_srq == 0 || a.max_srq_wr == 0 || a.max_srq_sge == 0 {
        skip(test, format!("{} has no SRQs", ctx.device_name()));
        false
    } else {
        true
    }
}

/// The test device's context when it has SRQs (a SKIP line for `test` when not).
fn srq_ctx(test: &str) -> Option<Context> {
    let ctx = open();
    srq_supported(&ctx, test).then_some(ctx)
}

/// The caps a QP builder asks for when told nothing: one WR and one SGE each way, no inline data.
const MINIMAL: QpCap = QpCap {
    max_send_wr: 1,
    max_recv_wr: 1,
    max_send_sge: 1,
    max_recv_sge: 1,
    max_inline_data: 0,
};

#[test]
fn srq_sizes_are_at_least_requested_created_and_queried() {
    const TEST: &str = "srq_sizes_are_at_least_requested_created_and_queried";
    let Some(ctx) = srq_ctx(TEST) else {
        return;
    };
    let a = ctx.attr().clone();
    let pd = Pd::new(&ctx).expect("pd");
    let mut sizes = vec![
        (1, 1),
        (2, 1),
        (100.min(a.max_srq_wr), 3.min(a.max_srq_sge)),
    ];
    if ctx.is_software() {
        sizes.push((a.max_srq_wr, a.max_srq_sge));
    } else {
        skip(
            TEST,
            "an SRQ at the device's limits is created on the software device only (on a real \
             device it could take hundreds of MB)",
        );
    }
    for (wr, sge) in sizes {
        let srq = Srq::builder(&pd)
            .max_wr(wr)
            .max_sge(sge)
            .build()
            .unwrap_or_else(|e| panic!("srq {wr}x{sge}: {e}"));
        let got = srq.attr();
        assert!(got.max_wr >= wr, "{got:?} for {wr}");
        assert!(got.max_sge >= sge, "{got:?} for {sge}");
        assert_eq!(got.srq_limit, 0, "created unarmed");
        // rxe reports max_wr as asked from ibv_create_srq and the ring's size (rounded up)
        // from ibv_query_srq: both are at least what was asked.
        let now = srq.query().expect("ibv_query_srq");
        assert!(now.max_wr >= got.max_wr, "{now:?} vs {got:?} for {wr}");
        assert_eq!((now.max_sge, now.srq_limit), (got.max_sge, got.srq_limit));
        destroyed(srq.destroy());
    }
    // The defaults: one WR, one SGE.
    let srq = Srq::builder(&pd).build().expect("default srq");
    assert!(srq.attr().max_wr >= 1 && srq.attr().max_sge >= 1);
    assert_ne!(srq.attr(), SrqAttr::default());
}

#[test]
fn srq_sizes_out_of_range() {
    const TEST: &str = "srq_sizes_out_of_range";
    let ctx = open();
    let a = ctx.attr().clone();
    let pd = Pd::new(&ctx).expect("pd");
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    let max_wr = u64::from(a.max_srq_wr);
    let max_sge = u64::from(a.max_srq_sge);
    // Each case: the attribute, the value asked, and the device's maximum for it (the minimum
    // is 1); case `i` carries token `i + 1`.
    let cases = [
        ("attr.max_wr", 0, max_wr),
        ("attr.max_wr", max_wr + 1, max_wr),
        ("attr.max_sge", 0, max_sge),
        ("attr.max_sge", max_sge + 1, max_sge),
    ];
    for (id, (what, value, max)) in (1..).zip(cases) {
        let b = Srq::builder(&pd);
        let b = match what {
            "attr.max_wr" => b.max_wr(value as u32),
            _ => b.max_sge(value as u32),
        };
        let r = b.context(drops.token(id)).build();
        assert_out_of_range(r, Verb::CreateSrq, what, value, 1, max);
    }
    // Below the cap the SRQ's type promises (fixed-size lists rely on it).
    assert_out_of_range(
        Srq::builder(&pd)
            .sge_cap::<2>()
            .max_sge(1)
            .context(drops.token(5))
            .build(),
        Verb::CreateSrq,
        "attr.max_sge",
        1,
        2,
        max_sge,
    );
    assert_eq!(
        drops.count(),
        5,
        "every failed builder's context dropped once"
    );
    leaks.assert_unchanged("rejected SRQs");
    let text = Srq::builder(&pd)
        .max_wr(0)
        .build()
        .err()
        .unwrap()
        .to_string();
    assert!(
        text.starts_with("ibv_create_srq:") && text.contains("attr.max_wr = 0"),
        "{text}"
    );
}

#[test]
fn srq_limits_of_a_registered_device() {
    const TEST: &str = "srq_limits_of_a_registered_device";
    let Some(ctx) = common::registered_for(
        TEST,
        "software::register",
        "srq-limits-custom",
        SwConfig {
            max_srq_wr: 33,
            max_srq_sge: 3,
            ..SwConfig::default()
        },
    ) else {
        return;
    };
    let pd = Pd::new(&ctx).unwrap();
    let srq = Srq::builder(&pd)
        .max_wr(33)
        .max_sge(3)
        .build()
        .expect("at the limits");
    assert!(srq.attr().max_wr >= 33 && srq.attr().max_sge == 3);
    assert_out_of_range(
        Srq::builder(&pd).max_wr(34).build(),
        Verb::CreateSrq,
        "attr.max_wr",
        34,
        1,
        33,
    );
    assert_out_of_range(
        Srq::builder(&pd).max_sge(4).build(),
        Verb::CreateSrq,
        "attr.max_sge",
        4,
        1,
        3,
    );
}

#[test]
fn srq_user_context_is_readable_and_dropped_on_destroy() {
    const TEST: &str = "srq_user_context_is_readable_and_dropped_on_destroy";
    let Some(ctx) = srq_ctx(TEST) else {
        return;
    };
    let pd = Pd::new(&ctx).unwrap();
    let drops = Drops::new();
    let srq = Srq::builder(&pd).context(drops.token(5)).build().unwrap();
    assert_eq!(srq.user_context().id, 5);
    assert_eq!(drops.count(), 0);
    destroyed(srq.destroy());
    assert_eq!(drops.count(), 1);
    let srq = Srq::builder(&pd).context(drops.token(6)).build().unwrap();
    assert_eq!(srq.user_context().id, 6);
    drop(srq);
    assert_eq!(drops.count(), 2);
}

#[test]
fn qp_of_each_type_with_its_own_rq() {
    const TEST: &str = "qp_of_each_type_with_its_own_rq";
    common::with_pd_cq(Some(64), |ctx, pd, cq| {
        let want = wanted(ctx);
        let mut nums = HashSet::new();
        let leaks = LeakCheck::new(ctx, TEST);

        let rc = own_rq::<Rc>(pd, cq, want).expect("RC QP");
        check_qp(ctx, &rc, want, false, &mut nums);
        let uc = own_rq::<Uc>(pd, cq, want).expect("UC QP");
        check_qp(ctx, &uc, want, false, &mut nums);
        let ud = own_rq::<Ud>(pd, cq, want).expect("UD QP");
        check_qp(ctx, &ud, want, false, &mut nums);
        assert!(!rc.sq_sig_all());
        let mut raw_count = 0;
        if let Some(raw) = feature(
            ctx,
            TEST,
            "RAW_PACKET QPs",
            own_rq::<RawPacket>(pd, cq, want),
        ) {
            check_qp(ctx, &raw, want, false, &mut nums);
            raw_count = 1;
            destroyed(raw.destroy());
        }
        if let Some(b) = leaks.before() {
            let now = software::live_objects(ctx).unwrap();
            assert_eq!(now.qps, b.qps + 3, "three QPs live (RAW_PACKET destroyed)");
        }
        assert_eq!(nums.len(), 3 + raw_count);
        destroyed(rc.destroy());
        destroyed(uc.destroy());
        destroyed(ud.destroy());
        leaks.assert_unchanged("QPs destroyed");

        // sq_sig_all and inline data are passed through.
        let signaled = Qp::<Rc>::builder(pd, cq, cq)
            .sq_sig_all(true)
            .max_inline_data(64)
            .build()
            .expect("signaled QP with inline data");
        assert!(signaled.sq_sig_all());
        assert!(signaled.caps().max_inline_data >= 64);
    });
}

#[test]
fn qp_with_srq_has_no_recv_caps_and_srq_is_shared() {
    const TEST: &str = "qp_with_srq_has_no_recv_caps_and_srq_is_shared";
    let Some(ctx) = srq_ctx(TEST) else {
        return;
    };
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(32).build().unwrap();
    let srq = Srq::builder(&pd).max_wr(16).build().unwrap();
    let leaks = LeakCheck::new(&ctx, TEST);
    let want = QpCap {
        max_recv_wr: 0,
        max_recv_sge: 0,
        ..wanted(&ctx)
    };
    let mut nums = HashSet::new();
    // One SRQ shared by an RC and a UD QP.
    let rc: Qp<'_, Rc, UsesSrq> = on_srq(&pd, &cq, &srq, want).expect("RC on an SRQ");
    check_qp(&ctx, &rc, want, true, &mut nums);
    let ud: Qp<'_, Ud, UsesSrq> = on_srq(&pd, &cq, &srq, want).expect("UD on the same SRQ");
    check_qp(&ctx, &ud, want, true, &mut nums);
    if let Some(b) = leaks.before() {
        let now = software::live_objects(&ctx).unwrap();
        assert_eq!((now.qps, now.srqs), (b.qps + 2, b.srqs));
    }
    destroyed(rc.destroy());
    destroyed(ud.destroy());
    leaks.assert_unchanged("SRQ QPs destroyed");
    destroyed(srq.destroy());
}

#[test]
fn qp_cq_combinations() {
    const TEST: &str = "qp_cq_combinations";
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let legacy = Cq::builder(&ctx).cqe(16).build().unwrap();
    let ex = CqEx::<Standard>::builder(&ctx).cqe(16).build().unwrap();
    let want = wanted(&ctx);
    let mut nums = HashSet::new();

    // One CQ as both send and receive CQ, legacy and extended.
    let a: Qp<'_, Rc, OwnRq, Shared> = Qp::<Rc>::builder(&pd, &legacy, &legacy).build().unwrap();
    check_qp(&ctx, &a, MINIMAL, false, &mut nums);
    let b = Qp::<Ud>::builder(&pd, &ex, &ex).build().unwrap();
    check_qp(&ctx, &b, MINIMAL, false, &mut nums);
    // Mixed: legacy send CQ, extended receive CQ, and the other way round.
    let c = own_rq::<Rc>(&pd, &legacy, want).unwrap();
    check_qp(&ctx, &c, want, false, &mut nums);
    let d: Qp<'_, Uc> = Qp::<Uc>::builder(&pd, &legacy, &ex).build().unwrap();
    let e: Qp<'_, Uc> = Qp::<Uc>::builder(&pd, &ex, &legacy).build().unwrap();
    check_qp(&ctx, &d, MINIMAL, false, &mut nums);
    check_qp(&ctx, &e, MINIMAL, false, &mut nums);
    // A SINGLE_THREADED CQ makes the QP SingleThreaded.
    let st = CqEx::<wc_flags!(BYTE_LEN), SingleThreaded>::builder(&ctx).build();
    if let Some(st) = feature(&ctx, TEST, "SINGLE_THREADED CQs", st) {
        let f: Qp<'_, Rc, OwnRq, SingleThreaded> =
            Qp::<Rc>::builder(&pd, &st, &legacy).build().unwrap();
        check_qp(&ctx, &f, MINIMAL, false, &mut nums);
        destroyed(f.destroy());
        destroyed(st.destroy());
    }
    for qp in [a, c] {
        destroyed(qp.destroy());
    }
    destroyed(b.destroy());
    destroyed(d.destroy());
    destroyed(e.destroy());
    // Once no QP uses them, the CQs can be destroyed.
    destroyed(legacy.destroy());
    destroyed(ex.destroy());
}

#[test]
fn qp_caps_over_device_limits_are_out_of_range() {
    const TEST: &str = "qp_caps_over_device_limits_are_out_of_range";
    let ctx = open();
    let a = ctx.attr().clone();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).build().unwrap();
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    let (wr, sge) = (u64::from(a.max_qp_wr), u64::from(a.max_sge));
    let b = || Qp::<Rc>::builder(&pd, &cq, &cq);
    // Each cap one over the device's maximum, with the minimum the type promises (one SGE);
    // each case carries its own token.
    let over = [
        ("cap.max_send_wr", wr + 1, 0, wr, 1),
        ("cap.max_send_sge", sge + 1, 1, sge, 2),
        ("cap.max_recv_wr", wr + 1, 0, wr, 3),
        ("cap.max_recv_sge", sge + 1, 1, sge, 4),
    ];
    for (what, value, min, max, id) in over {
        let v = value as u32;
        let r = match what {
            "cap.max_send_wr" => b().max_send_wr(v),
            "cap.max_send_sge" => b().max_send_sge(v),
            "cap.max_recv_wr" => b().max_recv_wr(v),
            _ => b().max_recv_sge(v),
        }
        .context(drops.token(id))
        .build();
        assert_out_of_range(r, Verb::CreateQp, what, value, min, max);
    }
    // Below the cap the QP's type promises (fixed-size lists rely on it): refused before the call.
    assert_out_of_range(
        b().send_sge_cap::<2>()
            .max_send_sge(1)
            .context(drops.token(7))
            .build(),
        Verb::CreateQp,
        "cap.max_send_sge",
        1,
        2,
        sge,
    );
    assert_out_of_range(
        b().recv_sge_cap::<3>()
            .max_recv_sge(2)
            .context(drops.token(8))
            .build(),
        Verb::CreateQp,
        "cap.max_recv_sge",
        2,
        3,
        sge,
    );
    assert_out_of_range(
        Qp::<Ud>::builder(&pd, &cq, &cq)
            .max_send_wr(u32::MAX)
            .context(drops.token(5))
            .build(),
        Verb::CreateQp,
        "cap.max_send_wr",
        u32::MAX.into(),
        0,
        wr,
    );
    assert_eq!(
        drops.count(),
        7,
        "every refused builder's context dropped once"
    );
    // OutOfRange is decided before ibv_create_qp: no QP was ever made.
    leaks.assert_unchanged("over-limit QPs");
    if srq_supported(&ctx, TEST) {
        let srq = Srq::builder(&pd).build().unwrap();
        let leaks = LeakCheck::new(&ctx, TEST);
        assert_out_of_range(
            Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq)
                .max_send_sge(a.max_sge + 1)
                .context(drops.token(6))
                .build(),
            Verb::CreateQp,
            "cap.max_send_sge",
            sge + 1,
            1, // the type promises one SGE
            sge,
        );
        assert_eq!(drops.count(), 8);
        leaks.assert_unchanged("over-limit SRQ QP");
    }
    // At the limits it works (on a real device that could take hundreds of MB: software only).
    if !software_only(&ctx, TEST, "a QP at the device's limits") {
        return;
    }
    let qp = b()
        .max_send_wr(a.max_qp_wr)
        .max_recv_wr(a.max_qp_wr)
        .max_send_sge(a.max_sge)
        .max_recv_sge(a.max_sge)
        .build()
        .expect("caps at the device limits");
    assert_caps_at_least(
        qp.caps(),
        QpCap {
            max_send_wr: a.max_qp_wr,
            max_recv_wr: a.max_qp_wr,
            max_send_sge: a.max_sge,
            max_recv_sge: a.max_sge,
            max_inline_data: 0,
        },
        false,
    );
}

#[test]
fn qp_refused_by_the_device_frees_its_user_context() {
    const TEST: &str = "qp_refused_by_the_device_frees_its_user_context";
    common::on_software(TEST, "the software device's max_inline_data", |ctx| {
        let pd = Pd::new(ctx).unwrap();
        let cq = Cq::builder(ctx).build().unwrap();
        // max_inline_data has no device attribute to check against: the device refuses it.
        let over = SwConfig::default().max_inline_data + 1;
        let e = common::assert_refused(ctx, TEST, "QP refused by the device", |token| {
            Qp::<Rc>::builder(&pd, &cq, &cq)
                .max_inline_data(over)
                .context(token)
                .build()
        });
        common::assert_os_error(&e, Verb::CreateQp, libc::EINVAL);
    });
}

#[test]
fn objects_refused_for_quota_free_their_user_context() {
    const TEST: &str = "objects_refused_for_quota_free_their_user_context";
    let Some(ctx) = common::quota_one(TEST, "srq-qp-quota-one") else {
        return;
    };
    let drops = Drops::new();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).build().unwrap();
    let srq = Srq::builder(&pd).context(drops.token(1)).build().unwrap();
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .context(drops.token(2))
        .build()
        .unwrap();
    let ch = CompChannel::new(&ctx).unwrap();
    let leaks = LeakCheck::new(&ctx, TEST);

    let e = Pd::new(&ctx).expect_err("second PD");
    common::assert_os_error(&e, Verb::AllocPd, libc::ENOMEM);
    let e = CompChannel::new(&ctx).expect_err("second channel");
    common::assert_os_error(&e, Verb::CreateCompChannel, libc::ENOMEM);
    let e = Srq::builder(&pd)
        .context(drops.token(3))
        .build()
        .expect_err("second SRQ");
    common::assert_os_error(&e, Verb::CreateSrq, libc::ENOMEM);
    assert_eq!(drops.count(), 1);
    let e = Qp::<Ud>::builder(&pd, &cq, &cq)
        .context(drops.token(4))
        .build()
        .expect_err("second QP");
    common::assert_os_error(&e, Verb::CreateQp, libc::ENOMEM);
    assert_eq!(drops.count(), 2);
    let e = ParentDomain::new(&ctx, &pd).expect_err("no PD left for a parent domain");
    common::assert_os_error(&e, Verb::AllocParentDomain, libc::ENOMEM);
    leaks.assert_unchanged("objects refused for quota");

    assert_eq!((srq.user_context().id, qp.user_context().id), (1, 2));
    destroyed(qp.destroy());
    destroyed(srq.destroy());
    assert_eq!(drops.count(), 4);
    destroyed(ch.destroy());
}

#[test]
fn qp_user_context_is_readable_and_dropped_on_destroy() {
    common::with_pd_cq(None, |_, pd, cq| {
        let drops = Drops::new();
        let qp = Qp::<Rc>::builder(pd, cq, cq)
            .context(drops.token(21))
            .build()
            .unwrap();
        assert_eq!(qp.user_context().id, 21);
        assert_eq!(drops.count(), 0);
        destroyed(qp.destroy());
        assert_eq!(drops.count(), 1);
        let qp = Qp::<Ud>::builder(pd, cq, cq)
            .context(String::from("ud"))
            .build()
            .unwrap();
        assert_eq!(qp.user_context(), "ud");
        let qp2 = Qp::<Uc>::builder(pd, cq, cq)
            .context(drops.token(22))
            .build()
            .unwrap();
        drop(qp2);
        assert_eq!(drops.count(), 2);
        drop(qp);
    });
}

#[test]
fn qp_with_objects_of_two_contexts_is_wrong_context() {
    const TEST: &str = "qp_with_objects_of_two_contexts_is_wrong_context";
    let (ctx, other) = common::two_contexts();
    let other_leaks = LeakCheck::new(&other, TEST);
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).build().unwrap();
    let other_pd = Pd::new(&other).unwrap();
    let other_cq = CqEx::<Standard>::builder(&other).build().unwrap();
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();

    #[track_caller]
    fn wrong<T>(r: typed_verbs::Result<T>, what: &'static str) {
        let e = r
            .err()
            .unwrap_or_else(|| panic!("a QP with a foreign {what} was created"));
        common::assert_wrong_context(&e, Verb::CreateQp, what);
        let text = e.to_string();
        assert!(
            text.contains(what) && text.contains("ibv_create_qp"),
            "{text}"
        );
    }
    wrong(
        Qp::<Rc>::builder(&pd, &other_cq, &cq)
            .context(drops.token(1))
            .build(),
        "send_cq",
    );
    wrong(
        Qp::<Ud>::builder(&pd, &cq, &other_cq)
            .context(drops.token(2))
            .build(),
        "recv_cq",
    );
    // The PD decides the context: a PD of the other context with this context's CQs.
    wrong(
        Qp::<Uc>::builder(&other_pd, &cq, &cq)
            .context(drops.token(3))
            .build(),
        "send_cq",
    );
    if srq_supported(&ctx, TEST) {
        let other_srq = Srq::builder(&other_pd).build().unwrap();
        let srq_leaks = LeakCheck::new(&other, TEST);
        wrong(
            Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &other_srq)
                .context(drops.token(4))
                .build(),
            "srq",
        );
        srq_leaks.assert_unchanged("QP with a foreign SRQ");
    } else {
        drop(drops.token(4));
    }
    assert_eq!(drops.count(), 4);
    leaks.assert_unchanged("QPs with foreign objects");
    drop(other_cq);
    drop(other_pd);
    other_leaks.assert_unchanged("the other context's objects dropped");
}

#[test]
fn raw_packet_qp_unsupported_on_like_rxe() {
    const TEST: &str = "raw_packet_qp_unsupported_on_like_rxe";
    common::on_like_rxe(TEST, "qp-raw-like-rxe", |ctx| {
        let pd = Pd::new(ctx).unwrap();
        let cq = Cq::builder(ctx).build().unwrap();
        let leaks = LeakCheck::new(ctx, TEST);
        let drops = Drops::new();
        let e = Qp::<RawPacket>::builder(&pd, &cq, &cq)
            .context(drops.token(1))
            .build()
            .expect_err("like_rxe has no RAW_PACKET QPs");
        common::assert_os_error(&e, Verb::CreateQp, libc::EOPNOTSUPP);
        assert!(e.is_unsupported());
        assert_eq!(drops.count(), 1);
        leaks.assert_unchanged("refused RAW_PACKET QP");
        // The types rxe has work.
        let rc = Qp::<Rc>::builder(&pd, &cq, &cq)
            .build()
            .expect("RC on like_rxe");
        let ud = Qp::<Ud>::builder(&pd, &cq, &cq)
            .build()
            .expect("UD on like_rxe");
        assert_ne!(rc.qp_num(), ud.qp_num());
    });
}

#[test]
fn ud_multicast_attach_and_detach() {
    const TEST: &str = "ud_multicast_attach_and_detach";
    common::with_pd_cq(None, |ctx, pd, cq| {
        let qp = Qp::<Ud>::builder(pd, cq, cq).build().unwrap();
        let count = || software::live_objects(ctx).map(|l| l.mcast_attachments);
        if !ctx.is_software() {
            skip(
                TEST,
                "counting attachments (software::live_objects) needs the software device",
            );
        }
        let base = count();

        let mut g1 = [0u8; 16];
        g1[0] = 0xff;
        g1[1] = 0x0e;
        g1[12..].copy_from_slice(&[0xe0, 0x00, 0x01, 0x17]);
        let g1 = Gid(g1);
        let mut g2 = g1;
        g2.0[15] = 0x18;
        assert!(g1.is_multicast() && g2.is_multicast());

        qp.attach_mcast(g1, 0).expect("attach a multicast group");
        assert_eq!(qp.mcast_groups(), vec![(g1, 0)]);
        assert_eq!(count(), base.map(|n| n + 1));
        qp.attach_mcast(g2, 0).expect("attach a second group");
        assert_eq!(count(), base.map(|n| n + 2));
        qp.detach_mcast(g1, 0).expect("detach the first group");
        assert_eq!(qp.mcast_groups(), vec![(g2, 0)]);
        assert_eq!(count(), base.map(|n| n + 1));
        qp.detach_mcast(g2, 0).expect("detach the second group");
        assert_eq!(count(), base);
        // Leaving a group not joined is the device's EINVAL, and changes nothing.
        let e = qp
            .detach_mcast(g2, 0)
            .expect_err("a group not joined cannot be left");
        common::assert_os_error(&e, Verb::DetachMcast, libc::EINVAL);
        assert!(qp.mcast_groups().is_empty());

        let mut bad = [0u8; 16];
        bad[0] = 0xfe;
        bad[1] = 0x80;
        bad[15] = 1;
        let bad = Gid(bad);
        assert!(!bad.is_multicast());
        let e = qp
            .attach_mcast(bad, 0)
            .expect_err("a unicast GID is not a group");
        common::assert_os_error(&e, Verb::AttachMcast, libc::EINVAL);
        assert_eq!(count(), base);

        // Re-attaching after detach works, and the QP is destroyable once it has left.
        qp.attach_mcast(g1, 0).expect("attach again");
        assert_eq!(count(), base.map(|n| n + 1));
        qp.detach_mcast(g1, 0).expect("detach again");
        destroyed(qp.destroy());
        assert_eq!(count(), base);
    });
}

/// Calls `f` with the value of `o`, taking `o` by value.
fn if_some<T>(o: Option<T>, f: impl FnOnce(T)) {
    if let Some(v) = o {
        f(v);
    }
}

#[test]
fn explicit_destroy_of_every_object_type() {
    const TEST: &str = "explicit_destroy_of_every_object_type";
    let ctx = open();
    let start = software::live_objects(&ctx);
    if start.is_none() {
        skip(TEST, "live-object counts need the software device");
    }
    {
        let pd = Pd::new(&ctx).unwrap();
        let ch = CompChannel::new(&ctx).unwrap();
        let cq = Cq::builder(&ctx).channel(&ch).build().unwrap();
        let cq_ex = CqEx::<Standard>::builder(&ctx).cqe(4).build().unwrap();
        let pdom = feature(&ctx, TEST, "parent domains", ParentDomain::new(&ctx, &pd));
        let srq = srq_supported(&ctx, TEST).then(|| Srq::builder(&pd).build().unwrap());
        let qp = Qp::<Ud>::builder(&pd, &cq, &cq_ex).build().unwrap();
        let srq_qp = srq.as_ref().map(|s| {
            Qp::<Rc>::builder_with_srq(&pd, &cq_ex, &cq, s)
                .build()
                .unwrap()
        });
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[15] = 0x42;
        qp.attach_mcast(Gid(g), 0).unwrap();
        if start.is_some() {
            let now = software::live_objects(&ctx).unwrap();
            let n_srq = u32::from(srq.is_some());
            assert_eq!(
                now,
                LiveObjects {
                    pds: 1 + u32::from(pdom.is_some()),
                    comp_channels: 1,
                    cqs: 2,
                    srqs: n_srq,
                    qps: 1 + n_srq,
                    mcast_attachments: 1,
                    mrs: 0,
                    ahs: 0,
                    ..LiveObjects::default()
                }
            );
        }
        qp.detach_mcast(Gid(g), 0).unwrap();
        destroyed(qp.destroy());
        // Consume the Options whole, so their borrows end here (an `if let` would leave a
        // None to drop at the end of the scope, still borrowing what it borrowed).
        if_some(srq_qp, |q| destroyed(q.destroy()));
        if_some(srq, |s| destroyed(s.destroy()));
        destroyed(cq.destroy());
        destroyed(cq_ex.destroy());
        destroyed(ch.destroy());
        if_some(pdom, |p| destroyed(p.destroy()));
        destroyed(pd.destroy());
    }
    if let Some(start) = start {
        assert_eq!(software::live_objects(&ctx).unwrap(), start);
        assert_eq!(start, LiveObjects::default());
    }
    ctx.close().expect("ibv_close_device");
}

#[test]
fn objects_are_debug_so_destroy_unwraps() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = typed_verbs::Cq::builder(&ctx).cqe(4).build().unwrap();
    let qp = Qp::<typed_verbs::Ud>::builder(&pd, &cq, &cq)
        .build()
        .unwrap();
    let shown = format!("{qp:?} {cq:?} {pd:?}");
    assert!(
        shown.contains(&format!("qp_num: {}", qp.qp_num())),
        "{shown}"
    );
    assert!(
        shown.contains("Ud") && shown.contains("Cq(") && shown.contains("Pd("),
        "{shown}"
    );
    qp.destroy().unwrap();
    cq.destroy().unwrap();
    pd.destroy().unwrap();
}
