//! The software device's data path: `ops.post_send`, `ops.post_recv`, `ops.post_srq_recv`, and
//! the delivery of messages between its QPs, which may be in any software context (of any
//! software device) of the process and be used from any thread.
//!
//! # Model
//!
//! Work is done synchronously, inside the call that makes it possible: a post, a modify, or a
//! receive that a waiting request needed; the exceptions are an RNR retry, which a timer
//! thread makes when the RNR timer fires, and a late ACK (below). There is no wire, so nothing
//! is lost, reordered or retransmitted, and PSNs are not checked. What rxe decides (checks, statuses, which side
//! completes what, which QP moves to ERR, the fields of each completion) follows rxe as Linux
//! 6.1 with rdma-core 44 shows it on rxe0; `tests/raw/data_raw.rs` runs the same assertions on both.
//!
//! * **Posting.** A send request is checked (SGE count, inline size, atomic length and
//!   alignment, a total length above the port's `max_msg_sz` of 2^31: EINVAL, `bad_wr` set)
//!   and queued; the send queue holds `cap.max_send_wr`
//!   requests not yet completed (ENOMEM beyond). Then the doorbell: below RTS it fails with
//!   EINVAL and the requests stay queued, to run at the next post in RTS (rxe's provider writes
//!   the request into its ring before the kernel refuses the doorbell, so `bad_wr` is NULL). A
//!   receive is refused in RESET and on a QP with an SRQ (EINVAL, `bad_wr` NULL), with ENOMEM
//!   when the ring is full and EINVAL for too many SGEs (`bad_wr` set).
//! * **Requests run in order**, each to its end before the next. An opcode the QP type lacks
//!   completes with LOC_QP_OP_ERR. The local SGEs are checked against the MR table (a key that
//!   names no region of the QP's PD: LOC_QP_OP_ERR; a range outside the region:
//!   LOC_PROT_ERR). A UD message longer than the port MTU is not sent, and completes
//!   successfully (C10-93.1.1). `IBV_SEND_SOLICITED` sets the message's SE bit, which the
//!   receive completion carries to its CQ (a CQ armed for solicited completions fires on it,
//!   see `cq`); `IBV_SEND_FENCE` changes nothing (requests are never reordered).
//! * **Delivery.** RC and UC go to the QP `dest_qp_num` names, UD to the request's
//!   `remote_qpn` if its qkey matches; the destination must be of the same type and in RTR or
//!   RTS. Otherwise UC and UD messages are dropped (the sender completes successfully) and an
//!   RC request gets no answer: it is sent again each time the local ACK timeout (4.096 µs ×
//!   2^`timeout`, divided by `SwConfig::timer_speedup`) expires, `retry_cnt` times (7: without
//!   limit, as rxe counts it), and the expiry after the last completes it with RETRY_EXC_ERR
//!   (the QP moves to ERR and flushes the rest, as for any error). A destination that becomes
//!   ready in the meantime takes the request at the next expiry, as on rxe (with no retry
//!   left, that expiry fails it); timers are armed for at least 1 ms, as rxe's for at least a
//!   jiffy. `timeout` 0 is no timer: the request waits, and only the QP's next post
//!   sends it again (rxe0: the next request reaches the peer out of sequence, and the NAK makes
//!   rxe send both), not the destination becoming ready. A destroyed QP, one of a closed
//!   context, one in RESET, INIT or ERR, one forced from ERR to RTS with `IBV_QP_CUR_STATE`
//!   (whose responder rxe readies only in a move to RTR): all are silent alike, as on rxe.
//! * **Receives.** SEND and RDMA WRITE with immediate consume a receive (the QP's or its
//!   SRQ's). None posted: UC and UD drop the message; RC gets an RNR NAK carrying the
//!   responder's `min_rnr_timer`. As rxe counts them, `rnr_retry` n allows n retries, each when
//!   that timer fires (7: without limit); the NAK after the last completes the request with
//!   RNR_RETRY_EXC_ERR (n = 0: the first). A receive posted in the meantime retries at once.
//!   Later requests of that QP wait behind it. Data is placed as rxe places the packets of a
//!   message (cut at the requester's path MTU) one by one: an RDMA write with immediate that
//!   finds no receive has written every packet but its last, and a receive too small for a
//!   message has taken the packets that fit before it failed.
//! * **Responder checks.** The responder QP's access flags, then its MR table for RDMA and
//!   atomics (key, PD, access, range). For RC an access-flag failure is REM_INV_REQ_ERR and a
//!   key failure REM_ACCESS_ERR at the sender, and the responder moves to ERR; for UC the
//!   message is dropped. A receive buffer that is too small or not writable is a malformed
//!   receive: the receive completes with LOC_QP_OP_ERR and the responder moves to ERR (every
//!   QP type); an RC sender gets REM_OP_ERR. RDMA read data and atomic results land in the
//!   requester's SGEs, which need LOCAL_WRITE (else LOC_PROT_ERR; the atomic was done); a
//!   request posted inline has no SGEs for them (LOC_PROT_ERR too, as rxe).
//! * **Completions** carry what rxe's do_complete writes: for a success the opcode, byte_len
//!   (the request's total length; for a receive the bytes placed, a UD GRH included), qp_num,
//!   and `IBV_WC_WITH_IMM` on both sides of a *_WITH_IMM request (the imm_data only on the
//!   receiver's, as posted, in network order); a receive also has `IBV_WC_GRH` and, for UD,
//!   src_qp. A failed completion has only wr_id, status and qp_num.
//! * **Full CQs.** A completion that finds its CQ full is lost and raises IBV_EVENT_CQ_ERR
//!   (each time), as rxe_cq_post does. A lost requester completion changes nothing else. A lost
//!   receive completion is class G: the responder moves to ERR (its receives are flushed into
//!   the same full CQ), an RC request is never acknowledged and waits (UC and UD complete).
//!   rxe raises no QP async event for any error (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR are never
//!   seen on rxe0), and neither does the software device. A QP moved into SQD with no request
//!   in progress raises IBV_EVENT_SQ_DRAINED, as rxe's requester does.
//! * **Late ACKs.** With the device's `ack_delay` above zero (`SwConfig`), an RC request that
//!   succeeds is carried out at once (the data is placed, the responder's receive completes)
//!   but stays at the head of its send queue, holding its slot, until the timer thread
//!   acknowledges it `ack_delay` later and writes its completion (if signaled); the requests
//!   behind it then run. So, as on rxe, the peer's answer can complete before the send it
//!   answers. A flush (ERR) or a reset before the ACK takes the request as it takes any other
//!   (WR_FLUSH_ERR, or nothing); a destroyed QP's ACK finds no QP. A QP moved to SQD while a
//!   request waits for its ACK still runs the requests posted before the move, one by one as
//!   the ACKs come, and drains (SQ_DRAINED) with the last one's ACK; those posted in SQD wait
//!   for RTS and the next post, as always. One whose head request waits (an RNR timer, an ACK
//!   timeout, a peer) drains when the wait ends: as rxe's requester rewinds the request and,
//!   draining, sends nothing new, it is not sent (SQ_DRAINED, `sq_draining` 0) until the next
//!   post in RTS (rxe0). A delay beyond the clock's range is an ACK that never
//!   comes. Failures, UC and UD complete at once.
//! * **Errors.** A failed send completion moves its QP to ERR. A QP in ERR flushes every
//!   request it holds and every one posted later (WR_FLUSH_ERR, signaled or not); its posted
//!   receives are flushed when it enters ERR, and one posted while in ERR stays posted without a
//!   completion, as on rxe. RESET drops both queues without completions.
//! * **RAW_PACKET** QPs (which rxe lacks) have no Ethernet to use: a send fails with EOPNOTSUPP
//!   (`bad_wr` the first request); receives can be posted and never complete but by a flush.
//!
//! # Locking
//!
//! One process-wide lock, the fabric, covers all data movement, the registry of live QPs,
//! modify_qp, the destruction of QPs and the deregistration of MRs. A QP found in the registry
//! is therefore live (and so are its CQs and SRQ), and a region found in an MR table stays
//! registered, for as long as the lock is held. Per-object mutexes guard each queue; they are
//! taken one at a time, always inside the fabric lock, and never held across a call that may
//! take another.

