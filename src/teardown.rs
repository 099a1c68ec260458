//! What a thread inside a polling batch may not do, and the teardowns that wait for its end.
//!
//! Providers hold a CQ's lock for a whole batch: rdma-core's mlx5 takes `cq->lock` in
//! `mlx5_start_poll` and releases it in `mlx5_end_poll`. The same lock is taken by
//! `ibv_destroy_qp` and the modify to RESET (`mlx5_lock_cqs`, which takes the send and receive
//! CQs' locks in order, and `__mlx5_cq_clean`), by `ibv_poll_cq` and by the next
//! `ibv_start_poll`. So a thread that holds one CQ lock (has a batch open) and then waits for
//! another CQ lock can deadlock with a thread that holds the second and waits for the first
//! (a QP destroy does), and a thread that waits for the lock it holds itself spins for ever.
//! The crate keeps two rules:
//!
//! **A thread inside [`CqEx::poll_batch`](crate::CqEx::poll_batch) never waits for a CQ lock.**
//!
//! **A teardown waits only for the batches in progress on its QP's CQs** (the gates, below): a
//! QP's destroy or move to RESET on a thread out of any batch waits for them as for a lock (no
//! new batch opens on a gate a teardown waits for), and a dropped QP never waits: its teardown
//! is pending on the gates and runs after at most one batch end per CQ, on the thread that ends
//! it (the QP's user context dropped at once, its parents after it, as below). A batch's closure
//! is user code: it must not wait for a thread that waits for its batch (the caller's duty, as
//! with a lock; [`crate::safety`]).
//!
//! Inside a batch, on its thread:
//!
//! - a nested `poll_batch` (on any CQ), `Cq::poll`, `Qp::destroy` and the move to RESET are
//!   refused there with [`ErrorKind::BatchOpen`](crate::ErrorKind::BatchOpen), before the call;
//! - a QP dropped there is destroyed when the batch ends: its user context is dropped at once
//!   (it may borrow what the closure frees next), the C object and its multicast groups wait
//!   in the thread's queue, run when its batch ends;
//! - while such a QP waits, the objects of its context that it may still use (the context, a
//!   PD, CQ, SRQ, channel or parent domain), dropped on *any* thread, wait too: behind it, in
//!   its context's wait list, run in drop order once the last waiting QP of the context is
//!   destroyed. They are destroyed after it instead of failing with `EBUSY` (or, for a context,
//!   being closed under the QP, which rdma-core's `ibv_close_device` would do); their user
//!   contexts are dropped at once; `Context::close` is refused meanwhile.
//!
//! The thread's queue is a thread-local: only the thread that deferred runs it. A pending
//! teardown is in the gate (in the CQ's meta) it waits for; whoever gives that gate back (the
//! batch's thread after its end, or the teardown that held it) advances it. The
//! context's wait list is shared (a lock), and whoever destroys the last waiting QP of the
//! context runs it. No teardown in any of them runs user code: the parents a waiting QP kept
//! alive are released after the teardowns.

use crate::ffi::sys;
use crate::parent::Keep;
use crate::sync::Mutex;
use std::cell::Cell;
use std::os::raw::c_void;
use std::ptr;
use std::sync::atomic::{AtomicUsize, Ordering};

/// A deferred teardown: a function and the two pointers it takes (the C object and what the
/// crate allocated for it). A plain function pointer, so that no user type is kept alive in it.
pub(crate) type Teardown = unsafe fn(*mut c_void, *mut c_void);

/// One teardown waiting for the end of this thread's batch.
struct Node {
    run: Teardown,
    a: *mut c_void,
    b: *mut c_void,
    /// The context whose wait list waits for this teardown.
    ctx: *mut sys::ibv_context,
    next: *mut Node,
}

struct Batch {
    /// Whether the thread is inside `poll_batch`.
    inside: Cell<bool>,
    /// The parents of deferred QPs that were destroyed, to release once the deferred teardowns
    /// are done (releasing one may run a user context's `Drop`): a leaked `Box<Vec<..>>` or
    /// null, so that the thread-local has no destructor (a thread-local with one pays a state
    /// test on every access, in every batch). It is emptied (and freed) before the batch's
    /// `poll_batch` returns or finishes unwinding.
    released: Cell<*mut Vec<[Keep; 4]>>,
    /// The deferred teardowns, first to run at the head.
    head: Cell<*mut Node>,
    tail: Cell<*mut Node>,
}

