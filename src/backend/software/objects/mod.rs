//! The software device's PDs, parent domains, completion channels, SRQs and QPs.

/// Memory regions: registration, and the key space every software context shares.
mod mr;
/// Queue pairs: create, query, the state machine of ibv_modify_qp, destroy, multicast.
mod qp;
/// Shared receive queues.
mod srq;

pub(in crate::backend::software) use mr::*;
#[cfg(test)]
pub(crate) use mr::{MrKeys, MAX_KEY_INDEX};
pub(in crate::backend::software) use qp::*;
pub(in crate::backend::software) use srq::*;

use super::data::{self, Queues, RecvWqe};
use super::events::{EventCounts, EventQueue};
use super::{give, rxe_round, sw_context, take, SwContext};
use crate::backend::Errno;
use crate::ffi::qp_attr_mask::{
    ACCESS_FLAGS, ALT_PATH, AV, CUR_STATE, DEST_QPN, EN_SQD_ASYNC_NOTIFY, MAX_DEST_RD_ATOMIC,
    MAX_QP_RD_ATOMIC, MIN_RNR_TIMER, PATH_MIG_STATE, PATH_MTU, PKEY_INDEX, PORT, QKEY, RETRY_CNT,
    RNR_RETRY, RQ_PSN, SQ_PSN, STATE, TIMEOUT,
};
use crate::ffi::sys;
use crate::sync::Mutex;
use std::collections::{HashSet, VecDeque};
use std::os::raw::{c_int, c_void};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};

/// `EBUSY` while another object still uses this one (its use count `u` is not 0), as the
/// verbs' destroy calls report it.
pub(super) fn unused(u: &AtomicU32) -> Result<(), Errno> {
    if u.load(Ordering::Acquire) != 0 {
        return Err(libc::EBUSY);
    }
    Ok(())
}

fn adjust(u: &AtomicU32, delta: i32) {
    if delta > 0 {
        u.fetch_add(1, Ordering::AcqRel);
    } else {
        u.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A PD or a parent domain (`parent` is the PD it wraps).
#[repr(C)]
struct SwPd {
    ibv: sys::ibv_pd,
    ctx: *mut SwContext,
    parent_of: *mut sys::ibv_pd,
    usecnt: AtomicU32,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwPd, ibv), 0);

/// # Safety
/// `ctx` live software context; `parent_of` null or a plain PD of it.
pub(super) unsafe fn alloc_pd(
    ctx: *mut sys::ibv_context,
    parent_of: *mut sys::ibv_pd,
) -> Result<NonNull<sys::ibv_pd>, Errno> {
    // SAFETY: caller's contract.
    let c = unsafe { sw_context(ctx) };
    take(&c.live.pds, c.config().max_objects)?;
    if !parent_of.is_null() {
        // SAFETY: caller's contract.
        unsafe { pd_use(parent_of, 1) };
    }
    let pd = Box::new(SwPd {
        ibv: sys::ibv_pd {
            context: ctx,
            handle: c.handle(),
        },
        ctx: ctx as *mut SwContext,
        parent_of,
        usecnt: AtomicU32::new(0),
    });
    // SAFETY: Box::into_raw is never null; `ibv` is at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(pd) as *mut sys::ibv_pd) })
}

/// The context of `pd`, and its software context.
///
/// # Safety
/// `pd` is a live software PD.
unsafe fn pd_context<'a>(pd: *mut sys::ibv_pd) -> (*mut sys::ibv_context, &'a SwContext) {
    // SAFETY: caller's contract.
    let ctx = unsafe { (*pd).context };
    // SAFETY: a live PD's context is a live software context.
    (ctx, unsafe { sw_context(ctx) })
}

/// Whether `pd` (a live software PD) is a parent domain.
pub(super) fn is_parent_domain(pd: *mut sys::ibv_pd) -> bool {
    // SAFETY: callers pass live software PDs.
    unsafe { !(*(pd as *mut SwPd)).parent_of.is_null() }
}

/// # Safety
/// `pd` live software PD.
pub(super) unsafe fn pd_use(pd: *mut sys::ibv_pd, delta: i32) {
    // SAFETY: caller's contract.
    adjust(unsafe { &(*(pd as *mut SwPd)).usecnt }, delta)
}

