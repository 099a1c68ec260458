//! Tearing objects down safely, whatever the program leaks or panics (issue: sound by
//! construction):
//!
//! - a user context whose `Drop` panics inside `destroy()` does not destroy the C object twice;
//! - a batch leaked with `mem::forget` (or with a panic) is ended when its `poll_batch`
//!   returns, so the CQ stays usable and the QPs on it destroyable from any thread;
//! - destroying or resetting a QP on the thread that has a batch open on its CQ is refused (the
//!   provider's CQ lock, which the batch holds, would be waited for forever), dropping it there
//!   is deferred to the end of the batch, and on another thread it waits for the batch (the
//!   software device takes the CQ lock in `ibv_destroy_qp` as mlx5 does);
//! - a leaked multicast membership does not make its QP impossible to destroy.
//!
//! Runs on the software device and on rxe0; what needs the software device says SKIP.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{destroyed, feature, flushed_qp, in_batch, leak_checked, open, within, Drops};
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::ErrorState;
use typed_verbs::{
    software, Context, Cq, CqEx, ErrorKind, Gid, OwnRq, Pd, Poller, Qp, QpStateName, Rc, Shared,
    Srq, Standard, Ud, UdInit, Verb,
};

/// A user context whose drop panics.
struct PanicOnDrop;
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        panic!("user context drop panics");
    }
}

/// A PD and a CQ of 8 on `ctx`, the CQ split into its shared half and its poller, for `f`.
fn split_cq<R>(
    ctx: &Context,
    f: impl for<'c> FnOnce(&'c Pd<'_>, &'c CqEx<'_, Standard>, Poller<'c, Standard>) -> R,
) -> R {
    let pd = Pd::new(ctx).unwrap();
    let mut cq = CqEx::<Standard>::builder(ctx).cqe(8).build().unwrap();
    let (shared, poller) = cq.split();
    f(&pd, shared, poller)
}

/// [`split_cq`] on the test device, then the leak check (`what`) that `f` left nothing behind.
fn with_split_cq(
    test: &str,
    what: &str,
    f: impl for<'c> FnOnce(&'c Context, &'c Pd<'_>, &'c CqEx<'_, Standard>, Poller<'c, Standard>),
) {
    leak_checked(test, what, |ctx| {
        split_cq(ctx, |pd, shared, poller| f(ctx, pd, shared, poller))
    });
}

/// [`with_split_cq`] with a QP on the CQ (no user context) whose receive 1 was flushed: its
/// completion waits in the CQ.
fn with_flushed_qp(
    test: &str,
    what: &str,
    f: impl for<'c> FnOnce(
        &'c Context,
        &'c Pd<'_>,
        &'c CqEx<'_, Standard>,
        Poller<'c, Standard>,
        FlushedQp<'c>,
    ),
) {
    with_split_cq(test, what, |ctx, pd, shared, poller| {
        let qp = flushed_qp(pd, shared, (), 1);
        f(ctx, pd, shared, poller, qp)
    })
}

/// A QP of [`flushed_qp`], in ERR.
type FlushedQp<'c> = Qp<'c, Rc, OwnRq, Shared, (), ErrorState>;