/// Receive queues and completions: taking a receive, giving it back, each side's completion.
mod complete;
/// A work request's data and registered memory: the checks rxe makes, gather, scatter, landing.
mod memory;
/// The extended QP's batches (`ibv_qp_ex`, ibv_wr_post(3)), posted through the legacy path.
mod qp_ex;
/// RNR retries: the timer thread that delivers again when a receiver's RNR timer fires.
mod rnr;
/// Executing a send work request at its destination: the steps of one delivery.
mod run;

use complete::*;
use memory::*;
pub(in crate::backend::software) use qp_ex::QpEx;
pub(in crate::backend::software) use rnr::start_rnr_timer;
/// The extended QP's operations, which `create_qp_ex` installs.
pub(in crate::backend::software) mod qp_ex_ops {
    pub(in crate::backend::software) use super::qp_ex::{
        wr_abort, wr_atomic_cmp_swp, wr_atomic_fetch_add, wr_complete, wr_rdma_read, wr_rdma_write,
        wr_rdma_write_imm, wr_send, wr_send_imm, wr_set_inline_data, wr_set_inline_data_list,
        wr_set_sge, wr_set_sge_list, wr_set_ud_addr, wr_start,
    };
}
use rnr::*;
use run::*;

use super::cq::{self, Cqe};
use super::objects::{SwAh, SwQp, SwSrq};
use super::sw_context;
use crate::ffi::{c_entry, sys};
use crate::sync::{Condvar, Mutex, MutexGuard};
use std::collections::{HashMap, VecDeque};
use std::os::raw::c_int;
use std::ptr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};
use sys::ibv_qp_state::*;
use sys::ibv_qp_type::*;
use sys::ibv_wc_opcode::*;
use sys::ibv_wc_status::*;
use sys::ibv_wr_opcode::*;

