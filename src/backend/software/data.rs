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
//! 6.1 with rdma-core 44 shows it on rxe0; `tests/data_raw.rs` runs the same assertions on both.
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
//!   RC request waits, and is retried when the destination enters RTR or RTS: rxe
//!   retransmits it, and on rxe0 no error comes within seconds. The transport retry count and
//!   timeout are not modelled.
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
//!   for RTS and the next post, as always. A delay beyond the clock's range is an ACK that never
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

use super::cq::{self, Cqe};
use super::objects::{SwAh, SwQp, SwSrq};
use super::sw_context;
use crate::ffi::sync::{Mutex, MutexGuard};
use crate::ffi::{c_entry, sys};
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
}

impl Queues {
    /// The head request no longer waits (it completed, or the queue was emptied).
    fn unblock(&mut self) {
        self.blocked_on = None;
        self.rnr = None;
        self.acking = None;
    }
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
struct QpRef(*const SwQp);
// SAFETY: a plain address; it is dereferenced only under the fabric lock, while registered.
unsafe impl Send for QpRef {}

/// The registry of live QPs by number; its lock is the data-path lock.
pub(super) struct Fabric {
    qps: HashMap<u32, QpRef>,
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
        let n = unsafe { (*qp).ibv.qp_num };
        self.qps.insert(n, QpRef(qp));
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
        self.ibv.qp_type
    }
    fn ctx(&self) -> &super::SwContext {
        // SAFETY: a live QP's context is live.
        unsafe { sw_context(self.ibv.context) }
    }
    fn srq(&self) -> Option<&SwSrq> {
        // SAFETY: a live QP's SRQ is live (its usecnt keeps it).
        (!self.ibv.srq.is_null()).then(|| unsafe { &*(self.ibv.srq as *const SwSrq) })
    }
}

/// Serialises the device's atomics (fetch-and-add, compare-and-swap) among themselves, which is
/// all IBV_ATOMIC_HCA promises: each one's read-modify-write of its 8 bytes is indivisible with
/// respect to the others, on any software context. (Data movement already runs under the
/// fabric lock; this lock states the atomics' own guarantee, so it holds whatever the fabric
/// lock's scope becomes.)
static DEVICE_ATOMICS: Mutex<()> = Mutex::new(());

/// Why a region check failed (rxe's copy_data: a key lookup fails with EINVAL, a range with
/// EFAULT; the caller turns them into statuses).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum MrFault {
    /// No region with that key in the PD, or without the access asked for.
    Key,
    /// The range is not inside the region.
    Range,
    /// The device could not allocate what the request needs (its length is bounded by the
    /// port's max_msg_sz, but memory may still run out).
    NoMem,
}

/// Checks `[addr, addr + len)` against the region `key` of `ctx` for `pd` and `access`; gives
/// the address in memory that `addr` names in the region.
fn check_mr(
    ctx: &super::SwContext,
    key: u32,
    pd: *mut sys::ibv_pd,
    access: i32,
    addr: u64,
    len: u64,
) -> Result<*mut u8, MrFault> {
    let mrs = ctx.mrs.read();
    let m = mrs.get(&key).ok_or(MrFault::Key)?;
    if m.pd != pd as usize || m.access & access != access {
        return Err(MrFault::Key);
    }
    // Work requests address the region as [iova, iova + len) (reg_mr checked that it does not
    // wrap); rxe's mr_check_range, then lookup_iova's `iova - mr->iova` offset into its pages.
    let (start, end) = (m.iova, m.iova + m.len as u64);
    if addr < start || addr.checked_add(len).is_none_or(|e| e > end) {
        return Err(MrFault::Range);
    }
    Ok((m.addr + (addr - start) as usize) as *mut u8)
}

/// Copies the bytes of `sges` (regions of `qp`'s PD) out.
fn gather(qp: &SwQp, sges: &[sys::ibv_sge]) -> Result<Vec<u8>, MrFault> {
    let mut spans = Vec::with_capacity(sges.len());
    for s in sges.iter().filter(|s| s.length > 0) {
        let p = check_mr(qp.ctx(), s.lkey, qp.ibv.pd, 0, s.addr, s.length.into())?;
        spans.push((p, s.length as usize));
    }
    let mut out = Vec::new();
    out.try_reserve_exact(spans.iter().map(|s| s.1).sum())
        .map_err(|_| MrFault::NoMem)?;
    for (p, n) in spans {
        read_registered(p, n, &mut out);
    }
    Ok(out)
}

