//! Shared receive queues.

use super::*;

/// A shared receive queue.
#[repr(C)]
pub(in crate::backend::software) struct SwSrq {
    pub(in crate::backend::software) ibv: sys::ibv_srq,
    ctx: *mut SwContext,
    /// As ibv_query_srq reports it: `max_wr` is the ring's size.
    pub(in crate::backend::software) attr: Mutex<sys::ibv_srq_attr>,
    pub(super) usecnt: AtomicU32,
    /// The posted receives.
    pub(in crate::backend::software) rq: Mutex<VecDeque<RecvWqe>>,
    /// Async events of this SRQ read and acked.
    events: EventCounts,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwSrq, ibv), 0);

impl SwSrq {
    /// Called after a receive was taken from the SRQ, with the number left: as rxe's
    /// get_srq_wqe, an armed limit that the count fell below is disarmed and raises
    /// IBV_EVENT_SRQ_LIMIT_REACHED.
    pub(in crate::backend::software) fn taken(&self, left: usize) {
        let fire = {
            let mut a = self.attr.lock();
            let fire = a.srq_limit != 0 && left < a.srq_limit as usize;
            if fire {
                a.srq_limit = 0;
            }
            fire
        };
        if fire {
            // SAFETY: a live SRQ's context is live.
            unsafe { &*self.ctx }.raise(
                crate::ffi::event_type::SRQ_LIMIT_REACHED,
                self as *const SwSrq as usize,
            );
        }
    }
}

/// The read/ack counts of a software SRQ's async events.
///
/// # Safety
/// `srq` live software SRQ.
pub(in crate::backend::software) unsafe fn srq_event_counts<'a>(
    srq: *mut sys::ibv_srq,
) -> &'a EventCounts {
    // SAFETY: caller's contract.
    unsafe { &(*(srq as *mut SwSrq)).events }
}

