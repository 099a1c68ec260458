//! The software device's CQ: a ring of completions behind the `ibv_cq_ex` polling function
//! pointers and the context's `poll_cq`/`req_notify_cq`.
//!
//! Producers (the device's QPs and the injection hook, both through [`push`]) are serialized by
//! `producer`; consumers by `consumer`, which `start_poll` takes and `end_poll` releases, as
//! rdma-core's providers hold their CQ lock for a whole batch. A CQ created with SINGLE_THREADED
//! skips the consumer lock, as the flag promises ("no locking is required"). Head and tail are
//! atomics, so the two sides meet only there. That protocol is [`Ring`], in the sync facade's
//! types, which the loom models drive (docs/model-checking.md); the C entry points around it
//! only translate.

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
    ignore_overrun: bool,
    ring: Ring,
    /// The completion the batch points at; null outside a batch. Consumer side only.
    cur: UnsafeCell<*const Cqe>,
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

/// A CQ's ring of completions: producers (serialized by `producer`) store at `tail` and publish
/// it; the consumer (serialized by `consumer`, held for a whole batch, unless the CQ is
/// SINGLE_THREADED) reads at `head` and publishes it to free the slot. `depth` completions fit;
/// the slots are one more, a power of two (`mask`).
pub(crate) struct Ring {
    consumer: sync::RawMutex,
    producer: sync::RawMutex,
    single_threaded: bool,
    head: sync::atomic::AtomicU64,
    tail: sync::atomic::AtomicU64,
    mask: u64,
    depth: u64,
    slots: Box<[sync::cell::UnsafeCell<Cqe>]>,
}

impl Ring {
    /// A ring of `depth` completions, `depth + 1` a power of two; ENOMEM rather than an abort
    /// when it cannot be allocated. SINGLE_THREADED: no consumer lock.
    pub(crate) fn new(depth: u64, single_threaded: bool) -> Result<Ring, Errno> {
        debug_assert!((depth + 1).is_power_of_two());
        let mut slots = Vec::new();
        slots
            .try_reserve_exact(depth as usize + 1)
            .map_err(|_| libc::ENOMEM)?;
        slots.extend((0..=depth).map(|_| sync::cell::UnsafeCell::new(Cqe::default())));
        Ok(Ring {
            consumer: sync::raw_mutex(),
            producer: sync::raw_mutex(),
            single_threaded,
            head: sync::atomic::AtomicU64::new(0),
            tail: sync::atomic::AtomicU64::new(0),
            mask: depth,
            depth,
            slots: slots.into_boxed_slice(),
        })
    }

    /// The producer's side: stores `cqe` and publishes it; false, storing nothing, when the
    /// ring is full.
    pub(crate) fn push(&self, cqe: &Cqe) -> bool {
        self.producer.lock();
        let tail = self.tail.load(Ordering::Relaxed);
        let head = self.head.load(Ordering::Acquire);
        sync::acquire(&self.head);
        if tail - head >= self.depth {
            // SAFETY: taken above, on this thread.
            unsafe { self.producer.unlock() };
            return false;
        }
        self.slots[(tail & self.mask) as usize].with_mut(|slot| {
            // SAFETY: the slot at `tail` is not visible to the consumer until `tail` is
            // published below, and it is free: the consumer published a `head` past its last
            // completion (read above), and producers are serialized by the lock.
            unsafe { *slot = *cqe }
        });
        sync::release(&self.tail);
        self.tail.store(tail + 1, Ordering::Release);
        // SAFETY: taken above, on this thread.
        unsafe { self.producer.unlock() };
        true
    }

    /// `start_poll`: takes the consumer's side and returns the position of the first
    /// completion; `None`, giving the side back, when the ring is empty.
    ///
    /// # Safety
    /// The calling thread does not hold the consumer's side; a SINGLE_THREADED ring's caller is
    /// its one consumer.
    pub(crate) unsafe fn begin(&self) -> Option<u64> {
        if !self.single_threaded {
            self.consumer.lock();
        }
        let head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        sync::acquire(&self.tail);
        if head == tail {
            // SAFETY: caller's contract: no batch started ("If an error code is given,
            // end_poll shouldn't be called"), so the side taken above is given back now.
            unsafe { self.end(false) };
            return None;
        }
        Some(head)
    }