/// Writes `data` into `sges` (regions of `qp`'s PD with LOCAL_WRITE), in order, as rxe's
/// copy_data: fails, writing nothing, if the SGEs are too small for `data`; else writes SGE by
/// SGE and fails at the first whose region check fails, the SGEs before it written.
fn scatter(qp: &SwQp, sges: &[sys::ibv_sge], data: &[u8]) -> Result<(), MrFault> {
    let room: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
    if data.len() as u64 > room {
        return Err(MrFault::Range);
    }
    let mut off = 0;
    for s in sges {
        if off == data.len() {
            break;
        }
        let n = (data.len() - off).min(s.length as usize);
        if n == 0 {
            continue;
        }
        let p = check_mr(
            qp.ctx(),
            s.lkey,
            qp.ibv.pd,
            ACCESS_LOCAL_WRITE,
            s.addr,
            n as u64,
        )?;
        // Inside a registered region with LOCAL_WRITE (checked), registered while the fabric
        // lock is held.
        write_registered(p, &data[off..off + n]);
        off += n;
    }
    Ok(())
}

/// The payload bytes of one packet of an RC or UC message from `qp`: its path MTU (rxe cuts
/// messages at the requester's `path_mtu`). `usize::MAX` (one packet) for a path_mtu that
/// names no size, as UD has none.
fn packet_bytes(qp: &SwQp) -> usize {
    match qp.attr.lock().path_mtu {
        m @ sys::ibv_mtu::IBV_MTU_256..=sys::ibv_mtu::IBV_MTU_4096 => 128 << m,
        _ => usize::MAX,
    }
}

/// An RDMA write with immediate that found no receive at `dest`: rxe writes each packet as it
/// comes, and only the last one needs the receive, so every packet before it is written (the
/// range checked at the first packet for the whole message) before the message is dropped
/// (UC) or the last packet gets an RNR NAK (RC).
fn write_leading_packets(qp: &SwQp, dest: &SwQp, w: &SendWqe, payload: &[u8]) {
    let mtu = packet_bytes(qp);
    if payload.len() <= mtu {
        return;
    }
    let leading = (payload.len() - 1) / mtu * mtu;
    let target = check_mr(
        dest.ctx(),
        w.rkey,
        dest.ibv.pd,
        ACCESS_REMOTE_WRITE,
        w.remote_addr,
        payload.len() as u64,
    );
    if let Ok(p) = target {
        // Inside a registered, remotely writable region of the responder (checked), registered
        // while the fabric lock is held.
        write_registered(p, &payload[..leading]);
    }
}

/// Writes the response of RDMA read or atomic `w` (`data`) into its SGEs, as `scatter`. A
/// request posted with IBV_SEND_INLINE has none: rxe's provider stores the inline data where
/// the SGEs would be, so a response of any length has nowhere to land (LOC_PROT_ERR at rxe's
/// completer).
fn land(qp: &SwQp, w: &SendWqe, data: &[u8]) -> Result<(), MrFault> {
    if w.inline.is_some() && !data.is_empty() {
        return Err(MrFault::Range);
    }
    scatter(qp, &w.sges, data)
}

/// Appends the `n` bytes of registered memory at `p` to `out`, each byte read as a Relaxed
/// `AtomicU8` load (`crate::ffi::dma`): the program may be copying into the same bytes on another
/// thread, and so may another transfer.
///
/// `p..p + n` must lie in a region found in an MR table under the fabric lock, which the caller
/// holds: it stays registered, so allocated, until the lock is released.
fn read_registered(p: *const u8, n: usize, out: &mut Vec<u8>) {
    out.reserve(n);
    let len = out.len();
    // SAFETY: `p..p + n` is registered memory (the caller found it in an MR table and holds the
    // fabric lock), which every party accesses byte-wise atomically (crate::ffi::dma's model). The
    // spare capacity of `out` (reserved above) is private and cannot overlap registered memory
    // (a Vec of the device's); its `n` bytes are initialised by the copy before `set_len`.
    unsafe {
        crate::ffi::dma::copy_from_shared(p, out.as_mut_ptr().add(len), n);
        out.set_len(len + n);
    }
}

/// Writes `data` into registered memory at `p`, each byte as a Relaxed `AtomicU8` store
/// (`crate::ffi::dma`). `data` is the device's own copy (gathered before, so a loopback transfer
/// cannot overlap it). Same requirement on `p..p + data.len()` as [`read_registered`].
fn write_registered(p: *mut u8, data: &[u8]) {
    // SAFETY: as in `read_registered`; `data` is a private buffer of the device's, not
    // registered memory, so the two do not overlap and nobody writes `data` meanwhile.
    unsafe { crate::ffi::dma::copy_to_shared(data.as_ptr(), p, data.len()) }
}

