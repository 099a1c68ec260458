//! The per-CQ gates (src/object/teardown.rs): a parent whose release panics at a batch's end does not
//! make the batch skip the teardowns other threads handed to it.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]
mod common;

use common::flushed_qp;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::{software, Cq, CqEx, Pd, Qp, Rc, Standard};

struct PanicOnDrop;
impl Drop for PanicOnDrop {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            panic!("parent user context drop panics");
        }
    }
}

/// T1's batch on A: it drops QP1 (deferred to its end on this thread; QP1 holds the last Arc of
/// a CQ whose user context panics on drop) and T2 drops QP2 on A (handed to the batch). At the
/// end: leave() runs QP1's destroy and releases its parents (the panic), then the handed QP2
/// should be destroyed too.
#[test]
fn a_panicking_parent_release_does_not_lose_a_handed_teardown() {
    common::on_software(
        "a_panicking_parent_release_does_not_lose_a_handed_teardown",
        "live_objects",
        |ctx| {
            let pd = Pd::new(ctx).unwrap();
            let mut a = CqEx::<Standard>::builder(ctx).cqe(8).build().unwrap();
            let (sa, mut pa) = a.split();
            let _fa = flushed_qp(&pd, sa, (), 1);
            let p = Arc::new(Cq::builder(ctx).context(PanicOnDrop).build().unwrap());
            let qp1 = Qp::<Rc>::builder(&pd, &p, &p).build().unwrap();
            drop(p);
            let qp2 = Qp::<Rc>::builder(&pd, sa, sa).build().unwrap();
            let qps = || software::live_objects(ctx).map(|l| l.qps);
            let before = qps();
            let mut slot = Some((qp1, qp2));
            let start = Instant::now();
            let mut ran = false;
            while !ran {
                assert!(start.elapsed() < Duration::from_secs(2));
                let r = catch_unwind(AssertUnwindSafe(|| {
                    pa.poll_batch(|_b| {
                        let (qp1, qp2) = slot.take().unwrap();
                        drop(qp1); // deferred to this batch's end
                        std::thread::scope(|s| {
                            s.spawn(move || drop(qp2)); // handed to this batch
                        });
                    })
                }));
                match r {
                    Ok(Ok(None)) => continue,
                    Ok(r) => panic!("expected the parent's panic, got {:?}", r.map(|_| ())),
                    Err(_) => ran = true,
                }
            }
            // Another batch, and time: the handed QP2 should be gone by now.
            let _ = pa.poll_batch(|_| ());
            std::thread::sleep(Duration::from_millis(50));
            let after = qps();
            assert_eq!(
                after.map(|n| n + 2),
                before,
                "both QP1 and QP2 are destroyed (QP2 was handed to the batch)"
            );
        },
    );
}