thread_local! {
    static BATCH: Batch = const {
        Batch {
            inside: Cell::new(false),
            released: Cell::new(ptr::null_mut()),
            head: Cell::new(ptr::null_mut()),
            tail: Cell::new(ptr::null_mut()),
        }
    };
}

/// Whether the calling thread is inside `poll_batch`, where waiting for a CQ lock is refused.
#[inline(always)]
pub(crate) fn inside_batch() -> bool {
    BATCH.with(|b| b.inside.get())
}

/// Marks the calling thread as inside `poll_batch`; false if it already was (a nested batch).
#[inline(always)]
pub(crate) fn enter() -> bool {
    BATCH.with(|b| !b.inside.replace(true))
}

/// Marks the calling thread as out of its batch and runs the teardowns deferred to its end.
#[inline(always)]
pub(crate) fn leave() {
    BATCH.with(|b| {
        b.inside.set(false);
        if !b.head.get().is_null() {
            run_deferred(b);
            release_parents(b);
        }
    })
}

/// The end of a batch on the CQ of `gate`, given back (`handed`: what [`Gate::close_batch`]
/// returned): marks the thread as out of the batch, runs the teardowns deferred to its end and
/// those handed to the batch, and only then releases the parents they held (which may run user
/// code, and panic: no teardown is left behind by it).
#[inline(always)]
pub(crate) fn leave_batch(gate: &Gate, handed: bool) {
    BATCH.with(|b| {
        b.inside.set(false);
        if handed || !b.head.get().is_null() {
            run_deferred(b);
            if handed {
                gate.run_handed();
            }
            release_parents(b);
        }
    })
}

#[cold]
fn run_deferred(b: &Batch) {
    loop {
        let node = b.head.get();
        if node.is_null() {
            return;
        }
        // SAFETY: a node of this thread's queue, made by `defer` with Box::into_raw; unlinked
        // here before it runs, so it runs and is freed once.
        let node = unsafe { Box::from_raw(node) };
        b.head.set(node.next);
        if node.next.is_null() {
            b.tail.set(ptr::null_mut());
        }
        // SAFETY: `defer`'s contract: `run` may be called once with these pointers.
        unsafe { (node.run)(node.a, node.b) };
        done(node.ctx);
    }
}

/// Releases `keep`, the parents of a deferred QP just destroyed on this thread, once its
/// batch's deferred teardowns are done: releasing one may destroy the parent and run its user
/// context's `Drop`, which is user code, and no teardown runs user code. (While the thread
/// unwinds from a panicking closure they are released all the same, as a `Vec` drops its
/// elements then: a panic in such a `Drop` aborts, as in any unwinding.)
pub(crate) fn release_after(keep: [Keep; 4]) {
    if keep.iter().all(Keep::is_none) {
        return; // borrowed parents: nothing to release
    }
    BATCH.with(|b| {
        let mut list = b.released.replace(ptr::null_mut());
        if list.is_null() {
            list = Box::into_raw(Box::default());
        }
        // SAFETY: this thread's list, taken out of the cell (so nothing else reaches it) and
        // put back below; made by Box::into_raw.
        unsafe { (*list).push(keep) };
        b.released.set(list);
    })
}

/// Releases what [`release_after`] collected on this thread, now (out of any batch).
pub(crate) fn release_now() {
    BATCH.with(release_parents)
}

/// Releases what [`release_after`] collected.
fn release_parents(b: &Batch) {
    if b.released.get().is_null() {
        return;
    }
    // SAFETY: this thread's list, made by Box::into_raw in `release_after` and taken out of
    // the cell here, once. Dropping it may run user code (a parent's user context), with the
    // cell already empty.
    drop(unsafe { Box::from_raw(b.released.replace(ptr::null_mut())) });
}

