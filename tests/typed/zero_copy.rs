//! Zero-copy slots (src/slots/): receives into slots on a QP's own receive queue and on an SRQ,
//! sends and RDMA writes from slots, every slot back exactly once with its completion (flushes
//! included), refused posts giving the slot back, and the access rule for slot regions. Runs on
//! the test device (sw0 by default, rxe0 in the VM lane).
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{open, LeakCheck, NO_REMOTE_INIT};
use std::collections::HashSet;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::slots::{SlotCq, SlotPoller, SlotSends};
use typed_verbs::{
    wc_flags, Access, Context, CqEx, ErrorKind, Mr, PageBuf, Pd, Qp, Rc, Received, RecvSide,
    Shared, Slot, SlotRq, Srq, UsesSlotSrq, Verb, WcOpcode, WcStatus,
};

type Flags = wc_flags!(BYTE_LEN | QP_NUM);

/// Connects `a` and `b` to each other (`Qp::connect`), both open to remote writes.
#[allow(clippy::type_complexity)]
fn connect_pair<'a, 'b, R1: RecvSide, R2: RecvSide>(
    a: Qp<'a, Rc, R1, Shared, (), Reset>,
    b: Qp<'b, Rc, R2, Shared, (), Reset>,
) -> (
    Qp<'a, Rc, R1, Shared, (), Rts>,
    Qp<'b, Rc, R2, Shared, (), Rts>,
) {
    let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
    let access = Access::REMOTE_WRITE;
    (
        a.connect(&ea, &eb, access).unwrap(),
        b.connect(&eb, &ea, access).unwrap(),
    )
}

/// A completion as the tests look at it: its status, opcode (on success), byte count and slot.
struct Back<'s> {
    status: WcStatus,
    opcode: Option<WcOpcode>,
    byte_len: u32,
    slot: Slot<'s>,
}

/// Polls until `n` completions came back (a real device completes asynchronously); at most 2 s.
/// Each one's slot is taken through `SlotBatch::take_slot`, which must give it exactly once.
fn wait<'s>(poller: &mut SlotPoller<'_, 's, Flags>, n: usize) -> Vec<Back<'s>> {
    let mut got = Vec::new();
    let start = Instant::now();
    while got.len() < n && start.elapsed() < Duration::from_secs(2) {
        poller
            .poll_batch(|batch| {
                let mut next = Some(batch);
                while let Some(mut batch) = next {
                    let slot = batch.take_slot().expect("every completion carries a slot");
                    assert!(batch.take_slot().is_none(), "a slot is given once");
                    let (status, opcode, byte_len) = match batch.completion().result() {
                        Ok(c) => (c.status(), Some(c.opcode()), c.byte_len()),
                        Err(c) => (c.status(), None, 0),
                    };
                    got.push(Back {
                        status,
                        opcode,
                        byte_len,
                        slot,
                    });
                    next = batch.advance().unwrap();
                }
            })
            .unwrap();
    }
    assert_eq!(got.len(), n, "completions within 2 s");
    got
}

/// Nothing more comes back within a short while.
fn assert_quiet(poller: &mut SlotPoller<'_, '_, Flags>) {
    std::thread::sleep(Duration::from_millis(50));
    let more = poller.poll_batch(|_| ()).unwrap();
    assert!(
        more.is_none(),
        "a completion (and its slot) came back twice"
    );
}

/// The test device and a PD of it, both owned (slot regions and QPs take `Arc` parents).
fn device() -> (Arc<Context>, Arc<Pd<'static>>) {
    let ctx = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx).unwrap());
    (ctx, pd)
}

/// A slot CQ of `cqe` entries on `ctx`.
fn slot_cq(ctx: &Arc<Context>, cqe: u32) -> SlotCq<'static, Flags> {
    CqEx::<Flags>::builder(ctx)
        .cqe(cqe)
        .slots()
        .build()
        .unwrap()
}

