//! Gates: who takes a CQ's lock next, a batch or a teardown.
//!
//! A QP's destroy and its move to RESET take its CQs' locks (mlx5), which an open batch holds
//! until its closure returns. So each CQ has a gate in its crate meta: `poll_batch` holds it
//! (OPEN) from before `ibv_start_poll` to after `ibv_end_poll`, a teardown holds it (TEARDOWN)
//! around the verb. A teardown that finds a batch there:
//!
//! - from a `Drop`, does not wait: it hands itself to that batch (DEFERRED), which runs it after
//!   its end, waiting there for the QP's other gate as below (`run_at_batch_end`), so that it is
//!   not handed back and forth between two busy CQs;
//! - from `destroy` or `to_reset`, on a thread out of any batch, waits for that one gate's
//!   batch to end, as for a lock: it counts itself a waiter, and while a gate has one no new
//!   batch opens on it, so the wait is for the batch in progress. It never holds one gate while
//!   it waits for another (that would make the first CQ's poller wait for the second CQ's batch,
//!   whose closure may wait for that poller): for a QP on two CQs it takes the gate it waited
//!   for, tries the other without waiting, and if that one is busy gives the first back and
//!   waits for the second. It waits at most `TEARDOWN_WAIT` in all, then refuses (`BatchOpen`):
//!   a batch's closure may wait for the teardown's thread, which must not make it wait for ever.
//!
//! A batch that finds a teardown there (or a waiter) waits for it, which is bounded: a teardown
//! runs no user code, and a waiter waits only for the batch in progress on the same gate, which
//! is not this batch's thread's (it is opening one), and for at most `TEARDOWN_WAIT`. A poller
//! that waits marks the gate (OPENER): no new teardown starts waiting until it has opened its
//! batch, so a stream of teardowns does not starve it.
//!
//! The gate also records whether the CQ's `Poller` lives (POLLER), in the same word, so that
//! the right to poll and the batch are decided together: `CqEx::poll_batch` (`&self`, any
//! thread: `Opener::Shared`) opens a batch only if no poller lives and no batch is open, and
//! is refused otherwise, never waiting for a batch; the poller (`Opener::Poller`) is never
//! refused by it; `poller()` is refused while such a batch is open. A `&mut CqEx`
//! (`Opener::Exclusive`) proves that no poller can poll (a leaked one's bit may stay).

use super::teardown::{done, park, Backoff, Teardown};
use crate::ffi::sys;
use crate::sync::atomic::AtomicU32;
use crate::sync::time::Instant;
use crate::sync::{thread, Mutex};
use std::os::raw::c_void;
use std::sync::atomic::Ordering;

const FREE: u32 = 0;
const OPEN: u32 = 1;
const TEARDOWN: u32 = 2;
const DEFERRED: u32 = 3;
/// The gate's holder: one of the four above.
const KIND: u32 = 0x3f;
/// The CQ's one `Poller` lives: only it opens batches (or a `&mut` of the CQ, which proves it
/// leaked); `CqEx::poll_batch` through `&self` is refused.
const POLLER: u32 = 0x40;
/// The CQ's poller waits to open a batch: no new explicit teardown starts waiting for the gate
/// until it has (the waiting ones go first), so teardowns do not starve the poller.
const OPENER: u32 = 0x80;
/// One explicit teardown waiting for the gate (the count is the state's upper bits): while
/// there is one, no new batch opens.
const WAITER: u32 = 1 << 8;
/// How long an explicit teardown waits for the gates of its QP's CQs before it is refused
/// (`BatchOpen`): a batch's closure that waits for the teardown's thread would otherwise make
/// it wait for ever.
pub(crate) const TEARDOWN_WAIT: std::time::Duration = std::time::Duration::from_secs(1);

/// Who opens a batch (see the gates above): what it expects of the poller's bit.
#[derive(Clone, Copy, PartialEq, Eq)]
pub(crate) enum Opener {
    /// `CqEx::poll_batch` through `&self`: refused while the poller lives.
    Shared,
    /// The CQ's `Poller` (or `ArcPoller`): the bit is its own.
    Poller,
    /// A `&mut` of the CQ: no poller polls (a leaked one's bit may stay, and is kept).
    Exclusive,
}

impl Opener {
    /// The gate's state this opener expects when it is free.
    #[inline(always)]
    const fn base(self) -> u32 {
        match self {
            Opener::Poller => POLLER,
            Opener::Shared | Opener::Exclusive => FREE,
        }
    }
}

/// A teardown handed to a batch: `run(a, b)`, of context `ctx` (counted by [`park`]).
struct Item {
    run: Teardown,
    a: usize,
    b: usize,
    ctx: usize,
}

/// A CQ's gate (see above), in its crate meta.
pub(crate) struct Gate {
    state: AtomicU32,
    deferred: Mutex<Vec<Item>>,
}