// enum ibv_send_flags
const SEND_SIGNALED: u32 = 1 << 1;
const SEND_SOLICITED: u32 = 1 << 2;
const SEND_INLINE: u32 = 1 << 3;
// enum ibv_wc_flags
const WC_GRH: u32 = 1 << 0;
const WC_WITH_IMM: u32 = 1 << 1;
// enum ibv_access_flags
const ACCESS_LOCAL_WRITE: i32 = 1 << 0;
const ACCESS_REMOTE_WRITE: i32 = 1 << 1;
const ACCESS_REMOTE_READ: i32 = 1 << 2;
const ACCESS_REMOTE_ATOMIC: i32 = 1 << 3;

/// The largest UD payload: the port's active MTU (`enum ibv_mtu`: 1 is 256 bytes).
const UD_MTU: usize = 128 << super::ACTIVE_MTU;
/// The GRH in front of every UD receive.
const GRH_LEN: usize = 40;

/// The port's `max_msg_sz`: the longest message a request may carry.
const MAX_MSG_SZ: u64 = 1 << 31;

/// Copies the `n` SGEs at `list` (a posted request's), failing with ENOMEM instead of aborting
/// when they cannot be allocated: the size comes from the caller.
///
/// # Safety
/// `list` holds `n` readable entries (or `n` is 0).
unsafe fn copy_sges(list: *const sys::ibv_sge, n: usize) -> Result<Vec<sys::ibv_sge>, c_int> {
    let mut v = Vec::new();
    if n == 0 {
        return Ok(v);
    }
    v.try_reserve_exact(n).map_err(|_| libc::ENOMEM)?;
    // SAFETY: the caller's contract.
    v.extend_from_slice(unsafe { std::slice::from_raw_parts(list, n) });
    Ok(v)
}