fn slots(pd: &Arc<Pd<'static>>, n: usize, len: usize) -> Vec<Slot<'static>> {
    let s = Slot::register(pd, PageBuf::new(n * len).unwrap(), Access::LOCAL_WRITE, len).unwrap();
    assert_eq!(s.len(), n);
    s
}

/// An RC QP whose receives and sends take slots, in RTS.
type SlotQp<'a> = Qp<'a, Rc, SlotRq<SlotSends>, Shared, (), Rts>;

/// On the test device ([`device`]): a slot CQ of `cqe` entries split into its shared half and
/// its poller, and two slot QPs on it (with `send_wr` and `recv_wr` work requests when given)
/// connected to each other, for `f` with the PD.
fn with_slot_pair(
    cqe: u32,
    (send_wr, recv_wr): (Option<u32>, Option<u32>),
    f: impl for<'c> FnOnce(
        &'c Arc<Pd<'static>>,
        &mut SlotPoller<'c, 'static, Flags>,
        SlotQp<'c>,
        SlotQp<'c>,
    ),
) {
    let (ctx, pd) = device();
    let mut cq = slot_cq(&ctx, cqe);
    let (cq, mut poller) = cq.split();
    let build = || {
        let mut b = Qp::<Rc>::slot_builder(&pd, cq, cq);
        if let Some(n) = send_wr {
            b = b.max_send_wr(n);
        }
        if let Some(n) = recv_wr {
            b = b.max_recv_wr(n);
        }
        b.build().unwrap()
    };
    let (a, b) = (build(), build());
    let (a, b) = connect_pair(a, b);
    f(&pd, &mut poller, a, b)
}

#[test]
fn receives_land_in_slots_and_sends_come_back_writable() {
    with_slot_pair(32, (Some(8), Some(8)), |pd, poller, a, b| {
        let mut recv = slots(pd, 2, 1024);
        let recv_ptrs: HashSet<_> = recv.iter().map(|s| s.as_ptr()).collect();
        for s in recv.drain(..) {
            b.post_recv_slot(s).unwrap();
        }
        let mut send = slots(pd, 2, 256);
        let send_ptrs: HashSet<_> = send.iter().map(|s| s.as_ptr()).collect();
        for (i, mut s) in send.drain(..).enumerate() {
            let msg = format!("message {i}");
            s[..msg.len()].copy_from_slice(msg.as_bytes());
            a.post_send_slot(s, msg.len()).unwrap();
        }

        let back = wait(poller, 4);
        let mut received: Vec<Received<'_>> = Vec::new();
        let mut sent = Vec::new();
        for c in back {
            assert_eq!(c.status, WcStatus::SUCCESS);
            match c.opcode {
                Some(WcOpcode::RECV) => received.push(Received::new(c.slot, c.byte_len)),
                Some(WcOpcode::SEND) => sent.push(c.slot),
                o => panic!("unexpected opcode {o:?}"),
            }
        }
        let mut texts: Vec<&[u8]> = received.iter().map(|r| &r[..]).collect();
        texts.sort();
        assert_eq!(texts, [&b"message 0"[..], &b"message 1"[..]]);
        assert!(received.iter().all(|r| r.byte_len() == 9));
        let got: HashSet<_> = received.iter().map(|r| r.as_ptr()).collect();
        assert_eq!(got, recv_ptrs, "each receive slot came back once");
        let got: HashSet<_> = sent.iter().map(|s| s.as_ptr()).collect();
        assert_eq!(got, send_ptrs, "each send slot came back once");
        // Back from the queue, a send slot is the program's to write again.
        for s in &mut sent {
            s.fill(7);
            assert!(s.iter().all(|&b| b == 7));
        }
        assert_quiet(poller);
    });
}

