//! The software device's CQ: a ring of completions behind the `ibv_cq_ex` polling function
//! pointers and the context's `poll_cq`/`req_notify_cq`.
//!
//! Producers (the device's QPs and the injection hook, both through [`push`]) are serialized by
//! `producer`; consumers by `consumer`, which `start_poll` takes and `end_poll` releases, as
//! rdma-core's providers hold their CQ lock for a whole batch. A CQ created with SINGLE_THREADED
//! skips the consumer lock, as the flag promises ("no locking is required"). Head and tail are
//! atomics, so the two sides meet only there.

use super::events::EventCounts;
use super::{give, rxe_round, sw_context, take, SwContext};
use crate::backend::Errno;
use crate::ffi::wc_ex_flags as wcf;
use crate::ffi::{self, c_entry, sys};
use crate::sync;
use lock_api::RawMutex as _;
use std::cell::UnsafeCell;
use std::os::raw::{c_int, c_uint};
use std::ptr::{self, NonNull};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};

/// One completion as the device stores it (and as the test hook `software::inject` hands it
/// over).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Cqe {
    pub(crate) wr_id: u64,
    pub(crate) status: u32,
    pub(crate) opcode: u32,
    pub(crate) vendor_err: u32,
    pub(crate) byte_len: u32,
    /// Immediate data in network byte order, or the invalidated rkey (by `wc_flags`).
    pub(crate) imm_or_inv: u32,
    pub(crate) qp_num: u32,
    pub(crate) src_qp: u32,
    pub(crate) wc_flags: u32,
    pub(crate) pkey_index: u16,
    pub(crate) slid: u32,
    pub(crate) sl: u8,
    pub(crate) dlid_path_bits: u8,
    pub(crate) completion_ts: u64,
    pub(crate) completion_wallclock_ns: u64,
    pub(crate) cvlan: u16,
    pub(crate) flow_tag: u32,
    /// Whether the completion satisfies a CQ armed for solicited completions only: on rxe, a
    /// receive of a message sent with IBV_SEND_SOLICITED (its SE bit), and a receive flushed
    /// without a message. Not part of `struct ibv_wc`.
    pub(crate) solicited: bool,
}

/// A software CQ. `ex` is first: a `*mut ibv_cq_ex` (or its `ibv_cq` prefix) of ours is a
/// `*mut SwCq`.
#[repr(C)]
pub(crate) struct SwCq {
    ex: sys::ibv_cq_ex,
    ctx: *mut SwContext,
    channel: *mut sys::ibv_comp_channel,
    parent: *mut sys::ibv_pd,
    single_threaded: bool,
    ignore_overrun: bool,
    consumer: crate::sync::RawMutex,
    producer: crate::sync::RawMutex,
    head: AtomicU64,
    tail: AtomicU64,
    /// The completion the batch points at; null outside a batch. Consumer side only.
    cur: UnsafeCell<*const Cqe>,
    mask: u64,
    depth: u64,
    slots: Box<[UnsafeCell<Cqe>]>,
    /// QPs that use this CQ (send and receive counted apart).
    pub(crate) usecnt: AtomicU32,
    /// `ibv_req_notify_cq`: [`DISARMED`], [`ARMED_NEXT`] or [`ARMED_SOLICITED`].
    armed: AtomicU32,
    overrun: AtomicBool,
    lost: AtomicU64,
    /// Completion and async events of this CQ read and acked.
    events: EventCounts,
}

/// Not armed: no completion event until `ibv_req_notify_cq`.
const DISARMED: u32 = 0;
/// Armed for the next completion (IB_CQ_NEXT_COMP).
const ARMED_NEXT: u32 = 1;
/// Armed for the next solicited completion (IB_CQ_SOLICITED).
const ARMED_SOLICITED: u32 = 2;
static_assertions::const_assert_eq!(std::mem::offset_of!(SwCq, ex), 0);