impl SendWqe {
    /// Checks and copies one `ibv_send_wr`, as rxe's post_one_send does.
    ///
    /// # Safety
    /// `w` is a valid request of a live QP: its SGE array readable, inline data readable, a
    /// UD request's AH live.
    unsafe fn new(qp: &SwQp, w: &sys::ibv_send_wr) -> Result<SendWqe, c_int> {
        if w.num_sge < 0 || w.num_sge as u32 > qp.cap.max_send_sge {
            return Err(libc::EINVAL);
        }
        // SAFETY: the caller's contract: `sg_list` holds `num_sge` entries.
        let sges = unsafe { copy_sges(w.sg_list, w.num_sge as usize) }?;
        let length: u64 = sges.iter().map(|s| u64::from(s.length)).sum();
        // No message is longer than the port's max_msg_sz; the device would otherwise buffer
        // (and the caller allocate) what no port can send.
        if length > MAX_MSG_SZ {
            return Err(libc::EINVAL);
        }
        let atomic = matches!(
            w.opcode,
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
        );
        // SAFETY: reading the union as its atomic member, whose remote_addr overlays rdma's.
        let (remote_addr, rkey, compare_add, swap) = unsafe {
            if atomic {
                let a = w.wr.atomic;
                (a.remote_addr, a.rkey, a.compare_add, a.swap)
            } else {
                let r = w.wr.rdma;
                (r.remote_addr, r.rkey, 0, 0)
            }
        };
        if atomic && (length < 8 || remote_addr & 7 != 0) {
            return Err(libc::EINVAL);
        }
        if w.send_flags & SEND_INLINE != 0 && length > qp.cap.max_inline_data.into() {
            return Err(libc::EINVAL);
        }
        let mut inline = None;
        if w.send_flags & SEND_INLINE != 0 {
            let mut data = Vec::new();
            data.try_reserve_exact(length as usize)
                .map_err(|_| libc::ENOMEM)?;
            for s in sges.iter().filter(|s| s.length > 0) {
                // SAFETY: the caller's contract: inline data is readable at post time.
                data.extend_from_slice(unsafe {
                    std::slice::from_raw_parts(s.addr as *const u8, s.length as usize)
                });
            }
            inline = Some(data);
        }
        let (mut remote_qpn, mut remote_qkey, mut ah) = (0, 0, None);
        if qp.qpt() == IBV_QPT_UD {
            // SAFETY: a UD request's `wr` is its `ud` member.
            let ud = unsafe { w.wr.ud };
            if ud.ah.is_null() {
                return Err(libc::EINVAL);
            }
            remote_qpn = ud.remote_qpn & 0x00ff_ffff;
            remote_qkey = ud.remote_qkey;
            // SAFETY: the caller's contract: a live software AH.
            ah = Some(unsafe { (*(ud.ah as *const SwAh)).attr });
        }
        Ok(SendWqe {
            wr_id: w.wr_id,
            opcode: w.opcode,
            signaled: w.send_flags & SEND_SIGNALED != 0 || qp.sq_sig_all != 0,
            solicited: w.send_flags & SEND_SOLICITED != 0,
            // SAFETY: a plain u32 either way.
            imm: unsafe { w.imm_data_invalidated_rkey_union.imm_data },
            sges,
            inline,
            length,
            remote_addr,
            rkey,
            compare_add,
            swap,
            remote_qpn,
            remote_qkey,
            ah,
            before_sqd: false,
        })
    }

    fn has_imm(&self) -> bool {
        matches!(
            self.opcode,
            IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE_WITH_IMM
        )
    }
}

/// How a request ended, or that it waits.
enum Step<'g> {
    Done {
        status: u32,
        /// A responder that moves to ERR (after the sender's completion is written).
        responder: Option<&'g SwQp>,
    },
    /// The request stays at the head of the send queue until QP `n` is kicked.
    Wait(u32),
    /// The responder's receive completion found its CQ full (class G): the completion is lost,
    /// the responder moves to ERR, and the RC request, never acknowledged, waits for it (as
    /// `Wait`); a UC or UD request completes.
    Overflowed(&'g SwQp),
}

impl Step<'_> {
    fn ok() -> Self {
        Step::Done {
            status: IBV_WC_SUCCESS,
            responder: None,
        }
    }
    fn fail(status: u32) -> Self {
        Step::Done {
            status,
            responder: None,
        }
    }
}

