//! Extended completion queues (`ibv_create_cq_ex`) and their polling batches.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{
    assert_out_of_range, destroyed, feature, open, open_registered, skip, software_only, Drops,
    LeakCheck,
};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Mutex;
use typed_verbs::cq_ex::flags;
use typed_verbs::software::{self, SwConfig};
use typed_verbs::{
    wc_flags, AllFields, Batch, CompChannel, Completion, CqEx, ErrorKind, InjectedCompletion,
    NoFields, ParentDomain, Pd, SingleThreaded, Standard, Verb, WcFlags, WcOpcode, WcStatus,
};

/// Creates a `CqEx` with exactly one flag; checks `wc_flags()` and, on the software device,
/// that the flag's field reads back what was injected.
macro_rules! one_flag {
    ($ctx:expr, $test:expr, $flag:ident, $i:ident => $inject:expr, $c:ident => $check:expr) => {{
        let r = CqEx::<wc_flags!($flag)>::builder($ctx).cqe(4).build();
        if let Some(cq) = feature(
            $ctx,
            $test,
            concat!("IBV_WC_EX_WITH_", stringify!($flag)),
            r,
        ) {
            assert_eq!(cq.wc_flags(), flags::$flag, stringify!($flag));
            assert_eq!(<wc_flags!($flag) as WcFlags>::BITS, flags::$flag);
            if $ctx.is_software() {
                let $i = InjectedCompletion::success(77, WcOpcode::RECV);
                software::inject(&cq, $inject).expect("inject");
                cq.poll_batch(|batch| {
                    let $c = batch.completion().result().expect("success");
                    assert_eq!($c.wr_id(), 77);
                    assert_eq!($c.opcode(), WcOpcode::RECV);
                    $check;
                })
                .expect("poll_batch")
                .expect("one completion");
                assert_eq!(
                    cq.poll_batch(|b| b.completion().wr_id())
                        .expect("poll_batch"),
                    None
                );
            }
            destroyed(cq.destroy());
        }
    }};
}

/// Runs `f` on each completion of `batch`, advancing until the batch ends.
fn each_in_batch<F: WcFlags>(batch: Batch<'_, F>, mut f: impl FnMut(Completion<'_, F>)) {
    let mut next = Some(batch);
    while let Some(batch) = next {
        f(batch.completion());
        next = batch.advance().unwrap();
    }
}

#[test]
fn cq_ex_each_wc_flag_alone() {
    const TEST: &str = "cq_ex_each_wc_flag_alone";
    let ctx = open();
    if !ctx.is_software() {
        skip(
            TEST,
            "reading fields back needs completion injection (software device)",
        );
    }
    one_flag!(&ctx, TEST, BYTE_LEN, i => i.byte_len(4096), c => assert_eq!(c.byte_len(), 4096));
    one_flag!(&ctx, TEST, IMM, i => i.imm_data(0x0102_0304), c => {
        assert_eq!(c.imm_data(), Some(0x0102_0304));
        assert_eq!(c.invalidated_rkey(), None);
    });
    one_flag!(&ctx, TEST, QP_NUM, i => i.qp_num(0xab_cdef), c => assert_eq!(c.qp_num(), 0xab_cdef));
    one_flag!(&ctx, TEST, SRC_QP, i => i.src_qp(0x12_3456), c => assert_eq!(c.src_qp(), 0x12_3456));
    one_flag!(&ctx, TEST, SLID, i => i.slid(0xfffe), c => assert_eq!(c.slid(), 0xfffe));
    one_flag!(&ctx, TEST, SL, i => i.sl(15), c => assert_eq!(c.sl(), 15));
    one_flag!(&ctx, TEST, DLID_PATH_BITS, i => i.dlid_path_bits(0x7f),
        c => assert_eq!(c.dlid_path_bits(), 0x7f));
    one_flag!(&ctx, TEST, COMPLETION_TIMESTAMP, i => i.completion_ts(u64::MAX - 1),
        c => assert_eq!(c.completion_ts(), u64::MAX - 1));
    one_flag!(&ctx, TEST, CVLAN, i => i.cvlan(0x0fff), c => assert_eq!(c.cvlan(), 0x0fff));
    one_flag!(&ctx, TEST, FLOW_TAG, i => i.flow_tag(0xf10_7a9), c => assert_eq!(c.flow_tag(), 0xf10_7a9));
    one_flag!(&ctx, TEST, COMPLETION_TIMESTAMP_WALLCLOCK,
        i => i.completion_wallclock_ns(1_700_000_000_123_456_789),
        c => assert_eq!(c.completion_wallclock_ns(), 1_700_000_000_123_456_789));
}

