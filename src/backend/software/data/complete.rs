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
    let usec = RNR_TIMER_USEC[usize::from(dest.attr.lock().min_rnr_timer & 31)]
        / u64::from(qp.ctx().config().timer_speedup.max(1));
    let mut q = qp.queues.lock();
    // A NAK is an answer: the transport retries start again from `retry_cnt`.
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
    let retry_at = now + Duration::from_micros(usec);
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
/// RTR, RTS or SQD: RESET, INIT, ERR). As rxe's completer: the request is sent again each time
/// the local ACK timeout ([`ack_timeout`]) expires, `retry_cnt` times (7: always), and the
/// expiry after the last completes it with RETRY_EXC_ERR (the QP then moves to ERR and flushes
/// the rest). A `timeout` of 0 is no timer: the request waits, and is sent again only by the
/// next post of `qp` (rxe0: not when `dest` becomes ready). Kicked before the timer expires
/// (the destination became ready, a receive was posted there), it is sent at once, which costs
/// no retry; one sent again that finds `dest` still silent waits for the next expiry.
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
    let left = match q.retry {
        Some(w) if now < w.retry_at => return Step::Wait(dest),
        Some(w) => w.left,
        None => retry_cnt & 7,
    };
    if q.retry.is_some() && left == 0 {
        q.retry = None;
        return Step::fail(IBV_WC_RETRY_EXC_ERR);
    }
    let left = match q.retry {
        None => left,
        Some(_) if left == 7 => 7,
        Some(_) => left - 1,
    };
    // A timeout beyond the clock's range is one that never expires.
    let Some(retry_at) = now.checked_add(period) else {
        q.retry = None;
        return Step::Wait(dest);
    };
    // The timer thread runs: the creation of this RC QP started it.
    let timer = rnr_timer().map_or(0, |t| t.arm(retry_at, qp.ibv.qp_base.qp_num));
    q.retry = Some(RetryWait {
        left,
        retry_at,
        timer,
    });
    Step::Wait(dest)
}