/// A posted receive.
pub(super) struct RecvWqe {
    wr_id: u64,
    sges: Vec<sys::ibv_sge>,
}

/// A posted send request, with what it needs copied out of the `ibv_send_wr` (inline data,
/// the AH's attributes), so nothing the caller owns is read after the post returns.
pub(super) struct SendWqe {
    wr_id: u64,
    opcode: u32,
    signaled: bool,
    /// `IBV_SEND_SOLICITED`: the message's SE bit, which makes its receive completion wake a
    /// CQ armed for solicited completions.
    solicited: bool,
    /// Immediate data, network byte order, as posted.
    imm: u32,
    sges: Vec<sys::ibv_sge>,
    inline: Option<Vec<u8>>,
    /// The total length of the SGEs (or of the inline data).
    length: u64,
    remote_addr: u64,
    rkey: u32,
    compare_add: u64,
    swap: u64,
    remote_qpn: u32,
    remote_qkey: u32,
    ah: Option<sys::ibv_ah_attr>,
    /// Queued behind a request awaiting its ACK when the QP moved to SQD: handed to the device
    /// before the drain began (rxe's requester has it in processing), so it still runs in SQD.
    before_sqd: bool,
}

/// A QP's queues.
#[derive(Default)]
pub(super) struct Queues {
    /// Send requests posted and not completed, in order.
    sq: VecDeque<SendWqe>,
    /// The QP's own receive queue (unused with an SRQ).
    rq: VecDeque<RecvWqe>,
    /// The QP number the request at the head of `sq` waits for: an RNR NAK from it, or it
    /// was not ready.
    blocked_on: Option<u32>,
    /// The head request's RNR retries, from its first RNR NAK until it completes.
    rnr: Option<RnrWait>,
    /// The head request was carried out and waits for its acknowledgement (`ack_delay`): the
    /// arming of the timer that completes it.
    acking: Option<u64>,
    /// The head request (RC) got no answer: its destination was not ready, and it is sent again
    /// when the local ACK timeout expires, as rxe's retransmit timer does.
    retry: Option<RetryWait>,
    /// The head request (RC) got no answer and its QP's `timeout` is 0: rxe has no retransmit
    /// timer then, and sends it again only when its requester runs for another reason (a post:
    /// the next request reaches the peer out of sequence, and the NAK rewinds both), not when
    /// the peer becomes ready (rxe0). So it is not kicked by its destination.
    no_timer: bool,
}

impl Queues {
    /// The head request no longer waits (it completed, or the queue was emptied).
    fn unblock(&mut self) {
        self.blocked_on = None;
        self.rnr = None;
        self.acking = None;
        self.retry = None;
        self.no_timer = false;
    }
}

/// An RC request that got no answer, as rxe's completer counts its retransmissions
/// (`comp.retry_cnt`, set from the QP's `retry_cnt` and reset when a request is acknowledged).
#[derive(Clone, Copy)]
pub(super) struct RetryWait {
    /// Retransmissions left: 7 means "retry forever", as rxe_comp.c counts it (it decrements
    /// `retry_cnt` only when it is not 7; the IB specification has no such value, mlx5 gives
    /// seven retries).
    left: u8,
    /// When the local ACK timeout expires and the request may be sent again, and which arming
    /// of the timer that is (a timer that fires for an older one is ignored); `None` once the
    /// expiry was taken and the request is being sent again.
    due: Option<(Instant, u64)>,
}

/// The shortest timer period the device arms: rxe arms its timers in jiffies, at least one
/// (`qp_timeout_jiffies = j ? j : 1`; a millisecond at HZ=1000, four at 250), so a timer of a
/// few microseconds never spins; and no speedup takes a period below `MIN_SPED_UP`.
const MIN_PERIOD: Duration = Duration::from_millis(1);
/// The shortest period after [`SwConfig::timer_speedup`](super::SwConfig::timer_speedup).
const MIN_SPED_UP: Duration = Duration::from_micros(50);

