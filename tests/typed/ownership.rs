//! Owned handles: parents shared through `Arc` (crate::parent). A program keeps a connection's
//! objects in one struct without a lifetime, returns it from a setup function, keeps many in a
//! map, moves them to other threads, and the objects are still destroyed children first.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;
use common::open;
use std::collections::HashMap;
use std::error::Error as StdError;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    software, Access, AddressHandle, CompChannel, Context, CqEx, ErrorKind, Mr, OwnRq, PageBuf,
    ParentDomain, Pd, Qp, Rc, SendWr, Shared, Srq, Standard, Verb,
};

type Res<T = ()> = Result<T, Box<dyn StdError + Send + Sync>>;

/// One RC connection in loopback and everything it needs, owned: no lifetime parameter.
struct Conn {
    cq: Arc<CqEx<'static, Standard>>,
    a: Qp<'static, Rc, OwnRq, Shared, (), Rts>,
    b: Qp<'static, Rc, OwnRq, Shared, (), Rts>,
    send: Mr<'static>,
    recv: Mr<'static>,
}

/// The setup function a server has: it returns the connection, and the context and PD it made
/// stay alive inside it.
fn connect(ctx: &Arc<Context>, pd: &Arc<Pd<'static>>) -> Res<Conn> {
    let cq = Arc::new(CqEx::<Standard>::builder(ctx).cqe(16).build()?);
    let build = || {
        Qp::<Rc>::builder(pd, &cq, &cq)
            .max_send_wr(4)
            .max_recv_wr(4)
            .build()
    };
    let (a, b) = (build()?, build()?);
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    let access = Access::LOCAL_WRITE;
    let (a, b) = (a.connect(&ea, &eb, access)?, b.connect(&eb, &ea, access)?);
    let send = Mr::new(pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    let recv = Mr::new(pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    Ok(Conn {
        cq,
        a,
        b,
        send,
        recv,
    })
}

impl Conn {
    /// Sends `msg` from `a` to `b` and returns what `b` received.
    fn echo(&self, msg: &[u8]) -> Res<Vec<u8>> {
        self.b
            .post_recv(1, &[self.recv.sge(0..4096).ok_or("sge")?])?;
        self.send.write(0, msg)?;
        let sge = self.send.sge(0..msg.len()).ok_or("sge")?;
        self.a.post_send(&SendWr::send(2, &[sge]).signaled())?;
        let (mut done, start) = (0, Instant::now());
        // The CQ is shared (the QPs hold it): polled through its one poller.
        let mut poller = self.cq.poller()?;
        while done < 2 {
            assert!(start.elapsed() < Duration::from_secs(5), "completions");
            poller.poll_batch(|batch| {
                assert!(batch.completion().result().is_ok(), "a failed completion");
                done += 1;
            })?;
        }
        let mut out = vec![0u8; msg.len()];
        self.recv.read(0, &mut out)?;
        Ok(out)
    }
}

#[test]
fn owned_connections_live_in_a_map_and_move_to_threads() -> Res {
    let ctx = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx)?);
    let mut conns: HashMap<u32, Conn> = HashMap::new();
    for _ in 0..2 {
        let c = connect(&ctx, &pd)?;
        conns.insert(c.a.qp_num(), c);
    }
    let (probe, before) = (Arc::clone(&ctx), software::live_objects(&ctx));
    // The setup's own references go; the connections keep the context and PD alive.
    drop((ctx, pd));
    let mut threads = Vec::new();
    for (qpn, conn) in conns.drain() {
        threads.push(std::thread::spawn(move || -> Res<u32> {
            let got = conn.echo(format!("hello {qpn}").as_bytes())?;
            assert_eq!(got, format!("hello {qpn}").into_bytes());
            Ok(qpn)
        }));
    }
    for t in threads {
        t.join().expect("thread")?;
    }
    if let Some(before) = before {
        let after = software::live_objects(&probe).unwrap();
        // Each thread dropped its connection: 2 QPs, 1 CQ, 2 MRs each; the PD went with the
        // last one.
        assert_eq!(
            (before.qps - after.qps, before.cqs - after.cqs),
            (4, 2),
            "QPs and CQs destroyed"
        );
        assert_eq!(
            (before.mrs - after.mrs, after.pds),
            (4, 0),
            "MRs and the PD"
        );
    }
    Ok(())
}