/// # Safety
/// `pd` live software PD; `attr` valid for reads and writes.
pub(in crate::backend::software) unsafe fn create_srq(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> Result<NonNull<sys::ibv_srq>, Errno> {
    // SAFETY: caller's contract.
    let ((ctx, c), a) = unsafe { (pd_context(pd), &mut *attr) };
    let cfg = c.config();
    // rxe_srq_chk_init: "max_wr(%d) > max_srq_wr(%d)", "max_wr(%d) <= 0" and
    // "max_sge(%d) > max_srq_sge(%d)" are -EINVAL.
    if a.attr.max_wr == 0 || a.attr.max_wr > cfg.max_srq_wr || a.attr.max_sge > cfg.max_srq_sge {
        return Err(libc::EINVAL);
    }
    take(&c.live.srqs, cfg.max_objects)?;
    // As rxe: at least one SGE; ibv_create_srq reports max_wr as asked, while ibv_query_srq
    // reports the ring's size (max_wr rounded up).
    a.attr.max_sge = a.attr.max_sge.max(1);
    let queried = sys::ibv_srq_attr {
        max_wr: rxe_round(a.attr.max_wr),
        ..a.attr
    };
    // SAFETY: live PD.
    unsafe { pd_use(pd, 1) };
    // SAFETY: ibv_srq is plain C data (zeroed pthread objects are their static initializers).
    let mut ibv: sys::ibv_srq = unsafe { std::mem::zeroed() };
    ibv.context = ctx;
    ibv.srq_context = a.srq_context;
    ibv.pd = pd;
    ibv.handle = c.handle();
    let srq = Box::new(SwSrq {
        ibv,
        ctx: ctx as *mut SwContext,
        attr: Mutex::new(queried),
        usecnt: AtomicU32::new(0),
        rq: Mutex::new(VecDeque::new()),
        events: EventCounts::default(),
    });
    // SAFETY: Box::into_raw is never null; `ibv` at offset 0.
    Ok(unsafe { NonNull::new_unchecked(Box::into_raw(srq) as *mut sys::ibv_srq) })
}

/// # Safety
/// `srq` live software SRQ; `out` valid for writes.
pub(in crate::backend::software) unsafe fn query_srq(
    srq: *mut sys::ibv_srq,
    out: *mut sys::ibv_srq_attr,
) -> Result<(), Errno> {
    // SAFETY: caller's contract.
    unsafe { out.write(*(*(srq as *mut SwSrq)).attr.lock()) };
    Ok(())
}

/// `enum ibv_srq_attr_mask`.
const SRQ_MAX_WR: i32 = 1 << 0;
const SRQ_LIMIT: i32 = 1 << 1;

/// `ibv_modify_srq`, as rxe's (rxe_srq_chk_attr, rxe_srq_from_attr): `srq_limit` up to the
/// ring's present size arms the limit event (0 disarms it); `max_wr` resizes the ring, which
/// must still hold the receives posted and stay at or above the limit armed before the call. Bits of `mask` other
/// than those two change nothing.
///
/// # Safety
/// `srq` live software SRQ; `attr` readable.
pub(in crate::backend::software) unsafe fn modify_srq(
    srq: *mut sys::ibv_srq,
    attr: *mut sys::ibv_srq_attr,
    mask: i32,
) -> Result<(), Errno> {
    // SAFETY: caller's contract.
    let (sw, a) = unsafe { (&*(srq as *const SwSrq), *attr) };
    // Other mask bits are ignored, as the kernel (ib_uverbs_modify_srq, rxe_srq_chk_attr) and
    // rxe's provider ignore them.
    // SAFETY: a live SRQ's context is live.
    let max_srq_wr = unsafe { &*sw.ctx }.config().max_srq_wr;
    // Receives are taken under the fabric lock: the ring does not change while this looks.
    let _fabric = data::lock();
    let posted = sw.rq.lock().len();
    let mut cur = sw.attr.lock();
    // rxe_srq_chk_attr checks both against the SRQ as it is before the change: the new
    // max_wr against the limit armed now ("srq->limit && (attr->max_wr < srq->limit)"), the
    // new limit against the ring of now ("attr->srq_limit > srq->rq.queue->buf->index_mask");
    // rxe_srq_from_attr then resizes and arms.
    let ring = if mask & SRQ_MAX_WR != 0 {
        let limit = cur.srq_limit;
        if a.max_wr == 0 || a.max_wr > max_srq_wr || (limit != 0 && a.max_wr < limit) {
            return Err(libc::EINVAL);
        }
        rxe_round(a.max_wr)
    } else {
        cur.max_wr
    };
    if mask & SRQ_LIMIT != 0 && (a.srq_limit > max_srq_wr || a.srq_limit > cur.max_wr) {
        return Err(libc::EINVAL);
    }
    // rxe_queue_resize: the posted receives must fit the new ring.
    if (ring as usize) < posted {
        return Err(libc::EINVAL);
    }
    cur.max_wr = ring;
    if mask & SRQ_LIMIT != 0 {
        cur.srq_limit = a.srq_limit;
    }
    Ok(())
}

/// # Safety
/// `srq` live software SRQ.
pub(in crate::backend::software) unsafe fn destroy_srq(
    srq: *mut sys::ibv_srq,
) -> Result<(), Errno> {
    let sw = srq as *mut SwSrq;
    // SAFETY: caller's contract.
    unsafe {
        // ibv_destroy_srq(3): "fails if any queue pair is still associated with this SRQ".
        unused(&(*sw).usecnt)?;
        // No QP uses it, so no new event can come: drop the unread ones, wait for the acks.
        (*(*sw).ctx).forget_async_events(sw as usize);
        (*sw).events.wait_balanced();
        pd_use((*sw).ibv.pd, -1);
        give(&(*(*sw).ctx).live.srqs);
        drop(Box::from_raw(sw));
    }
    Ok(())
}