#[test]
fn cq_ex_flag_sets_are_the_requested_bits() {
    const TEST: &str = "cq_ex_flag_sets_are_the_requested_bits";
    let ctx = open();
    // Every bit of the man page, once each, and nothing else.
    let singles: Vec<u64> = common::raw::STANDARD_WC_FLAGS
        .into_iter()
        .chain([
            flags::COMPLETION_TIMESTAMP,
            flags::CVLAN,
            flags::FLOW_TAG,
            flags::COMPLETION_TIMESTAMP_WALLCLOCK,
        ])
        .collect();
    assert_eq!(singles.iter().fold(0, |a, b| a | b), flags::ALL);
    assert_eq!(singles.iter().map(|b| b.count_ones()).sum::<u32>(), 11);
    assert_eq!(flags::ALL.count_ones(), 11);
    assert_eq!(flags::STANDARD.count_ones(), 7);

    assert_eq!(<wc_flags!(STANDARD) as WcFlags>::BITS, flags::STANDARD);
    assert_eq!(<wc_flags!() as WcFlags>::BITS, 0);
    assert_eq!(
        <wc_flags!(BYTE_LEN | IMM) as WcFlags>::BITS,
        flags::BYTE_LEN | flags::IMM
    );
    assert_eq!(
        <wc_flags!(IBV_WC_EX_WITH_QP_NUM | SL) as WcFlags>::BITS,
        flags::QP_NUM | flags::SL
    );
    assert_eq!(
        <wc_flags!(STANDARD | FLOW_TAG) as WcFlags>::BITS,
        flags::STANDARD | flags::FLOW_TAG
    );

    let standard = CqEx::<Standard>::builder(&ctx)
        .cqe(8)
        .build()
        .expect("standard set");
    assert_eq!(standard.wc_flags(), flags::STANDARD);
    assert!(standard.cqe() >= 8);
    let none = CqEx::<NoFields>::builder(&ctx).build().expect("no fields");
    assert_eq!(none.wc_flags(), 0);
    let two = CqEx::<wc_flags!(BYTE_LEN | IMM)>::builder(&ctx)
        .build()
        .expect("two flags");
    assert_eq!(two.wc_flags(), flags::BYTE_LEN | flags::IMM);
    if let Some(all) = feature(
        &ctx,
        TEST,
        "all eleven wc_flags together",
        CqEx::<AllFields>::builder(&ctx).cqe(8).build(),
    ) {
        assert_eq!(all.wc_flags(), flags::ALL);
        destroyed(all.destroy());
    }
    destroyed(standard.destroy());
    destroyed(none.destroy());
    destroyed(two.destroy());
}

#[test]
fn cq_ex_cqe_and_comp_vector_out_of_range() {
    const TEST: &str = "cq_ex_cqe_and_comp_vector_out_of_range";
    let ctx = open();
    let max = ctx.attr().max_cqe;
    let n = ctx.num_comp_vectors();
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    assert_out_of_range(
        CqEx::<Standard>::builder(&ctx)
            .cqe(0)
            .context(drops.token(1))
            .build(),
        Verb::CreateCqEx,
        "cqe",
        0,
        1,
        max.into(),
    );
    if let Some(over) = max.checked_add(1) {
        assert_out_of_range(
            CqEx::<Standard>::builder(&ctx)
                .cqe(over)
                .context(drops.token(2))
                .build(),
            Verb::CreateCqEx,
            "cqe",
            over.into(),
            1,
            max.into(),
        );
    } else {
        drop(drops.token(2));
    }
    assert_out_of_range(
        CqEx::<Standard, SingleThreaded>::builder(&ctx)
            .comp_vector(n)
            .context(drops.token(3))
            .build(),
        Verb::CreateCqEx,
        "comp_vector",
        n.into(),
        0,
        (n - 1).into(),
    );
    assert_eq!(
        drops.count(),
        3,
        "each failed builder's context dropped once"
    );
    leaks.assert_unchanged("rejected CqEx");
    let e = CqEx::<NoFields>::builder(&ctx)
        .cqe(0)
        .build()
        .err()
        .unwrap();
    assert!(e.to_string().starts_with("ibv_create_cq_ex:"), "{e}");
}

#[test]
fn cq_ex_user_context_is_readable_and_dropped_on_destroy() {
    let ctx = open();
    let drops = Drops::new();
    let cq = CqEx::<Standard>::builder(&ctx)
        .context(drops.token(41))
        .build()
        .expect("cq");
    assert_eq!(cq.user_context().id, 41);
    let st = CqEx::<NoFields, SingleThreaded>::builder(&ctx)
        .context(drops.token(42))
        .build();
    let st = feature(
        &ctx,
        "cq_ex_user_context_is_readable_and_dropped_on_destroy",
        "SINGLE_THREADED",
        st,
    );
    if let Some(st) = &st {
        assert_eq!(st.user_context().id, 42);
    } else {
        assert_eq!(drops.count(), 1, "the refused CQ's context is dropped");
    }
    let before = drops.count();
    destroyed(cq.destroy());
    assert_eq!(drops.count(), before + 1);
    if let Some(st) = st {
        drop(st);
        assert_eq!(drops.count(), 2);
    }
}

