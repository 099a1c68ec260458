//! The per-CQ gates (src/object/teardown.rs) under load: pollers on two CQs while other threads drop,
//! destroy and reset QPs on them in both orders; nothing hangs, nothing leaks, and an explicit
//! teardown of a QP on one CQ succeeds unless the batch in progress there outlasts the gate's
//! wait of a second (then it is refused, never sooner).
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]
mod common;

use common::{feeder_qp, leak_checked, open, two_split_cqs, within, LeakCheck, REMOTE_WRITE_INIT};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use typed_verbs::{Context, CqEx, ErrorKind, Pd, Poller, Qp, Rc, Standard};

/// Batches on A and B (two pollers on two threads, each batch short), while two threads make
/// QPs on (A,B), (B,A), (A,A) and drop, destroy or reset them. Every QP is destroyed, nothing
/// hangs, the context closes.
#[test]
fn teardowns_race_batches_on_shared_cqs() {
    let iters: usize = std::env::var("ATTACK_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    within(Duration::from_secs(120), move || {
        let ctx = open();
        let leaks = LeakCheck::new(&ctx, "stress");
        {
            two_split_cqs(&ctx, 4096, |pd, (sa, mut pa), (sb, mut pb)| {
                let stop = AtomicBool::new(false);
                std::thread::scope(|s| {
                    // Joined explicitly below: helgrind sees a join (pthread_join), not the
                    // scope's own wait, as ordering a thread's last accesses before what follows.
                    let mut pollers = Vec::new();
                    for (p, cq) in [(&mut pa, sa), (&mut pb, sb)] {
                        let stop = &stop;
                        pollers.push(s.spawn(move || {
                            // A feeder QP whose flushed receives keep the CQ non-empty.
                            let mut feeder = None;
                            while !stop.load(Ordering::Relaxed) {
                                if feeder.is_none() {
                                    feeder = Some(feeder_qp(pd, cq, 64));
                                }
                                match p.poll_batch(|_b| std::thread::yield_now()).unwrap() {
                                    Some(()) => {}
                                    None => feeder = None, // dropped here, out of a batch
                                }
                            }
                        }));
                    }
                    let mut workers = Vec::new();
                    for w in 0..2usize {
                        workers.push(s.spawn(move || {
                            for i in 0..iters {
                                let (x, y) = match (i + w) % 3 {
                                    0 => (sa, sb),
                                    1 => (sb, sa),
                                    _ => (sa, sa),
                                };
                                let q = Qp::<Rc>::builder(pd, x, y).build().unwrap();
                                match i % 3 {
                                    0 => drop(q),
                                    1 => {
                                        let started = Instant::now();
                                        match q.try_destroy() {
                                            Ok(()) => {}
                                            Err(e) => {
                                                refused(x, y, started, &e.error);
                                                drop(e.object)
                                            }
                                        }
                                    }
                                    _ => {
                                        let q = q
                                            .to_init(REMOTE_WRITE_INIT)
                                            .unwrap_or_else(|e| panic!("{e}"));
                                        let started = Instant::now();
                                        match q.try_to_reset() {
                                            Ok(q) => drop(q),
                                            Err(e) => {
                                                refused(x, y, started, &e.error);
                                                drop(e.qp)
                                            }
                                        }
                                    }
                                }
                            }
                        }));
                    }
                    for w in workers {
                        w.join().unwrap();
                    }
                    stop.store(true, Ordering::Relaxed);
                    for p in pollers {
                        p.join().unwrap();
                    }
                });
            });
        }
        leaks.assert_unchanged("every QP destroyed");
        ctx.close().expect("the context closes: nothing waits");
    });
}