/// One data-path operation under the fabric lock. The QPs a post or a modify unblocks are
/// collected in `kicks` first and run one after the other, so no QP's queue runs inside
/// another's.
struct Run<'g> {
    f: &'g Fabric,
    kicks: Vec<&'g SwQp>,
}

impl<'g> Run<'g> {
    fn new(f: &'g Fabric) -> Self {
        Run {
            f,
            kicks: Vec::new(),
        }
    }

    /// Runs every QP kicked so far.
    fn drain(&mut self) {
        while let Some(q) = self.kicks.pop() {
            self.run_sq(q);
        }
    }

    /// Kicks the QPs whose head request waits for a QP that `matches`.
    fn kick_waiting_for(&mut self, matches: impl Fn(&SwQp) -> bool) {
        for r in self.f.qps.values() {
            // SAFETY: registered, so live while `self.f` is borrowed (see Fabric::get).
            let q: &'g SwQp = unsafe { &*r.0 };
            let waits = q.queues.lock().blocked_on;
            if let Some(n) = waits {
                if self.f.get(n).is_some_and(&matches) {
                    self.kicks.push(q);
                }
            }
        }
    }

    /// Runs `qp`'s send queue from its head while requests can complete.
    fn run_sq(&mut self, qp: &'g SwQp) {
        loop {
            let state = qp.state();
            let w = {
                let mut q = qp.queues.lock();
                if q.acking.is_some() {
                    // The head was carried out and waits for its ACK; the rest wait behind it.
                    return;
                }
                let Some(w) = q.sq.pop_front() else {
                    return;
                };
                w
            };
            if state == IBV_QPS_ERR {
                send_completion(qp, &w, IBV_WC_WR_FLUSH_ERR);
                continue;
            }
            // In SQD only a request handed to the device before the drain began runs.
            if state != IBV_QPS_RTS && !(state == IBV_QPS_SQD && w.before_sqd) {
                qp.queues.lock().sq.push_front(w);
                return;
            }
            match self.execute(qp, &w) {
                Step::Overflowed(responder) if qp.qpt() == IBV_QPT_RC => {
                    {
                        let mut q = qp.queues.lock();
                        q.sq.push_front(w);
                        q.blocked_on = Some(responder.ibv.qp_num);
                    }
                    to_error(responder);
                    return;
                }
                Step::Overflowed(responder) => {
                    qp.queues.lock().unblock();
                    if w.signaled {
                        send_completion(qp, &w, IBV_WC_SUCCESS);
                    }
                    to_error(responder);
                }
                Step::Wait(n) => {
                    let mut q = qp.queues.lock();
                    q.sq.push_front(w);
                    q.blocked_on = Some(n);
                    return;
                }
                Step::Done {
                    mut status,
                    responder,
                } => {
                    if qp.qpt() != IBV_QPT_RC && responder.is_some_and(|r| ptr::eq(r, qp)) {
                        // A UC or UD QP that sent to itself and moved itself to ERR as the
                        // responder: rxe's responder runs inline from the loopback transmit,
                        // before the completer reports the request, which it then flushes. (An
                        // RC requester completes from the responder's NAK, as for another QP.)
                        status = IBV_WC_WR_FLUSH_ERR;
                    }
                    qp.queues.lock().unblock();
                    let ack_delay = || qp.ctx().config().ack_delay;
                    if status == IBV_WC_SUCCESS
                        && responder.is_none()
                        && qp.qpt() == IBV_QPT_RC
                        && !ack_delay().is_zero()
                    {
                        // Carried out; the completion comes with the ACK, from the timer thread
                        // (running: the creation of this RC QP started it).
                        if let Some(t) = rnr_timer() {
                            // A delay beyond the clock's range: an ACK that never comes (the
                            // request holds its slot until a flush, a reset or the destroy;
                            // arming 0 is no timer's).
                            let due = Instant::now().checked_add(ack_delay());
                            let arming = due.map_or(0, |at| t.arm(at, qp.ibv.qp_num));
                            let mut q = qp.queues.lock();
                            q.sq.push_front(w);
                            q.acking = Some(arming);
                            return;
                        }
                    }
                    if status != IBV_WC_SUCCESS || w.signaled {
                        send_completion(qp, &w, status);
                    }
                    if let Some(r) = responder {
                        to_error(r);
                    }
                    if status != IBV_WC_SUCCESS {
                        to_error(qp);
                    }
                }
            }
        }
    }