/// Queues `run(a, b)`, the destroy of a QP of context `ctx`, to the end of this thread's batch,
/// after what is queued already; until it has run, what of `ctx` is dropped waits behind it
/// ([`wait_behind`]).
///
/// # Safety
/// `run(a, b)` may be called once, on this thread, at the end of its batch: `a` and `b` stay
/// valid until then and nothing else tears them down; `ctx` is their live context.
pub(crate) unsafe fn defer(
    ctx: *mut sys::ibv_context,
    run: Teardown,
    a: *mut c_void,
    b: *mut c_void,
) {
    park(ctx);
    let node = Box::into_raw(Box::new(Node {
        run,
        a,
        b,
        ctx,
        next: ptr::null_mut(),
    }));
    BATCH.with(|b| {
        let tail = b.tail.get();
        if tail.is_null() {
            b.head.set(node);
        } else {
            // SAFETY: the tail is a live node of this thread's queue.
            unsafe { (*tail).next = node };
        }
        b.tail.set(node);
    })
}

/// Counts a QP of `ctx` whose destroy waits for a batch's end: until [`done`], what of `ctx`
/// is dropped waits behind it ([`wait_behind`]).
fn park(ctx: *mut sys::ibv_context) {
    let mut waiting = WAITING.lock();
    match waiting.iter_mut().find(|w| w.ctx == ctx as usize) {
        Some(w) => w.pending += 1,
        None => waiting.push(Waiting {
            ctx: ctx as usize,
            pending: 1,
            after: Vec::new(),
        }),
    }
    ANY.fetch_add(1, Ordering::Release);
}

/// The QPs of one context whose destroy waits for a batch's end, and what of the context was
/// dropped after them.
struct Waiting {
    ctx: usize,
    pending: usize,
    after: Vec<(Teardown, usize, usize)>,
}

/// Every context with waiting QPs (few: one entry per context while a batch is deferring).
static WAITING: Mutex<Vec<Waiting>> = Mutex::new(Vec::new());
/// How many QPs wait, over all contexts: lets the `Drop` of a parent skip the lock when none
/// does. Raised under the lock before the QP's handle is gone, so a parent dropped after it
/// (on any thread, which needs the handle's borrow to have ended first) sees it.
static ANY: AtomicUsize = AtomicUsize::new(0);

/// A waiting QP of `ctx` is destroyed: when it was the last one, runs what waited behind it.
fn done(ctx: *mut sys::ibv_context) {
    let after = {
        let mut waiting = WAITING.lock();
        ANY.fetch_sub(1, Ordering::Release);
        let Some(i) = waiting.iter().position(|w| w.ctx == ctx as usize) else {
            return;
        };
        waiting[i].pending -= 1;
        if waiting[i].pending > 0 {
            return;
        }
        waiting.swap_remove(i).after
    };
    for (run, a, b) in after {
        // SAFETY: `wait_behind`'s contract: each runs once, here.
        unsafe { run(a as *mut c_void, b as *mut c_void) };
    }
}

/// For the `Drop` of an object of context `ctx` that a waiting QP may use: when a QP of `ctx`
/// waits, queues `run(a, b)` behind it and returns true; otherwise returns false, and the
/// caller destroys the object now.
///
/// # Safety
/// When it returns true, `run(a, b)` may be called once, on any thread, after the QPs of `ctx`
/// that wait now are destroyed: `a` and `b` stay valid until then and nothing else tears them
/// down.
pub(crate) unsafe fn wait_behind(
    ctx: *mut sys::ibv_context,
    run: Teardown,
    a: *mut c_void,
    b: *mut c_void,
) -> bool {
    if ANY.load(Ordering::Acquire) == 0 {
        return false;
    }
    let mut waiting = WAITING.lock();
    match waiting.iter_mut().find(|w| w.ctx == ctx as usize) {
        Some(w) => {
            w.after.push((run, a as usize, b as usize));
            true
        }
        None => false,
    }
}

/// Whether a QP of `ctx` waits for a batch's end (then `Context::close` is refused).
pub(crate) fn waiting(ctx: *mut sys::ibv_context) -> bool {
    ANY.load(Ordering::Acquire) != 0 && WAITING.lock().iter().any(|w| w.ctx == ctx as usize)
}