    /// `next_poll`: consumes the current completion and returns the next one's position, or
    /// `None` when there is none (the batch stays open).
    ///
    /// # Safety
    /// The caller holds the consumer's side ([`begin`](Self::begin)), and its current
    /// completion is the one at `head`.
    pub(crate) unsafe fn advance(&self) -> Option<u64> {
        let head = self.head.load(Ordering::Relaxed) + 1;
        sync::release(&self.head);
        self.head.store(head, Ordering::Release);
        let tail = self.tail.load(Ordering::Acquire);
        sync::acquire(&self.tail);
        (head != tail).then_some(head)
    }

    /// `end_poll`: consumes the current completion (`consume`: there is one), and gives the
    /// consumer's side back.
    ///
    /// # Safety
    /// The caller holds the consumer's side ([`begin`](Self::begin)).
    pub(crate) unsafe fn end(&self, consume: bool) {
        if consume {
            let head = self.head.load(Ordering::Relaxed) + 1;
            sync::release(&self.head);
            self.head.store(head, Ordering::Release);
        }
        if !self.single_threaded {
            // SAFETY: caller's contract.
            unsafe { self.consumer.unlock() };
        }
    }

    /// The completion at `pos`, a position [`begin`](Self::begin) or
    /// [`advance`](Self::advance) returned: valid until the consumer's side moves past it.
    ///
    /// # Safety
    /// The caller holds the consumer's side, and `pos` is its current position.
    pub(crate) unsafe fn at(&self, pos: u64) -> *const Cqe {
        // `pos` is `head` and below `tail`: the slot holds a published completion that
        // producers will not touch until `head` passes it.
        self.slots[(pos & self.mask) as usize].with(|slot| slot)
    }

    /// `poll_cq`: up to `n` completions, each given to `f` with its index, then consumed; how
    /// many.
    ///
    /// # Safety
    /// As [`begin`](Self::begin)'s.
    pub(crate) unsafe fn drain(&self, n: usize, mut f: impl FnMut(usize, &Cqe)) -> usize {
        if !self.single_threaded {
            self.consumer.lock();
        }
        let mut head = self.head.load(Ordering::Relaxed);
        let tail = self.tail.load(Ordering::Acquire);
        sync::acquire(&self.tail);
        let mut i = 0;
        while i < n && head != tail {
            self.slots[(head & self.mask) as usize].with(|slot| {
                // SAFETY: between `head` and `tail`: published, and not touched by producers
                // until `head` passes it.
                f(i, unsafe { &*slot })
            });
            head += 1;
            i += 1;
        }
        sync::release(&self.head);
        self.head.store(head, Ordering::Release);
        // SAFETY: taken above, on this thread (caller's contract for a single-threaded ring).
        unsafe { self.end(false) };
        i
    }

    /// Waits for the batch open on the ring (if any) to end, holding the consumer's side a
    /// moment: nothing for a SINGLE_THREADED ring.
    fn lock_consumer(&self) {
        if !self.single_threaded {
            self.consumer.lock();
        }
    }

    /// Gives back what [`lock_consumer`](Self::lock_consumer) took.
    ///
    /// # Safety
    /// [`lock_consumer`](Self::lock_consumer) was called on this thread and not yet undone.
    unsafe fn unlock_consumer(&self) {
        if !self.single_threaded {
            // SAFETY: caller's contract.
            unsafe { self.consumer.unlock() };
        }
    }
}

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
    let ring = Ring::new(depth, flags & ffi::CREATE_CQ_ATTR_SINGLE_THREADED != 0)?;
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
        ignore_overrun: flags & ffi::CREATE_CQ_ATTR_IGNORE_OVERRUN != 0,
        ring,
        cur: UnsafeCell::new(ptr::null()),
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
/// `cq` is a live software CQ; the caller is the consumer, at `pos`.
#[inline]
unsafe fn set_current(cq: *mut SwCq, pos: u64) {
    // SAFETY: caller's contract: `pos` is the consumer's position ([`Ring::at`]).
    unsafe {
        let e = (*cq).ring.at(pos);
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
    // SAFETY: libibverbs' contract: `ex` is a live CQ of this provider, so a SwCq, and no
    // batch of it is open on this thread (SINGLE_THREADED: this is its one consumer).
    unsafe {
        // ENOENT: no completion; the batch did not start, and the ring gave its side back.
        let Some(head) = (*cq).ring.begin() else {
            return libc::ENOENT;
        };
        set_current(cq, head);
    }
    0
}
}