/// A transport timer's period on this device: `real` (at least [`MIN_PERIOD`]) divided by the
/// device's [`SwConfig::timer_speedup`](super::SwConfig::timer_speedup), at least
/// [`MIN_SPED_UP`].
pub(super) fn timer_period(real: Duration, speedup: u32) -> Duration {
    (real.max(MIN_PERIOD) / speedup.max(1)).max(MIN_SPED_UP)
}

/// The local ACK timeout of a QP's `timeout` attribute: 4.096 µs × 2^timeout (ibv_modify_qp(3);
/// rxe_qp.c: `nsecs_to_jiffies(4096ULL << timeout)`), as [`timer_period`] arms it; `None` for 0,
/// no timer.
pub(super) fn ack_timeout(timeout: u8, speedup: u32) -> Option<Duration> {
    (timeout != 0).then(|| timer_period(Duration::from_nanos(4096u64 << (timeout & 31)), speedup))
}

/// An RC request that got an RNR NAK, as rxe's completer counts it (`comp.rnr_retry`, set from
/// the QP's `rnr_retry` and reset when a request is acknowledged).
#[derive(Clone, Copy)]
pub(super) struct RnrWait {
    /// Retries left: 7 means "retry forever", as in the verbs spec.
    left: u8,
    /// When the RNR timer fires and the request is retried.
    retry_at: Instant,
    /// Which arming of the timer this is (a timer that fires for an older one is ignored).
    timer: u64,
}

/// The RNR NAK timer values of the IB spec (the responder's `min_rnr_timer`, 5 bits), in
/// microseconds: 0 is 655.36 ms, 1 is 0.01 ms, ..., 31 is 491.52 ms.
const RNR_TIMER_USEC: [u64; 32] = [
    655_360, 10, 20, 30, 40, 60, 80, 120, 160, 240, 320, 480, 640, 960, 1_280, 1_920, 2_560, 3_840,
    5_120, 7_680, 10_240, 15_360, 20_480, 30_720, 40_960, 61_440, 81_920, 122_880, 163_840,
    245_760, 327_680, 491_520,
];

/// A registered QP. Dereferenced only while the fabric lock is held and the QP is registered
/// ([`Fabric::get`], `Run::kick_waiting_for`).
#[derive(Clone, Copy)]
struct QpPtr(*const SwQp);
// SAFETY: a plain address; it is dereferenced only under the fabric lock, while registered.
unsafe impl Send for QpPtr {}

/// The registry of live QPs by number; its lock is the data-path lock.
pub(super) struct Fabric {
    qps: HashMap<u32, QpPtr>,
}

/// Takes the fabric lock.
pub(super) fn lock() -> MutexGuard<'static, Fabric> {
    static FABRIC: OnceLock<Mutex<Fabric>> = OnceLock::new();
    FABRIC
        .get_or_init(|| {
            Mutex::new(Fabric {
                qps: HashMap::new(),
            })
        })
        .lock()
}

impl Fabric {
    /// Registers `qp` (just created) under its number.
    pub(super) fn register(&mut self, qp: *const SwQp) {
        // SAFETY: the caller passes a live QP.
        let n = unsafe { (*qp).ibv.qp_base.qp_num };
        self.qps.insert(n, QpPtr(qp));
    }

    /// Removes QP number `n`, before it is freed.
    pub(super) fn unregister(&mut self, n: u32) {
        self.qps.remove(&n);
    }

    /// The live QP numbered `n`.
    fn get(&self, n: u32) -> Option<&SwQp> {
        // SAFETY: a registered QP stays live until `unregister`, which needs `&mut self`, so not
        // while the returned borrow of `self` lasts.
        self.qps.get(&n).map(|r| unsafe { &*r.0 })
    }
}