/// A teardown of a QP on CQs `x` and `y`, started at `started`, was refused: only as the gates
/// allow. A QP on two busy CQs may be handed on; a QP on one CQ waits for the batch in progress
/// there, and is refused only when that batch outlasted the gate's wait of a second (which a
/// thread descheduled in its batch can make happen, under valgrind say), never sooner.
fn refused(
    x: &CqEx<'_, Standard>,
    y: &CqEx<'_, Standard>,
    started: Instant,
    e: &typed_verbs::Error,
) {
    assert_eq!(e.kind, ErrorKind::BatchOpen, "{e}");
    if std::ptr::eq(x, y) {
        let waited = started.elapsed();
        assert!(
            waited >= Duration::from_millis(990),
            "refused after {waited:?}, before the wait: {e}"
        );
        println!("NOTE gate_stress: a QP on one CQ refused after {waited:?} (its batch outlasted the wait)");
    }
}

/// Two pollers keep A and B busy: each batch's closure takes a few milliseconds, and a new batch
/// opens as soon as one ends. Runs `f` meanwhile, on this thread (out of any batch).
type BusyBody = dyn for<'a> FnOnce(&'a Context, &'a Pd<'a>, &'a CqEx<'a, Standard>, &'a CqEx<'a, Standard>)
    + Send;

fn with_busy_cqs(test: &str, f: Box<BusyBody>) {
    let test = test.to_owned();
    within(Duration::from_secs(120), move || {
        let ctx = open();
        let leaks = LeakCheck::new(&ctx, &test);
        {
            two_split_cqs(&ctx, 4096, |pd, (sa, pa), (sb, pb)| {
                let stop = AtomicBool::new(false);
                std::thread::scope(|s| {
                    let pollers: [(Poller<'_, Standard>, &CqEx<'_, Standard>); 2] =
                        [(pa, sa), (pb, sb)];
                    // Joined explicitly below, as helgrind sees only a join as ordering.
                    let mut threads = Vec::new();
                    for (mut p, cq) in pollers {
                        let stop = &stop;
                        threads.push(s.spawn(move || {
                            // One feeder QP for the whole test (so that the live QPs are the
                            // test's own and the feeder): its flushed receives keep the CQ
                            // non-empty, one completion per batch.
                            let _feeder = feeder_qp(pd, cq, 4000);
                            while !stop.load(Ordering::Relaxed) {
                                let busy = |_b: typed_verbs::Batch<'_, Standard>| {
                                    std::thread::sleep(Duration::from_millis(3))
                                };
                                if p.poll_batch(busy).unwrap().is_none() {
                                    std::thread::sleep(Duration::from_millis(1));
                                }
                            }
                        }));
                    }
                    std::thread::sleep(Duration::from_millis(20)); // the feeders are up
                    f(&ctx, pd, sa, sb);
                    stop.store(true, Ordering::Relaxed);
                    for t in threads {
                        t.join().unwrap();
                    }
                });
            });
        }
        leaks.assert_unchanged("every QP destroyed");
        ctx.close().expect("the context closes: nothing waits");
    });
}

/// Out of any batch, `destroy` and `to_reset` of QPs on one CQ kept busy by batches on another
/// thread wait for the batch in progress and succeed, every time (they were refused with
/// `BatchOpen` whenever a batch was open, most of the time under load). A QP on two CQs both
/// kept busy succeeds too, or, when the two never leave it a gap, is refused (`BatchOpen`)
/// rather than holding one CQ while it waits for the other.
#[test]
fn explicit_teardowns_wait_for_busy_cqs() {
    with_busy_cqs(
        "explicit_teardowns_wait_for_busy_cqs",
        Box::new(|_ctx, pd, sa, sb| {
            for i in 0..20 {
                let x = if i % 2 == 0 { sa } else { sb };
                let q = Qp::<Rc>::builder(pd, x, x).build().unwrap();
                q.destroy().unwrap_or_else(|e| panic!("destroy {i}: {e}"));
                let q = Qp::<Rc>::builder(pd, x, x).build().unwrap();
                let q = q
                    .to_init(REMOTE_WRITE_INIT)
                    .unwrap_or_else(|e| panic!("{e}"));
                let q = q.to_reset().unwrap_or_else(|e| panic!("to_reset {i}: {e}"));
                drop(q);
            }
            for i in 0..5 {
                let q = Qp::<Rc>::builder(pd, sa, sb).build().unwrap();
                if let Err(e) = q.try_destroy() {
                    assert_eq!(e.error.kind, ErrorKind::BatchOpen, "destroy {i} on two CQs");
                    drop(e.object); // handed to a batch
                }
            }
        }),
    );
}

