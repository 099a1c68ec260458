//! Receive queues and completions: taking a receive, giving it back, each side's completion.

use super::*;

/// The next receive of `qp` (its SRQ's, or its own). Taking one from an SRQ may raise its
/// limit event.
pub(super) fn take_recv(qp: &SwQp) -> Option<RecvWqe> {
    match qp.srq() {
        Some(s) => {
            let (r, left) = {
                let mut rq = s.rq.lock();
                (rq.pop_front(), rq.len())
            };
            if r.is_some() {
                s.taken(left);
            }
            r
        }
        None => qp.queues.lock().rq.pop_front(),
    }
}

/// Puts back a receive taken for a message that was then dropped.
pub(super) fn give_back(qp: &SwQp, r: RecvWqe) {
    match qp.srq() {
        Some(s) => s.rq.lock().push_front(r),
        None => qp.queues.lock().rq.push_front(r),
    }
}

/// Writes a completion; false if the CQ was full (and not IGNORE_OVERRUN), which raised
/// IBV_EVENT_CQ_ERR.
fn push(cq: *mut sys::ibv_cq, cqe: &Cqe) -> bool {
    // SAFETY: a live QP's CQs are live. A full CQ overruns (or counts the loss), as the
    // injection hook shows; the completion is lost either way, as on rxe.
    !matches!(unsafe { cq::push(cq, cqe) }, cq::Pushed::Overrun)
}

/// The sender's completion of `w`: for a failure only wr_id, status and qp_num.
pub(super) fn send_completion(qp: &SwQp, w: &SendWqe, status: u32) {
    let mut e = Cqe {
        wr_id: w.wr_id,
        status,
        qp_num: qp.ibv.qp_base.qp_num,
        ..Cqe::default()
    };
    if status == IBV_WC_SUCCESS {
        e.opcode = match w.opcode {
            IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM => IBV_WC_RDMA_WRITE,
            IBV_WR_RDMA_READ => IBV_WC_RDMA_READ,
            IBV_WR_ATOMIC_CMP_AND_SWP => IBV_WC_COMP_SWAP,
            IBV_WR_ATOMIC_FETCH_AND_ADD => IBV_WC_FETCH_ADD,
            _ => IBV_WC_SEND,
        };
        e.byte_len = w.length as u32;
        if w.has_imm() {
            e.wc_flags = WC_WITH_IMM;
        }
    }
    // A requester's completion lost to a full CQ changes nothing else (rxe ignores it).
    let _ = push(qp.ibv.qp_base.send_cq, &e);
}

/// A failed (or flushed) receive of `qp`.
pub(super) fn recv_failure(qp: &SwQp, wr_id: u64, status: u32, solicited: bool) {
    let e = Cqe {
        wr_id,
        status,
        qp_num: qp.ibv.qp_base.qp_num,
        solicited,
        ..Cqe::default()
    };
    // A failed receive moves (or has moved) the QP to ERR anyway.
    let _ = push(qp.ibv.qp_base.recv_cq, &e);
}

/// A receive of `qp` that took `len` bytes of request `w`; false if its CQ was full.
pub(super) fn recv_success(
    qp: &SwQp,
    r: &RecvWqe,
    w: &SendWqe,
    opcode: u32,
    len: u32,
    src_qp: u32,
) -> bool {
    let mut e = Cqe {
        wr_id: r.wr_id,
        status: IBV_WC_SUCCESS,
        opcode,
        byte_len: len,
        qp_num: qp.ibv.qp_base.qp_num,
        src_qp,
        wc_flags: WC_GRH,
        solicited: w.solicited,
        ..Cqe::default()
    };
    if w.has_imm() {
        e.wc_flags |= WC_WITH_IMM;
        e.imm_or_inv = w.imm;
    }
    push(qp.ibv.qp_base.recv_cq, &e)
}