// ---------------------------------------------------------------------------------------------
// Gates: no thread inside a batch waits for a CQ lock, and a teardown waits for the batches in
// progress on its CQs, as for a lock, and for no other.
//
// A QP's destroy and its move to RESET take its CQs' locks (mlx5), which an open batch holds
// until its closure returns. So each CQ has a gate in its crate meta: `poll_batch` holds it
// (OPEN) from before `ibv_start_poll` to after `ibv_end_poll`, and a teardown holds it
// (TEARDOWN) around the verb. A teardown that finds a batch there:
//
// - from `destroy` or `to_reset` (a thread out of any batch): waits for the batch to end, as
//   for a lock. It counts itself a waiter first, and while a gate has a waiter no new batch
//   opens on it (the opener waits): so the wait is for the batches in progress, not for a
//   stream of new ones;
// - from a QP's `Drop`: does not wait. It becomes a pending teardown, queued on the gate
//   (DEFERRED: the batch runs it after its end, on its thread, out of the batch). A pending
//   teardown takes its QP's gates one at a time in address order and keeps each it took, so
//   it runs after at most one batch end per gate (it was bounded by nothing before: handed
//   from one CQ's batch to the other's while both stay busy, it could wait for ever).
//
// Every teardown takes gates in address order and waits only for a gate later in that order,
// so teardowns never wait for each other in a cycle, and the last in any chain of waits waits
// for a batch in progress. A batch waits for no gate (a nested `poll_batch`, `Cq::poll`,
// `destroy` and `to_reset` are refused inside one, a `Drop` there is deferred to its end). So
// every wait ends when the batches in progress end, unless a batch's closure itself waits for
// a thread that waits for a teardown (the caller's duty, as with a lock: see `crate::safety`).

const FREE: u32 = 0;
const OPEN: u32 = 1;
const TEARDOWN: u32 = 2;
const DEFERRED: u32 = 3;
/// The gate's holder: one of the four above.
const KIND: u32 = 0xff;
/// One teardown waiting for the gate (the count is the state's upper bits): while there is
/// one, no new batch opens.
const WAITER: u32 = 1 << 8;

/// A dropped QP's teardown waiting for its CQs' gates: `run(a, b)`, of context `ctx`, once it
/// holds every gate in `gates` (`n` of them, in address order; the first `held` are held).
struct Pending {
    run: Teardown,
    a: usize,
    b: usize,
    ctx: usize,
    gates: [usize; 2],
    n: u8,
    held: u8,
    /// Counted by [`park`] (what of its context is dropped waits behind it) until it has run.
    parked: bool,
}

/// A CQ's gate (see above), in its crate meta.
pub(crate) struct Gate {
    state: std::sync::atomic::AtomicU32,
    /// Pending teardowns waiting for this gate: for the batch that holds it (run after its
    /// end) or for the teardown that holds it (run when it gives the gate back).
    pending: Mutex<Vec<Pending>>,
}

impl Gate {
    pub(crate) const fn new() -> Gate {
        Gate {
            state: std::sync::atomic::AtomicU32::new(FREE),
            pending: Mutex::new(Vec::new()),
        }
    }