#[test]
fn shared_parents_are_destroyed_after_their_last_child() -> Res {
    let Some(ctx) = common::software_ctx(
        "shared_parents_are_destroyed_after_their_last_child",
        "live_objects",
    ) else {
        return Ok(());
    };
    let ctx = Arc::new(ctx);
    let probe = Arc::clone(&ctx);
    let live = || software::live_objects(&probe).unwrap();
    let pd = Arc::new(Pd::new(&ctx)?);
    let channel = Arc::new(CompChannel::new(&ctx)?);
    let cq = Arc::new(
        CqEx::<Standard>::builder(&ctx)
            .channel(&channel)
            .cqe(4)
            .build()?,
    );
    let srq = Arc::new(Srq::builder(&pd).max_wr(4).build()?);
    let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let av = common::loopback_av(&ctx);
    let ah = AddressHandle::new(&pd, av)?;
    drop((channel, cq, srq, pd));
    let l = live();
    assert_eq!(
        (l.pds, l.comp_channels, l.cqs, l.srqs, l.qps),
        (1, 1, 1, 1, 1)
    );
    // The QP goes first; its CQ (and the CQ's channel) and its SRQ go with it; the PD stays
    // for the region and the address handle.
    drop(qp);
    let l = live();
    assert_eq!(
        (l.pds, l.comp_channels, l.cqs, l.srqs, l.qps),
        (1, 0, 0, 0, 0)
    );
    assert_eq!(mr.destroy()?.len(), 64); // the buffer comes back
    assert_eq!(live().pds, 1);
    drop(ah);
    assert_eq!((live().pds, live().mrs, live().ahs), (0, 0, 0));
    // The context outlives them all; closing it works once the probe is its last reference.
    drop(ctx);
    Arc::into_inner(probe)
        .expect("the last reference")
        .close()?;
    Ok(())
}

#[test]
fn a_forgotten_child_keeps_its_shared_parents_alive() -> Res {
    let Some(ctx) = common::software_ctx(
        "a_forgotten_child_keeps_its_shared_parents_alive",
        "live_objects",
    ) else {
        return Ok(());
    };
    let ctx = Arc::new(ctx);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    std::mem::forget(qp);
    let probe = Arc::clone(&ctx);
    drop((pd, cq, ctx));
    // Leaked, not dangling: the QP's parents stay, with the QP.
    let l = software::live_objects(&probe).unwrap();
    assert_eq!((l.pds, l.cqs, l.qps), (1, 1, 1));
    // The context cannot be closed from safe code while they live: the leaked QP holds it.
    assert!(Arc::into_inner(probe).is_none());
    Ok(())
}

#[test]
fn a_parent_domain_and_mixed_borrowed_and_shared_parents() -> Res {
    let ctx = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx)?);
    let Some(parent) = common::feature(
        &ctx,
        "a_parent_domain_and_mixed_borrowed_and_shared_parents",
        "parent domains",
        ParentDomain::new(&ctx, &pd),
    ) else {
        return Ok(());
    };
    // Borrowed CQ, shared PD: the QP's lifetime is the CQ borrow's.
    let cq = CqEx::<Standard>::builder(&ctx)
        .parent_domain(Arc::new(parent))
        .cqe(4)
        .build()?;
    let qp = Qp::<Rc>::builder(Arc::clone(&pd), &cq, &cq).build()?;
    drop(pd);
    drop(qp);
    drop(cq);
    Ok(())
}