#[test]
fn panicking_user_context_in_destroy_destroys_once() {
    const TEST: &str = "panicking_user_context_in_destroy_destroys_once";
    leak_checked(
        TEST,
        "destroying objects whose user context panics",
        |ctx| {
            let pd = Pd::new(ctx).unwrap();
            let cq = Cq::builder(ctx).context(PanicOnDrop).build().unwrap();
            let cq_ex = CqEx::<Standard>::builder(ctx)
                .context(PanicOnDrop)
                .build()
                .unwrap();
            let plain = Cq::builder(ctx).build().unwrap();
            let qp = Qp::<Rc>::builder(&pd, &plain, &plain)
                .context(PanicOnDrop)
                .build()
                .unwrap();
            // Each destroy succeeds at the C level, then the user context's drop panics: the
            // panic reaches the caller, and nothing is destroyed a second time (the process would
            // crash, and the leak check below would count the object twice).
            for (what, r) in [
                ("qp", catch_unwind(AssertUnwindSafe(|| drop(qp.destroy())))),
                ("cq", catch_unwind(AssertUnwindSafe(|| drop(cq.destroy())))),
                (
                    "cq_ex",
                    catch_unwind(AssertUnwindSafe(|| drop(cq_ex.destroy()))),
                ),
            ] {
                assert!(
                    r.is_err(),
                    "{what}: the user context's panic reaches the caller"
                );
            }
            let srq = Srq::builder(&pd).context(PanicOnDrop).build();
            if let Some(srq) = feature(ctx, TEST, "SRQs", srq) {
                assert!(catch_unwind(AssertUnwindSafe(|| drop(srq.destroy()))).is_err());
            }
            // The same from Drop: the C object goes once, the panic unwinds out of the drop.
            let qp = Qp::<Rc>::builder(&pd, &plain, &plain)
                .context(PanicOnDrop)
                .build()
                .unwrap();
            assert!(catch_unwind(AssertUnwindSafe(move || drop(qp))).is_err());
        },
    );
}

#[test]
fn leaked_batch_is_ended_when_poll_batch_returns() {
    const TEST: &str = "leaked_batch_is_ended_when_poll_batch_returns";
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
    let drops = Drops::new();
    {
        let (shared, mut poller) = cq.split();
        let _a = flushed_qp(&pd, shared, drops.token(1), 1);
        let _b = flushed_qp(&pd, shared, drops.token(2), 2);
        // Leak the batch that points at the first completion.
        let start = Instant::now();
        let mut leaked = None;
        while leaked.is_none() && start.elapsed() < Duration::from_secs(2) {
            leaked = poller.poll_batch(|b| std::mem::forget(b)).unwrap();
        }
        assert!(leaked.is_some(), "{TEST}: a flushed receive completes");
        // The CQ lock was released: the next batch opens (a leaked batch used to keep the
        // provider's CQ lock: this would wait forever) and finds the second completion.
        let second = std::thread::scope(|s| {
            let (tx, rx) = mpsc::channel();
            s.spawn(move || {
                let start = Instant::now();
                loop {
                    let got = poller.poll_batch(|b| b.completion().wr_id()).unwrap();
                    if got.is_some() || start.elapsed() > Duration::from_secs(2) {
                        let _ = tx.send(got);
                        break;
                    }
                }
            });
            rx.recv_timeout(Duration::from_secs(10))
                .expect("a batch after a leaked one opens")
        });
        assert!(second.is_some(), "the second completion is there");
        // And the QPs on the CQ are destroyed from another thread at once.
        let (tx, rx) = mpsc::channel();
        std::thread::scope(|s| {
            s.spawn(move || {
                drop(_a);
                drop(_b);
                let _ = tx.send(());
            });
            rx.recv_timeout(Duration::from_secs(10))
                .expect("the QPs are destroyed");
        });
    }
    assert_eq!(drops.count(), 2);
    // On a panic inside the closure the batch is ended too.
    let drops2 = Drops::new();
    let (shared, mut poller) = cq.split();
    let _q = flushed_qp(&pd, shared, drops2.token(3), 3);
    let start = Instant::now();
    let mut panicked = false;
    while !panicked && start.elapsed() < Duration::from_secs(2) {
        panicked = catch_unwind(AssertUnwindSafe(|| {
            poller.poll_batch(|b| {
                std::mem::forget(b);
                panic!("handler panics with its batch leaked");
            })
        }))
        .is_err();
    }
    assert!(panicked, "{TEST}: the flushed receive completes");
    assert!(
        poller.poll_batch(|_| ()).unwrap().is_none(),
        "the CQ is usable and empty"
    );
}