#[test]
fn an_srq_in_slot_mode_hands_its_slots_to_the_receiving_qp() {
    let (ctx, pd) = device();
    let mut cq = slot_cq(&ctx, 32);
    let srq = Srq::builder(&pd).max_wr(8).slots().build().unwrap();
    let (cq, mut poller) = cq.split();
    let a = Qp::<Rc>::slot_builder(&pd, cq, cq)
        .max_send_wr(8)
        .build()
        .unwrap();
    let b = Qp::<Rc>::slot_builder_with_srq(&pd, cq, cq, &srq)
        .max_send_wr(8)
        .build()
        .unwrap();
    let (a, b) = connect_pair(a, b);
    let b: Qp<'_, Rc, UsesSlotSrq<SlotSends>, Shared, (), Rts> = b;

    for s in slots(&pd, 3, 512) {
        srq.post_recv_slot(s).unwrap();
    }
    let mut s = slots(&pd, 1, 4096).pop().unwrap();
    s[..3].copy_from_slice(b"srq");
    a.post_send_slot(s, 3).unwrap();
    let back = wait(&mut poller, 2);
    let recv = back
        .iter()
        .find(|c| c.opcode == Some(WcOpcode::RECV))
        .expect("the receive");
    assert_eq!(&recv.slot[..recv.byte_len as usize], b"srq");
    assert_eq!(recv.slot.len(), 512, "a slot of the SRQ's");

    // The two receives left belong to the SRQ, not to a QP: no flush returns them (destroying
    // the SRQ would leak them, which is safe). Two more messages take them, and every slot of
    // the SRQ has come back once.
    let mut sent = back
        .into_iter()
        .find(|c| c.opcode == Some(WcOpcode::SEND))
        .expect("the send")
        .slot;
    sent[..4].copy_from_slice(b"more");
    a.post_send_slot(sent, 4).unwrap();
    let mut s = slots(&pd, 1, 64).pop().unwrap();
    s[..4].copy_from_slice(b"more");
    a.post_send_slot(s, 4).unwrap();
    let back = wait(&mut poller, 4);
    let recvs: Vec<_> = back
        .iter()
        .filter(|c| c.opcode == Some(WcOpcode::RECV))
        .collect();
    assert_eq!(recvs.len(), 2);
    assert!(recvs
        .iter()
        .all(|c| &c.slot[..c.byte_len as usize] == b"more" && c.slot.len() == 512));
    drop(back);
    assert_quiet(&mut poller);
    // Every slot is back and dropped: no region is left registered.
    if let Some(now) = typed_verbs::software::live_objects(&ctx) {
        assert_eq!(now.mrs, 0, "a region outlived its slots");
    }
    drop((a, b));
}

#[test]
fn a_qp_moved_to_err_gives_every_posted_slot_back_once() {
    let (ctx, pd) = device();
    let leaks = LeakCheck::new(&ctx, "a_qp_moved_to_err_gives_every_posted_slot_back_once");
    {
        let mut cq = slot_cq(&ctx, 32);
        let (cq, mut poller) = cq.split();
        let qp = Qp::<Rc>::slot_builder(&pd, cq, cq)
            .max_recv_wr(8)
            .build()
            .unwrap();
        let qp = qp.to_init(NO_REMOTE_INIT).unwrap();
        let posted = slots(&pd, 5, 128);
        let ptrs: HashSet<_> = posted.iter().map(|s| s.as_ptr()).collect();
        for s in posted {
            qp.post_recv_slot(s).unwrap();
        }
        let qp = qp.to_error().unwrap();
        let back = wait(&mut poller, 5);
        assert!(back.iter().all(|c| c.status == WcStatus::WR_FLUSH_ERR));
        let got: HashSet<_> = back.iter().map(|c| c.slot.as_ptr()).collect();
        assert_eq!(got, ptrs, "each posted slot came back once");
        assert_quiet(&mut poller);
        drop(qp);
        drop(back);
    }
    // Every slot dropped: the region is deregistered and nothing else is left.
    leaks.assert_unchanged("the flushed slots were dropped");
}

