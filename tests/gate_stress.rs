//! The per-CQ gates (src/teardown.rs) under load: pollers on two CQs while other threads drop,
//! destroy and reset QPs on them in both orders; nothing hangs, nothing leaks.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]
mod common;

use common::{open, LeakCheck};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;
use typed_verbs::{AccessFlags, ConnectedInit, CqEx, ErrorKind, Pd, Qp, Rc, Sge, Standard};

const INIT: ConnectedInit = ConnectedInit {
    port_num: 1,
    pkey_index: 0,
    access: AccessFlags::REMOTE_WRITE,
};

fn within(test: &str, secs: u64, f: impl FnOnce() + Send + 'static) {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        f();
        let _ = tx.send(());
    });
    if rx.recv_timeout(Duration::from_secs(secs)).is_err() {
        panic!("{test}: did not finish within {secs} s (a wait that never ends)");
    }
}

/// Batches on A and B (two pollers on two threads, each batch short), while two threads make
/// QPs on (A,B), (B,A), (A,A) and drop, destroy or reset them. Every QP is destroyed, nothing
/// hangs, the context closes.
#[test]
fn teardowns_race_batches_on_shared_cqs() {
    let iters: usize = std::env::var("ATTACK_ITERS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(300);
    within("stress", 120, move || {
        let ctx = open();
        let leaks = LeakCheck::new(&ctx, "stress");
        {
            let pd = Pd::new(&ctx).unwrap();
            let mut a = CqEx::<Standard>::builder(&ctx).cqe(4096).build().unwrap();
            let mut b = CqEx::<Standard>::builder(&ctx).cqe(4096).build().unwrap();
            let (sa, mut pa) = a.split();
            let (sb, mut pb) = b.split();
            let stop = AtomicBool::new(false);
            std::thread::scope(|s| {
                for (p, cq) in [(&mut pa, sa), (&mut pb, sb)] {
                    let stop = &stop;
                    let pd = &pd;
                    s.spawn(move || {
                        // A feeder QP whose flushed receives keep the CQ non-empty.
                        let mut feeder = None;
                        while !stop.load(Ordering::Relaxed) {
                            if feeder.is_none() {
                                let q = Qp::<Rc>::builder(pd, cq, cq)
                                    .max_recv_wr(64)
                                    .build()
                                    .unwrap()
                                    .to_init(INIT)
                                    .unwrap_or_else(|e| panic!("{e}"));
                                for i in 0..64 {
                                    q.post_recv(i, &[] as &[Sge; 0]).unwrap();
                                }
                                feeder = Some(q.to_error().unwrap_or_else(|e| panic!("{e}")));
                            }
                            match p.poll_batch(|_b| std::thread::yield_now()).unwrap() {
                                Some(()) => {}
                                None => feeder = None, // dropped here, out of a batch
                            }
                        }
                    });
                }
                let mut workers = Vec::new();
                for w in 0..2usize {
                    let pd = &pd;
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
                                1 => match q.try_destroy() {
                                    Ok(()) => {}
                                    Err(e) => {
                                        assert_eq!(e.error.kind, ErrorKind::BatchOpen);
                                        drop(e.object)
                                    }
                                },
                                _ => {
                                    let q = q.to_init(INIT).unwrap_or_else(|e| panic!("{e}"));
                                    match q.try_to_reset() {
                                        Ok(q) => drop(q),
                                        Err(e) => {
                                            assert_eq!(e.error.kind, ErrorKind::BatchOpen);
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
            });
        }
        leaks.assert_unchanged("every QP destroyed");
        ctx.close().expect("the context closes: nothing waits");
    });
}