/// # Safety
/// `ctx` live software context; `attr` valid for reads and writes.
pub(super) unsafe fn create(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_cq_init_attr_ex,
    legacy: bool,
) -> Result<NonNull<sys::ibv_cq_ex>, Errno> {
    // SAFETY: caller's contract.
    let (c, a) = unsafe { (sw_context(ctx), &*attr) };
    let cfg = c.config();
    // verbs.h: a comp_mask bit at or above IBV_CQ_INIT_ATTR_MASK_RESERVED is EINVAL.
    if a.comp_mask & !(ffi::CQ_INIT_ATTR_MASK_FLAGS | ffi::CQ_INIT_ATTR_MASK_PD) != 0 {
        return Err(libc::EINVAL);
    }
    if a.cqe < 1 || a.cqe > cfg.max_cqe || a.comp_vector >= cfg.num_comp_vectors {
        return Err(libc::EINVAL);
    }
    if a.wc_flags & !cfg.wc_flags != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let flags = if a.comp_mask & ffi::CQ_INIT_ATTR_MASK_FLAGS != 0 {
        a.flags
    } else {
        0
    };
    if flags & !cfg.cq_create_flags != 0 {
        return Err(libc::EOPNOTSUPP);
    }
    let parent = if a.comp_mask & ffi::CQ_INIT_ATTR_MASK_PD != 0 {
        a.parent_domain
    } else {
        ptr::null_mut()
    };
    if !parent.is_null() {
        if !cfg.parent_domain {
            return Err(libc::EOPNOTSUPP);
        }
        if !super::objects::is_parent_domain(parent) {
            return Err(libc::EINVAL);
        }
    }
    // SAFETY: a non-null channel is a live channel object (caller's contract).
    if !a.channel.is_null() && unsafe { (*a.channel).context } != ctx {
        return Err(libc::EINVAL);
    }
    let depth = rxe_round(a.cqe) as u64;
    // Sized by the caller's `cqe`: ENOMEM rather than an abort when it cannot be allocated.
    let mut slots = Vec::new();
    slots
        .try_reserve_exact(depth as usize + 1)
        .map_err(|_| libc::ENOMEM)?;
    slots.extend((0..=depth).map(|_| UnsafeCell::new(Cqe::default())));
    let slots = slots.into_boxed_slice();
    take(&c.live.cqs, cfg.max_objects)?;
    // SAFETY: ibv_cq_ex is plain C data (the pthread mutex/cond are zero-initialised, which is
    // their static initializer on glibc); every field the device uses is set below.
    let mut ex: sys::ibv_cq_ex = unsafe { std::mem::zeroed() };
    ex.context = ctx;
    ex.channel = a.channel;
    ex.cq_context = a.cq_context;
    ex.handle = c.handle();
    ex.cqe = depth as c_int;
    ex.start_poll = Some(start_poll);
    ex.next_poll = Some(next_poll);
    ex.end_poll = Some(end_poll);
    ex.read_opcode = Some(read_opcode);
    ex.read_vendor_err = Some(read_vendor_err);
    ex.read_wc_flags = Some(read_wc_flags);
    // Only the fields the CQ was created for can be read; the others stay NULL, so reading one
    // is a loud failure rather than a garbage value.
    let has = |bit: u64| (legacy || a.wc_flags & bit != 0) && cfg.missing_readers & bit == 0;
    // Each reader is the field of `ibv_cq_ex` of its own name; a legacy CQ has none of the
    // extended ones.
    macro_rules! readers {
        ($($bit:ident: $read:ident),*; extended: $($xbit:ident: $xread:ident),*) => {
            $(if has(wcf::$bit) {
                ex.$read = Some($read);
            })*
            $(if has(wcf::$xbit) && !legacy {
                ex.$xread = Some($xread);
            })*
        };
    }
    readers!(
        BYTE_LEN: read_byte_len,
        IMM: read_imm_data,
        QP_NUM: read_qp_num,
        SRC_QP: read_src_qp,
        SLID: read_slid,
        SL: read_sl,
        DLID_PATH_BITS: read_dlid_path_bits;
        extended:
        COMPLETION_TIMESTAMP: read_completion_ts,
        COMPLETION_TIMESTAMP_WALLCLOCK: read_completion_wallclock_ns,
        CVLAN: read_cvlan,
        FLOW_TAG: read_flow_tag
    );
    let cq = Box::new(SwCq {
        ex,
        ctx: ctx as *mut SwContext,
        channel: a.channel,
        parent,
        single_threaded: flags & ffi::CREATE_CQ_ATTR_SINGLE_THREADED != 0,
        ignore_overrun: flags & ffi::CREATE_CQ_ATTR_IGNORE_OVERRUN != 0,
        consumer: crate::sync::RawMutex::INIT,
        producer: crate::sync::RawMutex::INIT,
        head: AtomicU64::new(0),
        tail: AtomicU64::new(0),
        cur: UnsafeCell::new(ptr::null()),
        mask: depth,
        depth,
        slots,
        usecnt: AtomicU32::new(0),
        armed: AtomicU32::new(DISARMED),
        overrun: AtomicBool::new(false),
        lost: AtomicU64::new(0),
        events: EventCounts::default(),
    });
    if !a.channel.is_null() {
        // SAFETY: checked above to be a live channel of this context.
        unsafe { super::objects::channel_use(a.channel, 1) };
    }
    if !parent.is_null() {
        // SAFETY: checked above to be a live parent domain of this context.
        unsafe { super::objects::pd_use(parent, 1) };
    }
    // SAFETY: Box::into_raw is never null; `ex` is at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(cq) as *mut sys::ibv_cq_ex) })
}