impl SwQp {
    /// Whether the request at the head of the send queue is in progress (it waits for its
    /// destination, an RNR retry or its ACK): rxe's requester has a request it cannot drain
    /// yet, so a QP moved to SQD stays draining (`sq_draining`).
    pub(super) fn sq_in_progress(&self) -> bool {
        let q = self.queues.lock();
        q.blocked_on.is_some() || q.acking.is_some()
    }
    fn state(&self) -> u32 {
        self.attr.lock().qp_state
    }
    fn qpt(&self) -> u32 {
        self.ibv.qp_base.qp_type
    }
    fn ctx(&self) -> &super::SwContext {
        // SAFETY: a live QP's context is live.
        unsafe { sw_context(self.ibv.qp_base.context) }
    }
    fn srq(&self) -> Option<&SwSrq> {
        // SAFETY: a live QP's SRQ is live (its usecnt keeps it).
        (!self.ibv.qp_base.srq.is_null())
            .then(|| unsafe { &*(self.ibv.qp_base.srq as *const SwSrq) })
    }
}

/// Serialises the device's atomics (fetch-and-add, compare-and-swap) among themselves, which is
/// all IBV_ATOMIC_HCA promises: each one's read-modify-write of its 8 bytes is indivisible with
/// respect to the others, on any software context. (Data movement already runs under the
/// fabric lock; this lock states the atomics' own guarantee, so it holds whatever the fabric
/// lock's scope becomes.)
static DEVICE_ATOMICS: Mutex<()> = Mutex::new(());

/// Moves `qp` to ERR (after an error completion) and flushes it.
fn to_error(qp: &SwQp) {
    // The kernel's state; libibverbs' cached `qp->state` is not updated, as with rxe.
    qp.attr.lock().qp_state = IBV_QPS_ERR;
    flush(qp);
}

/// Completes everything `qp` (in ERR) holds with WR_FLUSH_ERR: its receives, then its sends.
fn flush(qp: &SwQp) {
    let (rq, sq) = {
        let mut q = qp.queues.lock();
        q.unblock();
        (std::mem::take(&mut q.rq), std::mem::take(&mut q.sq))
    };
    for r in rq {
        // rxe completes a flushed receive as solicited (there is no packet to say otherwise).
        recv_failure(qp, r.wr_id, IBV_WC_WR_FLUSH_ERR, true);
    }
    for w in sq {
        send_completion(qp, &w, IBV_WC_WR_FLUSH_ERR);
    }
}

/// What `modify_qp` does on the data path after a successful transition from `cur` to `next`,
/// under the fabric lock it holds.
pub(super) fn after_modify(g: &Fabric, qp: &SwQp, cur: u32, next: u32) {
    match next {
        IBV_QPS_ERR => flush(qp),
        IBV_QPS_RESET => {
            let mut q = qp.queues.lock();
            q.sq.clear();
            q.rq.clear();
            q.unblock();
        }
        IBV_QPS_SQD if cur != next => {
            let in_progress = {
                let mut q = qp.queues.lock();
                if q.acking.is_some() {
                    // Late ACKs: the requests queued behind the one awaiting its ACK were posted
                    // in RTS, so rxe's requester would have them in processing too; they still
                    // run, one by one, and the drain ends with the last one's ACK.
                    for w in q.sq.iter_mut() {
                        w.before_sqd = true;
                    }
                }
                q.blocked_on.is_some() || q.acking.is_some()
            };
            if !in_progress {
                // rxe_qp_drain runs the requester, which finds no request in progress and
                // reports the send queue drained (IB_EVENT_SQ_DRAINED, whatever
                // en_sqd_async_notify says). A request in progress keeps it draining
                // (`sq_draining`) and raises none here.
                qp.ctx().raise(
                    crate::ffi::event_type::SQ_DRAINED,
                    qp as *const SwQp as usize,
                );
            }
        }
        IBV_QPS_RTR | IBV_QPS_RTS if cur != next => {
            // Requests that waited for this QP to be ready are retried.
            let n = qp.ibv.qp_base.qp_num;
            let mut run = Run::new(g);
            run.kick_waiting_for(|d| d.ibv.qp_base.qp_num == n);
            run.drain();
        }
        _ => {}
    }
}