#[test]
fn cq_ex_single_threaded_is_created_and_polled() {
    const TEST: &str = "cq_ex_single_threaded_is_created_and_polled";
    let ctx = open();
    let r = CqEx::<Standard, SingleThreaded>::builder(&ctx)
        .cqe(8)
        .build();
    let Some(cq) = feature(&ctx, TEST, "IBV_CREATE_CQ_ATTR_SINGLE_THREADED", r) else {
        return;
    };
    assert_eq!(cq.wc_flags(), flags::STANDARD);
    assert_eq!(cq.poll_batch(|_| ()).expect("poll_batch"), None, "empty");
    if software_only(&ctx, TEST, "completion injection") {
        for i in 0..5 {
            software::inject(
                &cq,
                InjectedCompletion::success(i, WcOpcode::SEND).byte_len(i as u32),
            )
            .unwrap();
        }
        let mut seen = Vec::new();
        cq.poll_batch(|batch| {
            each_in_batch(batch, |c| {
                let c = c.result().expect("success");
                seen.push((c.wr_id(), c.byte_len()));
            })
        })
        .unwrap()
        .expect("five completions");
        assert_eq!(seen, (0..5).map(|i| (i, i as u32)).collect::<Vec<_>>());
        // With no consumer lock, an early-dropped batch still consumes exactly what it read.
        software::inject(&cq, InjectedCompletion::success(10, WcOpcode::SEND)).unwrap();
        software::inject(&cq, InjectedCompletion::success(11, WcOpcode::SEND)).unwrap();
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), Some(10));
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), Some(11));
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), None);
    }
    destroyed(cq.destroy());
}

#[test]
fn cq_ex_ignore_overrun_counts_lost_completions() {
    const TEST: &str = "cq_ex_ignore_overrun_counts_lost_completions";
    let ctx = open();
    // SAFETY: no work request is ever posted to a QP using this CQ; only the software device's
    // injection hook fills it, and the test reads what it loses through lost_completions.
    let builder = unsafe { CqEx::<Standard>::builder(&ctx).cqe(4).ignore_overrun() };
    let Some(cq) = feature(
        &ctx,
        TEST,
        "IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN",
        builder.build(),
    ) else {
        return;
    };
    assert_eq!(cq.wc_flags(), flags::STANDARD);
    if !software_only(&ctx, TEST, "completion injection") {
        return;
    }
    let n = cq.cqe();
    for i in 0..u64::from(n) + 5 {
        software::inject(&cq, InjectedCompletion::success(i, WcOpcode::RECV))
            .expect("an IGNORE_OVERRUN CQ never reports an overrun");
    }
    assert_eq!(software::lost_completions(&cq), Some(5));
    assert_eq!(software::has_overrun(&cq), Some(false));
    let mut seen = Vec::new();
    cq.poll_batch(|batch| {
        each_in_batch(batch, |c| {
            seen.push(c.wr_id());
        })
    })
    .unwrap()
    .expect("cqe() completions");
    assert_eq!(
        seen,
        (0..u64::from(n)).collect::<Vec<_>>(),
        "the first cqe() kept"
    );
    // Room again: nothing more is lost.
    software::inject(&cq, InjectedCompletion::success(99, WcOpcode::RECV)).unwrap();
    assert_eq!(software::lost_completions(&cq), Some(5));
    assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), Some(99));
}

#[test]
fn cq_ex_overrun_is_reported() {
    const TEST: &str = "cq_ex_overrun_is_reported";
    common::on_software(TEST, "completion injection", |ctx| {
        let cq = CqEx::<Standard>::builder(ctx).cqe(4).build().unwrap();
        let n = u64::from(cq.cqe());
        for i in 0..n {
            software::inject(&cq, InjectedCompletion::success(i, WcOpcode::SEND)).unwrap();
        }
        let e = software::inject(&cq, InjectedCompletion::success(n, WcOpcode::SEND))
            .expect_err("more than cqe()");
        assert_eq!(
            (e.verb, e.kind.clone()),
            (Verb::InjectCompletion, ErrorKind::CqOverrun)
        );
        assert_eq!(software::has_overrun(&cq), Some(true));
        assert_eq!(software::lost_completions(&cq), Some(0));
        let mut count = 0;
        cq.poll_batch(|batch| {
            each_in_batch(batch, |c| {
                assert_eq!(c.wr_id(), count);
                count += 1;
            })
        })
        .unwrap()
        .expect("cqe() completions");
        assert_eq!(count, n);
    });
}

#[test]
fn cq_ex_with_parent_domain() {
    const TEST: &str = "cq_ex_with_parent_domain";
    let ctx = open();
    let leaks = LeakCheck::new(&ctx, TEST);
    let pd = Pd::new(&ctx).expect("pd");
    if let Some(pdom) = feature(&ctx, TEST, "parent domains", ParentDomain::new(&ctx, &pd)) {
        let r = CqEx::<Standard>::builder(&ctx)
            .cqe(8)
            .parent_domain(&pdom)
            .build();
        if let Some(cq) = feature(&ctx, TEST, "a CQ in a parent domain", r) {
            assert_eq!(cq.wc_flags(), flags::STANDARD);
            if let Some(b) = leaks.before() {
                let now = software::live_objects(&ctx).unwrap();
                assert_eq!((now.pds, now.cqs), (b.pds + 2, b.cqs + 1));
            }
            if ctx.is_software() {
                software::inject(
                    &cq,
                    InjectedCompletion::success(5, WcOpcode::RECV).byte_len(9),
                )
                .unwrap();
                let byte_len = cq
                    .poll_batch(|b| b.completion().result().unwrap().byte_len())
                    .unwrap();
                assert_eq!(byte_len, Some(9));
            }
            destroyed(cq.destroy());
        }
        destroyed(pdom.destroy());
    }
    destroyed(pd.destroy());
    leaks.assert_unchanged("parent-domain CQ destroyed");
}