impl Gate {
    /// Whether a batch holds the gate (OPEN) or is handed teardowns (DEFERRED): what a
    /// teardown that did not take it waits behind (read only; the gate's word changes here).
    pub(super) fn batch_holds(&self) -> bool {
        matches!(self.state.load(Ordering::Acquire) & KIND, OPEN | DEFERRED)
    }

    #[cfg(not(typed_verbs_loom))]
    pub(crate) const fn new() -> Gate {
        Gate {
            state: AtomicU32::new(FREE),
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// [`Gate::new`] of loom's atomic, which is not made in a `const`.
    #[cfg(typed_verbs_loom)]
    pub(crate) fn new() -> Gate {
        Gate {
            state: AtomicU32::new(FREE),
            deferred: Mutex::new(Vec::new()),
        }
    }

    /// Taken by `poll_batch` before `ibv_start_poll`; waits for a teardown in progress (bounded).
    /// False if a batch holds it already (another thread's, through `CqEx::poll_batch`), or,
    /// for a [`Opener::Shared`] batch, if the CQ's poller lives; never waits for a batch.
    #[inline(always)]
    pub(crate) fn open_batch(&self, who: Opener) -> bool {
        let base = who.base();
        self.state
            .compare_exchange(base, base | OPEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.open_batch_slow(who)
    }

    /// [`open_batch`](Self::open_batch) when the gate is not as expected: a teardown holds it
    /// or waits for it (wait for it), a batch does (false), the poller lives for a shared
    /// opener (false), or a leaked poller's bit stays for an exclusive one (open, keeping it).
    #[cold]
    #[inline(never)]
    fn open_batch_slow(&self, who: Opener) -> bool {
        let mut spins = 0u32;
        // Whether this opener marked the gate (OPENER): a refused one takes its mark back, or
        // it would keep explicit teardowns waiting for an opener that is gone (and drops
        // retrying for a gate that never frees).
        let mut marked = false;
        let refuse = |marked: bool| {
            if marked {
                self.state.fetch_and(!OPENER, Ordering::Relaxed);
            }
            false
        };
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if who == Opener::Shared && s & POLLER != 0 {
                return refuse(marked);
            }
            match s & KIND {
                OPEN | DEFERRED => return refuse(marked),
                _ if s & !(OPENER | POLLER) == FREE => {
                    if self
                        .state
                        .compare_exchange_weak(
                            s,
                            (s & POLLER) | OPEN,
                            Ordering::Acquire,
                            Ordering::Relaxed,
                        )
                        .is_ok()
                    {
                        return true;
                    }
                }
                _ => {
                    // Marked on the state seen (a teardown or a waiter holds it), never on a
                    // batch's, which may have opened since the load.
                    if s & OPENER == 0
                        && self
                            .state
                            .compare_exchange(s, s | OPENER, Ordering::Relaxed, Ordering::Relaxed)
                            .is_ok()
                    {
                        marked = true;
                    }
                    // Teardowns hold the gate briefly: spin, then yield, never sleep (a sleep
                    // would miss the gaps between them).
                    spins = spins.saturating_add(1);
                    if spins < 16 {
                        thread::spin_loop();
                    } else {
                        thread::yield_now();
                    }
                }
            }
        }
    }

    /// Given back by `poll_batch` after `ibv_end_poll`: whether teardowns were handed to the
    /// batch ([`run_handed`](Self::run_handed) them once the thread is out of it).
    #[inline(always)]
    pub(crate) fn close_batch(&self, who: Opener) -> bool {
        let base = who.base();
        self.state
            .compare_exchange(base | OPEN, base, Ordering::Release, Ordering::Relaxed)
            .is_err()
            && self.close_batch_slow()
    }

    /// `CqEx::poller`: takes the poller's bit, unless a poller lives or a batch is open (one
    /// opened through `CqEx::poll_batch`: no poller lives). False then, with nothing taken.
    pub(crate) fn claim_poller(&self) -> bool {
        let mut s = self.state.load(Ordering::Relaxed);
        loop {
            // Set only where it may be: never even for a moment over a batch, which would
            // refuse other openers while no poller lives.
            if s & POLLER != 0 || matches!(s & KIND, OPEN | DEFERRED) {
                return false;
            }
            match self.state.compare_exchange_weak(
                s,
                s | POLLER,
                Ordering::Acquire,
                Ordering::Relaxed,
            ) {
                Ok(_) => return true,
                Err(now) => s = now,
            }
        }
    }

    /// `CqEx::split`: takes the poller's bit through `&mut` of the CQ (no batch is open, and a
    /// poller that had it was leaked: it never polls again).
    pub(crate) fn take_poller(&self) {
        self.state.fetch_or(POLLER, Ordering::Acquire);
    }

    /// A poller dropped: the bit back.
    pub(crate) fn release_poller(&self) {
        self.state.fetch_and(!POLLER, Ordering::Release);
    }

    /// [`close_batch`](Self::close_batch) with teardowns handed to the batch or waiting for
    /// it: frees the gate, keeping the waiters counted.
    #[cold]
    #[inline(never)]
    fn close_batch_slow(&self) -> bool {
        self.state.fetch_and(!KIND, Ordering::Release) & KIND == DEFERRED
    }

    /// Takes the gate for a teardown if it is free and nobody waits for it (a teardown that
    /// waits, or the CQ's poller: a newcomer queues behind them, so neither is starved).
    /// Never waits.
    pub(super) fn try_take(&self) -> bool {
        let s = self.state.load(Ordering::Relaxed) & POLLER;
        self.state
            .compare_exchange(s, s | TEARDOWN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
    }

    /// Takes the gate for an explicit teardown on a thread out of any batch, waiting until
    /// `deadline` for the batch or teardown that holds it; while it waits, no new batch opens
    /// on it. If the CQ's poller is waiting to open one, it first lets it (so a stream of
    /// teardowns does not starve it). False at the deadline, with nothing taken.
    pub(super) fn take_waiting(&self, deadline: Instant) -> bool {
        let mut backoff = Backoff::default();
        loop {
            if self.state.load(Ordering::Relaxed) & OPENER == 0 {
                break;
            }
            if Instant::now() >= deadline {
                return false;
            }
            backoff.wait();
        }
        if self.try_take() {
            return true;
        }
        // Counted a waiter, it takes the gate as soon as its holder gives it back, ahead of
        // newcomers (`try_take`) and of a new batch.
        self.state.fetch_add(WAITER, Ordering::Relaxed);
        let mut backoff = Backoff::default();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            if s & KIND == FREE
                && self
                    .state
                    .compare_exchange_weak(
                        s,
                        s - WAITER + TEARDOWN,
                        Ordering::Acquire,
                        Ordering::Relaxed,
                    )
                    .is_ok()
            {
                return true;
            }
            if Instant::now() >= deadline {
                self.state.fetch_sub(WAITER, Ordering::Relaxed);
                return false;
            }
            backoff.wait();
        }
    }

    /// Gives the gate back after a teardown, keeping the waiters counted.
    pub(super) fn give_back(&self) {
        self.state.fetch_and(!KIND, Ordering::Release);
    }

    /// Runs the teardowns handed to the batch that just ended, on its thread, out of the batch.
    /// The parents they held are released by the caller ([`leave_batch`]), after them.
    #[cold]
    pub(super) fn run_handed(&self) {
        let items = std::mem::take(&mut *self.deferred.lock());
        for i in items {
            // SAFETY: `hand`'s contract: each runs once, here.
            unsafe { (i.run)(i.a as *mut c_void, i.b as *mut c_void) };
            done(i.ctx as *mut sys::ibv_context);
        }
    }

    /// Hands `run(a, b)` to the batch that holds the gate: true, or false if no batch holds it
    /// any more (the caller tries again).
    ///
    /// # Safety
    /// As [`defer`]'s: `run(a, b)` may be called once, on the batch's thread, after its end.
    pub(super) unsafe fn hand(
        &self,
        ctx: *mut sys::ibv_context,
        run: Teardown,
        a: *mut c_void,
        b: *mut c_void,
    ) -> bool {
        let mut deferred = self.deferred.lock();
        let mut s = self.state.load(Ordering::Acquire);
        let held = loop {
            match s & KIND {
                DEFERRED => break true,
                OPEN => match self.state.compare_exchange(
                    s,
                    (s & !KIND) | DEFERRED,
                    Ordering::AcqRel,
                    Ordering::Acquire,
                ) {
                    Ok(_) => break true,
                    Err(now) => s = now,
                },
                _ => break false,
            }
        };
        if held {
            park(ctx);
            deferred.push(Item {
                run,
                a: a as usize,
                b: b as usize,
                ctx: ctx as usize,
            });
        }
        held
    }
}

/// The gate of `cq`, a CQ made by the crate's builder.
///
/// # Safety
/// `cq` is live for `'a`.
pub(super) unsafe fn gate_of<'a>(cq: *mut sys::ibv_cq) -> &'a Gate {
    // SAFETY: caller's contract: cq_context is the CQ's meta, a `#[repr(C)]` struct whose first
    // field is its gate (`crate::cq::CqMeta`), live as long as the CQ.
    unsafe { &*((*cq).cq_context as *const Gate) }
}

/// What the models read of a gate.
#[cfg(all(test, typed_verbs_loom))]
impl Gate {
    /// Whether a teardown holds the gate (closed to batches).
    pub(super) fn held_by_teardown(&self) -> bool {
        self.state.load(Ordering::SeqCst) & KIND == TEARDOWN
    }

    /// The gate's whole word: `FREE` (0) once nobody holds it, waits for it or claims it.
    pub(super) fn word(&self) -> u32 {
        self.state.load(Ordering::SeqCst)
    }
}

/// The poller's claim, model-checked (docs/model-checking.md): `CqEx::poller` and the poller's
/// drop ([`Gate::claim_poller`], [`Gate::release_poller`]), its batches
/// ([`Opener::Poller`]) and `CqEx::poll_batch` through `&self` ([`Opener::Shared`]), as
/// `poll_batch` opens and closes them.
#[cfg(all(test, typed_verbs_loom))]
mod loom_models {
    use super::*;
    use loom::sync::atomic::AtomicUsize;
    use loom::sync::Arc;
    use std::sync::atomic::Ordering::SeqCst;

    struct Cq {
        gate: Gate,
        /// Live pollers (counted after the claim, uncounted before its release).
        pollers: AtomicUsize,
        /// Threads inside a batch of the CQ.
        polling: AtomicUsize,
    }

    /// A batch as `poll_batch` opens it (the verbs between left out): at most one at a time.
    fn batch(cq: &Cq, who: Opener) -> bool {
        if !cq.gate.open_batch(who) {
            return false;
        }
        assert_eq!(cq.polling.fetch_add(1, SeqCst), 0, "two batches at once");
        cq.polling.fetch_sub(1, SeqCst);
        assert!(!cq.gate.close_batch(who), "nothing was handed");
        true
    }

    /// A poller's life: claimed, one batch, dropped. While it lives no shared batch is open.
    fn poller(cq: &Cq) -> bool {
        if !cq.gate.claim_poller() {
            return false;
        }
        assert_eq!(cq.pollers.fetch_add(1, SeqCst), 0, "two pollers at once");
        assert!(
            batch(cq, Opener::Poller),
            "the poller's batch is never refused"
        );
        cq.pollers.fetch_sub(1, SeqCst);
        cq.gate.release_poller();
        true
    }

    /// Two threads claim the poller and poll while a third polls through `&self`: one poller
    /// at a time, one batch at a time, no shared batch while a poller lives, a claim refused
    /// only while another poller lives or a batch is open, and the gate free at the end.
    #[test]
    fn poller_claim_one_at_a_time() {
        crate::sync::model::check(None, || {
            let cq = Arc::new(Cq {
                gate: Gate::new(),
                pollers: AtomicUsize::new(0),
                polling: AtomicUsize::new(0),
            });
            let threads: Vec<_> = (0..2)
                .map(|_| {
                    let cq = cq.clone();
                    loom::thread::spawn(move || poller(&cq))
                })
                .collect();
            let shared = cq.gate.open_batch(Opener::Shared);
            if shared {
                assert_eq!(
                    cq.pollers.load(SeqCst),
                    0,
                    "a shared batch while a poller lives"
                );
                assert_eq!(cq.polling.fetch_add(1, SeqCst), 0, "two batches at once");
                cq.polling.fetch_sub(1, SeqCst);
                assert!(!cq.gate.close_batch(Opener::Shared));
            }
            let claimed = threads
                .into_iter()
                .map(|t| t.join().unwrap())
                .filter(|&c| c)
                .count();
            // Each refusal has a reason: a refused shared batch saw a poller, and two refused
            // claims saw the shared batch (they cannot both have seen each other).
            assert!(shared || claimed >= 1, "refused with nobody polling");
            assert_eq!(cq.gate.word(), FREE);
        });
    }

    /// `CqEx::split` takes the claim through `&mut` (after a leaked poller), and an exclusive
    /// batch keeps a leaked poller's bit: a racing shared batch is refused once the bit is
    /// set, and a claim is refused while it stays.
    #[test]
    fn poller_claim_taken_back_by_split() {
        crate::sync::model::check(None, || {
            let cq = Arc::new(Cq {
                gate: Gate::new(),
                pollers: AtomicUsize::new(0),
                polling: AtomicUsize::new(0),
            });
            // A poller leaked: its bit stays.
            assert!(cq.gate.claim_poller());
            let shared = {
                let cq = cq.clone();
                loom::thread::spawn(move || batch(&cq, Opener::Shared))
            };
            let other = {
                let cq = cq.clone();
                loom::thread::spawn(move || cq.gate.claim_poller())
            };
            assert!(
                !shared.join().unwrap(),
                "a shared batch while the bit stays"
            );
            assert!(!other.join().unwrap(), "a second claim while the bit stays");
            // `&mut CqEx`: no batch open, no poller polls; split takes the bit (kept).
            cq.gate.take_poller();
            assert!(batch(&cq, Opener::Exclusive));
            assert!(batch(&cq, Opener::Poller));
            cq.gate.release_poller();
            assert_eq!(cq.gate.word(), FREE);
        });
    }
}