#[test]
fn qp_destroy_or_reset_inside_its_cqs_batch_is_refused_and_drop_is_deferred() {
    const TEST: &str = "qp_destroy_or_reset_inside_its_cqs_batch_is_refused_and_drop_is_deferred";
    let drops = Drops::new();
    with_split_cq(
        TEST,
        "QPs dropped inside a batch",
        |ctx, pd, shared, mut poller| {
            let victim = flushed_qp(pd, shared, drops.token(7), 7);
            let other = flushed_qp(pd, shared, drops.token(8), 8);
            let start = Instant::now();
            let mut slot = Some((victim, other));
            let mut ran = false;
            while !ran && start.elapsed() < Duration::from_secs(2) {
                ran = poller
                    .poll_batch(|batch| {
                        let _ = batch.completion().wr_id();
                        let (victim, other) = slot.take().expect("one batch runs this");
                        // Destroy: refused before the call, the QP comes back.
                        let e = victim.try_destroy().expect_err("destroy inside the batch");
                        assert_eq!(e.error.kind, ErrorKind::BatchOpen);
                        assert_eq!(e.error.verb, Verb::DestroyQp);
                        assert_eq!(e.error.errno(), libc::EDEADLK);
                        // Reset: refused likewise, the QP comes back in its state.
                        let e = e.object.try_to_reset().expect_err("reset inside the batch");
                        assert_eq!(e.error.kind, ErrorKind::BatchOpen);
                        assert_eq!(
                            e.error.verb,
                            Verb::ModifyQp {
                                from: QpStateName::Err,
                                to: QpStateName::Reset
                            }
                        );
                        // Moving to ERR does not take the CQ lock: allowed.
                        let victim = e.qp.to_error().unwrap_or_else(|e| panic!("{e}"));
                        // Drop: the destroy waits for the end of the batch; the user contexts go
                        // at once (they may borrow what the closure frees next).
                        let live = software::live_objects(ctx).map(|l| l.qps);
                        drop(victim);
                        drop(other);
                        assert_eq!(drops.count(), 2, "user contexts dropped at once");
                        assert_eq!(
                            software::live_objects(ctx).map(|l| l.qps),
                            live,
                            "the C QPs wait for the batch's end"
                        );
                    })
                    .unwrap()
                    .is_some();
            }
            assert!(ran, "{TEST}: a flushed receive completes");
            // The batch ended when poll_batch returned; the deferred QPs went then (the leak check
            // after this closure).
        },
    );
}

/// A QP destroyed on another thread while a batch is open on its CQ: the batch holds the lock
/// the destroy takes, so the destroy waits for the batch to end, as for a lock, and then
/// succeeds (it was refused with `BatchOpen` before, which pushed programs onto `Drop`).
#[test]
fn a_qp_destroyed_on_another_thread_during_a_batch_waits_for_its_end() {
    const TEST: &str = "a_qp_destroyed_on_another_thread_during_a_batch_waits_for_its_end";
    with_flushed_qp(
        TEST,
        "a QP destroyed after another thread's batch",
        |_, _, _, mut poller, qp| {
            let done = std::sync::atomic::AtomicBool::new(false);
            std::thread::scope(|s| {
                let destroyer = in_batch(&mut poller, || {
                    let done = &done;
                    let destroyer = s.spawn(move || {
                        let r = qp.destroy();
                        done.store(true, Ordering::SeqCst);
                        r
                    });
                    std::thread::sleep(Duration::from_millis(100));
                    assert!(
                        !done.load(Ordering::SeqCst),
                        "{TEST}: the destroy waits while the batch is open"
                    );
                    destroyer
                });
                destroyer.join().unwrap().unwrap_or_else(|e| {
                    panic!("{TEST}: the destroy succeeds after the batch: {e}")
                });
            });
        },
    );
}