#[test]
fn cq_ex_with_parent_domain_of_another_context_is_wrong_context() {
    const TEST: &str = "cq_ex_with_parent_domain_of_another_context_is_wrong_context";
    let (ctx, other) = common::two_contexts();
    let pd = Pd::new(&other).expect("pd");
    let Some(pdom) = feature(
        &other,
        TEST,
        "parent domains",
        ParentDomain::new(&other, &pd),
    ) else {
        return;
    };
    common::assert_foreign_refused(&ctx, TEST, Verb::CreateCqEx, "parent_domain", |token| {
        CqEx::<Standard>::builder(&ctx)
            .parent_domain(&pdom)
            .context(token)
            .build()
    });
}

#[test]
fn cq_ex_with_channel() {
    let ctx = open();
    let ch = CompChannel::new(&ctx).expect("channel");
    let cq = CqEx::<Standard>::builder(&ctx)
        .channel(&ch)
        .comp_vector(ctx.num_comp_vectors() - 1)
        .build()
        .expect("CqEx with a channel and the last comp_vector");
    cq.req_notify(false).expect("req_notify");
    destroyed(cq.destroy());
    destroyed(ch.destroy());
}

#[test]
fn cq_ex_like_rxe_rejects_what_rxe_lacks() {
    const TEST: &str = "cq_ex_like_rxe_rejects_what_rxe_lacks";
    common::on_like_rxe(TEST, "cq-ex-like-rxe", |ctx| {
        let leaks = LeakCheck::new(ctx, TEST);
        let drops = Drops::new();

        #[track_caller]
        fn unsupported<T>(r: typed_verbs::Result<T>, what: &str) {
            let e = r
                .err()
                .unwrap_or_else(|| panic!("{what} must be refused by like_rxe"));
            assert_eq!(e.verb, Verb::CreateCqEx, "{what}");
            assert_eq!(e.kind, ErrorKind::Os(libc::EOPNOTSUPP), "{what}");
            assert!(e.is_unsupported(), "{what}");
        }
        macro_rules! refused {
        ($($f:ident),*) => {$(
            unsupported(
                CqEx::<wc_flags!($f)>::builder(ctx).context(drops.token(0)).build(),
                stringify!($f),
            );
            unsupported(
                CqEx::<wc_flags!(STANDARD | $f)>::builder(ctx).context(drops.token(0)).build(),
                concat!("STANDARD | ", stringify!($f)),
            );
        )*};
    }
        refused!(
            COMPLETION_TIMESTAMP,
            CVLAN,
            FLOW_TAG,
            COMPLETION_TIMESTAMP_WALLCLOCK
        );
        unsupported(
            CqEx::<AllFields>::builder(ctx)
                .context(drops.token(0))
                .build(),
            "AllFields",
        );
        // SAFETY: the CQ is never created (like_rxe refuses the flag), so nothing can overrun.
        let b = unsafe { CqEx::<Standard>::builder(ctx).ignore_overrun() };
        unsupported(b.context(drops.token(0)).build(), "IGNORE_OVERRUN");
        assert_eq!(
            drops.count(),
            10,
            "every refused builder dropped its context once"
        );
        leaks.assert_unchanged("CQs refused by like_rxe");

        // What rxe has works.
        let std_cq = CqEx::<Standard>::builder(ctx)
            .build()
            .expect("standard flags");
        let st = CqEx::<wc_flags!(BYTE_LEN), SingleThreaded>::builder(ctx)
            .build()
            .expect("SINGLE_THREADED");
        destroyed(std_cq.destroy());
        destroyed(st.destroy());
        leaks.assert_unchanged("like_rxe CQs destroyed");
    });
}

/// What a test injects and expects back from a CqEx with every field.
#[derive(Debug, Clone, PartialEq)]
struct Expected {
    wr_id: u64,
    status: WcStatus,
    vendor_err: u32,
    opcode: WcOpcode,
    byte_len: u32,
    imm: Option<u32>,
    inv: Option<u32>,
    qp_num: u32,
    src_qp: u32,
    slid: u16,
    sl: u8,
    dlid_path_bits: u8,
    ts: u64,
    wallclock: u64,
    cvlan: u16,
    flow_tag: u32,
    grh: bool,
}

const ERRS: [WcStatus; 5] = [
    WcStatus::LOC_PROT_ERR,
    WcStatus::WR_FLUSH_ERR,
    WcStatus::RNR_RETRY_EXC_ERR,
    WcStatus::REM_OP_ERR,
    WcStatus::GENERAL_ERR,
];

impl Expected {
    /// The `i`th of a varied sequence: every opcode, distinct field values, an error every
    /// fifth, immediate data / invalidated rkey / GRH in turn.
    fn nth(i: u32) -> Self {
        let e = Expected {
            wr_id: 0x1_0000_0000 + u64::from(i) * 3,
            status: WcStatus::SUCCESS,
            vendor_err: 0,
            opcode: common::WC_OPCODES[i as usize % common::WC_OPCODES.len()],
            byte_len: 100 + i,
            imm: (i % 3 == 0).then_some(0xa000_0000 | i),
            inv: (i % 3 == 1).then_some(0xb000_0000 | i),
            qp_num: 0x10 + i,
            src_qp: 0x20 + i,
            slid: 0x30 + i as u16,
            sl: (i % 16) as u8,
            dlid_path_bits: (i % 128) as u8,
            ts: 1_000_000 + u64::from(i),
            wallclock: 1_700_000_000_000_000_000 + u64::from(i),
            cvlan: (i % 4096) as u16,
            flow_tag: 0xf000 + i,
            grh: i % 3 == 2,
        };
        if i % 5 == 4 {
            Expected {
                status: ERRS[(i as usize / 5) % ERRS.len()],
                vendor_err: 0xe0 + i,
                ..e
            }
        } else {
            e
        }
    }