c_entry! {
/// `ibv_context.ops.post_send`.
pub(super) fn post_send(
    ibqp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_send_wr,
    bad: *mut *mut sys::ibv_send_wr,
) -> c_int = on_panic(libc::EIO) {
    // SAFETY: libibverbs' contract: `bad` is valid for writes.
    unsafe { bad.write(ptr::null_mut()) };
    if wr.is_null() {
        return libc::EINVAL;
    }
    // SAFETY: libibverbs' contract: a live QP of this provider. Only the two fields that never
    // change after creation are read.
    let (ex, qpx) = unsafe {
        let sw = ibqp as *const SwQp;
        (ptr::addr_of!((*sw).vqp_comp_mask).read() & super::objects::VERBS_QP_EX != 0, &(*sw).qpx)
    };
    if ex {
        // Not inside another thread's extended batch (rxe's sq.lock), nor the caller's own.
        if let Err(e) = qpx.enter_legacy() {
            // SAFETY: `bad` is valid for writes.
            unsafe { bad.write(wr) };
            return e;
        }
    }
    let g = lock();
    // SAFETY: libibverbs' contract: a live QP of this provider. Taken under the fabric lock,
    // under which modify_qp writes `ibv.state`: nothing writes the QP while this borrow lives.
    let qp = unsafe { &*(ibqp as *const SwQp) };
    if qp.qpt() == IBV_QPT_RAW_PACKET {
        // There is no Ethernet to send a frame on.
        // SAFETY: `bad` is valid for writes.
        unsafe { bad.write(wr) };
        return libc::EOPNOTSUPP;
    }
    let mut rc = 0;
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: the caller's list of valid requests.
        let w = unsafe { &*cur };
        // SAFETY: as above; the SGEs, inline data and AH it names are valid.
        let r = unsafe { SendWqe::new(qp, w) }.and_then(|wqe| {
            let mut q = qp.queues.lock();
            if q.sq.len() >= qp.cap.max_send_wr as usize {
                return Err(libc::ENOMEM);
            }
            q.sq.try_reserve(1).map_err(|_| libc::ENOMEM)?;
            q.sq.push_back(wqe);
            Ok(())
        });
        if let Err(e) = r {
            // SAFETY: `bad` is valid for writes.
            unsafe { bad.write(cur) };
            rc = e;
            break;
        }
        cur = w.next;
    }
    doorbell(&g, qp).err().unwrap_or(rc)
}
}

/// The doorbell: below RTS the kernel refuses it (EINVAL; `bad_wr` stays as the provider left
/// it) and the requests stay queued; otherwise the send queue runs.
fn doorbell(g: &Fabric, qp: &SwQp) -> Result<(), c_int> {
    if qp.state() < IBV_QPS_RTS {
        return Err(libc::EINVAL);
    }
    let mut run = Run::new(g);
    run.run_sq(qp);
    run.drain();
    Ok(())
}

/// Queues the requests `wrs` (their `next` unused) all or none, as one extended QP's batch:
/// each checked as `post_send` checks it (EINVAL), ENOSPC when the send queue has no room for
/// all of them, EOPNOTSUPP on a RAW_PACKET QP; then the doorbell.
///
/// # Safety
/// `qp` is a live software QP; each request is valid as for `post_send`.
unsafe fn post_wrs(qp: *const SwQp, wrs: &[sys::ibv_send_wr]) -> c_int {
    let g = lock();
    // SAFETY: the caller's contract; as in `post_send`.
    let qp = unsafe { &*qp };
    if qp.qpt() == IBV_QPT_RAW_PACKET {
        return libc::EOPNOTSUPP;
    }
    let mut wqes = Vec::new();
    if wqes.try_reserve_exact(wrs.len()).is_err() {
        return libc::ENOMEM;
    }
    for w in wrs {
        // SAFETY: the caller's contract.
        match unsafe { SendWqe::new(qp, w) } {
            Ok(wqe) => wqes.push(wqe),
            Err(e) => return e,
        }
    }
    {
        let mut q = qp.queues.lock();
        if q.sq.len() + wqes.len() > qp.cap.max_send_wr as usize {
            return libc::ENOSPC;
        }
        if q.sq.try_reserve(wqes.len()).is_err() {
            return libc::ENOMEM;
        }
        q.sq.extend(wqes);
    }
    doorbell(&g, qp).err().unwrap_or(0)
}