/// # Safety
/// `cq` is a live software CQ.
pub(super) unsafe fn destroy(cq: *mut sys::ibv_cq) -> Result<(), Errno> {
    let sw = cq as *mut SwCq;
    // SAFETY: live software CQ (caller's contract); fields read by raw pointer.
    unsafe {
        // ibv_destroy_cq(3): "fails if any queue pair is still associated with this CQ".
        super::objects::unused(&(*sw).usecnt)?;
        // As the kernel: the CQ's events that were not read go; then, as libibverbs, wait
        // until every event that was read is acked (forever if one never is: the typed layer
        // acks the ones it holds first).
        if !(*sw).channel.is_null() {
            super::objects::forget_cq_events((*sw).channel, cq);
        }
        (*(*sw).ctx).forget_async_events(cq as usize);
        (*sw).events.wait_balanced();
        if !(*sw).channel.is_null() {
            super::objects::channel_use((*sw).channel, -1);
        }
        if !(*sw).parent.is_null() {
            super::objects::pd_use((*sw).parent, -1);
        }
        give(&(*(*sw).ctx).live.cqs);
        drop(Box::from_raw(sw));
    }
    Ok(())
}

/// # Safety
/// `cq` is a live software CQ; the caller is the consumer.
#[inline]
unsafe fn set_current(cq: *mut SwCq, pos: u64) {
    // SAFETY: `pos` is `head` and below `tail` (the callers check), so the slot holds a
    // published completion that producers will not touch until `head` passes it.
    unsafe {
        let e = (*cq).slots[(pos & (*cq).mask) as usize].get() as *const Cqe;
        *(*cq).cur.get() = e;
        (*cq).ex.wr_id = (*e).wr_id;
        (*cq).ex.status = (*e).status;
    }
}

c_entry! {
fn start_poll(
    ex: *mut sys::ibv_cq_ex,
    _attr: *mut sys::ibv_poll_cq_attr,
) -> c_int = on_panic(libc::EIO) {
    let cq = ex as *mut SwCq;
    // SAFETY: libibverbs' contract: `ex` is a live CQ of this provider, so a SwCq.
    unsafe {
        let st = (*cq).single_threaded;
        if !st {
            (*cq).consumer.lock();
        }
        let head = (*cq).head.load(Ordering::Relaxed);
        let tail = (*cq).tail.load(Ordering::Acquire);
        sync::acquire(&(*cq).tail);
        if head == tail {
            // ENOENT: no completion; the batch did not start, so release the lock now
            // ("If an error code is given, end_poll shouldn't be called").
            if !st {
                (*cq).consumer.unlock();
            }
            return libc::ENOENT;
        }
        set_current(cq, head);
    }
    0
}
}

c_entry! {
fn next_poll(ex: *mut sys::ibv_cq_ex) -> c_int = on_panic(libc::EIO) {
    let cq = ex as *mut SwCq;
    // SAFETY: inside a batch (libibverbs' contract), so we are the consumer.
    unsafe {
        let head = (*cq).head.load(Ordering::Relaxed) + 1;
        sync::release(&(*cq).head);
        (*cq).head.store(head, Ordering::Release);
        let tail = (*cq).tail.load(Ordering::Acquire);
        sync::acquire(&(*cq).tail);
        if head == tail {
            *(*cq).cur.get() = ptr::null();
            return libc::ENOENT;
        }
        set_current(cq, head);
    }
    0
}
}

c_entry! {
fn end_poll(ex: *mut sys::ibv_cq_ex) = on_panic(()) {
    let cq = ex as *mut SwCq;
    // SAFETY: ends the batch start_poll began (libibverbs' contract).
    unsafe {
        if !(*(*cq).cur.get()).is_null() {
            let head = (*cq).head.load(Ordering::Relaxed) + 1;
            sync::release(&(*cq).head);
            (*cq).head.store(head, Ordering::Release);
            *(*cq).cur.get() = ptr::null();
        }
        if !(*cq).single_threaded {
            (*cq).consumer.unlock();
        }
    }
}
}