    fn inject(&self) -> InjectedCompletion {
        if self.status != WcStatus::SUCCESS {
            return InjectedCompletion::error(self.wr_id, self.status, self.vendor_err);
        }
        let mut c = InjectedCompletion::success(self.wr_id, self.opcode)
            .byte_len(self.byte_len)
            .qp_num(self.qp_num)
            .src_qp(self.src_qp)
            .slid(self.slid)
            .sl(self.sl)
            .dlid_path_bits(self.dlid_path_bits)
            .completion_ts(self.ts)
            .completion_wallclock_ns(self.wallclock)
            .cvlan(self.cvlan)
            .flow_tag(self.flow_tag);
        if let Some(v) = self.imm {
            c = c.imm_data(v);
        }
        if let Some(v) = self.inv {
            c = c.invalidated_rkey(v);
        }
        if self.grh {
            c = c.with_grh();
        }
        c
    }
}

/// Polls every completion of `cq` in one batch per call of `poll_batch`, reading all fields.
fn poll_all(cq: &mut CqEx<'_, AllFields>) -> Vec<Expected> {
    let mut out = Vec::new();
    // One batch per poll_batch until the CQ is empty (`Ok(None)`); advance within each.
    while cq
        .poll_batch(|first| {
            let mut next = Some(first);
            while let Some(batch) = next {
                let c = batch.completion();
                let (wr_id, status) = (c.wr_id(), c.status());
                let e = match c.result() {
                    Ok(s) => {
                        let own = s.completion_flags();
                        assert_eq!(own & 2 != 0, s.imm_data().is_some(), "IBV_WC_WITH_IMM");
                        assert_eq!(
                            own & 8 != 0,
                            s.invalidated_rkey().is_some(),
                            "IBV_WC_WITH_INV"
                        );
                        Expected {
                            wr_id: s.wr_id(),
                            status: s.status(),
                            vendor_err: 0,
                            opcode: s.opcode(),
                            byte_len: s.byte_len(),
                            imm: s.imm_data(),
                            inv: s.invalidated_rkey(),
                            qp_num: s.qp_num(),
                            src_qp: s.src_qp(),
                            slid: u16::try_from(s.slid()).expect("slid fits 16 bits"),
                            sl: s.sl(),
                            dlid_path_bits: s.dlid_path_bits(),
                            ts: s.completion_ts(),
                            wallclock: s.completion_wallclock_ns(),
                            cvlan: s.cvlan(),
                            flow_tag: s.flow_tag(),
                            grh: own & 1 != 0,
                        }
                    }
                    Err(f) => {
                        assert_ne!(f.status(), WcStatus::SUCCESS);
                        let x = Expected::nth(0);
                        Expected {
                            wr_id: f.wr_id(),
                            status: f.status(),
                            vendor_err: f.vendor_err(),
                            ..x
                        }
                    }
                };
                assert_eq!((e.wr_id, e.status), (wr_id, status));
                out.push(e);
                next = batch.advance().expect("next_poll");
            }
        })
        .expect("poll_batch")
        .is_some()
    {}
    out
}

#[test]
fn cq_ex_polls_injected_completions_with_every_field_in_order() {
    const TEST: &str = "cq_ex_polls_injected_completions_with_every_field_in_order";
    common::on_software(TEST, "completion injection", |ctx| {
        let mut cq = CqEx::<AllFields>::builder(ctx).cqe(64).build().expect("cq");
        assert_eq!(cq.poll_batch(|_| ()).expect("empty"), None);
        const N: u32 = 50;
        let expected: Vec<Expected> = (0..N).map(Expected::nth).collect();
        for e in &expected {
            software::inject(&cq, e.inject()).expect("inject");
        }
        let got = poll_all(&mut cq);
        // Error completions carry only wr_id, status and vendor_err: compare those for them.
        assert_eq!(got.len(), expected.len());
        for (g, e) in got.iter().zip(&expected) {
            if e.status == WcStatus::SUCCESS {
                assert_eq!(g, e);
            } else {
                assert_eq!(
                    (g.wr_id, g.status, g.vendor_err),
                    (e.wr_id, e.status, e.vendor_err)
                );
            }
        }
        assert!(
            expected.iter().any(|e| e.status != WcStatus::SUCCESS)
                && expected.iter().any(|e| e.imm.is_some())
                && expected.iter().any(|e| e.inv.is_some())
                && expected.iter().any(|e| e.grh),
            "the sequence covers errors, imm, inv and GRH"
        );
        assert_eq!(cq.poll_batch(|_| ()).expect("drained"), None);
    });
}