#[test]
fn a_refused_post_gives_the_slot_back() {
    with_slot_pair(256, (None, Some(1)), |pd, poller, a, b| {
        // A send longer than its slot: refused before the call, the slot back.
        let s = slots(pd, 1, 64).pop().unwrap();
        let p = s.as_ptr();
        let e = a.post_send_slot(s, 65).unwrap_err();
        assert_eq!(e.error.verb, Verb::PostSend);
        assert!(matches!(
            e.error.kind,
            ErrorKind::OutOfRange {
                what: "len",
                value: 65,
                max: 64,
                ..
            }
        ));
        assert_eq!(e.slot.as_ref().map(|s| s.as_ptr()), Some(p));

        // A receive queue of `max_recv_wr` entries: the one after them is refused by the device
        // (ENOMEM), which names it as `bad_wr`, so it comes back in the error.
        let cap = b.caps().max_recv_wr as usize;
        let mut pool = slots(pd, cap + 1, 64);
        let mut refused = None;
        for (i, s) in pool.drain(..).enumerate() {
            let p = s.as_ptr();
            match b.post_recv_slot(s) {
                Ok(()) => assert!(i < cap, "posted past the actual max_recv_wr {cap}"),
                Err(e) => {
                    assert_eq!(i, cap, "refused before the queue was full: {}", e.error);
                    assert_eq!(e.error.verb, Verb::PostRecv);
                    let mut back = e.slot.expect("the provider named the request as bad_wr");
                    assert_eq!(back.as_ptr(), p);
                    back.fill(1); // ours again
                    refused = Some(back);
                }
            }
        }
        assert!(
            refused.is_some(),
            "the receive past the queue's size was refused"
        );
        // The posted ones come back with their flushes, once.
        let b = b.to_error().unwrap();
        let back = wait(poller, cap);
        assert!(back.iter().all(|c| c.status == WcStatus::WR_FLUSH_ERR));
        assert_quiet(poller);
        drop((a, b));
    });
}

#[test]
fn an_rdma_write_from_a_slot_gives_the_slot_back() {
    with_slot_pair(32, (Some(4), None), |pd, poller, a, _b| {
        // The target: a plain region a peer may write (never a slot).
        let target = Mr::new(pd, PageBuf::new(4096).unwrap(), Access::REMOTE_WRITE).unwrap();
        let mut s = slots(pd, 1, 4096).pop().unwrap();
        s[..6].copy_from_slice(b"remote");
        a.post_write_slot(s, 6, target.remote().at(100, 6).unwrap())
            .unwrap();
        let back = wait(poller, 1);
        assert_eq!(back[0].status, WcStatus::SUCCESS);
        assert_eq!(back[0].opcode, Some(WcOpcode::RDMA_WRITE));
        assert_eq!(&back[0].slot[..6], b"remote");
        let mut out = [0u8; 6];
        target.read(100, &mut out).unwrap();
        assert_eq!(&out, b"remote");
    });
}

/// (Memory a peer may access never becomes slots: that is a compile error, the ui case
/// `slot_region_with_remote_access`.)
#[test]
fn a_slot_length_outside_the_region_is_refused_and_leaves_nothing_registered() {
    let (ctx, pd) = device();
    let leaks = LeakCheck::new(
        &ctx,
        "a_slot_length_outside_the_region_is_refused_and_leaves_nothing_registered",
    );
    for bad in [0, 4097] {
        let e = Slot::register(&pd, vec![0u8; 4096], Access::LOCAL_WRITE, bad).unwrap_err();
        assert_eq!(
            e.kind,
            ErrorKind::OutOfRange {
                what: "slot_len",
                value: bad as u64,
                min: 1,
                max: 4096
            }
        );
    }
    leaks.assert_unchanged("refused slot registrations");
}

#[test]
fn a_region_lives_until_its_last_slot_is_dropped() {
    let (ctx, pd) = device();
    let leaks = LeakCheck::new(&ctx, "a_region_lives_until_its_last_slot_is_dropped");
    let mut s = Slot::register(&pd, vec![9u8; 1000], Access::LOCAL_WRITE, 300).unwrap();
    assert_eq!(s.len(), 3, "the 100 bytes left over are no slot");
    assert!(s
        .iter()
        .all(|s| s.len() == 300 && s.iter().all(|&b| b == 9)));
    let last = s.pop().unwrap();
    drop(s);
    if let (Some(before), Some(now)) = (leaks.before(), typed_verbs::software::live_objects(&ctx)) {
        assert_eq!(
            now.mrs,
            before.mrs + 1,
            "the region stays while a slot lives"
        );
    }
    // Slots move to other threads with their region.
    std::thread::scope(|t| {
        t.spawn(move || drop(last));
    });
    leaks.assert_unchanged("the last slot was dropped");
}

