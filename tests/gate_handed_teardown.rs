//! The per-CQ gates (src/object/teardown.rs): a teardown handed to a batch closes its QP's CQs' gates
//! again before it runs, so it never waits for the QP's other CQ's batch on yet another thread.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]
mod common;

use common::{flushed_qp, in_batch, leak_checked, two_split_cqs, within};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use typed_verbs::{CqEx, Pd, Poller, Qp, Rc, Standard};

/// Within 20 s and under a leak check (`test`, `after`): a PD and two CQs of 8, each split
/// ([`two_split_cqs`]), for `f`.
fn on_two_cqs(
    test: &'static str,
    after: &'static str,
    f: impl for<'c> FnOnce(
            &'c Pd<'c>,
            (&'c CqEx<'c, Standard>, Poller<'c, Standard>),
            (&'c CqEx<'c, Standard>, Poller<'c, Standard>),
        ) + Send
        + 'static,
) {
    within(Duration::from_secs(20), move || {
        leak_checked(test, after, |ctx| two_split_cqs(ctx, 8, f))
    });
}

/// A QP on CQs A (send) and B (recv), dropped on T2 while T1 has a batch open on A: handed to
/// A's batch. T1's batch ends and runs the handed destroy, which takes B's lock too, while T3
/// has a batch open on B whose closure waits for T1's poll_batch to return. The rule "no
/// thread waits for a CQ lock another thread's batch holds" says T1 must not wait for B.
#[test]
fn a_handed_teardown_never_waits_for_the_other_cqs_batch() {
    on_two_cqs(
        "handed_teardown_other_cq",
        "the handed QP is destroyed",
        |pd, (sa, mut pa), (sb, mut pb)| {
            let _fa = flushed_qp(pd, sa, (), 1);
            let _fb = flushed_qp(pd, sb, (), 2);
            let victim = Qp::<Rc>::builder(pd, sa, sb).build().unwrap();
            let (t3_in_tx, t3_in_rx) = mpsc::channel::<()>();
            let (t1_done_tx, t1_done_rx) = mpsc::channel::<()>();
            let (go_tx, go_rx) = mpsc::channel::<()>();
            std::thread::scope(|s| {
                // T3: a batch on B, whose closure waits for T1's poll_batch to return.
                s.spawn(move || {
                    go_rx.recv().unwrap();
                    in_batch(&mut pb, || {
                        t3_in_tx.send(()).unwrap();
                        t1_done_rx.recv().unwrap();
                    });
                });
                // T1: a batch on A.
                in_batch(&mut pa, || {
                    // T2 drops the victim: A's gate is open, so it is handed to this batch.
                    s.spawn(move || drop(victim)).join().unwrap();
                    // Now T3 opens its batch on B.
                    go_tx.send(()).unwrap();
                    t3_in_rx.recv().unwrap();
                });
                // T1's poll_batch returned (the handed destroy ran).
                t1_done_tx.send(()).unwrap();
            });
        },
    );
}

/// A QP on CQs A (send) and B (recv), destroyed on T2 while T3's batch on B waits for a lock
/// T1 holds while it polls A. The destroy waits for one CQ's batch at a time and never holds
/// A's gate while it waits for B's: T1's poll of A never waits for T3's batch, so nothing
/// hangs (the destroy succeeds, or is refused while both CQs stay busy).
#[test]
fn an_explicit_teardown_never_makes_one_cqs_poller_wait_for_another_cqs_batch() {
    on_two_cqs(
        "explicit_teardown_cross_cq",
        "the victim is destroyed",
        |pd, (sa, mut pa), (sb, mut pb)| {
            let _fb = flushed_qp(pd, sb, (), 2);
            let victim = Qp::<Rc>::builder(pd, sa, sb).build().unwrap();
            let app = std::sync::Mutex::new(0u32);
            let (in_tx, in_rx) = mpsc::channel::<()>();
            std::thread::scope(|s| {
                let app = &app;
                // T3: a batch on B whose closure takes the application's lock.
                s.spawn(move || {
                    in_batch(&mut pb, || {
                        in_tx.send(()).unwrap();
                        std::thread::sleep(Duration::from_millis(50));
                        *app.lock().unwrap() += 1;
                    })
                });
                in_rx.recv().unwrap();
                // T2: destroys the victim while T3's batch is open on B.
                let t2 = s.spawn(move || match victim.try_destroy() {
                    Ok(()) => {}
                    Err(e) => {
                        assert_eq!(e.error.kind, typed_verbs::ErrorKind::BatchOpen);
                        drop(e.object);
                    }
                });
                // T1 (this thread): holds the lock while it polls A, over and over.
                let guard = app.lock().unwrap();
                let start = Instant::now();
                while start.elapsed() < Duration::from_millis(200) {
                    let _ = pa.poll_batch(|_b| ()).unwrap();
                    std::thread::sleep(Duration::from_millis(1));
                }
                drop(guard);
                t2.join().unwrap();
            });
        },
    );
}