#[test]
fn cq_ex_no_fields_reads_opcode_and_own_flags() {
    const TEST: &str = "cq_ex_no_fields_reads_opcode_and_own_flags";
    common::on_software(TEST, "completion injection", |ctx| {
        let cq = CqEx::<NoFields>::builder(ctx).cqe(4).build().expect("cq");
        software::inject(
            &cq,
            InjectedCompletion::success(3, WcOpcode::RDMA_READ)
                .byte_len(5)
                .with_grh(),
        )
        .unwrap();
        software::inject(
            &cq,
            InjectedCompletion::error(4, WcStatus::FATAL_ERR, 0xdead),
        )
        .unwrap();
        cq.poll_batch(|batch| {
            let s = batch.completion().result().expect("success");
            assert_eq!(
                (s.wr_id(), s.opcode(), s.completion_flags()),
                (3, WcOpcode::RDMA_READ, 1)
            );
            let batch = batch.advance().unwrap().expect("a second completion");
            let f = batch.completion().result().expect_err("failure");
            assert_eq!(
                (f.wr_id(), f.status(), f.vendor_err()),
                (4, WcStatus::FATAL_ERR, 0xdead)
            );
            assert!(batch.advance().unwrap().is_none(), "no third completion");
        })
        .unwrap()
        .expect("a first completion");
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), None);
    });
}

#[test]
fn cq_ex_imm_data_and_invalidated_rkey_only_when_injected() {
    const TEST: &str = "cq_ex_imm_data_and_invalidated_rkey_only_when_injected";
    common::on_software(TEST, "completion injection", |ctx| {
        let cq = CqEx::<wc_flags!(IMM)>::builder(ctx).cqe(8).build().unwrap();
        let base = InjectedCompletion::success(0, WcOpcode::RECV);
        let cases = [
            (base, None, None),
            (base.imm_data(0), Some(0), None),
            (base.imm_data(u32::MAX), Some(u32::MAX), None),
            (base.invalidated_rkey(0x55aa), None, Some(0x55aa)),
            (base.invalidated_rkey(1).imm_data(2), Some(2), None),
            (base.imm_data(2).invalidated_rkey(1), None, Some(1)),
            (base.with_grh(), None, None),
        ];
        for (c, _, _) in &cases {
            software::inject(&cq, *c).unwrap();
        }
        let mut seen = Vec::new();
        cq.poll_batch(|batch| {
            each_in_batch(batch, |c| {
                let s = c.result().expect("success");
                seen.push((s.imm_data(), s.invalidated_rkey()));
            })
        })
        .unwrap()
        .expect("the injected completions");
        let want: Vec<_> = cases.iter().map(|(_, i, r)| (*i, *r)).collect();
        assert_eq!(seen, want);
    });
}

#[test]
fn cq_ex_poll_batch_on_empty_cq_is_none() {
    const TEST: &str = "cq_ex_poll_batch_on_empty_cq_is_none";
    let ctx = open();
    let cq = CqEx::<Standard>::builder(&ctx).build().expect("cq");
    for _ in 0..3 {
        // Repeatedly: an empty CQ (ENOENT) must not run the closure, nor leave the CQ locked
        // or a batch half-open.
        let mut ran = false;
        assert_eq!(cq.poll_batch(|_| ran = true).expect("poll_batch"), None);
        assert!(!ran, "the closure ran on an empty CQ");
    }
    if software_only(&ctx, TEST, "completion injection") {
        software::inject(&cq, InjectedCompletion::success(1, WcOpcode::SEND)).unwrap();
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), Some(1));
        assert_eq!(
            cq.poll_batch(|b| b.completion().wr_id()).unwrap(),
            None,
            "drained"
        );
    }
}

#[test]
fn cq_ex_batch_dropped_early_leaves_the_rest() {
    const TEST: &str = "cq_ex_batch_dropped_early_leaves_the_rest";
    common::on_software(TEST, "completion injection", |ctx| {
        let cq = CqEx::<Standard>::builder(ctx).cqe(16).build().unwrap();
        for id in 10..15 {
            software::inject(&cq, InjectedCompletion::success(id, WcOpcode::RECV)).unwrap();
        }
        // Break out of the loop after one completion: the batch is dropped (end_poll) early.
        let mut first = Vec::new();
        cq.poll_batch(|batch| {
            let mut next = Some(batch);
            while let Some(batch) = next {
                first.push(batch.completion().wr_id());
                if first.len() == 1 {
                    break;
                }
                next = batch.advance().unwrap();
            }
        })
        .unwrap()
        .expect("a first batch");
        assert_eq!(first, [10]);
        // Reading two (start + one advance) consumes exactly two.
        let second = cq
            .poll_batch(|batch| {
                let a = batch.completion().wr_id();
                let batch = batch.advance().unwrap().expect("a next completion");
                [a, batch.completion().wr_id()]
            }) // dropped while pointing at 12: end_poll consumes it
            .unwrap();
        assert_eq!(second, Some([11, 12]));
        // The rest come in the next batch, and then the CQ is empty.
        let mut rest = Vec::new();
        cq.poll_batch(|batch| {
            let mut next = Some(batch);
            while let Some(batch) = next {
                rest.push(batch.completion().wr_id());
                next = batch.advance().unwrap(); // None: the batch ended inside advance
            }
        })
        .unwrap()
        .expect("a third batch");
        assert_eq!(rest, [13, 14]);
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), None);
    });
}

