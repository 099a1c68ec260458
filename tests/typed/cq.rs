//! Legacy completion queues (`ibv_create_cq`, `ibv_poll_cq`).
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{assert_out_of_range, destroyed, open, Drops, LeakCheck};
use typed_verbs::software::{self, SwConfig};
use typed_verbs::{
    CompChannel, Cq, ErrorKind, InjectedCompletion, Verb, WcOpcode, WcStatus, WorkCompletion,
};

#[test]
fn cq_actual_cqe_is_at_least_requested() {
    let ctx = open();
    let max = ctx.attr().max_cqe;
    for want in [1, 2, 3, 15, 16, 100, 1000, max] {
        let want = want.min(max);
        let cq = Cq::builder(&ctx).cqe(want).build().expect("create cq");
        assert!(cq.cqe() >= want, "asked {want}, got {}", cq.cqe());
        destroyed(cq.destroy());
    }
    // The default is one entry.
    let cq = Cq::builder(&ctx).build().expect("default cq");
    assert!(cq.cqe() >= 1);
}

#[test]
fn cq_user_context_is_readable_and_dropped_on_destroy() {
    let ctx = open();
    let drops = Drops::new();
    let cq = Cq::builder(&ctx)
        .cqe(8)
        .context(drops.token(0xC0FFEE))
        .build()
        .expect("create cq");
    assert_eq!(cq.user_context().id, 0xC0FFEE);
    assert_eq!(drops.count(), 0, "the CQ owns its context");
    destroyed(cq.destroy());
    assert_eq!(drops.count(), 1, "destroy drops the context once");

    // Dropping (instead of destroy) also frees it, once.
    let cq = Cq::builder(&ctx)
        .context(drops.token(2))
        .build()
        .expect("create cq");
    assert_eq!(cq.user_context().id, 2);
    drop(cq);
    assert_eq!(drops.count(), 2);

    // A String context, the common case.
    let cq = Cq::builder(&ctx)
        .context(String::from("my cq"))
        .build()
        .expect("create cq");
    assert_eq!(cq.user_context(), "my cq");
}

#[test]
fn cq_cqe_zero_and_over_max_are_out_of_range() {
    const TEST: &str = "cq_cqe_zero_and_over_max_are_out_of_range";
    let ctx = open();
    let max = ctx.attr().max_cqe;
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    // cqe = 0, past max_cqe (where max_cqe + 1 is a u32), u32::MAX: each refused before the
    // call, the failed builder's context dropped once, nothing left behind.
    let bad = [Some(0), max.checked_add(1), Some(u32::MAX)];
    for (cqe, id) in bad.into_iter().flatten().zip(1..) {
        assert_out_of_range(
            Cq::builder(&ctx).cqe(cqe).context(drops.token(id)).build(),
            Verb::CreateCq,
            "cqe",
            cqe.into(),
            1,
            max.into(),
        );
        assert_eq!(
            drops.count() as u64,
            id,
            "the failed builder's context is dropped once"
        );
        leaks.assert_unchanged(&format!("cqe = {cqe}"));
    }
}

#[test]
fn cq_comp_vector_must_be_below_num_comp_vectors() {
    const TEST: &str = "cq_comp_vector_must_be_below_num_comp_vectors";
    let ctx = open();
    let n = ctx.num_comp_vectors();
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    for (v, id) in [n, u32::MAX].into_iter().zip(1..) {
        assert_out_of_range(
            Cq::builder(&ctx)
                .comp_vector(v)
                .context(drops.token(id))
                .build(),
            Verb::CreateCq,
            "comp_vector",
            v.into(),
            0,
            (n - 1).into(),
        );
        assert_eq!(drops.count() as u64, id);
        leaks.assert_unchanged(&format!("comp_vector = {v}"));
    }
}