/// # Safety
/// `pd` live software PD.
pub(super) unsafe fn dealloc_pd(pd: *mut sys::ibv_pd) -> Result<(), Errno> {
    let sw = pd as *mut SwPd;
    // SAFETY: caller's contract.
    unsafe {
        unused(&(*sw).usecnt)?;
        if !(*sw).parent_of.is_null() {
            pd_use((*sw).parent_of, -1);
        }
        give(&(*(*sw).ctx).live.pds);
        drop(Box::from_raw(sw));
    }
    Ok(())
}

/// The kernel's checks of an address vector, in its order: the port (`rdma_check_ah_attr`:
/// EINVAL), a GRH on a RoCE port ("if (ah_attr->type == RDMA_AH_ATTR_TYPE_ROCE && !(ah_flags &
/// IB_AH_GRH)) return -EINVAL"), and the source GID entry (`rdma_get_gid_attr`: "if (index < 0
/// || index >= table->sz) return ERR_PTR(-EINVAL)", an entry that holds no GID -ENODATA).
/// `gids` is the length of the port's GID table.
pub(super) fn check_av(a: &sys::ibv_ah_attr, gids: u32) -> Result<(), Errno> {
    if a.port_num != 1 || a.is_global == 0 {
        return Err(libc::EINVAL);
    }
    super::gid_entry(a.grh.sgid_index.into(), gids).map(drop)
}

/// An address handle: the attributes it was created with, which a UD work request names.
///
/// rxe's provider puts only the AH's kernel index in a request, and the kernel looks the AH up
/// when it sends: a request whose AH was destroyed in the meantime fails (LOC_QP_OP_ERR). The
/// software device does the same by `id`, unique and never reused, which [`ah_live`] answers:
/// an extended QP's `wr_set_ud_addr` keeps a copy of the AH (`Copy`), never read after the AH
/// is gone but for its `id`.
#[repr(C)]
#[derive(Clone, Copy)]
pub(super) struct SwAh {
    ibv: sys::ibv_ah,
    ctx: *mut SwContext,
    pub(super) attr: sys::ibv_ah_attr,
    pub(super) id: u64,
}

/// The ids of the live AHs.
fn live_ahs() -> &'static Mutex<HashSet<u64>> {
    static LIVE: std::sync::OnceLock<Mutex<HashSet<u64>>> = std::sync::OnceLock::new();
    LIVE.get_or_init(|| Mutex::new(HashSet::new()))
}

/// Whether the AH `id` is still live (not destroyed).
pub(in crate::backend::software) fn ah_live(id: u64) -> bool {
    live_ahs().lock().contains(&id)
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwAh, ibv), 0);

/// # Safety
/// `pd` live software PD; `attr` readable.
pub(super) unsafe fn create_ah(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_ah_attr,
) -> Result<NonNull<sys::ibv_ah>, Errno> {
    // SAFETY: caller's contract.
    let ((ctx, c), a) = unsafe { (pd_context(pd), *attr) };
    if is_parent_domain(pd) {
        return Err(libc::EINVAL);
    }
    // As ib_uverbs_create_ah (`rdma_is_port_valid`) and rdma_create_user_ah's
    // rdma_fill_sgid_attr: the one port, on RoCE a GRH (rdma_check_ah_attr), and a source GID
    // index that holds a GID (rdma_get_gid_attr: EINVAL past the table, ENODATA for an empty
    // entry).
    check_av(&a, c.config().gid_tbl_len)?;
    take(&c.live.ahs, c.config().max_objects)?;
    // SAFETY: live PD.
    unsafe { pd_use(pd, 1) };
    static NEXT_ID: AtomicU64 = AtomicU64::new(1);
    let id = NEXT_ID.fetch_add(1, Ordering::Relaxed);
    let ah = Box::new(SwAh {
        ibv: sys::ibv_ah {
            context: ctx,
            pd,
            handle: c.handle(),
        },
        ctx: ctx as *mut SwContext,
        attr: a,
        id,
    });
    live_ahs().lock().insert(id);
    // SAFETY: Box::into_raw is never null; `ibv` at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(ah) as *mut sys::ibv_ah) })
}