typed_verbs::completion_record! {
    /// A completion of a slot CQ: its slot, opcode and byte count.
    struct Msg { slot, opcode, byte_len }
    max_batch = 4;
}

#[test]
fn a_generated_poll_loop_hands_each_slot_to_the_handler() {
    with_slot_pair(64, (Some(16), Some(16)), |pd, poller, a, b| {
        const N: usize = 10;
        for s in slots(pd, N, 64) {
            b.post_recv_slot(s).unwrap();
        }
        for (i, mut s) in slots(pd, N, 64).into_iter().enumerate() {
            s[0] = i as u8;
            a.post_send_slot(s, 1 + i).unwrap();
        }
        let (mut received, mut sent) = (Vec::new(), Vec::new());
        let start = Instant::now();
        while received.len() + sent.len() < 2 * N && start.elapsed() < Duration::from_secs(2) {
            let taken = Msg::poll(poller, |r| match r {
                Ok(m) if m.opcode() == WcOpcode::RECV => received.push(m.received()),
                Ok(m) => sent.push(m.into_record()),
                Err(e) => panic!("failed completion {e:?}"),
            })
            .unwrap();
            assert!(taken <= Msg::MAX_BATCH);
        }
        assert_eq!((received.len(), sent.len()), (N, N));
        received.sort_by_key(|r| r[0]);
        for (i, r) in received.iter().enumerate() {
            assert_eq!((r[0] as usize, r.byte_len()), (i, 1 + i), "the bytes sent");
        }
        assert!(sent
            .iter()
            .all(|m| m.opcode == WcOpcode::SEND && m.slot.len() == 64));
        let ptrs: HashSet<_> = sent.iter().map(|m| m.slot.as_ptr()).collect();
        assert_eq!(ptrs.len(), N, "each send slot came back once");
        assert_quiet(poller);

        // Flushes come back through the generated loop's error record, slot included.
        for s in slots(pd, 3, 64) {
            b.post_recv_slot(s).unwrap();
        }
        let b = b.to_error().unwrap();
        let mut flushed = Vec::new();
        let start = Instant::now();
        while flushed.len() < 3 && start.elapsed() < Duration::from_secs(2) {
            Msg::poll(poller, |r| match r {
                Err(e) => flushed.push(e),
                Ok(m) => panic!("unexpected success {:?}", m.opcode()),
            })
            .unwrap();
        }
        assert_eq!(flushed.len(), 3);
        assert!(flushed
            .iter()
            .all(|e| e.status == WcStatus::WR_FLUSH_ERR && e.slot.len() == 64));
        assert_quiet(poller);
        drop((a, b));
    });
}

/// A slot comes back on a CQ that borrows the queue's context, and only that keeps its region's
/// context open: a slot of another context is refused before the call, and given back.
#[test]
fn a_slot_keeps_its_context_and_comes_back_from_another() {
    let ctx = Arc::new(open());
    let other = Arc::new(open());
    let pd = Arc::new(Pd::new(&ctx).unwrap());
    let other_pd = Arc::new(Pd::new(&other).unwrap());
    let mut cq = CqEx::<Flags>::builder(&ctx).cqe(8).slots().build().unwrap();
    let (shared, mut poller) = cq.split();
    let qp = Qp::<Rc>::slot_builder(&pd, shared, shared).build().unwrap();
    let qp = qp.to_init(NO_REMOTE_INIT).unwrap();
    let mut s = slots(&other_pd, 1, 64).pop().unwrap();
    s[..4].copy_from_slice(b"mine");
    let p = s.as_ptr();
    // The slot's region keeps its PD and context alive: the program's references may go.
    drop((other_pd, other));
    // Posted to a queue of another context (whose device knows no region of its lkey), it
    // comes back with the queue's flush, unchanged, and outlives that queue too.
    qp.post_recv_slot(s).unwrap();
    let qp = qp.to_error().unwrap();
    let back = wait(&mut poller, 1).pop().unwrap();
    assert_eq!(back.status, WcStatus::WR_FLUSH_ERR);
    drop(qp);
    drop(poller);
    drop(cq);
    drop((pd, ctx));
    assert_eq!((back.slot.as_ptr(), &back.slot[..4]), (p, &b"mine"[..]));
}