macro_rules! readers {
    ($($name:ident: $field:ident -> $t:ty;)*) => {$(
        c_entry! {
            fn $name(ex: *mut sys::ibv_cq_ex) -> $t = on_panic(0) {
                // SAFETY: called inside a batch after a successful start/next_poll, so `cur`
                // points at the current completion (libibverbs' contract for ibv_wc_read_*).
                unsafe { (**(*(ex as *mut SwCq)).cur.get()).$field as $t }
            }
        }
    )*};
}
readers! {
    read_opcode: opcode -> sys::ibv_wc_opcode::Type;
    read_vendor_err: vendor_err -> u32;
    read_byte_len: byte_len -> u32;
    read_imm_data: imm_or_inv -> sys::__be32;
    read_qp_num: qp_num -> u32;
    read_src_qp: src_qp -> u32;
    read_wc_flags: wc_flags -> c_uint;
    read_slid: slid -> u32;
    read_sl: sl -> u8;
    read_dlid_path_bits: dlid_path_bits -> u8;
    read_completion_ts: completion_ts -> u64;
    read_completion_wallclock_ns: completion_wallclock_ns -> u64;
    read_cvlan: cvlan -> u16;
    read_flow_tag: flow_tag -> u32;
}

c_entry! {
/// `ibv_context.ops.poll_cq`: copies up to `n` completions into `wc`.
pub(super) fn poll_cq(
    ibcq: *mut sys::ibv_cq,
    n: c_int,
    wc: *mut sys::ibv_wc,
) -> c_int = on_panic(-libc::EIO) {
    if n < 0 {
        return -libc::EINVAL;
    }
    let cq = ibcq as *mut SwCq;
    let mut i = 0;
    // SAFETY: libibverbs' contract: a live CQ of this provider and `wc` valid for `n` entries.
    unsafe {
        let st = (*cq).single_threaded;
        if !st {
            (*cq).consumer.lock();
        }
        let mut head = (*cq).head.load(Ordering::Relaxed);
        let tail = (*cq).tail.load(Ordering::Acquire);
        sync::acquire(&(*cq).tail);
        while i < n && head != tail {
            let e = &*(*cq).slots[(head & (*cq).mask) as usize].get();
            wc.add(i as usize).write(sys::ibv_wc {
                wr_id: e.wr_id,
                status: e.status,
                opcode: e.opcode,
                vendor_err: e.vendor_err,
                byte_len: e.byte_len,
                imm_data_invalidated_rkey_union: sys::imm_data_invalidated_rkey_union_t {
                    imm_data: e.imm_or_inv,
                },
                qp_num: e.qp_num,
                src_qp: e.src_qp,
                wc_flags: e.wc_flags,
                pkey_index: e.pkey_index,
                slid: e.slid as u16,
                sl: e.sl,
                dlid_path_bits: e.dlid_path_bits,
            });
            head += 1;
            i += 1;
        }
        sync::release(&(*cq).head);
        (*cq).head.store(head, Ordering::Release);
        if !st {
            (*cq).consumer.unlock();
        }
    }
    i
}
}

c_entry! {
/// `ibv_context.ops.req_notify_cq`: arms the CQ for the next completion or the next solicited
/// one. As rxe's: a CQ armed for the next completion stays so when it is armed again for a
/// solicited one.
pub(super) fn req_notify_cq(
    ibcq: *mut sys::ibv_cq,
    solicited_only: c_int,
) -> c_int = on_panic(libc::EIO) {
    let arm = if solicited_only != 0 {
        ARMED_SOLICITED
    } else {
        ARMED_NEXT
    };
    // SAFETY: a live CQ of this provider.
    let armed = unsafe { &(*(ibcq as *mut SwCq)).armed };
    let _ = armed.fetch_update(Ordering::AcqRel, Ordering::Acquire, |a| {
        (a != ARMED_NEXT).then_some(arm)
    });
    0
}
}

/// The read/ack counts of a software CQ's events.
///
/// # Safety
/// `cq` is a live software CQ.
pub(super) unsafe fn event_counts<'a>(cq: *mut sys::ibv_cq) -> &'a EventCounts {
    // SAFETY: caller's contract.
    unsafe { &(*(cq as *mut SwCq)).events }
}

/// What [`push`] did with a completion.
pub(crate) enum Pushed {
    /// In the ring, visible to the consumer.
    Stored,
    /// The CQ was full and was created with IGNORE_OVERRUN: dropped and counted.
    Lost,
    /// The CQ was full: dropped, and the CQ marked as overrun (a device would move it to the
    /// error state).
    Overrun,
}

