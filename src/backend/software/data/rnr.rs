//! RNR retries and retransmissions: the timer thread that sends a request again when the
//! receiver's RNR timer fires or the local ACK timeout expires, and that delivers late ACKs.

use super::*;

/// The RNR timers of every software QP: one thread that sleeps until the earliest is due and
/// then retries that QP's head request under the fabric lock. Started by the creation of the
/// first RC QP ([`start_rnr_timer`]), where a thread that cannot start is an error to return;
/// an RNR NAK, inside a post, finds it running.
pub(super) struct RnrTimers {
    /// (when, QP number, arming): a min-heap by time.
    due: super::super::Due<u32>,
    wake: crate::sync::Condvar,
    next: AtomicU64,
}

static RNR_TIMERS: RnrTimers = RnrTimers {
    due: Mutex::new(std::collections::BinaryHeap::new()),
    wake: crate::sync::Condvar::new(),
    next: AtomicU64::new(1),
};

/// Whether the RNR timer thread runs; taken while it is started, so it starts once.
static RNR_TIMER_STARTED: Mutex<bool> = Mutex::new(false);

/// Starts the RNR timer thread unless it runs: called by the creation of an RC QP (the only
/// type that gets RNR NAKs), so that it runs before any can come. Fails with EAGAIN when the
/// thread cannot be made (as `pthread_create`; the QP is then not created, and a later
/// creation tries again).
pub(in crate::backend::software) fn start_rnr_timer() -> Result<(), c_int> {
    let mut started = RNR_TIMER_STARTED.lock();
    if !*started {
        std::thread::Builder::new()
            .name("typed-verbs-sw-rnr".into())
            .spawn(|| RNR_TIMERS.run())
            .map_err(|e| match e.raw_os_error() {
                Some(libc::ENOMEM) | None => libc::EAGAIN,
                Some(n) => n,
            })?;
        *started = true;
    }
    Ok(())
}

/// The RNR timers, if their thread runs (it does once an RC QP exists).
pub(super) fn rnr_timer() -> Option<&'static RnrTimers> {
    (*RNR_TIMER_STARTED.lock()).then_some(&RNR_TIMERS)
}

impl RnrTimers {
    /// Arms a timer for QP `qpn` at `at`; returns its number. Called under the fabric lock
    /// (the order is always the fabric lock, then `due`).
    pub(super) fn arm(&self, at: Instant, qpn: u32) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.due.lock().push(std::cmp::Reverse((at, qpn, n)));
        self.wake.notify_one();
        n
    }

    fn run(&self) -> ! {
        loop {
            let (qpn, n) = super::super::next_due(&self.due, &self.wake);
            // `due` is released: the fabric lock is taken alone.
            let g = lock();
            let Some(qp) = g.get(qpn) else { continue }; // destroyed since
            let acked = {
                let mut q = qp.queues.lock();
                if q.acking == Some(n) {
                    // The ACK of the head request (carried out, `ack_delay` ago). A flush or a
                    // reset since has taken the request and cleared `acking`.
                    q.acking = None;
                    q.sq.pop_front()
                } else {
                    None
                }
            };
            let was_acked = acked.is_some();
            if let Some(w) = acked {
                if w.signaled {
                    send_completion(qp, &w, IBV_WC_SUCCESS);
                }
            }
            // The next requests run (after an ACK), or the head is retried (an RNR timer).
            let current = was_acked || {
                let q = qp.queues.lock();
                q.rnr.is_some_and(|w| w.timer == n)
                    || q.retry.is_some_and(|w| w.due.is_some_and(|(_, t)| t == n))
            };
            if current {
                let mut run = Run::new(&g);
                run.kicks.push(qp);
                run.drain();
            }
            if was_acked && qp.state() == IBV_QPS_SQD && !qp.sq_in_progress() {
                // The drain rxe_qp_drain began ends with the ACK of the last request handed to
                // the device before it.
                qp.ctx().raise(
                    crate::ffi::event_type::SQ_DRAINED,
                    qp as *const SwQp as usize,
                );
            }
        }
    }
}