/// Checks and queues a list of receives into `rq` (capacity `max_wr`, `max_sge` SGEs each), as
/// rxe's post_one_recv: ENOMEM when full, EINVAL for too many SGEs.
///
/// # Safety
/// `wr` is a valid list of receive requests.
unsafe fn queue_recvs(
    q: &mut VecDeque<RecvWqe>,
    max_wr: u32,
    max_sge: u32,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int {
    let mut cur = wr;
    while !cur.is_null() {
        // SAFETY: the caller's list of valid requests.
        let w = unsafe { &*cur };
        let rc = if q.len() >= max_wr as usize {
            libc::ENOMEM
        } else if w.num_sge < 0 || w.num_sge as u32 > max_sge {
            libc::EINVAL
        } else {
            0
        };
        if rc != 0 {
            // SAFETY: `bad` is valid for writes (the caller's contract).
            unsafe { bad.write(cur) };
            return rc;
        }
        // SAFETY: `sg_list` holds `num_sge` entries.
        let sges = unsafe { copy_sges(w.sg_list, w.num_sge as usize) };
        let Ok(sges) = sges.and_then(|v| q.try_reserve(1).map(|()| v).map_err(|_| libc::ENOMEM))
        else {
            // SAFETY: `bad` is valid for writes (the caller's contract).
            unsafe { bad.write(cur) };
            return libc::ENOMEM;
        };
        q.push_back(RecvWqe {
            wr_id: w.wr_id,
            sges,
        });
        cur = w.next;
    }
    0
}

c_entry! {
/// `ibv_context.ops.post_recv`.
pub(super) fn post_recv(
    ibqp: *mut sys::ibv_qp,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int = on_panic(libc::EIO) {
    // SAFETY: libibverbs' contract: `bad` is valid for writes.
    unsafe { bad.write(ptr::null_mut()) };
    let g = lock();
    // SAFETY: as in `post_send`.
    let qp = unsafe { &*(ibqp as *const SwQp) };
    // As rxe: no receive queue of its own with an SRQ; none can be posted in RESET (C10-97.2.1).
    if wr.is_null() || qp.srq().is_some() || qp.state() == IBV_QPS_RESET {
        return libc::EINVAL;
    }
    let (max_wr, max_sge) = (qp.cap.max_recv_wr, qp.cap.max_recv_sge);
    // SAFETY: the caller's list; `bad` valid for writes.
    let rc = unsafe { queue_recvs(&mut qp.queues.lock().rq, max_wr, max_sge, wr, bad) };
    let n = qp.ibv.qp_base.qp_num;
    let mut run = Run::new(&g);
    run.kick_waiting_for(|d| d.ibv.qp_base.qp_num == n);
    run.drain();
    rc
}
}

c_entry! {
/// `ibv_context.ops.post_srq_recv`.
pub(super) fn post_srq_recv(
    ibsrq: *mut sys::ibv_srq,
    wr: *mut sys::ibv_recv_wr,
    bad: *mut *mut sys::ibv_recv_wr,
) -> c_int = on_panic(libc::EIO) {
    // SAFETY: libibverbs' contract: a live SRQ of this provider.
    let srq = unsafe { &*(ibsrq as *const SwSrq) };
    let g = lock();
    let (max_wr, max_sge) = {
        let a = srq.attr.lock();
        (a.max_wr, a.max_sge)
    };
    // SAFETY: the caller's list; `bad` valid for writes.
    let rc = unsafe { queue_recvs(&mut srq.rq.lock(), max_wr, max_sge, wr, bad) };
    let mut run = Run::new(&g);
    run.kick_waiting_for(|d| d.ibv.qp_base.srq == ibsrq);
    run.drain();
    rc
}
}