/// The same, but the batch's closure joins the destroying thread, which waits for the batch:
/// the destroy gives up after a second (`BatchOpen`, the QP back), so neither waits for ever;
/// the QP, dropped then, is handed to the batch and destroyed after it.
#[test]
fn a_destroy_the_batch_waits_for_is_refused_after_a_second() {
    const TEST: &str = "a_destroy_the_batch_waits_for_is_refused_after_a_second";
    with_flushed_qp(
        TEST,
        "a QP handed to the batch that waited for its destroy",
        |_, _, _, mut poller, qp| {
            std::thread::scope(|s| {
                in_batch(&mut poller, || {
                    // Joined inside the batch: the destroy waits for this batch, which waits for
                    // it; the destroy's wait ends.
                    let waited = s
                        .spawn(move || {
                            let t = Instant::now();
                            let e = qp.try_destroy().expect_err("the batch never ends first");
                            assert_eq!(
                                (e.error.verb, e.error.kind),
                                (Verb::DestroyQp, ErrorKind::BatchOpen),
                                "{TEST}"
                            );
                            drop(e.object); // handed to the batch
                            t.elapsed()
                        })
                        .join()
                        .unwrap();
                    assert!(
                        waited >= Duration::from_millis(900) && waited < Duration::from_secs(5),
                        "{TEST}: the destroy waited {waited:?}, about a second"
                    );
                })
            });
            // The batch destroyed the QP it was handed after its end.
        },
    );
}

/// A QP dropped on another thread while a batch is open on its CQ: a `Drop` never waits (the
/// batch's closure here joins the dropping thread), so the QP is handed to the batch and
/// destroyed after its end.
#[test]
fn a_qp_dropped_on_another_thread_during_a_batch_is_handed_to_it() {
    const TEST: &str = "a_qp_dropped_on_another_thread_during_a_batch_is_handed_to_it";
    with_flushed_qp(
        TEST,
        "a QP handed to another thread's batch",
        |_, _, _, mut poller, qp| {
            std::thread::scope(|s| {
                // Joined inside the batch: the dropping thread must not wait for it.
                in_batch(&mut poller, || s.spawn(move || drop(qp)).join().unwrap())
            });
            // The batch destroyed the QP it was handed after its end.
        },
    );
}

#[test]
fn multicast_groups_never_left_do_not_block_the_qp_destroy() {
    const TEST: &str = "multicast_groups_never_left_do_not_block_the_qp_destroy";
    leak_checked(TEST, "multicast groups never left", |ctx| {
        let pd = Pd::new(ctx).unwrap();
        let cq = Cq::builder(ctx).build().unwrap();
        let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build().unwrap();
        let mut g = [0u8; 16];
        g[0] = 0xff;
        g[1] = 0x0e;
        g[15] = 0x51;
        qp.attach_mcast(Gid(g), 0)
            .expect("attach a multicast group");
        let mut g2 = g;
        g2[15] = 0x52;
        qp.attach_mcast(Gid(g2), 0).expect("attach a second group");
        // The QP's destroy detaches the groups it never left.
        destroyed(qp.destroy());
        // A dropped QP does too, with a group joined in RESET, before its bring-up.
        let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build().unwrap();
        qp.attach_mcast(Gid(g), 0).unwrap();
        let qp = qp
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: 0x1111_1111,
            })
            .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            qp.mcast_groups(),
            vec![(Gid(g), 0)],
            "the group survives the transition"
        );
        drop(qp);
        destroyed(cq.destroy());
        destroyed(pd.destroy());
    });
}