#[test]
fn cq_with_channel_and_every_comp_vector() {
    let ctx = open();
    let leaks = LeakCheck::new(&ctx, "cq_with_channel_and_every_comp_vector");
    let ch = CompChannel::new(&ctx).expect("channel");
    for v in 0..ctx.num_comp_vectors() {
        let cq = Cq::builder(&ctx)
            .cqe(4)
            .channel(&ch)
            .comp_vector(v)
            .build()
            .unwrap_or_else(|e| panic!("comp_vector {v} with a channel: {e}"));
        cq.req_notify(false).expect("req_notify");
        cq.req_notify(true).expect("req_notify solicited");
        if let Some(b) = leaks.before() {
            let now = software::live_objects(&ctx).unwrap();
            assert_eq!(
                (now.cqs, now.comp_channels),
                (b.cqs + 1, b.comp_channels + 1)
            );
        }
        destroyed(cq.destroy());
    }
    destroyed(ch.destroy());
    leaks.assert_unchanged("channel CQs destroyed");
}

#[test]
fn cq_with_channel_of_another_context_is_wrong_context() {
    const TEST: &str = "cq_with_channel_of_another_context_is_wrong_context";
    let (ctx, other) = common::two_contexts();
    let ch = CompChannel::new(&other).expect("channel of the other context");
    common::assert_foreign_refused(&ctx, TEST, Verb::CreateCq, "channel", |token| {
        Cq::builder(&ctx).channel(&ch).context(token).build()
    });
}

#[test]
fn out_of_range_display_names_the_verb_and_attribute() {
    let ctx = open();
    let max = ctx.attr().max_cqe;
    let e = Cq::builder(&ctx).cqe(0).build().expect_err("cqe 0");
    let text = e.to_string();
    assert!(text.starts_with("ibv_create_cq:"), "{text}");
    assert!(text.contains("cqe = 0"), "{text}");
    assert!(text.contains("at least 1"), "{text}");
    assert!(text.contains(&format!("at most {max}")), "{text}");

    let n = ctx.num_comp_vectors();
    let e = Cq::builder(&ctx)
        .comp_vector(n)
        .build()
        .expect_err("bad comp_vector");
    let text = e.to_string();
    assert!(text.starts_with("ibv_create_cq:"), "{text}");
    assert!(text.contains(&format!("comp_vector = {n}")), "{text}");
    assert!(text.contains(&format!("at most {}", n - 1)), "{text}");
}

#[test]
fn os_error_display_names_the_verb_and_errno() {
    const TEST: &str = "os_error_display_names_the_verb_and_errno";
    common::on_like_rxe(TEST, "cq-display-like-rxe", |ctx| {
        let e = typed_verbs::CqEx::<typed_verbs::wc_flags!(COMPLETION_TIMESTAMP)>::builder(ctx)
            .build()
            .expect_err("like_rxe has no timestamps");
        assert_eq!(e.to_string(), "ibv_create_cq_ex failed: EOPNOTSUPP");
        let source = std::error::Error::source(&e).expect("the io::Error as the source");
        let io = source
            .downcast_ref::<std::io::Error>()
            .expect("an io::Error");
        assert_eq!(io.raw_os_error(), Some(libc::EOPNOTSUPP));
    });
}

