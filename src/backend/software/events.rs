//! How the software device delivers events, as the kernel's uverbs event files do: a queue
//! behind an eventfd (a completion channel's fd, a context's async fd), read one event at a
//! time; and, per object, the count of events read and acked, which its destroy waits to match.
//!
//! The eventfd is in semaphore mode and its counter is the queue's length, changed only under
//! the queue's lock: the fd is readable (for poll, epoll, tokio) exactly while an event waits,
//! and reading it never blocks while the lock shows an event.

use crate::backend::Errno;
use crate::sync::{Condvar, Mutex};
use std::collections::VecDeque;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

fn last_errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .unwrap_or(libc::EIO)
}

/// A queue of events and the eventfd that tells how many there are.
pub(super) struct EventQueue<T> {
    q: Mutex<VecDeque<T>>,
    fd: OwnedFd,
}

impl<T> EventQueue<T> {
    pub(super) fn new() -> Result<Self, Errno> {
        // SAFETY: plain syscall; the result is checked before use.
        let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_SEMAPHORE) };
        if raw < 0 {
            return Err(last_errno());
        }
        Ok(EventQueue {
            q: Mutex::new(VecDeque::new()),
            // SAFETY: `raw` is a fresh fd that nothing else owns.
            fd: unsafe { OwnedFd::from_raw_fd(raw) },
        })
    }

    pub(super) fn raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }

    /// Adds one to the eventfd's counter (the lock is held: the counter is the queue's length).
    fn signal(&self) {
        let one = 1u64;
        // SAFETY: an 8-byte write from a live buffer to our eventfd. It cannot fail but by
        // overflowing a counter of 2^64 - 2 events.
        let _ = unsafe { libc::write(self.fd.as_raw_fd(), (&one as *const u64).cast(), 8) };
    }

    /// Takes one from the eventfd's counter, which is positive (the lock is held and the queue
    /// had an event), so the read does not block even on a blocking fd.
    fn consume(&self) {
        let mut v = 0u64;
        // SAFETY: an 8-byte read into a live buffer from our eventfd.
        let _ = unsafe { libc::read(self.fd.as_raw_fd(), (&mut v as *mut u64).cast(), 8) };
    }

    /// Queues `v` and makes the fd readable.
    pub(super) fn push(&self, v: T) {
        let mut q = self.q.lock();
        q.push_back(v);
        self.signal();
    }

    /// The oldest event, as `read(2)` of the fd gives it: blocking until there is one, unless
    /// the fd is O_NONBLOCK (then EAGAIN). `on_pop` runs under the queue's lock, so that the
    /// event is counted as read before anything can look for it in the queue.
    pub(super) fn pop(&self, on_pop: impl Fn(&T)) -> Result<T, Errno> {
        loop {
            {
                let mut q = self.q.lock();
                if let Some(v) = q.pop_front() {
                    self.consume();
                    on_pop(&v);
                    return Ok(v);
                }
            }
            // Another reader may take the event first; then the loop waits again, as a second
            // blocked read(2) would.
            self.wait_readable()?;
        }
    }

    /// The oldest event if there is one, without waiting (for a caller that holds a lock of
    /// its own around the pop, taken before this queue's: the connection manager's).
    pub(super) fn try_pop(&self) -> Option<T> {
        let mut q = self.q.lock();
        let v = q.pop_front()?;
        self.consume();
        Some(v)
    }

    /// Waits until the fd is readable, as a blocking `read(2)` would, or fails with EAGAIN at
    /// once when the fd is O_NONBLOCK. The caller then tries [`EventQueue::try_pop`] again (another
    /// reader may have taken the event first).
    pub(super) fn wait_readable(&self) -> Result<(), Errno> {
        // SAFETY: F_GETFL on our own open fd.
        let flags = unsafe { libc::fcntl(self.fd.as_raw_fd(), libc::F_GETFL) };
        if flags >= 0 && flags & libc::O_NONBLOCK != 0 {
            return Err(libc::EAGAIN);
        }
        let mut p = libc::pollfd {
            fd: self.fd.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        if unsafe { libc::poll(&mut p, 1, -1) } < 0 && last_errno() != libc::EINTR {
            return Err(last_errno());
        }
        Ok(())
    }

    /// Takes out the queued events `gone` matches and hands them back (those of an object
    /// being destroyed, which need more than a drop).
    pub(super) fn take_matching(&self, gone: impl Fn(&T) -> bool) -> Vec<T> {
        let mut q = self.q.lock();
        let mut out = Vec::new();
        let mut keep = VecDeque::with_capacity(q.len());
        while let Some(v) = q.pop_front() {
            if gone(&v) {
                self.consume();
                out.push(v);
            } else {
                keep.push_back(v);
            }
        }
        *q = keep;
        out
    }

    /// Drops the queued events `gone` matches (those of an object being destroyed, which the
    /// kernel removes from the event file unread).
    pub(super) fn remove(&self, gone: impl Fn(&T) -> bool) {
        let mut q = self.q.lock();
        let before = q.len();
        q.retain(|v| !gone(v));
        for _ in q.len()..before {
            self.consume();
        }
    }
}