    /// Taken by `poll_batch` before `ibv_start_poll`; waits while a teardown holds the gate or
    /// waits for it (bounded by the batches in progress on the CQs of that teardown's QP).
    /// False if a batch holds it already (the crate's one poller per CQ excludes that).
    #[inline(always)]
    pub(crate) fn open_batch(&self) -> bool {
        self.state
            .compare_exchange(FREE, OPEN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
            || self.open_batch_slow()
    }

    /// [`open_batch`](Self::open_batch) when the gate is not free: a teardown holds it or
    /// waits for it (wait) or a batch holds it (false).
    #[cold]
    #[inline(never)]
    fn open_batch_slow(&self) -> bool {
        let mut backoff = Backoff::default();
        loop {
            let s = self.state.load(Ordering::Relaxed);
            match s & KIND {
                OPEN | DEFERRED => return false,
                _ if s == FREE => {
                    if self
                        .state
                        .compare_exchange_weak(FREE, OPEN, Ordering::Acquire, Ordering::Relaxed)
                        .is_ok()
                    {
                        return true;
                    }
                }
                _ => backoff.wait(),
            }
        }
    }

    /// Given back by `poll_batch` after `ibv_end_poll`: whether teardowns are pending on the
    /// batch ([`run_handed`](Self::run_handed) them once the thread is out of it).
    #[inline(always)]
    pub(crate) fn close_batch(&self) -> bool {
        self.state
            .compare_exchange(OPEN, FREE, Ordering::Release, Ordering::Relaxed)
            .is_err()
            && self.close_batch_slow()
    }

    /// [`close_batch`](Self::close_batch) with teardowns waiting: frees the gate for them.
    #[cold]
    #[inline(never)]
    fn close_batch_slow(&self) -> bool {
        let prev = self.state.fetch_and(!KIND, Ordering::Release);
        prev & KIND == DEFERRED
    }

    /// Runs the teardowns pending on the batch that just ended, on its thread, out of the
    /// batch (or queues them behind what holds the gate now). The parents they held are
    /// released by the caller ([`leave_batch`]), after them.
    #[cold]
    fn run_handed(&self) {
        self.drive();
    }

    /// Advances every teardown pending on this gate, which was just given back.
    fn drive(&self) {
        let pending = std::mem::take(&mut *self.pending.lock());
        for p in pending {
            // SAFETY: each was queued by `advance`, whose contract holds until it runs; it is
            // counted a waiter of this gate, the one it waits for.
            unsafe { advance(p, true) };
        }
    }

    /// Takes the gate for a teardown on a thread out of any batch, waiting for the batch or
    /// teardown that holds it; while it waits, no new batch opens.
    fn acquire(&self) {
        if self
            .state
            .compare_exchange(FREE, TEARDOWN, Ordering::Acquire, Ordering::Relaxed)
            .is_ok()
        {
            return;
        }
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
                return;
            }
            backoff.wait();
        }
    }

    /// Gives the gate back after a teardown, and advances what waits for it.
    fn release(&self) {
        self.state.fetch_and(!KIND, Ordering::Release);
        self.drive();
    }
}

/// Spins briefly, then yields, then sleeps up to a millisecond: a wait for a batch may be long.
#[derive(Default)]
struct Backoff(u32);

impl Backoff {
    fn wait(&mut self) {
        self.0 = self.0.saturating_add(1);
        match self.0 {
            0..=16 => std::hint::spin_loop(),
            17..=80 => std::thread::yield_now(),
            n => std::thread::sleep(std::time::Duration::from_micros(u64::from(
                (n - 80).min(1000),
            ))),
        }
    }
}

/// The gate of `cq`, a CQ made by the crate's builder.
///
/// # Safety
/// `cq` is live for `'a`.
unsafe fn gate_of<'a>(cq: *mut sys::ibv_cq) -> &'a Gate {
    // SAFETY: caller's contract: cq_context is the CQ's meta (`crate::cq::gate`).
    unsafe { crate::cq::gate(cq) }
}

/// A QP's distinct CQ gates, in address order (the order every teardown takes them in).
///
/// # Safety
/// The CQs are live, made by the crate's builder, for `'a`.
unsafe fn gates_of<'a>(cqs: [*mut sys::ibv_cq; 2]) -> ([&'a Gate; 2], usize) {
    // SAFETY: caller's contract.
    let (x, y) = unsafe { (gate_of(cqs[0]), gate_of(cqs[1])) };
    match (x as *const Gate).cmp(&(y as *const Gate)) {
        std::cmp::Ordering::Equal => ([x, x], 1),
        std::cmp::Ordering::Less => ([x, y], 2),
        std::cmp::Ordering::Greater => ([y, x], 2),
    }
}

/// The gates of a QP's CQs, held by a teardown: given back when dropped (which advances the
/// teardowns waiting for them: call [`release_now`] afterwards, out of any batch).
pub(crate) struct Closed<'a>([&'a Gate; 2], usize);

impl Drop for Closed<'_> {
    fn drop(&mut self) {
        for g in self.0[..self.1].iter().rev() {
            g.release();
        }
    }
}