/// Threads destroying and resetting QPs of one CQ back to back, with no batch anywhere: each
/// explicit teardown that waits goes before newcomers, so none is refused.
#[test]
fn explicit_teardowns_of_one_cq_never_starve_each_other() {
    within(Duration::from_secs(120), || {
        leak_checked("teardowns_of_one_cq", "every QP destroyed", |ctx| {
            let pd = Pd::new(ctx).unwrap();
            let cq = CqEx::<Standard>::builder(ctx).cqe(8).build().unwrap();
            std::thread::scope(|s| {
                for _ in 0..3 {
                    let (pd, cq) = (&pd, &cq);
                    s.spawn(move || {
                        for i in 0..300 {
                            let q = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
                            if i % 2 == 0 {
                                q.destroy().unwrap_or_else(|e| panic!("destroy {i}: {e}"));
                            } else {
                                let q = q
                                    .to_init(REMOTE_WRITE_INIT)
                                    .unwrap_or_else(|e| panic!("{e}"));
                                drop(q.to_reset().unwrap_or_else(|e| panic!("to_reset {i}: {e}")));
                            }
                        }
                    });
                }
            });
        });
    });
}

/// A QP on A and B dropped while batches keep both busy is destroyed within a bounded number of
/// batch ends: the batch it is handed to waits, after its end, for the batch in progress on the
/// other CQ (no new one opening meanwhile) and destroys it. Before, each batch's end found the
/// other CQ busy and handed it on, so two CQs kept busy could pass it between them for ever,
/// keeping its PD, CQs and context alive.
#[test]
fn a_qp_dropped_while_both_its_cqs_stay_busy_is_destroyed_soon() {
    with_busy_cqs(
        "a_qp_dropped_while_both_its_cqs_stay_busy_is_destroyed_soon",
        Box::new(|ctx, _pd, sa, sb| {
            // The QP shares its PD: the PD's count falls back to one when the QP is destroyed
            // (on any device; the software device's live-object count would do on sw0 only).
            let pd = std::sync::Arc::new(Pd::new(ctx).unwrap());
            for i in 0..20 {
                let (x, y) = if i % 2 == 0 { (sa, sb) } else { (sb, sa) };
                let q = Qp::<Rc>::builder(&pd, x, y).build().unwrap();
                assert_eq!(std::sync::Arc::strong_count(&pd), 2);
                std::thread::sleep(Duration::from_millis(2)); // both CQs have batches open
                drop(q);
                let start = std::time::Instant::now();
                while std::sync::Arc::strong_count(&pd) > 1 {
                    // Batches take about 3 ms: a few batch ends, not hundreds.
                    assert!(
                        start.elapsed() < Duration::from_millis(500),
                        "drop {i}: the QP is still alive after 500 ms of 3 ms batches"
                    );
                    std::thread::sleep(Duration::from_micros(200));
                }
            }
        }),
    );
}

/// A thread polling a CQ through `&self` until it is refused, while another takes and drops the
/// CQ's poller, and this thread destroys QPs of the CQ: once both threads have stopped, nothing
/// is open and no poller lives, so a destroy succeeds at once and a drop returns. (A shared
/// opener refused after it had marked the gate as waiting used to leave the mark: explicit
/// teardowns then waited a second and were refused, and a drop spun for ever.)
#[test]
fn a_refused_shared_poll_leaves_the_gate_free() {
    within(Duration::from_secs(120), || {
        let ctx = open();
        let pd = Pd::new(&ctx).unwrap();
        let cq = CqEx::<Standard>::builder(&ctx).cqe(64).build().unwrap();
        // Fewer rounds under valgrind, which runs one thread at a time, slowly.
        let rounds = if cfg!(feature = "valgrind") { 40 } else { 1500 };
        for round in 0..rounds {
            // The two threads run a fixed number of turns (no stop flag: under helgrind a
            // flag's store would race with the loads of the threads the scope joins).
            std::thread::scope(|s| {
                s.spawn(|| {
                    for _ in 0..200 {
                        if cq.poll_batch(|_| ()).is_err() {
                            break;
                        }
                    }
                });
                s.spawn(|| {
                    for _ in 0..200 {
                        drop(cq.poller());
                    }
                });
                for _ in 0..5 {
                    let q = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
                    q.destroy()
                        .unwrap_or_else(|e| panic!("round {round}: destroy during the race: {e}"));
                }
            });
            let q = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
            let start = std::time::Instant::now();
            q.destroy()
                .unwrap_or_else(|e| panic!("round {round}: destroy with nothing open: {e}"));
            assert!(
                start.elapsed() < Duration::from_millis(500),
                "round {round}: a destroy with nothing open waited {:?}",
                start.elapsed()
            );
            drop(Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap()); // `within` catches a spin
        }
    });
}