#[test]
fn a_cq_has_one_poller_at_a_time() -> Res {
    let ctx = Arc::new(open());
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
    let pd = Pd::new(&ctx)?;
    let a = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    // Put a completion in the CQ: a receive flushed by the move to ERR.
    let a = a.to_init(common::NO_REMOTE_INIT)?;
    let buf = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    a.post_recv(5, &[buf.sge(0..64).ok_or("sge")?])?;
    let a = a.to_error()?;
    let mut poller = cq.poller()?;
    let taken =
        |e: typed_verbs::Error| (e.verb, e.kind) == (Verb::StartPoll, ErrorKind::PollerTaken);
    // A second poller, on this thread or another, is refused: no second thread can open a batch
    // on the CQ, so a batch's closure that waits for another thread never waits for one that
    // waits for this CQ.
    assert!(taken(cq.poller().expect_err("a second poller")));
    let start = Instant::now();
    let (here, there) = loop {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the flush completion"
        );
        let got = poller.poll_batch(|first| {
            assert_eq!(first.completion().wr_id(), 5);
            let here = cq.poller().map(drop);
            let other = Arc::clone(&cq);
            let there = std::thread::spawn(move || other.poller().map(drop))
                .join()
                .unwrap();
            (here, there)
        })?;
        if let Some(r) = got {
            break r;
        }
    };
    assert!(taken(here.expect_err("a poller inside the batch")));
    assert!(taken(there.expect_err("a poller on another thread")));
    // Dropping the poller gives the right back.
    drop(poller);
    assert_eq!(cq.poller()?.poll_batch(|_| ())?, None);
    drop(a);
    Ok(())
}

/// `CqEx::poll_batch` takes the CQ shared: a CQ that QPs use is polled as it is. One batch at a
/// time, and a second is refused (`PollerTaken`, never a wait): while another thread has a batch
/// open, while the CQ's poller lives; the poller is refused while a batch is open; a second
/// batch on the same thread is `BatchOpen`. A leaked poller's right stays: the shared path is
/// refused, `&mut` (`Pollable`) still polls and `split` takes the right back.
#[test]
fn a_cq_is_polled_through_a_shared_reference_one_batch_at_a_time() -> Res {
    let test = "a_cq_is_polled_through_a_shared_reference_one_batch_at_a_time";
    let Some(ctx) = common::software_ctx(test, "inject") else {
        return Ok(());
    };
    let taken = |r: typed_verbs::Result<Option<()>>| {
        let e = r.expect_err("refused");
        (e.verb, e.kind) == (Verb::StartPoll, ErrorKind::PollerTaken)
    };
    let pd = Pd::new(&ctx)?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let inject = |id| {
        software::inject(
            &cq,
            typed_verbs::InjectedCompletion::success(id, typed_verbs::WcOpcode::SEND),
        )
    };
    inject(1)?;
    let (entered, leave) = (std::sync::Barrier::new(2), std::sync::Barrier::new(2));
    let (inside, other) = std::thread::scope(|s| {
        let other = s.spawn(|| {
            entered.wait(); // the batch is open on the other thread
            let start = Instant::now();
            let batch = cq.poll_batch(|_| ());
            let poller = cq.poller().map(drop);
            let waited = start.elapsed();
            leave.wait();
            (batch, poller, waited)
        });
        let inside = cq.poll_batch(|b| {
            assert_eq!(b.completion().wr_id(), 1);
            entered.wait();
            leave.wait();
            let e = cq
                .poll_batch(|_| ())
                .expect_err("a second batch on this thread");
            e.kind
        });
        (inside, other.join().unwrap())
    });
    assert_eq!(inside?, Some(ErrorKind::BatchOpen));
    let (batch, poller, waited) = other;
    assert!(taken(batch), "a batch while another thread's is open");
    assert!(
        taken(poller.map(|()| None)),
        "a poller while a batch is open"
    );
    assert!(
        waited < Duration::from_secs(1),
        "refused, not waited: {waited:?}"
    );
    // While the poller lives, the shared path is refused; the poller polls.
    inject(2)?;
    let mut poller = cq.poller()?;
    assert!(taken(cq.poll_batch(|_| ())));
    assert_eq!(poller.poll_batch(|b| b.completion().wr_id())?, Some(2));
    drop(poller);
    inject(3)?;
    assert_eq!(cq.poll_batch(|b| b.completion().wr_id())?, Some(3));
    // A leaked poller keeps the right: the shared path stays refused, `&mut` polls, `split`
    // takes the right back and gives it back when its poller is dropped.
    drop(qp);
    std::mem::forget(cq.poller()?);
    inject(4)?;
    assert!(taken(cq.poll_batch(|_| ())));
    let got = typed_verbs::cq_ex::Pollable::poll_batch(&mut cq, |b| b.completion().wr_id())?;
    assert_eq!(got, Some(4));
    let (_, split) = cq.split();
    drop(split);
    assert_eq!(cq.poll_batch(|_| ())?, None);
    Ok(())
}