c_entry! {
fn next_poll(ex: *mut sys::ibv_cq_ex) -> c_int = on_panic(libc::EIO) {
    let cq = ex as *mut SwCq;
    // SAFETY: inside a batch (libibverbs' contract), so we are the consumer, at the current
    // completion.
    unsafe {
        let Some(head) = (*cq).ring.advance() else {
            *(*cq).cur.get() = ptr::null();
            return libc::ENOENT;
        };
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
        let current = !(*(*cq).cur.get()).is_null();
        *(*cq).cur.get() = ptr::null();
        (*cq).ring.end(current);
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
    // SAFETY: libibverbs' contract: a live CQ of this provider (no batch of it open on this
    // thread; SINGLE_THREADED: this is its one consumer) and `wc` valid for `n` entries.
    unsafe {
        (*cq).ring.drain(n as usize, |i, e| {
            wc.add(i).write(sys::ibv_wc {
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
            })
        }) as c_int
    }
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
    // SAFETY: a live software CQ.
    unsafe {
        if !(*sw).ring.push(cqe) {
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
            (*cq).ring.lock_consumer();
        }
        // The completions of the QP would be cleaned out here (mlx5's `__mlx5_cq_clean`); as
        // on rxe, they stay in the CQ.
        for &cq in cqs.iter().rev().filter(|c| !c.is_null()) {
            (*cq).ring.unlock_consumer();
        }
    }
}

/// The ring, model-checked (docs/model-checking.md): producers push through [`Ring::push`] (the
/// path of the device's QPs and of `software::inject`), the consumer polls in batches as
/// `start_poll`/`next_poll`/`end_poll` do and as `poll_cq` does ([`Ring::drain`]). Every
/// completion pushed is polled once, none is made up, each producer's come in its order, and a
/// slot is never read while it is written (loom's `UnsafeCell` checks each access).
#[cfg(all(test, typed_verbs_loom))]
mod loom_models {
    use super::*;
    use loom::sync::Arc;

    /// Producer `p`'s `n`th completion.
    fn cqe(p: u64, n: u64) -> Cqe {
        Cqe {
            wr_id: (p << 8) | n,
            byte_len: ((p << 8) | n) as u32 ^ 0x5a5a,
            ..Cqe::default()
        }
    }

    /// Checks one polled completion against what was pushed and counts it in `next`, each
    /// producer's next expected sequence number.
    fn seen(next: &mut [u64], c: &Cqe) {
        let (p, n) = (c.wr_id >> 8, c.wr_id & 0xff);
        assert_eq!(
            c.byte_len,
            c.wr_id as u32 ^ 0x5a5a,
            "a torn or stale completion"
        );
        assert_eq!(
            n, next[p as usize],
            "producer {p}'s completions out of order or twice"
        );
        next[p as usize] += 1;
    }

    /// `producers` threads push `each` completions into a ring of `depth`; a push the full
    /// ring refuses is tried again (`retry`: the producer yields until there is room) or ends
    /// the producer (its QP would overrun). The model's thread polls with `poll` until it has
    /// seen `wait_for` completions (yielding while the ring is empty), then, once the producers
    /// are done, until the ring is empty. Every completion stored is polled once, in its
    /// producer's order, and none is made up.
    ///
    /// The consumer waits for completions rather than polling a fixed number of times: loom
    /// runs a producer before the consumer's poll only where an access of the consumer's
    /// conflicts with the producer's next one, so a consumer that polls once and joins would
    /// never see a completion before the join.
    fn run(
        depth: u64,
        producers: u64,
        each: u64,
        retry: bool,
        wait_for: u64,
        poll: fn(&Ring, &mut [u64]),
    ) {
        crate::sync::model::check(None, move || {
            let ring = Arc::new(Ring::new(depth, false).unwrap());
            let threads: Vec<_> = (0..producers)
                .map(|p| {
                    let ring = ring.clone();
                    loom::thread::spawn(move || {
                        let mut stored = 0;
                        for n in 0..each {
                            while !ring.push(&cqe(p, n)) {
                                if !retry {
                                    return stored;
                                }
                                loom::thread::yield_now();
                            }
                            stored += 1;
                        }
                        stored
                    })
                })
                .collect();
            let mut next = vec![0; producers as usize];
            while next.iter().sum::<u64>() < wait_for {
                let before = next.iter().sum::<u64>();
                poll(&ring, &mut next);
                if next.iter().sum::<u64>() == before {
                    loom::thread::yield_now();
                }
            }
            let stored: Vec<u64> = threads.into_iter().map(|t| t.join().unwrap()).collect();
            // The rest, now that nothing is pushed.
            while next.iter().zip(&stored).any(|(n, s)| n < s) {
                let before = next.clone();
                poll(&ring, &mut next);
                assert_ne!(before, next, "a stored completion that cannot be polled");
            }
            assert_eq!(next, stored, "a completion polled that was not stored");
            // Nothing more: an empty ring polls nothing.
            // SAFETY: this thread is the one consumer and holds no side.
            assert!(unsafe { ring.begin() }.is_none());
        });
    }

    /// One batch, as `start_poll`, `next_poll` (until the ring is empty) and `end_poll`.
    fn batch(ring: &Ring, next: &mut [u64]) {
        // SAFETY: the one consumer, no batch open.
        let Some(mut pos) = (unsafe { ring.begin() }) else {
            return;
        };
        loop {
            // SAFETY: inside the batch, at its current position.
            seen(next, unsafe { &*ring.at(pos) });
            // SAFETY: as above.
            match unsafe { ring.advance() } {
                Some(p) => pos = p,
                None => break,
            }
        }
        // SAFETY: the batch's end; `advance` consumed the last one.
        unsafe { ring.end(false) };
    }

    /// One batch that stops after its first completion (`end_poll` consumes the current one).
    fn batch_of_one(ring: &Ring, next: &mut [u64]) {
        // SAFETY: the one consumer, no batch open.
        let Some(pos) = (unsafe { ring.begin() }) else {
            return;
        };
        // SAFETY: inside the batch, at its current position.
        seen(next, unsafe { &*ring.at(pos) });
        // SAFETY: the batch's end, at a current completion.
        unsafe { ring.end(true) };
    }

    /// One `poll_cq` of up to two completions.
    fn poll_cq(ring: &Ring, next: &mut [u64]) {
        // SAFETY: the one consumer, no batch open.
        unsafe { ring.drain(2, |_, c| seen(next, c)) };
    }

    /// Two producers of one completion each into a ring of three, a consumer in batches
    /// (`start_poll`, `next_poll` until empty, `end_poll`).
    #[test]
    fn ring_two_producers_batches() {
        run(3, 2, 1, true, 2, batch);
    }

    /// One producer of three completions into a ring of one (two slots: they wrap around),
    /// waiting while it is full; a consumer in batches of one (`end_poll` consumes the
    /// current completion).
    #[test]
    fn ring_wraps_batches_of_one() {
        run(1, 1, 3, true, 3, batch_of_one);
    }

    /// Two producers of one completion each into a ring of three, a consumer through
    /// `poll_cq` (up to two at a time).
    #[test]
    fn ring_two_producers_poll_cq() {
        run(3, 2, 1, true, 2, poll_cq);
    }

    /// Two producers of one completion each into a ring of one: full after one push, so one
    /// of them may be refused (the CQ overruns) and nothing of it is stored.
    #[test]
    fn ring_full_refuses_a_push() {
        run(1, 2, 1, false, 1, batch);
    }
}