/// The events of one object that were read and acked: libibverbs' `comp_events_completed` and
/// `async_events_completed` against the kernel's `*_events_reported`.
#[derive(Default)]
pub(super) struct EventCounts {
    m: Mutex<Counts>,
    cv: Condvar,
}

#[derive(Default)]
struct Counts {
    comp_reported: u32,
    comp_acked: u32,
    async_reported: u32,
    async_acked: u32,
}

impl EventCounts {
    /// A completion event of the object was read.
    pub(super) fn comp_read(&self) {
        let mut c = self.m.lock();
        c.comp_reported = c.comp_reported.wrapping_add(1);
    }

    /// An async event of the object was read.
    pub(super) fn async_read(&self) {
        let mut c = self.m.lock();
        c.async_reported = c.async_reported.wrapping_add(1);
    }

    /// `ibv_ack_cq_events(cq, n)`.
    pub(super) fn ack_comp(&self, n: u32) {
        let mut c = self.m.lock();
        c.comp_acked = c.comp_acked.wrapping_add(n);
        self.cv.notify_all();
    }

    /// `ibv_ack_async_event` of one of the object's events.
    pub(super) fn ack_async(&self) {
        let mut c = self.m.lock();
        c.async_acked = c.async_acked.wrapping_add(1);
        self.cv.notify_all();
    }

    /// Whether every event read was acked.
    pub(super) fn balanced(&self) -> bool {
        let c = self.m.lock();
        c.comp_reported == c.comp_acked && c.async_reported == c.async_acked
    }

    /// Waits until every event read was acked, as libibverbs' destroy verbs do ("the CQ cannot
    /// be destroyed until all its events are acknowledged"): forever if they never are.
    pub(super) fn wait_balanced(&self) {
        let mut c = self.m.lock();
        while c.comp_reported != c.comp_acked || c.async_reported != c.async_acked {
            self.cv.wait(&mut c);
        }
    }
}

/// An async event waiting in a context's queue: `struct ibv_async_event`'s two fields, the
/// element as an address (or the port number).
#[derive(Clone, Copy)]
pub(super) struct AsyncItem {
    /// `enum ibv_event_type`, as the integer C has.
    pub(super) ty: u32,
    pub(super) element: usize,
}

/// Which kind of object an async event of type `ty` names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Element {
    Cq,
    Qp,
    Srq,
    /// A port number, the device, an object the device does not have (a WQ), or a type the
    /// device does not name.
    Other,
}

pub(super) fn element_of(ty: u32) -> Element {
    use crate::ffi::event_type::*;
    match ty {
        CQ_ERR => Element::Cq,
        QP_FATAL | QP_REQ_ERR | QP_ACCESS_ERR | COMM_EST | SQ_DRAINED | PATH_MIG | PATH_MIG_ERR
        | QP_LAST_WQE_REACHED => Element::Qp,
        SRQ_ERR | SRQ_LIMIT_REACHED => Element::Srq,
        _ => Element::Other,
    }
}