/// Puts `cqe` into `cq`: the one producer path, for the device's QPs and for the test hook that
/// injects completions.
///
/// # Safety
/// `cq` is a live software CQ.
pub(crate) unsafe fn push(cq: *mut sys::ibv_cq, cqe: &Cqe) -> Pushed {
    let sw = cq as *mut SwCq;
    // SAFETY: a live software CQ; the producer lock serializes producers, and the slot at
    // `tail` is not visible to the consumer until `tail` is published.
    unsafe {
        (*sw).producer.lock();
        let tail = (*sw).tail.load(Ordering::Relaxed);
        let head = (*sw).head.load(Ordering::Acquire);
        sync::acquire(&(*sw).head);
        if tail - head >= (*sw).depth {
            (*sw).producer.unlock();
            if (*sw).ignore_overrun {
                (*sw).lost.fetch_add(1, Ordering::Relaxed);
                return Pushed::Lost;
            }
            (*sw).overrun.store(true, Ordering::Release);
            // As rxe_cq_post: a full CQ raises IBV_EVENT_CQ_ERR (every time a completion finds
            // it full) and the completion is lost.
            (*(*sw).ctx).raise(ffi::event_type::CQ_ERR, cq as usize);
            return Pushed::Overrun;
        }
        *(*sw).slots[(tail & (*sw).mask) as usize].get() = *cqe;
        sync::release(&(*sw).tail);
        (*sw).tail.store(tail + 1, Ordering::Release);
        (*sw).producer.unlock();
        // As rxe_cq_post: an armed CQ is disarmed by the completion that satisfies it, and the
        // comp handler queues one event on the CQ's channel (none without a channel).
        let armed = &(*sw).armed;
        let a = armed.load(Ordering::Acquire);
        let fires = a == ARMED_NEXT || (a == ARMED_SOLICITED && cqe.solicited);
        if fires
            && armed
                .compare_exchange(a, DISARMED, Ordering::AcqRel, Ordering::Acquire)
                .is_ok()
            && !(*sw).channel.is_null()
        {
            super::objects::queue_cq_event((*sw).channel, cq);
        }
    }
    Pushed::Stored
}

/// How many completions a CQ created with IGNORE_OVERRUN dropped because it was full.
///
/// # Safety
/// `cq` is a live software CQ.
pub(crate) unsafe fn lost_completions(cq: *mut sys::ibv_cq) -> u64 {
    // SAFETY: caller's contract.
    unsafe { (*(cq as *mut SwCq)).lost.load(Ordering::Relaxed) }
}

/// Whether the CQ has overrun (and would be in the error state).
///
/// # Safety
/// `cq` is a live software CQ.
pub(crate) unsafe fn has_overrun(cq: *mut sys::ibv_cq) -> bool {
    // SAFETY: caller's contract.
    unsafe { (*(cq as *mut SwCq)).overrun.load(Ordering::Relaxed) }
}

/// # Safety
/// `cq` is a live software CQ.
pub(super) unsafe fn cq_use(cq: *mut sys::ibv_cq, delta: i32) {
    // SAFETY: caller's contract.
    let u = unsafe { &(*(cq as *mut SwCq)).usecnt };
    if delta > 0 {
        u.fetch_add(1, Ordering::AcqRel);
    } else {
        u.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Waits for the batches open on a QP's CQs to end, as rdma-core's mlx5 provider does when it
/// destroys a QP or moves it to RESET: `mlx5_lock_cqs` takes the send and receive CQs' locks
/// (one lock when they are the same CQ) to clean the QP's completions out of them, and
/// `mlx5_start_poll` holds the same lock until `mlx5_end_poll`. A thread that does this while
/// it has a batch open on one of those CQs therefore waits forever, here as on mlx5; another
/// thread's batch is waited for. A SINGLE_THREADED CQ has no lock to take. Taken in address
/// order, and with no other lock of the device held, so that it cannot deadlock with a poller
/// that posts inside its batch.
///
/// # Safety
/// `send` and `recv` are live software CQs.
pub(super) unsafe fn wait_for_batches(send: *mut sys::ibv_cq, recv: *mut sys::ibv_cq) {
    let (a, b) = if (send as usize) <= (recv as usize) {
        (send as *mut SwCq, recv as *mut SwCq)
    } else {
        (recv as *mut SwCq, send as *mut SwCq)
    };
    let cqs = if a == b { [a, ptr::null_mut()] } else { [a, b] };
    // SAFETY: caller's contract; each lock taken here is released below, in reverse order.
    unsafe {
        for &cq in cqs.iter().filter(|c| !c.is_null()) {
            if !(*cq).single_threaded {
                (*cq).consumer.lock();
            }
        }
        // The completions of the QP would be cleaned out here (mlx5's `__mlx5_cq_clean`); as
        // on rxe, they stay in the CQ.
        for &cq in cqs.iter().rev().filter(|c| !c.is_null()) {
            if !(*cq).single_threaded {
                (*cq).consumer.unlock();
            }
        }
    }
}