#[test]
fn cq_ex_panic_inside_a_batch_still_ends_it() {
    const TEST: &str = "cq_ex_panic_inside_a_batch_still_ends_it";
    common::on_software(TEST, "completion injection", |ctx| {
        // A Shared CQ: its ibv_start_poll takes the provider's lock and ibv_end_poll releases it,
        // so a poll_batch after a batch whose end_poll never ran would deadlock.
        let cq = CqEx::<Standard>::builder(ctx).cqe(8).build().unwrap();
        for id in 1..=3 {
            software::inject(&cq, InjectedCompletion::success(id, WcOpcode::SEND)).unwrap();
        }
        let r =
            catch_unwind(AssertUnwindSafe(|| {
                cq.poll_batch(|batch| {
            let wr_id = batch.completion().wr_id();
            assert_eq!(wr_id, 1);
            panic!("deliberate panic inside a polling batch (wr_id {wr_id}); the test expects it");
        })
            }));
        let msg = r.expect_err("the closure panics");
        assert!(msg
            .downcast_ref::<String>()
            .is_some_and(|m| m.contains("deliberate panic")));
        // The batch ended while the panic unwound out of poll_batch: the CQ can be polled, and the
        // completion read inside the panicking batch was consumed.
        let next = cq
            .poll_batch(|b| b.completion().wr_id())
            .expect("poll_batch after the panic");
        assert_eq!(next, Some(2));
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), Some(3));
        assert_eq!(cq.poll_batch(|b| b.completion().wr_id()).unwrap(), None);
    });
}

#[test]
fn cq_ex_shared_between_threads_under_a_mutex() {
    const TEST: &str = "cq_ex_shared_between_threads_under_a_mutex";
    common::on_software(TEST, "completion injection", |ctx| {
        let cq = Mutex::new(CqEx::<Standard>::builder(ctx).cqe(16).build().unwrap());
        const PER_PRODUCER: u64 = 1500;
        const PRODUCERS: u64 = 2;
        let total = std::sync::atomic::AtomicU64::new(0);
        let seen: Vec<Vec<u64>> = std::thread::scope(|s| {
            for p in 0..PRODUCERS {
                let cq = &cq;
                s.spawn(move || {
                    for i in 0..PER_PRODUCER {
                        let c = InjectedCompletion::success(p << 32 | i, WcOpcode::RECV)
                            .byte_len(i as u32);
                        loop {
                            let r = software::inject(&*cq.lock().unwrap(), c);
                            match r {
                                Ok(()) => break,
                                Err(e) if e.kind == ErrorKind::CqOverrun => {
                                    std::thread::yield_now()
                                }
                                Err(e) => panic!("inject: {e}"),
                            }
                        }
                    }
                });
            }
            let pollers: Vec<_> = (0..2)
                .map(|_| {
                    s.spawn(|| {
                        let mut mine = Vec::new();
                        while total.load(std::sync::atomic::Ordering::SeqCst)
                            < PER_PRODUCER * PRODUCERS
                        {
                            let guard = cq.lock().unwrap();
                            let mut n = 0;
                            guard
                                .poll_batch(|batch| {
                                    each_in_batch(batch, |c| {
                                        let c = c.result().expect("success");
                                        assert_eq!(
                                            u64::from(c.byte_len()),
                                            c.wr_id() & 0xffff_ffff
                                        );
                                        mine.push(c.wr_id());
                                        n += 1;
                                    })
                                })
                                .unwrap();
                            drop(guard);
                            total.fetch_add(n, std::sync::atomic::Ordering::SeqCst);
                            if n == 0 {
                                std::thread::yield_now();
                            }
                        }
                        mine
                    })
                })
                .collect();
            pollers.into_iter().map(|h| h.join().unwrap()).collect()
        });
        // Each poller saw each producer's completions in order; together, every one exactly once.
        for mine in &seen {
            for p in 0..PRODUCERS {
                let ids: Vec<u64> = mine.iter().copied().filter(|id| id >> 32 == p).collect();
                assert!(
                    ids.windows(2).all(|w| w[0] < w[1]),
                    "producer {p} out of order"
                );
            }
        }
        let mut all: Vec<u64> = seen.into_iter().flatten().collect();
        all.sort_unstable();
        let want: Vec<u64> = (0..PRODUCERS)
            .flat_map(|p| (0..PER_PRODUCER).map(move |i| p << 32 | i))
            .collect();
        assert_eq!(all, want);
        assert_eq!(
            cq.lock()
                .unwrap()
                .poll_batch(|b| b.completion().wr_id())
                .unwrap(),
            None
        );
    });
}

#[test]
fn cq_ex_moves_to_another_thread() {
    const TEST: &str = "cq_ex_moves_to_another_thread";
    let ctx = open();
    let drops = Drops::new();
    let cq = CqEx::<Standard>::builder(&ctx)
        .cqe(8)
        .context(drops.token(8))
        .build()
        .unwrap();
    let injected = software_only(&ctx, TEST, "completion injection");
    if injected {
        for id in 0..3 {
            software::inject(&cq, InjectedCompletion::success(id, WcOpcode::SEND)).unwrap();
        }
    }
    // Polled and destroyed on another thread (CqEx is Send; its user context moves along).
    let ids = std::thread::scope(|s| {
        s.spawn(move || {
            let cq = cq;
            assert_eq!(cq.user_context().id, 8);
            let mut ids = Vec::new();
            cq.poll_batch(|batch| {
                each_in_batch(batch, |c| {
                    ids.push(c.wr_id());
                })
            })
            .unwrap();
            destroyed(cq.destroy());
            ids
        })
        .join()
        .unwrap()
    });
    assert_eq!(ids, if injected { vec![0, 1, 2] } else { vec![] });
    assert_eq!(drops.count(), 1);
}

