//! What a thread inside a polling batch may not do, and the teardowns that wait for its end.
//!
//! Providers hold a CQ's lock for a whole batch: rdma-core's mlx5 takes `cq->lock` in
//! `mlx5_start_poll` and releases it in `mlx5_end_poll`. The same lock is taken by
//! `ibv_destroy_qp` and the modify to RESET (`mlx5_lock_cqs`, which takes the send and receive
//! CQs' locks in order, and `__mlx5_cq_clean`), by `ibv_poll_cq` and by the next
//! `ibv_start_poll`. So a thread that holds one CQ lock (has a batch open) and then waits for
//! another CQ lock can deadlock with a thread that holds the second and waits for the first
//! (a QP destroy does), and a thread that waits for the lock it holds itself spins for ever.
//! The crate keeps one rule, which makes both impossible:
//!
//! **A thread inside [`CqEx::poll_batch`](crate::CqEx::poll_batch) never waits for a CQ lock.**
//!
//! - a nested `poll_batch` (on any CQ), `Cq::poll`, `Qp::destroy` and the move to RESET are
//!   refused there with [`ErrorKind::BatchOpen`](crate::ErrorKind::BatchOpen), before the call;
//! - a QP dropped there is destroyed when the batch ends: its user context is dropped at once
//!   (it may borrow what the closure frees next), the C object and its multicast groups wait;
//! - an object a deferred QP may still use (its context, PD, CQs, SRQ, and what those use: the
//!   channel, a parent domain), dropped on that thread before the batch ended, waits behind the
//!   QP in the same queue, so it is destroyed after it instead of failing with `EBUSY` (or, for
//!   a context, being closed under the QP); its user context too is dropped at once.
//!
//! The queue is the thread's own (a thread-local): only the thread that deferred runs it, when
//! its batch ends, in the order the teardowns were deferred. A teardown that panics (none runs
//! user code, and the crate's own do not panic) would leave the rest queued for the next batch.

use std::cell::Cell;
use std::os::raw::c_void;
use std::ptr;

/// A deferred teardown: a function and the two pointers it takes (the C object and what the
/// crate allocated for it). A plain function pointer, so that no user type is kept alive in it.
pub(crate) type Teardown = unsafe fn(*mut c_void, *mut c_void);

/// One teardown waiting for the end of this thread's batch.
struct Node {
    run: Teardown,
    a: *mut c_void,
    b: *mut c_void,
    next: *mut Node,
}

struct Batch {
    /// Whether the thread is inside `poll_batch`.
    inside: Cell<bool>,
    /// The deferred teardowns, first to run at the head.
    head: Cell<*mut Node>,
    tail: Cell<*mut Node>,
}

thread_local! {
    static BATCH: Batch = const {
        Batch {
            inside: Cell::new(false),
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
    }
}

/// Queues `run(a, b)` to the end of this thread's batch, after what is queued already.
///
/// # Safety
/// `run(a, b)` may be called once, on this thread, at the end of its batch: `a` and `b` stay
/// valid until then and nothing else tears them down.
pub(crate) unsafe fn defer(run: Teardown, a: *mut c_void, b: *mut c_void) {
    let node = Box::into_raw(Box::new(Node {
        run,
        a,
        b,
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

/// For the `Drop` of an object a deferred QP may use: true when the object's teardown must
/// wait, that is when the calling thread is inside a batch and has deferred a teardown.
pub(crate) fn must_wait() -> bool {
    BATCH.with(|b| b.inside.get() && !b.head.get().is_null())
}