/// Threads polling one CQ through `&self` while another takes and drops its poller: every
/// completion is taken once, a refusal is only ever `PollerTaken`, and the poller's own batches
/// are never refused (the right and the batch are decided together, in the CQ's gate).
#[test]
fn shared_polls_and_a_poller_race_without_losing_a_completion() -> Res {
    let test = "shared_polls_and_a_poller_race_without_losing_a_completion";
    let Some(ctx) = common::software_ctx(test, "inject") else {
        return Ok(());
    };
    const N: u64 = 4000;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4096).build()?;
    for round in 0..10 {
        for id in 0..N {
            software::inject(
                &cq,
                typed_verbs::InjectedCompletion::success(id, typed_verbs::WcOpcode::SEND),
            )?;
        }
        // Each thread keeps what it took (joined at the end), and one counter says when all
        // are taken: no lock of the test's own between the pollers (helgrind would not see
        // std's futex locks as locks).
        let taken = std::sync::atomic::AtomicU64::new(0);
        let done = || taken.load(std::sync::atomic::Ordering::Relaxed) >= N;
        let took = |id: u64, mine: &mut Vec<u64>| {
            mine.push(id);
            taken.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        };
        let seen: Vec<u64> = std::thread::scope(|s| {
            let mut threads = Vec::new();
            for _ in 0..2 {
                threads.push(s.spawn(|| {
                    let (start, mut mine) = (Instant::now(), Vec::new());
                    while !done() {
                        assert!(
                            start.elapsed() < Duration::from_secs(60),
                            "shared pollers stuck"
                        );
                        match cq.poll_batch(|b| b.completion().wr_id()) {
                            Ok(Some(id)) => took(id, &mut mine),
                            Ok(None) => {}
                            Err(e) => assert_eq!(e.kind, ErrorKind::PollerTaken, "{e}"),
                        }
                    }
                    mine
                }));
            }
            threads.push(s.spawn(|| {
                let (start, mut mine) = (Instant::now(), Vec::new());
                while !done() {
                    assert!(
                        start.elapsed() < Duration::from_secs(60),
                        "the poller stuck"
                    );
                    match cq.poller() {
                        Ok(mut p) => {
                            for _ in 0..3 {
                                let got = p.poll_batch(|b| b.completion().wr_id());
                                match got.expect("the poller's batches are never refused") {
                                    Some(id) => took(id, &mut mine),
                                    None => break,
                                }
                            }
                        }
                        Err(e) => assert_eq!(e.kind, ErrorKind::PollerTaken, "{e}"),
                    }
                }
                mine
            }));
            threads
                .into_iter()
                .flat_map(|t| t.join().unwrap())
                .collect()
        });
        let mut seen = seen;
        seen.sort_unstable();
        assert_eq!(
            seen,
            (0..N).collect::<Vec<_>>(),
            "round {round}: each completion taken once"
        );
    }
    Ok(())
}

/// A CQ with one injected completion, to open a batch on, and an RC QP that holds the last
/// references to its PD and CQ, on the software device (`None`, with a SKIP line for `test`,
/// elsewhere: the tests need injection and live_objects).
#[allow(clippy::type_complexity)]
fn a_batch_and_a_lone_qp(
    test: &str,
) -> Res<Option<(Arc<Context>, CqEx<'static, Standard>, Qp<'static, Rc>)>> {
    let Some(ctx) = common::software_ctx(test, "inject and live_objects") else {
        return Ok(None);
    };
    let ctx = Arc::new(ctx);
    let polled = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    software::inject(
        &polled,
        typed_verbs::InjectedCompletion::success(1, typed_verbs::WcOpcode::RECV),
    )?;
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    Ok(Some((ctx, polled, qp)))
}