/// Posts on `qp` (through the provider's `post_recv`, as a program with a stale or colliding
/// key would reach it) a receive of `len` bytes at `addr` under `lkey`, with `wr_id`.
fn post_raw_recv<R: RecvSide>(
    qp: &Qp<'_, Rc, R, Shared, (), Rts>,
    wr_id: u64,
    addr: u64,
    len: u32,
    lkey: u32,
) {
    let mut sge = typed_verbs::ffi::sys::ibv_sge {
        addr,
        length: len,
        lkey,
    };
    // SAFETY: plain C data; all-zero is an empty work request.
    let mut wr: typed_verbs::ffi::sys::ibv_recv_wr = unsafe { std::mem::zeroed() };
    wr.wr_id = wr_id;
    wr.sg_list = &mut sge;
    wr.num_sge = 1;
    let mut bad = std::ptr::null_mut();
    let raw = qp.as_raw();
    // SAFETY: a live QP in RTS with its own receive queue; `wr` and its SGE live across the
    // call; no slot CQ is involved (the QP's CQ is plain), so no wr_id is taken for a slot.
    let rc = unsafe {
        let post = (*(*raw).context).ops.post_recv.expect("post_recv");
        post(raw, &mut wr, &mut bad)
    };
    assert_eq!(rc, 0, "post_recv");
}

/// The mechanism of a key that collides, across key spaces, contexts or devices, or after a
/// deregistration and a reuse: a plain receive naming a slot region's lkey and an owned slot's
/// address. The device refuses it (the slot region is addressed at its address plus 2^63) and
/// the slot, which the program holds, is not written. On sw0 by default; in the rxe lane on
/// rxe0, with the address taken from a region of sw0 beside it over the slot's bytes.
#[test]
fn a_plain_receive_naming_a_slot_regions_key_never_writes_the_slot() {
    let (ctx, pd) = device();
    let cq = typed_verbs::Cq::builder(&ctx).cqe(16).build().unwrap();
    let build = || {
        Qp::<Rc>::builder(&pd, &cq, &cq)
            .max_recv_wr(4)
            .build()
            .unwrap()
    };
    let (a, b) = connect_pair(build(), build());
    let mut slot = slots(&pd, 1, 4096).pop().unwrap();
    slot[..4].copy_from_slice(b"mine");
    // The address a colliding plain region would name: the slot's bytes as registered by
    // another key space (a region of sw0 beside the test device; of a second context on sw0).
    let other = typed_verbs::Context::open("sw0").unwrap();
    let other_pd = Pd::new(&other).unwrap();
    let addr = Mr::scoped(&other_pd, &mut slot[..], Access::LOCAL_WRITE, |mr| {
        mr.sge(0..4096).unwrap().addr()
    })
    .unwrap();
    assert_eq!(addr, slot.as_ptr() as u64);
    post_raw_recv(&b, 1, addr, 4096, slot.lkey());
    let src = Mr::new(&pd, b"evil".to_vec(), Access::LOCAL_WRITE).unwrap();
    a.post_send(&typed_verbs::SendWr::send(2, &[src.sge(0..4).unwrap()]).signaled())
        .unwrap();
    let mut got = Vec::new();
    let start = Instant::now();
    let mut wc: [typed_verbs::WorkCompletion; 4] =
        std::array::from_fn(|_| typed_verbs::WorkCompletion::new());
    while got.len() < 2 && start.elapsed() < Duration::from_secs(5) {
        for w in cq.poll(&mut wc).unwrap() {
            got.push((w.wr_id(), w.status()));
        }
    }
    let recv = got.iter().find(|(id, _)| *id == 1);
    let status = recv.expect("the receive completes").1;
    assert_ne!(
        status,
        WcStatus::SUCCESS,
        "the device took the receive: {got:?}"
    );
    common::note(
        "a_plain_receive_naming_a_slot_regions_key_never_writes_the_slot",
        format_args!("the receive completed with {status:?}"),
    );
    assert_eq!(&slot[..4], b"mine", "the device wrote an owned slot");
    drop((a, b));
}