#[test]
fn cq_ex_create_failing_in_the_device_frees_the_user_context() {
    const TEST: &str = "cq_ex_create_failing_in_the_device_frees_the_user_context";
    let Some(ctx) = common::quota_one(TEST, "cq-ex-quota-one") else {
        return;
    };
    let drops = Drops::new();
    let first = CqEx::<Standard>::builder(&ctx)
        .context(drops.token(1))
        .build()
        .unwrap();
    let leaks = LeakCheck::new(&ctx, TEST);
    let e = CqEx::<Standard>::builder(&ctx)
        .context(drops.token(2))
        .build()
        .expect_err("the device holds one CQ");
    common::assert_os_error(&e, Verb::CreateCqEx, libc::ENOMEM);
    assert_eq!(drops.count(), 1);
    leaks.assert_unchanged("CqEx refused by the device");
    destroyed(first.destroy());
    assert_eq!(drops.count(), 2);
}

#[test]
fn cq_ex_used_by_a_qp_is_polled_from_another_thread_through_split() {
    const TEST: &str = "cq_ex_used_by_a_qp_is_polled_from_another_thread_through_split";
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
    let (shared, mut poller) = cq.split();
    // QPs hold the shared half (as send and receive CQ) while the poller polls.
    let qp = typed_verbs::Qp::<typed_verbs::Rc>::builder(&pd, shared, shared)
        .build()
        .expect("QP on the CQ");
    shared
        .req_notify(false)
        .expect("req_notify through the shared half");
    if !software_only(&ctx, TEST, "completion injection") {
        assert_eq!(poller.poll_batch(|b| b.completion().wr_id()).unwrap(), None);
        return;
    }
    const N: u64 = 3000;
    let qpn = qp.qp_num();
    let (seen, drained) = std::thread::scope(|s| {
        // The Poller of a Shared CQ moves to the polling thread.
        let polling = s.spawn(move || {
            let mut seen = Vec::with_capacity(N as usize);
            while (seen.len() as u64) < N {
                let polled = poller
                    .poll_batch(|batch| {
                        let mut next = Some(batch);
                        while let Some(batch) = next {
                            let c = batch.completion().result().expect("success");
                            assert_eq!(c.qp_num(), qpn);
                            assert_eq!(u64::from(c.byte_len()), c.wr_id());
                            seen.push(c.wr_id());
                            next = batch.advance().expect("next_poll");
                        }
                    })
                    .expect("poll_batch");
                if polled.is_none() {
                    std::thread::yield_now();
                }
            }
            (poller, seen)
        });
        // This thread injects through the shared half, meeting a full CQ now and then.
        for i in 0..N {
            let c = InjectedCompletion::success(i, WcOpcode::RECV)
                .qp_num(qpn)
                .byte_len(i as u32);
            loop {
                match software::inject(shared, c) {
                    Ok(()) => break,
                    Err(e) if e.kind == ErrorKind::CqOverrun => std::thread::yield_now(),
                    Err(e) => panic!("inject: {e}"),
                }
            }
        }
        let (mut poller, seen) = polling.join().expect("polling thread");
        let drained = poller
            .poll_batch(|b| b.completion().wr_id())
            .unwrap()
            .is_none();
        (seen, drained)
    });
    assert_eq!(
        seen,
        (0..N).collect::<Vec<_>>(),
        "every completion, once, in order"
    );
    assert!(drained, "nothing left after the polling thread");
    destroyed(qp.destroy());
    destroyed(cq.destroy());
}

#[test]
fn cq_ex_whose_provider_lacks_a_read_function_is_refused() {
    const TEST: &str = "cq_ex_whose_provider_lacks_a_read_function_is_refused";
    let Some(_ctx) = common::software_ctx(TEST, "a faulty provider (SwConfig::missing_readers)")
    else {
        return;
    };
    let faulty = open_registered(
        "sw-missing-imm-reader",
        SwConfig {
            missing_readers: flags::IMM,
            ..SwConfig::default()
        },
    );
    let leaks = LeakCheck::new(&faulty, TEST);
    let drops = Drops::new();
    // The provider creates the CQ but leaves read_imm_data NULL: the typed layer refuses it at
    // creation, so the poll loop never calls a NULL pointer, and frees everything.
    let e = CqEx::<wc_flags!(BYTE_LEN | IMM)>::builder(&faulty)
        .context(drops.token(1))
        .build()
        .expect_err("read_imm_data is missing");
    assert_eq!(e.kind, ErrorKind::MissingProviderOp("read_imm_data"));
    assert_eq!((e.verb, e.errno()), (Verb::CreateCqEx, libc::EOPNOTSUPP));
    assert_eq!(drops.count(), 1, "the user context was dropped once");
    leaks.assert_unchanged("a refused CQ");
    // Without IMM the same device is fine.
    CqEx::<wc_flags!(BYTE_LEN)>::builder(&faulty)
        .build()
        .expect("no IMM asked");
}