#[test]
fn a_qp_dropped_inside_a_batch_releases_its_shared_parents_after_its_destroy() -> Res {
    let test = "a_qp_dropped_inside_a_batch_releases_its_shared_parents_after_its_destroy";
    let Some((ctx, polled, qp)) = a_batch_and_a_lone_qp(test)? else {
        return Ok(());
    };
    let live = || software::live_objects(&ctx).unwrap();
    let inside = polled.poll_batch(|_batch| {
        drop(qp); // destroyed at the batch's end; its PD and CQ wait behind it
        let l = live();
        (l.qps, l.cqs, l.pds)
    })?;
    // Inside: nothing was destroyed yet (the QP waits for the batch, its parents for the QP).
    assert_eq!(inside, Some((1, 2, 1)));
    let l = live();
    assert_eq!(
        (l.qps, l.cqs, l.pds),
        (0, 1, 0),
        "after the batch, in order"
    );
    Ok(())
}

#[cfg(feature = "tokio")]
#[test]
fn an_owned_connection_moves_into_a_tokio_task() -> Res {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()?;
    let ctx = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx)?);
    let conn = connect(&ctx, &pd)?;
    drop((ctx, pd));
    let got = rt.block_on(async move {
        tokio::spawn(async move { conn.echo(b"from a task").map_err(|e| e.to_string()) }).await
    })??;
    assert_eq!(got, b"from a task");
    Ok(())
}

#[test]
fn a_qp_deferred_by_a_batch_holds_its_shared_parents_until_its_destroy() -> Res {
    let ctx = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx)?);
    let polled = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    // One completion in `polled`: a receive flushed by the move to ERR.
    let flushed = Qp::<Rc>::builder(&pd, &polled, &polled)
        .build()?
        .to_init(common::NO_REMOTE_INIT)?;
    let buf = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    flushed.post_recv(9, &[buf.sge(0..64).ok_or("sge")?])?;
    let _flushed = flushed.to_error()?;
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(8).build()?);
    let srq = Arc::new(Srq::builder(&pd).max_wr(4).build()?);
    let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let before = software::live_objects(&ctx);
    let (mut qp, mut cq, mut srq) = (Some(qp), Some(cq), Some(srq));
    let mut poller = polled.poller()?;
    let start = Instant::now();
    let inside = loop {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the flush completion"
        );
        let r = poller.poll_batch(|_batch| {
            // Its destroy waits for the batch's end. The waiting QP still holds its CQ and SRQ:
            // neither can be taken back (and destroyed under it, EBUSY), nor is destroyed yet.
            drop(qp.take());
            let cq = Arc::into_inner(cq.take().unwrap()).map(|cq| cq.try_destroy());
            let srq = Arc::into_inner(srq.take().unwrap()).map(|srq| srq.try_destroy());
            (cq.is_none(), srq.is_none())
        })?;
        if let Some(r) = r {
            break r;
        }
    };
    assert_eq!(
        inside,
        (true, true),
        "a deferred QP let go of its parents early"
    );
    if let (Some(before), Some(after)) = (before, software::live_objects(&ctx)) {
        // After the batch: the QP, then the CQ and SRQ it was the last to hold.
        assert_eq!(
            (
                before.qps - after.qps,
                before.cqs - after.cqs,
                before.srqs - after.srqs
            ),
            (1, 1, 1)
        );
    }
    Ok(())
}

#[test]
fn a_panicking_batch_still_releases_the_shared_parents_of_a_qp_it_dropped() -> Res {
    let test = "a_panicking_batch_still_releases_the_shared_parents_of_a_qp_it_dropped";
    let Some((ctx, polled, qp)) = a_batch_and_a_lone_qp(test)? else {
        return Ok(());
    };
    let mut poller = polled.poller()?;
    let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        poller.poll_batch(|_batch| {
            drop(qp);
            panic!("the closure panics after dropping the QP");
        })
    }));
    assert!(unwound.is_err());
    // Unwinding ended the batch: the QP was destroyed, then the CQ and PD it held.
    let l = software::live_objects(&ctx).unwrap();
    assert_eq!((l.qps, l.cqs, l.pds), (0, 1, 0));
    Ok(())
}