typed_verbs::completion_record! {
    /// A slot record whose error record carries the slot back.
    struct Flushed { slot, byte_len }
    struct FlushedError { slot, status }
    max_batch = 8;
}

/// A generated slot loop's `try_poll`: a handler that hands a failed completion on with `?`
/// ends the batch there, the error record (an error, with its slot) comes back, and the
/// completions after it stay in the CQ, with their slots, for the next poll.
#[test]
fn a_failed_slot_completion_is_handed_on_with_the_question_mark() {
    let (ctx, pd) = device();
    let mut cq = CqEx::<Flags>::builder(&ctx).cqe(8).slots().build().unwrap();
    let (shared, mut poller) = cq.split();
    let qp = Qp::<Rc>::slot_builder(&pd, shared, shared)
        .max_recv_wr(4)
        .build()
        .unwrap();
    let init = NO_REMOTE_INIT;
    let qp = qp.to_init(init).unwrap();
    for s in slots(&pd, 2, 64) {
        qp.post_recv_slot(s).unwrap();
    }
    let qp = qp.to_error().unwrap();
    let mut calls = 0;
    let start = Instant::now();
    let first = loop {
        let r = Flushed::try_poll(&mut poller, |c| -> Result<(), Box<dyn std::error::Error>> {
            calls += 1;
            let _ = c?; // a flush: handed on, the batch ends
            Ok(())
        });
        match r {
            Ok(0) if start.elapsed() < Duration::from_secs(2) => continue,
            Ok(n) => panic!("{n} completions taken, none failed"),
            Err(e) => break e,
        }
    };
    assert_eq!(calls, 1, "the batch ended at the first failed completion");
    let failed = first
        .downcast::<FlushedError<'_>>()
        .expect("the error is the failed completion's record");
    assert_eq!(
        (failed.status, failed.slot.len()),
        (WcStatus::WR_FLUSH_ERR, 64)
    );
    assert!(failed.to_string().starts_with("work completion failed"));
    // The second flush stayed in the CQ.
    let rest = wait(&mut poller, 1);
    assert_eq!(rest[0].status, WcStatus::WR_FLUSH_ERR);
    drop(qp);
}

/// A completion-event loop on a slot CQ: armed, woken by a slot receive's completion, the event
/// is for that CQ (`CqEvent::is_for` takes a `SlotCq`), and polling gives the slot back.
#[test]
fn a_slot_cq_wakes_a_completion_event_loop() {
    let (ctx, pd) = device();
    let channel = typed_verbs::CompChannel::new(&ctx).unwrap();
    let mut cq = CqEx::<Flags>::builder(&ctx)
        .cqe(8)
        .channel(&channel)
        .slots()
        .build()
        .unwrap();
    let other = CqEx::<Flags>::builder(&ctx).cqe(8).slots().build().unwrap();
    let (shared, mut poller) = cq.split();
    let (a, b) = connect_pair(
        Qp::<Rc>::slot_builder(&pd, shared, shared).build().unwrap(),
        Qp::<Rc>::slot_builder(&pd, shared, shared).build().unwrap(),
    );
    b.post_recv_slot(slots(&pd, 1, 64).pop().unwrap()).unwrap();
    shared.req_notify(false).unwrap();
    let mut msg = slots(&pd, 1, 64).pop().unwrap();
    msg[..4].copy_from_slice(b"wake");
    a.post_send_slot(msg, 4).unwrap();
    let event = channel.get_cq_event().expect("ibv_get_cq_event");
    assert!(event.is_for(shared));
    assert!(!event.is_for(&other));
    drop(event);
    let back = wait(&mut poller, 2);
    let recv = back
        .iter()
        .find(|c| c.opcode == Some(WcOpcode::RECV))
        .expect("the receive completed");
    assert_eq!(&recv.slot[..4], b"wake");
}