/// # Safety
/// `ah` live software AH.
pub(super) unsafe fn destroy_ah(ah: *mut sys::ibv_ah) -> Result<(), Errno> {
    let sw = ah as *mut SwAh;
    // SAFETY: caller's contract. A work request copies what it needs of the AH when it is
    // posted (an extended QP's `wr_set_ud_addr` copies the AH itself), and checks by `id` that
    // the AH still lives: nothing reads the AH's memory afterwards.
    unsafe {
        live_ahs().lock().remove(&(*sw).id);
        pd_use((*sw).ibv.pd, -1);
        give(&(*(*sw).ctx).live.ahs);
        drop(Box::from_raw(sw));
    }
    Ok(())
}

/// A completion channel: its fd is the eventfd of its queue of completion events (the
/// addresses of the CQs they are for).
#[repr(C)]
struct SwChannel {
    ibv: sys::ibv_comp_channel,
    ctx: *mut SwContext,
    events: EventQueue<usize>,
    usecnt: AtomicU32,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwChannel, ibv), 0);

/// # Safety
/// `ctx` live software context.
pub(super) unsafe fn create_comp_channel(
    ctx: *mut sys::ibv_context,
) -> Result<NonNull<sys::ibv_comp_channel>, Errno> {
    // SAFETY: caller's contract.
    let c = unsafe { sw_context(ctx) };
    let events = EventQueue::new()?;
    take(&c.live.comp_channels, c.config().max_objects)?; // on error the eventfd is closed
    let ch = Box::new(SwChannel {
        ibv: sys::ibv_comp_channel {
            context: ctx,
            fd: events.raw_fd(),
            refcnt: 0,
        },
        ctx: ctx as *mut SwContext,
        events,
        usecnt: AtomicU32::new(0),
    });
    // SAFETY: Box::into_raw is never null; `ibv` is at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(ch) as *mut sys::ibv_comp_channel) })
}

/// # Safety
/// `ch` live software channel.
pub(super) unsafe fn channel_use(ch: *mut sys::ibv_comp_channel, delta: i32) {
    // SAFETY: caller's contract.
    adjust(unsafe { &(*(ch as *mut SwChannel)).usecnt }, delta)
}

/// Queues a completion event for `cq` on its channel `ch` (rxe's comp handler).
///
/// # Safety
/// `ch` live software channel, `cq` a live CQ of it.
pub(super) unsafe fn queue_cq_event(ch: *mut sys::ibv_comp_channel, cq: *mut sys::ibv_cq) {
    // SAFETY: caller's contract.
    unsafe { (*(ch as *mut SwChannel)).events.push(cq as usize) }
}

/// Drops the completion events of `cq` not yet read from `ch` (the CQ is being destroyed).
///
/// # Safety
/// `ch` live software channel.
pub(super) unsafe fn forget_cq_events(ch: *mut sys::ibv_comp_channel, cq: *mut sys::ibv_cq) {
    // SAFETY: caller's contract.
    unsafe {
        (*(ch as *mut SwChannel))
            .events
            .remove(|&e| e == cq as usize)
    }
}

/// `ibv_get_cq_event`: the next event's CQ and its `cq_context`, counted as read.
///
/// # Safety
/// `ch` live software channel.
pub(super) unsafe fn get_cq_event(
    ch: *mut sys::ibv_comp_channel,
) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno> {
    // SAFETY: caller's contract. A queued event's CQ is live: its destroy drops its events
    // from the queue under the queue's lock before it goes, and counting the event as read
    // under that lock makes the destroy wait for its ack.
    unsafe {
        let cq = (*(ch as *mut SwChannel))
            .events
            .pop(|&cq| super::cq::event_counts(cq as *mut sys::ibv_cq).comp_read())?
            as *mut sys::ibv_cq;
        Ok((NonNull::new_unchecked(cq), (*cq).cq_context))
    }
}

/// # Safety
/// `ch` live software channel.
pub(super) unsafe fn destroy_comp_channel(ch: *mut sys::ibv_comp_channel) -> Result<(), Errno> {
    let sw = ch as *mut SwChannel;
    // SAFETY: caller's contract.
    unsafe {
        // ibv_destroy_comp_channel(3): "fails if any CQs are still associated".
        unused(&(*sw).usecnt)?;
        give(&(*(*sw).ctx).live.comp_channels);
        drop(Box::from_raw(sw)); // closes the eventfd
    }
    Ok(())
}