/// Closes the gates of `cqs` (a QP's send and receive CQ) to batches for a teardown that takes
/// their locks, waiting for the batches in progress on them (and for teardowns that hold
/// them) to end. Only for a thread out of any batch.
///
/// # Safety
/// The CQs are live, made by the crate's builder, while the result lives.
pub(crate) unsafe fn close_gates<'a>(cqs: [*mut sys::ibv_cq; 2]) -> Closed<'a> {
    debug_assert!(!inside_batch());
    // SAFETY: caller's contract.
    let (gates, n) = unsafe { gates_of(cqs) };
    for g in &gates[..n] {
        g.acquire();
    }
    Closed(gates, n)
}

/// Closes the gates of `cqs` for a teardown if they are free now (no batch, teardown or
/// waiter holds them); otherwise takes none. Never waits.
///
/// # Safety
/// As [`close_gates`]'s.
pub(crate) unsafe fn try_close_gates<'a>(cqs: [*mut sys::ibv_cq; 2]) -> Option<Closed<'a>> {
    // SAFETY: caller's contract.
    let (gates, n) = unsafe { gates_of(cqs) };
    for (i, g) in gates[..n].iter().enumerate() {
        if g.state
            .compare_exchange(FREE, TEARDOWN, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            drop(Closed(gates, i)); // gives back what it took
            return None;
        }
    }
    Some(Closed(gates, n))
}

/// Runs a dropped QP's teardown `run(a, b)` (of context `ctx`, on its CQs `cqs`) once it holds
/// its CQs' gates: now if they are free, else after the batches (or teardowns) that hold them,
/// on the thread that ends them. Never waits. True if it ran now.
///
/// # Safety
/// `run(a, b)` may be called once, on any thread out of a batch, with the gates of `cqs`
/// closed: `a` and `b` stay valid until then and nothing else tears them down; `ctx` is their
/// live context; the CQs live until `run` has run.
pub(crate) unsafe fn run_when_free(
    ctx: *mut sys::ibv_context,
    cqs: [*mut sys::ibv_cq; 2],
    run: Teardown,
    a: *mut c_void,
    b: *mut c_void,
) -> bool {
    // SAFETY: caller's contract.
    let (gates, n) = unsafe { gates_of(cqs) };
    let p = Pending {
        run,
        a: a as usize,
        b: b as usize,
        ctx: ctx as usize,
        gates: [
            gates[0] as *const Gate as usize,
            gates[1] as *const Gate as usize,
        ],
        n: n as u8,
        held: 0,
        parked: false,
    };
    // SAFETY: caller's contract.
    unsafe { advance(p, false) }
}

/// Takes `p`'s next gates while they are free, and runs it once it holds all; queues it on
/// the first that is not (`registered`: it is counted a waiter of that gate already). True if
/// it ran.
///
/// # Safety
/// As [`run_when_free`]'s, for `p`.
unsafe fn advance(mut p: Pending, mut registered: bool) -> bool {
    loop {
        if p.held == p.n {
            // SAFETY: caller's contract: it holds its gates.
            unsafe { (p.run)(p.a as *mut c_void, p.b as *mut c_void) };
            for &g in p.gates[..usize::from(p.n)].iter().rev() {
                // SAFETY: the CQs live until `run` has run; their gates are in their metas,
                // freed after it (the parents wait behind the QP).
                unsafe { (*(g as *const Gate)).release() };
            }
            if p.parked {
                done(p.ctx as *mut sys::ibv_context);
            }
            return true;
        }
        // SAFETY: as above: the gate of a live CQ.
        let g = unsafe { &*(p.gates[usize::from(p.held)] as *const Gate) };
        let mut list = g.pending.lock();
        let s = g.state.load(Ordering::Acquire);
        let waiter = if registered { 0 } else { WAITER };
        let (new, queue) = match s & KIND {
            FREE => ((s - (WAITER - waiter)) | TEARDOWN, false),
            OPEN => ((s & !KIND) + waiter + DEFERRED, true),
            _ => (s + waiter, true),
        };
        if g.state
            .compare_exchange(s, new, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            continue; // the gate changed hands meanwhile: look again
        }
        if !queue {
            drop(list);
            p.held += 1;
            registered = false;
            continue;
        }
        if !p.parked {
            park(p.ctx as *mut sys::ibv_context);
            p.parked = true;
        }
        list.push(p);
        return false;
    }
}