/// `qp`'s head request (RC) found no receive at `dest`: an RNR NAK, carrying `dest`'s
/// `min_rnr_timer`. As rxe's completer: with retries left the request is retried when the
/// timer fires (7: always), without, it completes with RNR_RETRY_EXC_ERR. A receive posted at
/// `dest` in the meantime retries it at once (rxe waits for the timer; only the time differs),
/// and such an early retry that finds no receive costs no retry.
#[cold]
#[inline(never)]
pub(super) fn rnr_nak<'g>(qp: &'g SwQp, dest: &'g SwQp) -> Step<'g> {
    let now = Instant::now();
    // Per-object locks one at a time: the attributes first, then the queues.
    let rnr_retry = qp.attr.lock().rnr_retry;
    let usec = RNR_TIMER_USEC[usize::from(dest.attr.lock().min_rnr_timer & 31)];
    let period = timer_period(Duration::from_micros(usec), qp.ctx().config().timer_speedup);
    let mut q = qp.queues.lock();
    // Waiting for its RNR timer, the request has no ACK timeout running (a simplification:
    // rxe's completer keeps its count of retransmissions until an ACK, and an RNR NAK is none).
    q.retry = None;
    q.no_timer = false;
    let left = match q.rnr {
        Some(w) if now < w.retry_at => return Step::Wait(dest.ibv.qp_base.qp_num),
        Some(w) => w.left,
        None => rnr_retry,
    };
    if left == 0 {
        q.rnr = None;
        return Step::fail(IBV_WC_RNR_RETRY_EXC_ERR);
    }
    let retry_at = now + period;
    // The timer thread runs: the creation of this RC QP started it. (Were it not running, the
    // request would wait for a receive at `dest` instead of the timer.)
    let timer = rnr_timer().map_or(0, |t| t.arm(retry_at, qp.ibv.qp_base.qp_num));
    q.rnr = Some(RnrWait {
        left: if left == 7 { 7 } else { left - 1 },
        retry_at,
        timer,
    });
    Step::Wait(dest.ibv.qp_base.qp_num)
}

/// `qp`'s head request (RC) got no answer from QP number `dest`: no such QP (destroyed, never
/// made: a peer that is gone), or one that drops the packet (not of the request's type, or not in
/// RTR, RTS or SQD: RESET, INIT, ERR). As rxe's requester and completer: the local ACK timeout
/// ([`ack_timeout`]) is armed, and when it expires the request is sent again, `retry_cnt` times
/// (7: always), or completes with RETRY_EXC_ERR ([`retransmission`]). A `timeout` of 0 is no
/// timer: the request is sent again only by the QP's next post.
#[cold]
#[inline(never)]
pub(super) fn no_answer<'g>(qp: &'g SwQp, dest: u32) -> Step<'g> {
    let now = Instant::now();
    let (timeout, retry_cnt) = {
        let a = qp.attr.lock();
        (a.timeout, a.retry_cnt)
    };
    let Some(period) = ack_timeout(timeout, qp.ctx().config().timer_speedup) else {
        qp.queues.lock().no_timer = true;
        return Step::Wait(dest);
    };
    let mut q = qp.queues.lock();
    let left = q.retry.map_or(retry_cnt & 7, |w| w.left);
    // A timeout beyond the clock's range is one that never expires.
    let Some(at) = now.checked_add(period) else {
        q.retry = Some(RetryWait { left, due: None });
        return Step::Wait(dest);
    };
    // The timer thread runs: the creation of this RC QP started it.
    let timer = rnr_timer().map_or(0, |t| t.arm(at, qp.ibv.qp_base.qp_num));
    q.retry = Some(RetryWait {
        left,
        due: Some((at, timer)),
    });
    Step::Wait(dest)
}

/// Whether `qp`'s head request (RC) may be sent now, as far as its ACK timeout goes.
pub(super) enum Retransmission {
    /// Its first transmission, or its timer expired with retries left (one is counted).
    Send,
    /// Its timer has not expired: rxe sends it again only then, so a destination that became
    /// ready meanwhile gets it at the expiry, not at once.
    NotYet,
    /// Its timer expired with no retry left: RETRY_EXC_ERR, even if the destination is ready
    /// now (rxe's completer fails it at the expiry; it sends nothing more).
    Exhausted,
}

/// [`Retransmission`] of `qp`'s head request now.
pub(super) fn retransmission(qp: &SwQp) -> Retransmission {
    let mut q = qp.queues.lock();
    let Some(w) = q.retry else {
        return Retransmission::Send;
    };
    match w.due {
        None => Retransmission::Send,
        Some((at, _)) if Instant::now() < at => Retransmission::NotYet,
        Some(_) if w.left == 0 => {
            q.retry = None;
            Retransmission::Exhausted
        }
        Some(_) => {
            q.retry = Some(RetryWait {
                left: if w.left == 7 { 7 } else { w.left - 1 },
                due: None,
            });
            Retransmission::Send
        }
    }
}