/// On the software device (a SKIP line for `test` elsewhere): a CQ of `cqe` entries to inject
/// completions into, for `f`.
fn with_injection_cq(test: &str, cqe: u32, f: impl FnOnce(&Cq<'_>)) {
    common::on_software(test, "completion injection", |ctx| {
        let cq = Cq::builder(ctx).cqe(cqe).build().expect("cq");
        f(&cq)
    });
}

const ERRS: [WcStatus; 4] = [
    WcStatus::LOC_LEN_ERR,
    WcStatus::WR_FLUSH_ERR,
    WcStatus::REM_ACCESS_ERR,
    WcStatus::RETRY_EXC_ERR,
];

fn is_error(i: u32) -> bool {
    i % 4 == 3
}

/// The completion `i` of a varied sequence: successes with every opcode and field, and an error
/// completion (with its own status and vendor_err) every fourth.
fn varied(i: u32) -> InjectedCompletion {
    let wr_id = 1000 + u64::from(i);
    if is_error(i) {
        return InjectedCompletion::error(wr_id, ERRS[(i as usize / 4) % 4], 0x50 + i);
    }
    let c = InjectedCompletion::success(
        wr_id,
        common::WC_OPCODES[i as usize % common::WC_OPCODES.len()],
    )
    .byte_len(64 * i + 1)
    .qp_num(0x100 + i)
    .src_qp(0x200 + i)
    .slid(0x300 + i as u16)
    .sl((i % 16) as u8)
    .dlid_path_bits((i % 8) as u8)
    .pkey_index(i as u16);
    match i % 3 {
        0 => c.imm_data(0xdead_0000 + i),
        1 => c.invalidated_rkey(0xbeef_0000 + i),
        _ => c.with_grh(),
    }
}

/// Checks a polled legacy completion against `varied(i)`.
#[track_caller]
fn check_varied(i: u32, wc: &WorkCompletion) {
    assert_eq!(wc.wr_id(), 1000 + u64::from(i), "order");
    if is_error(i) {
        assert_eq!(wc.status(), ERRS[(i as usize / 4) % 4]);
        assert!(wc.success().is_none(), "no success fields on an error");
        assert_eq!(wc.vendor_err(), 0x50 + i);
        return;
    }
    assert_eq!(wc.status(), WcStatus::SUCCESS);
    let s = wc.success().expect("success fields");
    assert_eq!(s.wr_id(), wc.wr_id());
    assert_eq!(
        s.opcode(),
        common::WC_OPCODES[i as usize % common::WC_OPCODES.len()]
    );
    assert_eq!(
        s.opcode().is_recv(),
        matches!(s.opcode(), WcOpcode::RECV | WcOpcode::RECV_RDMA_WITH_IMM)
    );
    assert_eq!(s.byte_len(), 64 * i + 1);
    assert_eq!(s.qp_num(), 0x100 + i);
    assert_eq!(s.src_qp(), 0x200 + i);
    assert_eq!(s.slid(), 0x300 + i as u16);
    assert_eq!(s.sl(), (i % 16) as u8);
    assert_eq!(s.dlid_path_bits(), (i % 8) as u8);
    assert_eq!(s.pkey_index(), i as u16);
    let (imm, inv, grh) = match i % 3 {
        0 => (Some(0xdead_0000 + i), None, 0),
        1 => (None, Some(0xbeef_0000 + i), 0),
        _ => (None, None, 1),
    };
    assert_eq!(s.imm_data(), imm);
    assert_eq!(s.invalidated_rkey(), inv);
    assert_eq!(s.wc_flags() & 1, grh, "IBV_WC_GRH");
    assert_eq!(s.wc_flags() & 2 != 0, imm.is_some(), "IBV_WC_WITH_IMM");
    assert_eq!(s.wc_flags() & 8 != 0, inv.is_some(), "IBV_WC_WITH_INV");
}

#[test]
fn cq_poll_returns_injected_completions_in_order() {
    const TEST: &str = "cq_poll_returns_injected_completions_in_order";
    with_injection_cq(TEST, 64, |cq| {
        let mut wc = [const { WorkCompletion::new() }; 16];
        assert!(cq.poll(&mut wc).expect("poll empty").is_empty());

        const N: u32 = 40;
        for i in 0..N {
            software::inject(cq, varied(i)).expect("inject");
        }
        let mut next = 0;
        let mut rounds = 0;
        loop {
            let got = cq.poll(&mut wc).expect("poll");
            if got.is_empty() {
                break;
            }
            rounds += 1;
            assert!(got.len() <= 16);
            for w in got {
                check_varied(next, w);
                next += 1;
            }
        }
        assert_eq!(next, N, "every completion polled once");
        assert_eq!(rounds, N.div_ceil(16), "full arrays until the last");
        assert!(cq.poll(&mut wc).expect("poll drained").is_empty());

        // A zero-length array polls nothing and consumes nothing.
        software::inject(cq, varied(0)).expect("inject");
        assert!(cq.poll(&mut []).expect("poll into nothing").is_empty());
        let got = cq.poll(&mut wc[..1]).expect("poll one");
        assert_eq!(got.len(), 1);
        check_varied(0, &got[0]);
    });
}

#[test]
fn cq_imm_data_and_invalidated_rkey_only_when_injected() {
    const TEST: &str = "cq_imm_data_and_invalidated_rkey_only_when_injected";
    with_injection_cq(TEST, 8, |cq| {
        let plain = InjectedCompletion::success(1, WcOpcode::RECV).byte_len(8);
        software::inject(cq, plain).unwrap();
        software::inject(cq, plain.imm_data(0)).unwrap(); // zero immediate data is still Some
        software::inject(cq, plain.invalidated_rkey(0x1234)).unwrap();
        // The last setter wins: imm then rkey carries only the rkey, and the other way round.
        software::inject(cq, plain.imm_data(7).invalidated_rkey(9)).unwrap();
        software::inject(cq, plain.invalidated_rkey(9).imm_data(7)).unwrap();
        let mut wc = [const { WorkCompletion::new() }; 8];
        let got = cq.poll(&mut wc).unwrap();
        let seen: Vec<_> = got
            .iter()
            .map(|w| {
                let s = w.success().unwrap();
                (s.imm_data(), s.invalidated_rkey())
            })
            .collect();
        assert_eq!(
            seen,
            [
                (None, None),
                (Some(0), None),
                (None, Some(0x1234)),
                (None, Some(9)),
                (Some(7), None),
            ]
        );
    });
}

#[test]
fn cq_overrun_is_reported() {
    const TEST: &str = "cq_overrun_is_reported";
    with_injection_cq(TEST, 4, |cq| {
        let n = cq.cqe();
        assert_eq!(software::has_overrun(cq), Some(false));
        for i in 0..n {
            software::inject(cq, varied(i)).expect("room for cqe() completions");
        }
        let e = software::inject(cq, varied(n)).expect_err("one more than cqe()");
        assert_eq!(e.verb, Verb::InjectCompletion);
        assert_eq!(e.kind, ErrorKind::CqOverrun);
        assert_eq!(e.errno(), libc::ENOSPC);
        assert_eq!(software::has_overrun(cq), Some(true));
        assert_eq!(
            software::lost_completions(cq),
            Some(0),
            "not an IGNORE_OVERRUN CQ"
        );
        // What was in the CQ is still there, in order.
        let mut wc: Vec<WorkCompletion> = (0..n + 4).map(|_| WorkCompletion::new()).collect();
        let got = cq.poll(&mut wc).unwrap();
        assert_eq!(got.len() as u32, n);
        for (i, w) in got.iter().enumerate() {
            check_varied(i as u32, w);
        }
    });
}

#[test]
fn cq_shared_between_an_injecting_and_a_polling_thread() {
    const TEST: &str = "cq_shared_between_an_injecting_and_a_polling_thread";
    // A small CQ, so that the ring wraps many times and the injector meets a full CQ.
    with_injection_cq(TEST, 8, |cq| {
        const N: u64 = 5000;
        let polled = std::thread::scope(|s| {
            s.spawn(|| {
                for i in 0..N {
                    let c = InjectedCompletion::success(i, WcOpcode::SEND).byte_len(i as u32);
                    loop {
                        match software::inject(cq, c) {
                            Ok(()) => break,
                            Err(e) if e.kind == ErrorKind::CqOverrun => std::thread::yield_now(),
                            Err(e) => panic!("inject: {e}"),
                        }
                    }
                }
            });
            let poller = s.spawn(|| {
                let mut wc = [const { WorkCompletion::new() }; 16];
                let mut seen = Vec::with_capacity(N as usize);
                while (seen.len() as u64) < N {
                    let got = cq.poll(&mut wc).expect("poll");
                    if got.is_empty() {
                        std::thread::yield_now();
                    }
                    for w in got {
                        let s = w.success().expect("success");
                        assert_eq!(
                            u64::from(s.byte_len()),
                            w.wr_id(),
                            "fields of one completion"
                        );
                        seen.push(w.wr_id());
                    }
                }
                seen
            });
            poller.join().expect("poller")
        });
        assert_eq!(
            polled,
            (0..N).collect::<Vec<_>>(),
            "every completion, once, in order"
        );
        let mut wc = [const { WorkCompletion::new() }; 1];
        assert!(cq.poll(&mut wc).unwrap().is_empty());
    });
}

#[test]
fn cq_polled_from_several_threads() {
    const TEST: &str = "cq_polled_from_several_threads";
    with_injection_cq(TEST, 4096, |cq| {
        const N: u64 = 4000;
        for i in 0..N {
            software::inject(cq, InjectedCompletion::success(i, WcOpcode::RECV)).unwrap();
        }
        // Four pollers share &Cq (ibv_poll_cq locks inside the provider).
        let mut all: Vec<u64> = std::thread::scope(|s| {
            let handles: Vec<_> = (0..4)
                .map(|_| {
                    s.spawn(|| {
                        let mut wc = [const { WorkCompletion::new() }; 7];
                        let mut mine = Vec::new();
                        loop {
                            let got = cq.poll(&mut wc).expect("poll");
                            if got.is_empty() {
                                break mine;
                            }
                            let ids: Vec<u64> = got.iter().map(|w| w.wr_id()).collect();
                            // One poll call returns consecutive completions.
                            assert!(ids.windows(2).all(|p| p[1] == p[0] + 1), "{ids:?}");
                            if let Some(&last) = mine.last() {
                                assert!(ids[0] > last, "a thread sees completions in order");
                            }
                            mine.extend(ids);
                        }
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().expect("poller"))
                .collect()
        });
        all.sort_unstable();
        assert_eq!(
            all,
            (0..N).collect::<Vec<_>>(),
            "each completion polled exactly once"
        );
    });
}

#[test]
fn cq_on_a_registered_device_uses_its_limits() {
    const TEST: &str = "cq_on_a_registered_device_uses_its_limits";
    let Some(ctx) = common::registered_for(
        TEST,
        "software::register",
        "cq-limits-custom",
        SwConfig {
            max_cqe: 100,
            num_comp_vectors: 1,
            ..SwConfig::default()
        },
    ) else {
        return;
    };
    let leaks = LeakCheck::new(&ctx, TEST);
    let drops = Drops::new();
    let cq = Cq::builder(&ctx).cqe(100).build().expect("cqe = max_cqe");
    assert!(cq.cqe() >= 100);
    drop(cq);
    assert_out_of_range(
        Cq::builder(&ctx).cqe(101).context(drops.token(1)).build(),
        Verb::CreateCq,
        "cqe",
        101,
        1,
        100,
    );
    assert_out_of_range(
        Cq::builder(&ctx)
            .comp_vector(1)
            .context(drops.token(2))
            .build(),
        Verb::CreateCq,
        "comp_vector",
        1,
        0,
        0,
    );
    assert_eq!(drops.count(), 2);
    leaks.assert_unchanged("rejected CQs");
}

#[test]
fn cq_create_failing_in_the_device_frees_the_user_context() {
    const TEST: &str = "cq_create_failing_in_the_device_frees_the_user_context";
    let Some(ctx) = common::quota_one(TEST, "cq-quota-one") else {
        return;
    };
    let drops = Drops::new();
    let first = Cq::builder(&ctx)
        .context(drops.token(1))
        .build()
        .expect("first CQ");
    let leaks = LeakCheck::new(&ctx, TEST);
    let e = Cq::builder(&ctx)
        .context(drops.token(2))
        .build()
        .expect_err("the device holds one CQ");
    common::assert_os_error(&e, Verb::CreateCq, libc::ENOMEM);
    assert_eq!(
        drops.count(),
        1,
        "the failed CQ's context dropped, the live one kept"
    );
    leaks.assert_unchanged("CQ refused by the device");
    assert_eq!(first.user_context().id, 1);
    destroyed(first.destroy());
    assert_eq!(drops.count(), 2);
}