/// Two threads whose batch closures each wait for a token the other sends after its own batch
/// (a pipeline hand-off), and three QPs on both CQs dropped inside one batch: the end of that
/// batch waits for the other CQ's gate once, at most a second for all three, then hands the
/// rest on (it waited a second per QP before); no thread hangs, and every QP is destroyed once
/// the threads stop.
#[test]
fn qps_dropped_between_two_mutually_waiting_batches_stall_one_batch_end_at_most_a_second() {
    within(Duration::from_secs(120), || {
        let ctx = open();
        let leaks = LeakCheck::new(&ctx, "qps_dropped_between_two_mutually_waiting_batches");
        {
            let pd = Pd::new(&ctx).unwrap();
            let a = CqEx::<Standard>::builder(&ctx).cqe(64).build().unwrap();
            let b = CqEx::<Standard>::builder(&ctx).cqe(64).build().unwrap();
            // A completion in each CQ for every batch: a flushed receive of a QP of its own.
            let (_fa, _fb) = (feeder_qp(&pd, &a, 60), feeder_qp(&pd, &b, 60));
            let mut qps: Vec<_> = (0..3)
                .map(|_| Qp::<Rc>::builder(&pd, &a, &b).build().unwrap())
                .collect();
            let stop = AtomicBool::new(false);
            let (to_a, from_b) = mpsc::channel::<()>();
            let (to_b, from_a) = mpsc::channel::<()>();
            to_a.send(()).unwrap();
            let dropping_end = std::thread::scope(|s| {
                let stop = &stop;
                let (a, b) = (&a, &b);
                // Joined explicitly below, as helgrind sees only a join as ordering.
                let polling_a = s.spawn(move || {
                    while !stop.load(Ordering::Relaxed) {
                        a.poll_batch(|_| {
                            let _ = from_b.recv_timeout(Duration::from_secs(5));
                        })
                        .unwrap();
                        let _ = to_b.send(());
                    }
                    let _ = to_b.send(());
                });
                let qps = &mut qps;
                let dropping = s.spawn(move || {
                    let mut took = None;
                    while !stop.load(Ordering::Relaxed) {
                        let start = std::time::Instant::now();
                        let dropped = b
                            .poll_batch(|_| {
                                let _ = from_a.recv_timeout(Duration::from_secs(5));
                                let dropped = !qps.is_empty();
                                qps.clear(); // dropped inside B's batch
                                dropped
                            })
                            .unwrap();
                        if dropped == Some(true) {
                            took = Some(start.elapsed());
                        }
                        let _ = to_a.send(());
                    }
                    let _ = to_a.send(());
                    took
                });
                std::thread::sleep(Duration::from_millis(2500));
                stop.store(true, Ordering::Relaxed);
                let took = dropping.join().unwrap();
                polling_a.join().unwrap();
                took
            });
            let took = dropping_end.expect("the QPs were dropped inside a batch");
            assert!(
                took < Duration::from_millis(1800),
                "the batch that dropped three QPs took {took:?}: one wait of at most a second \
                 for the batch end, not one per QP"
            );
        }
        leaks.assert_unchanged("every QP destroyed once the threads stop");
        ctx.close().expect("the context closes: nothing waits");
    });
}