/// Inside a batch, nothing waits for a CQ lock: a second batch (on another CQ) and a legacy
/// `ibv_poll_cq` are refused, as destroy and reset are.
#[test]
fn nothing_inside_a_batch_waits_for_a_cq_lock() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
    let other = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
    let legacy = Cq::builder(&ctx).cqe(8).build().unwrap();
    let (shared, mut poller) = cq.split();
    let _qp = flushed_qp(&pd, shared, (), 1);
    let (nested, polled) = in_batch(&mut poller, || {
        let nested = other
            .poll_batch(|_| ())
            .expect_err("a nested batch is refused");
        let mut wc: [typed_verbs::WorkCompletion; 1] = Default::default();
        let polled = legacy.poll(&mut wc).expect_err("ibv_poll_cq is refused");
        (nested, polled)
    });
    assert_eq!(
        (nested.verb, nested.kind),
        (Verb::StartPoll, ErrorKind::BatchOpen)
    );
    assert_eq!(
        (polled.verb, polled.kind),
        (Verb::PollCq, ErrorKind::BatchOpen)
    );
    // After the batch both work again.
    assert_eq!(other.poll_batch(|_| ()).unwrap(), None);
    let mut wc: [typed_verbs::WorkCompletion; 1] = Default::default();
    assert!(legacy.poll(&mut wc).unwrap().is_empty());
}

/// A user context may borrow what the batch's closure frees after dropping the QP: it is
/// dropped with the QP's handle, not at the batch's end (when the borrow would be dangling).
#[test]
fn a_qp_user_context_is_dropped_with_its_handle_inside_a_batch() {
    struct Sums<'x>(&'x [u8], &'x AtomicU64);
    impl Drop for Sums<'_> {
        fn drop(&mut self) {
            let sum = self.0.iter().map(|&b| u64::from(b)).sum();
            self.1.store(sum, Ordering::SeqCst);
        }
    }
    let ctx = open();
    split_cq(&ctx, |pd, shared, mut poller| {
        let _qp = flushed_qp(pd, shared, (), 1);
        let seen = AtomicU64::new(0);
        in_batch(&mut poller, || {
            let data = vec![7u8; 4096];
            let qp = Qp::<Ud>::builder(pd, shared, shared)
                .context(Sums(&data, &seen))
                .build()
                .unwrap();
            drop(qp);
            drop(data);
        });
        assert_eq!(
            seen.load(Ordering::SeqCst),
            7 * 4096,
            "the context read live data when it dropped"
        );
    });
}

/// Objects a deferred QP may use, dropped after it inside the same batch, are destroyed after
/// it at the batch's end, not leaked with EBUSY; a context dropped there is closed after it.
#[test]
fn parents_dropped_after_a_deferred_qp_follow_it() {
    const TEST: &str = "parents_dropped_after_a_deferred_qp_follow_it";
    let drops = Drops::new();
    with_flushed_qp(
        TEST,
        "parents dropped inside a batch after a QP",
        |ctx, _, _, mut poller, _qp| {
            let name = ctx.device_name().to_string();
            let token = drops.token(1);
            in_batch(&mut poller, move || {
                // Everything here is new and dropped in creation order, the QP first.
                let ctx2 = typed_verbs::Context::open(&name).unwrap();
                let pd2 = Pd::new(&ctx2).unwrap();
                let cq2 = Cq::builder(&ctx2).context(token).build().unwrap();
                let srq2 = Srq::builder(&pd2).build().ok();
                let qp2 = Qp::<Rc>::builder(&pd2, &cq2, &cq2).build().unwrap();
                drop(qp2);
                drop(srq2);
                drop(cq2);
                drop(pd2);
                drop(ctx2);
            });
            assert_eq!(
                drops.count(),
                1,
                "the CQ's user context went with its handle"
            );
            // The second context was closed (its objects first), and nothing of ours leaked.
        },
    );
}