    /// Carries out request `w` of `qp` (in RTS), as far as it can go now.
    fn execute(&mut self, qp: &'g SwQp, w: &SendWqe) -> Step<'g> {
        let qpt = qp.qpt();
        let op = w.opcode;
        let valid = match qpt {
            IBV_QPT_RC => matches!(
                op,
                IBV_WR_SEND
                    | IBV_WR_SEND_WITH_IMM
                    | IBV_WR_RDMA_WRITE
                    | IBV_WR_RDMA_WRITE_WITH_IMM
                    | IBV_WR_RDMA_READ
                    | IBV_WR_ATOMIC_CMP_AND_SWP
                    | IBV_WR_ATOMIC_FETCH_AND_ADD
            ),
            IBV_QPT_UC => matches!(
                op,
                IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM
            ),
            IBV_QPT_UD => matches!(op, IBV_WR_SEND | IBV_WR_SEND_WITH_IMM),
            _ => false,
        };
        if !valid {
            return Step::fail(IBV_WC_LOC_QP_OP_ERR);
        }
        let carries_data = matches!(
            op,
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM
        );
        if qpt == IBV_QPT_UD && w.length > UD_MTU as u64 {
            // C10-93.1.1: nothing is sent, and it is not an error; rxe decides it before it
            // reads any SGE, so a bad key in one changes nothing.
            return Step::ok();
        }
        let payload = match (&w.inline, carries_data) {
            (Some(d), true) => d.clone(),
            (None, true) => match gather(qp, &w.sges) {
                Ok(d) => d,
                Err(MrFault::Key) => return Step::fail(IBV_WC_LOC_QP_OP_ERR),
                Err(MrFault::Range) => return Step::fail(IBV_WC_LOC_PROT_ERR),
                Err(MrFault::NoMem) => return Step::fail(IBV_WC_GENERAL_ERR),
            },
            (_, false) => Vec::new(),
        };

        let dest_qpn = if qpt == IBV_QPT_UD {
            w.remote_qpn
        } else {
            qp.attr.lock().dest_qp_num
        };
        let dest = self
            .f
            .get(dest_qpn)
            // A responder is ready from RTR on; SQD stops only the send queue.
            .filter(|d| {
                d.qpt() == qpt && matches!(d.state(), IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD)
            });
        let Some(dest) = dest else {
            return match qpt {
                IBV_QPT_RC => Step::Wait(dest_qpn),
                _ => Step::ok(),
            };
        };
        let (access, qkey, max_dest_rd_atomic) = {
            let a = dest.attr.lock();
            (a.qp_access_flags as i32, a.qkey, a.max_dest_rd_atomic)
        };
        if qpt == IBV_QPT_UD && w.remote_qkey != qkey {
            return Step::ok();
        }
        // A class C error (RC): the sender sees `status`, the responder moves to ERR.
        let refuse = |status| Step::Done {
            status,
            responder: Some(dest),
        };
        let needs = match op {
            IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM => ACCESS_REMOTE_WRITE,
            IBV_WR_RDMA_READ => ACCESS_REMOTE_READ,
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => ACCESS_REMOTE_ATOMIC,
            _ => 0,
        };
        if access & needs != needs {
            return match qpt {
                IBV_QPT_RC => refuse(IBV_WC_REM_INV_REQ_ERR),
                _ => Step::ok(), // UC: dropped
            };
        }
        if needs & (ACCESS_REMOTE_READ | ACCESS_REMOTE_ATOMIC) != 0 && max_dest_rd_atomic == 0 {
            return refuse(IBV_WC_REM_INV_REQ_ERR);
        }

        if op == IBV_WR_RDMA_WRITE_WITH_IMM && payload.len() > packet_bytes(qp) {
            // A multi-packet write with immediate: rxe checks the key and range at the first
            // packet, which needs no receive, so a bad one is found before a missing receive.
            let target = check_mr(
                dest.ctx(),
                w.rkey,
                dest.ibv.pd,
                ACCESS_REMOTE_WRITE,
                w.remote_addr,
                payload.len() as u64,
            );
            if target.is_err() {
                return match qpt {
                    IBV_QPT_RC => refuse(IBV_WC_REM_ACCESS_ERR),
                    _ => Step::ok(), // UC: dropped
                };
            }
        }

        // The receive the message consumes.
        let recv = if matches!(
            op,
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM | IBV_WR_RDMA_WRITE_WITH_IMM
        ) {
            match take_recv(dest) {
                Some(r) => Some(r),
                None => {
                    if op == IBV_WR_RDMA_WRITE_WITH_IMM {
                        write_leading_packets(qp, dest, w, &payload);
                    }
                    if qpt == IBV_QPT_RC {
                        return rnr_nak(qp, dest);
                    }
                    return Step::ok(); // UC, UD: dropped
                }
            }
        } else {
            None
        };

        match op {
            IBV_WR_SEND | IBV_WR_SEND_WITH_IMM => {
                let recv = recv.expect("taken above");
                let data = if qpt == IBV_QPT_UD {
                    let mut d = grh(w, payload.len());
                    d.extend_from_slice(&payload);
                    d
                } else {
                    payload
                };
                if scatter(dest, &recv.sges, &data).is_err() {
                    // A malformed receive (class A): the responder moves to ERR. What came
                    // before the part that did not fit was placed, as rxe places each packet
                    // as it comes, and a UD message's GRH before its payload.
                    let room: usize = recv.sges.iter().map(|s| s.length as usize).sum();
                    let placed = match qpt {
                        IBV_QPT_UD if room >= GRH_LEN => GRH_LEN,
                        IBV_QPT_UD => 0,
                        _ => room / packet_bytes(qp) * packet_bytes(qp),
                    };
                    if data.len() > room && placed > 0 {
                        let _ = scatter(dest, &recv.sges, &data[..placed]);
                    }
                    recv_failure(dest, recv.wr_id, IBV_WC_LOC_QP_OP_ERR, w.solicited);
                    let status = match qpt {
                        IBV_QPT_RC => IBV_WC_REM_OP_ERR,
                        _ => IBV_WC_SUCCESS,
                    };
                    return Step::Done {
                        status,
                        responder: Some(dest),
                    };
                }
                let src_qp = if qpt == IBV_QPT_UD { qp.ibv.qp_num } else { 0 };
                if !recv_success(dest, &recv, w, IBV_WC_RECV, data.len() as u32, src_qp) {
                    return Step::Overflowed(dest);
                }
                Step::ok()
            }
            IBV_WR_RDMA_WRITE | IBV_WR_RDMA_WRITE_WITH_IMM => {
                let len = payload.len() as u64;
                if len > 0 {
                    let target = check_mr(
                        dest.ctx(),
                        w.rkey,
                        dest.ibv.pd,
                        ACCESS_REMOTE_WRITE,
                        w.remote_addr,
                        len,
                    );
                    let Ok(p) = target else {
                        if qpt != IBV_QPT_RC {
                            // UC: dropped (a receive it took stays for the next message).
                            if let Some(r) = recv {
                                give_back(dest, r);
                            }
                            return Step::ok();
                        }
                        if let Some(r) = recv {
                            recv_failure(dest, r.wr_id, IBV_WC_REM_ACCESS_ERR, w.solicited);
                        }
                        return refuse(IBV_WC_REM_ACCESS_ERR);
                    };
                    // Inside a registered, remotely writable region of the responder (checked),
                    // registered while the fabric lock is held.
                    write_registered(p, &payload);
                }
                if let Some(r) = recv {
                    if !recv_success(dest, &r, w, IBV_WC_RECV_RDMA_WITH_IMM, len as u32, 0) {
                        return Step::Overflowed(dest);
                    }
                }
                Step::ok()
            }
            IBV_WR_RDMA_READ => {
                let mut data = Vec::new();
                if data.try_reserve_exact(w.length as usize).is_err() {
                    return Step::fail(IBV_WC_GENERAL_ERR);
                }
                if w.length > 0 {
                    let source = check_mr(
                        dest.ctx(),
                        w.rkey,
                        dest.ibv.pd,
                        ACCESS_REMOTE_READ,
                        w.remote_addr,
                        w.length,
                    );
                    let Ok(p) = source else {
                        return refuse(IBV_WC_REM_ACCESS_ERR);
                    };
                    // Inside a registered, remotely readable region (checked), which stays
                    // registered while the fabric lock is held.
                    read_registered(p, w.length as usize, &mut data);
                }
                // The response lands in the local SGEs; any failure there is LOC_PROT_ERR.
                match land(qp, w, &data) {
                    Ok(()) => Step::ok(),
                    Err(_) => Step::fail(IBV_WC_LOC_PROT_ERR),
                }
            }
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => {
                let target = check_mr(
                    dest.ctx(),
                    w.rkey,
                    dest.ibv.pd,
                    ACCESS_REMOTE_ATOMIC,
                    w.remote_addr,
                    8,
                );
                let Ok(p) = target else {
                    return refuse(IBV_WC_REM_ACCESS_ERR);
                };
                // 8 bytes inside a registered region (checked), 8-byte aligned (checked at the
                // post). IB atomics are atomic with respect to the HCA's other atomics only
                // (IBV_ATOMIC_HCA, the atomic_cap this device reports, as rxe does), not to the
                // CPU. So the word is not an AtomicU64: the program writes the same bytes with
                // byte-wise atomic copies (Mr::write), and an 8-byte atomic write racing 1-byte
                // atomic accesses is a mixed-size race, undefined in Rust's memory model. The
                // read-modify-write runs under the lock all of this device's atomics take,
                // through the same byte-wise primitives as every other access.
                let held = DEVICE_ATOMICS.lock();
                let mut word = Vec::with_capacity(8);
                read_registered(p, 8, &mut word);
                let original = u64::from_ne_bytes(word[..].try_into().expect("8 bytes"));
                let new = if op == IBV_WR_ATOMIC_FETCH_AND_ADD {
                    Some(original.wrapping_add(w.compare_add))
                } else {
                    (original == w.compare_add).then_some(w.swap)
                };
                if let Some(new) = new {
                    write_registered(p, &new.to_ne_bytes());
                }
                drop(held);
                match land(qp, w, &original.to_ne_bytes()) {
                    Ok(()) => Step::ok(),
                    Err(_) => Step::fail(IBV_WC_LOC_PROT_ERR),
                }
            }
            _ => unreachable!("opcodes checked above"),
        }
    }
}

/// The GRH rxe writes in front of a UD receive for a RoCE v2 IPv6 GID: the IPv6 header of the
/// packet (traffic class from the AH, flow label 0, hop limit 64, the UDP payload length).
fn grh(w: &SendWqe, payload: usize) -> Vec<u8> {
    let ah = w.ah.expect("a UD request has an AH");
    // UDP (8) + BTH (12) + DETH (8) + ImmDt (4, with immediate data) + payload, padded to a
    // multiple of 4 (the BTH's pad count), + ICRC (4).
    let pad = (4 - payload % 4) % 4;
    let udp_len = 8 + 12 + 8 + if w.has_imm() { 4 } else { 0 } + payload + pad + 4;
    let tc = ah.grh.traffic_class;
    let mut h = Vec::with_capacity(GRH_LEN);
    h.extend_from_slice(&[0x60 | tc >> 4, tc << 4, 0, 0]);
    h.extend_from_slice(&(udp_len as u16).to_be_bytes());
    h.push(17); // next header: UDP
    h.push(64); // hop limit
    h.extend_from_slice(&super::port_gid());
    // SAFETY: a GID is 16 bytes either way.
    h.extend_from_slice(&unsafe { ah.grh.dgid.raw });
    h
}

/// The next receive of `qp` (its SRQ's, or its own). Taking one from an SRQ may raise its
/// limit event.
fn take_recv(qp: &SwQp) -> Option<RecvWqe> {
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
fn give_back(qp: &SwQp, r: RecvWqe) {
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
fn send_completion(qp: &SwQp, w: &SendWqe, status: u32) {
    let mut e = Cqe {
        wr_id: w.wr_id,
        status,
        qp_num: qp.ibv.qp_num,
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
    let _ = push(qp.ibv.send_cq, &e);
}

/// A failed (or flushed) receive of `qp`.
fn recv_failure(qp: &SwQp, wr_id: u64, status: u32, solicited: bool) {
    let e = Cqe {
        wr_id,
        status,
        qp_num: qp.ibv.qp_num,
        solicited,
        ..Cqe::default()
    };
    // A failed receive moves (or has moved) the QP to ERR anyway.
    let _ = push(qp.ibv.recv_cq, &e);
}

/// A receive of `qp` that took `len` bytes of request `w`; false if its CQ was full.
fn recv_success(qp: &SwQp, r: &RecvWqe, w: &SendWqe, opcode: u32, len: u32, src_qp: u32) -> bool {
    let mut e = Cqe {
        wr_id: r.wr_id,
        status: IBV_WC_SUCCESS,
        opcode,
        byte_len: len,
        qp_num: qp.ibv.qp_num,
        src_qp,
        wc_flags: WC_GRH,
        solicited: w.solicited,
        ..Cqe::default()
    };
    if w.has_imm() {
        e.wc_flags |= WC_WITH_IMM;
        e.imm_or_inv = w.imm;
    }
    push(qp.ibv.recv_cq, &e)
}

/// `qp`'s head request (RC) found no receive at `dest`: an RNR NAK, carrying `dest`'s
/// `min_rnr_timer`. As rxe's completer: with retries left the request is retried when the
/// timer fires (7: always), without, it completes with RNR_RETRY_EXC_ERR. A receive posted at
/// `dest` in the meantime retries it at once (rxe waits for the timer; only the time differs),
/// and such an early retry that finds no receive costs no retry.
#[cold]
#[inline(never)]
fn rnr_nak<'g>(qp: &'g SwQp, dest: &'g SwQp) -> Step<'g> {
    let now = Instant::now();
    // Per-object locks one at a time: the attributes first, then the queues.
    let rnr_retry = qp.attr.lock().rnr_retry;
    let usec = RNR_TIMER_USEC[usize::from(dest.attr.lock().min_rnr_timer & 31)];
    let mut q = qp.queues.lock();
    let left = match q.rnr {
        Some(w) if now < w.retry_at => return Step::Wait(dest.ibv.qp_num),
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
    let timer = rnr_timer().map_or(0, |t| t.arm(retry_at, qp.ibv.qp_num));
    q.rnr = Some(RnrWait {
        left: if left == 7 { 7 } else { left - 1 },
        retry_at,
        timer,
    });
    Step::Wait(dest.ibv.qp_num)
}

/// The RNR timers of every software QP: one thread that sleeps until the earliest is due and
/// then retries that QP's head request under the fabric lock. Started by the creation of the
/// first RC QP ([`start_rnr_timer`]), where a thread that cannot start is an error to return;
/// an RNR NAK, inside a post, finds it running.
struct RnrTimers {
    /// (when, QP number, arming): a min-heap by time.
    due: Mutex<std::collections::BinaryHeap<std::cmp::Reverse<(Instant, u32, u64)>>>,
    wake: crate::ffi::sync::Condvar,
    next: AtomicU64,
}

static RNR_TIMERS: RnrTimers = RnrTimers {
    due: Mutex::new(std::collections::BinaryHeap::new()),
    wake: crate::ffi::sync::Condvar::new(),
    next: AtomicU64::new(1),
};

/// Whether the RNR timer thread runs; taken while it is started, so it starts once.
static RNR_TIMER_STARTED: Mutex<bool> = Mutex::new(false);

/// Starts the RNR timer thread unless it runs: called by the creation of an RC QP (the only
/// type that gets RNR NAKs), so that it runs before any can come. Fails with EAGAIN when the
/// thread cannot be made (as `pthread_create`; the QP is then not created, and a later
/// creation tries again).
pub(super) fn start_rnr_timer() -> Result<(), c_int> {
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
fn rnr_timer() -> Option<&'static RnrTimers> {
    (*RNR_TIMER_STARTED.lock()).then_some(&RNR_TIMERS)
}

impl RnrTimers {
    /// Arms a timer for QP `qpn` at `at`; returns its number. Called under the fabric lock
    /// (the order is always the fabric lock, then `due`).
    fn arm(&self, at: Instant, qpn: u32) -> u64 {
        let n = self.next.fetch_add(1, Ordering::Relaxed);
        self.due.lock().push(std::cmp::Reverse((at, qpn, n)));
        self.wake.notify_one();
        n
    }

    fn run(&self) -> ! {
        loop {
            let (qpn, n) = {
                let mut due = self.due.lock();
                loop {
                    match due.peek() {
                        None => self.wake.wait(&mut due),
                        Some(&std::cmp::Reverse((at, qpn, n))) => {
                            if Instant::now() >= at {
                                due.pop();
                                break (qpn, n);
                            }
                            self.wake.wait_until(&mut due, at);
                        }
                    }
                }
            };
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
            let current = was_acked || qp.queues.lock().rnr.is_some_and(|w| w.timer == n);
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
            let n = qp.ibv.qp_num;
            let mut run = Run::new(g);
            run.kick_waiting_for(|d| d.ibv.qp_num == n);
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
    // The doorbell: below RTS the kernel refuses it (EINVAL; `bad_wr` stays as the provider
    // left it) and the requests stay queued.
    if qp.state() < IBV_QPS_RTS {
        return libc::EINVAL;
    }
    let mut run = Run::new(&g);
    run.run_sq(qp);
    run.drain();
    rc
}
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
    let n = qp.ibv.qp_num;
    let mut run = Run::new(&g);
    run.kick_waiting_for(|d| d.ibv.qp_num == n);
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
    run.kick_waiting_for(|d| d.ibv.srq == ibsrq);
    run.drain();
    rc
}
}