/// Two threads, each inside a batch on its own CQ, each drop a QP that uses the other's CQ: the
/// destroys wait for the batches' ends instead of for each other's CQ locks.
#[test]
fn threads_inside_batches_do_not_wait_for_each_others_cq_locks() {
    within(Duration::from_secs(20), || {
        let ctx = open();
        let pd = Pd::new(&ctx).unwrap();
        let mut cq1 = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
        let mut cq2 = CqEx::<Standard>::builder(&ctx).cqe(8).build().unwrap();
        let (s1, mut p1) = cq1.split();
        let (s2, mut p2) = cq2.split();
        let _f1 = flushed_qp(&pd, s1, (), 1);
        let _f2 = flushed_qp(&pd, s2, (), 2);
        let on_cq2 = Qp::<Rc>::builder(&pd, s2, s2).build().unwrap();
        let on_cq1 = Qp::<Rc>::builder(&pd, s1, s1).build().unwrap();
        let both = std::sync::Barrier::new(2);
        std::thread::scope(|s| {
            let both = &both;
            s.spawn(move || {
                in_batch(&mut p1, || {
                    both.wait();
                    drop(on_cq2);
                })
            });
            s.spawn(move || {
                in_batch(&mut p2, || {
                    both.wait();
                    drop(on_cq1);
                })
            });
        });
    });
}

/// A user context whose drop panics, dropped inside a batch: the QP is still destroyed at the
/// batch's end, and so are the QPs dropped before it.
#[test]
fn a_panicking_user_context_inside_a_batch_strands_nothing() {
    const TEST: &str = "a_panicking_user_context_inside_a_batch_strands_nothing";
    with_flushed_qp(
        TEST,
        "a panicking user context inside a batch",
        |_, pd, shared, mut poller, _qp| {
            let good = Qp::<Ud>::builder(pd, shared, shared).build().unwrap();
            let bad = Qp::<Ud>::builder(pd, shared, shared)
                .context(PanicOnDrop)
                .build()
                .unwrap();
            let mut qps = Some((good, bad));
            let r = catch_unwind(AssertUnwindSafe(|| {
                in_batch(&mut poller, || {
                    let (good, bad) = qps.take().unwrap();
                    drop(good);
                    drop(bad);
                })
            }));
            assert!(r.is_err(), "{TEST}: the context's panic reaches the caller");
        },
    );
}

/// Objects a waiting QP uses may move to another thread once its handle is gone: dropped
/// there, they wait behind it too (per context, not per thread), and its context is not closed
/// under it: `close` is refused meanwhile and a dropped context is closed after the QP.
#[test]
fn parents_dropped_on_another_thread_wait_for_the_qp() {
    const TEST: &str = "parents_dropped_on_another_thread_wait_for_the_qp";
    with_flushed_qp(
        TEST,
        "parents dropped on another thread while their QP waited",
        |ctx, _, _, mut poller, _qp| {
            let name = ctx.device_name().to_string();
            let ctx_ref = ctx;
            let refused = in_batch(&mut poller, move || {
                // Of the test's own context: a PD and CQ dropped on another thread.
                let pd2 = Pd::new(ctx_ref).unwrap();
                let cq2 = Cq::builder(ctx_ref).build().unwrap();
                let qp2 = Qp::<Rc>::builder(&pd2, &cq2, &cq2).build().unwrap();
                drop(qp2);
                std::thread::scope(|s| {
                    s.spawn(move || {
                        drop(cq2);
                        drop(pd2);
                    });
                });
                // Another context: its QP waits, the context moves to another thread and is
                // closed there.
                let ctx3 = typed_verbs::Context::open(&name).unwrap();
                let pd3 = Pd::new(&ctx3).unwrap();
                let cq3 = Cq::builder(&ctx3).build().unwrap();
                let qp3 = Qp::<Rc>::builder(&pd3, &cq3, &cq3).build().unwrap();
                drop(qp3);
                drop(cq3);
                drop(pd3);
                std::thread::spawn(move || match ctx3.try_close() {
                    Ok(()) => None,
                    Err(e) => {
                        let kind = e.error.kind.clone();
                        drop(e.object); // dropping closes it after the QP
                        Some(kind)
                    }
                })
                .join()
                .unwrap()
            });
            assert_eq!(
                refused,
                Some(ErrorKind::BatchOpen),
                "{TEST}: close while a QP waits"
            );
        },
    );
}
