//! Destroying a QP: explicit destroy, Drop, and teardowns a batch end runs.

use super::*;

impl<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize> Destroy
    for Qp<'_, T, R, S, C, St, SGE>
{
    unsafe fn destroy_raw(&self) -> Result<(), Error> {
        // SAFETY: a live QP made by the builder with `C`, destroyed once.
        unsafe { destroy_checked(self.as_raw()) }
    }
    fn leftover(&self) -> Leftover {
        // SAFETY: a live QP made by the builder with `C`.
        Leftover::user_box::<QpMeta<C>>(unsafe { (*self.as_raw()).qp_context })
    }
}

impl<T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize> Drop
    for Qp<'_, T, R, S, C, St, SGE>
{
    fn drop(&mut self) {
        // SAFETY: dropped once: a live QP made by the builder with `C`, whose handle is gone.
        unsafe { drop_qp::<C>(self.as_raw()) }
    }
}

/// Detaches `qp` from `groups` (the ones that fail stay in it) and destroys it. Every group is
/// tried: a device may already have dropped one (rxe keeps one attachment per gid where the
/// kernel keeps one per gid and lid); what is still attached after this makes
/// `ibv_destroy_qp` fail with EBUSY, reported. Runs no user code.
///
/// # Safety
/// `qp` is a live QP, destroyed at most once.
unsafe fn destroy_with_groups(
    qp: *mut sys::ibv_qp,
    groups: &mut Vec<(Gid, u16)>,
) -> Result<(), Error> {
    // SAFETY: caller's contract.
    let backend = unsafe { backend::of((*qp).context) };
    groups.retain(|&(gid, lid)| {
        let g = gid.to_sys();
        // SAFETY: a live QP; `g` valid for the call.
        unsafe { backend.detach_mcast(qp, &g, lid) }.is_err()
    });
    // SAFETY: a live QP, destroyed at most once (caller's contract); a group still attached
    // makes the destroy fail with EBUSY, which is reported.
    unsafe { crate::raw::destroying::destroy_qp(qp) }.map_err(|e| Error::os(Verb::DestroyQp, e))
}

/// Destroys `qp`: refused with [`ErrorKind::BatchOpen`] inside a polling batch (it would wait
/// for the CQ locks, see [`crate::object::teardown`]); otherwise, once the batch in progress on its
/// CQ(s) has ended (the gates; refused after a second of waiting), the multicast groups still attached
/// (never left) are detached first, then `ibv_destroy_qp`. Runs no user code; the user
/// context is the caller's to free (its `Leftover`) once the handle is disarmed.
///
/// # Safety
/// `qp` is a live QP made by this crate's builder, destroyed at most once.
unsafe fn destroy_checked(qp: *mut sys::ibv_qp) -> Result<(), Error> {
    let busy = Error {
        verb: Verb::DestroyQp,
        kind: ErrorKind::BatchOpen,
    };
    if teardown::inside_batch() {
        return Err(busy);
    }
    // A batch another thread has open on one of its CQs holds the lock the destroy takes: waited
    // for, one CQ at a time (crate::object::teardown's gates), for at most `TEARDOWN_WAIT`.
    // SAFETY: caller's contract: a live QP, whose CQs live; out of any batch (checked above).
    let gates = unsafe { teardown::close_gates_waiting(cqs_of(qp)) }.ok_or(busy)?;
    // SAFETY: caller's contract.
    let r = unsafe { destroy_with_groups(qp, &mut groups_of(qp).lock()) };
    drop(gates);
    r
}

/// A live QP's send and receive CQs.
///
/// # Safety
/// `qp` is live.
pub(crate) unsafe fn cqs_of(qp: *mut sys::ibv_qp) -> [*mut sys::ibv_cq; 2] {
    // SAFETY: caller's contract; the fields are fixed at creation.
    unsafe { [(*qp).send_cq, (*qp).recv_cq] }
}

/// What waits with a C QP whose destroy waits (for this thread's batch, or another thread's):
/// the groups left, and what keeps its PD, CQs and SRQ alive, released only after the QP is
/// destroyed.
struct PendingDestroy {
    groups: Vec<(Gid, u16)>,
    keep: [Keep; 4],
}

/// A waiting QP's destroy, once nothing holds its CQs' locks: then its parents' release (not
/// here, among teardowns: releasing one may run a user context's `Drop`; crate::object::teardown).
///
/// # Safety
/// `qp` is a live QP and `rest` its boxed `PendingDestroy`, each used once here; the QP's CQs' gates are
/// closed to batches.
unsafe fn later(qp: *mut c_void, rest: *mut c_void) {
    // SAFETY: caller's contract.
    unsafe {
        let mut rest = Box::from_raw(rest as *mut PendingDestroy);
        if destroy_with_groups(qp.cast(), &mut rest.groups).is_ok() {
            teardown::release_after(std::mem::replace(&mut rest.keep, Keep::NONE_4));
        } else {
            // Still alive: it keeps its parents for good.
            std::mem::forget(rest);
        }
    }
}

/// [`later`] at the end of the batch the QP waited for (this thread's, or another thread's it
/// was handed to): once the QP's CQs' gates are closed, waiting for the batch in progress on
/// its other CQ as an explicit destroy does, so that it is not handed between two busy CQs for
/// ever; handed on to that batch only if it lasts longer than `TEARDOWN_WAIT`.
///
/// # Safety
/// As [`later`]'s, but for the gates; on a thread out of any batch (a batch's end runs it).
unsafe fn later_gated(qp: *mut c_void, rest: *mut c_void) {
    let q = qp.cast::<sys::ibv_qp>();
    // SAFETY: caller's contract: a live QP of a live context, whose CQs live until it is
    // destroyed (its parents, held by `rest` or borrowed, wait behind it); run at a batch's
    // end, out of it.
    unsafe { teardown::run_at_batch_end(later_teardown(q, rest)) };
}

/// The teardown of `qp` by [`later`], [`later_gated`] first where it waits for a batch's end.
///
/// # Safety
/// `qp` is a live QP made by the builder; `rest` its [`into_later`].
unsafe fn later_teardown(qp: *mut sys::ibv_qp, rest: *mut c_void) -> teardown::QpTeardown {
    teardown::QpTeardown {
        // SAFETY: caller's contract: a live QP.
        ctx: unsafe { (*qp).context },
        // SAFETY: as above.
        cqs: unsafe { cqs_of(qp) },
        run: later,
        gated: later_gated,
        a: qp.cast(),
        b: rest,
    }
}

/// Moves the groups and the parents out of a dropped QP's meta: what its waiting destroy
/// needs, boxed. The rest of the meta (the user context) is the caller's to free, after the
/// QP is queued or handed on, so that a panicking user context loses nothing.
///
/// # Safety
/// `meta` is the QP's `QpMeta<C>`, ours since the handle is gone.
unsafe fn into_later<C>(meta: *mut QpMeta<C>) -> *mut c_void {
    // SAFETY: caller's contract.
    let rest = unsafe {
        PendingDestroy {
            groups: std::mem::take(&mut *(*meta).mcast.lock()),
            keep: std::mem::replace(&mut (*meta).keep, Keep::NONE_4),
        }
    };
    Box::into_raw(Box::new(rest)).cast()
}

/// A QP's `Drop`: tears it down and frees its user context. Inside a polling batch the
/// destroy waits for the batch's end; while another thread's batch holds one of its CQs'
/// locks, for that batch's end ([`crate::object::teardown`]). A waiting QP's user context is dropped
/// at once, since it may borrow what the closure frees next.
///
/// # Safety
/// `qp` is a live QP made by the builder with user context `C`, whose handle is gone; called
/// once.
unsafe fn drop_qp<C>(qp: *mut sys::ibv_qp) {
    // SAFETY: caller's contract.
    let (meta, ctx) = unsafe { ((*qp).qp_context as *mut QpMeta<C>, (*qp).context) };
    if teardown::inside_batch() {
        // SAFETY: the meta is the QP's, ours since the handle is gone. The QP, its groups and
        // its parents' references are the queue's until `later_gated` runs (nothing else can
        // destroy the QP: its handle is gone).
        unsafe {
            let rest = into_later(meta);
            teardown::defer(ctx, later_gated, qp.cast(), rest);
            drop(Box::from_raw(meta)); // the user context, once the QP is queued
        }
        return;
    }
    // SAFETY: caller's contract: its CQs live while it does.
    match unsafe { teardown::close_gates(cqs_of(qp)) } {
        Ok(gates) => {
            let left = Leftover::user_box::<QpMeta<C>>(meta.cast());
            // SAFETY: caller's contract; an error cannot be reported from drop (use `destroy`),
            // and the user context then stays with the live QP.
            let destroyed = unsafe { destroy_with_groups(qp, &mut groups_of(qp).lock()) };
            drop(gates);
            if destroyed.is_ok() {
                // SAFETY: the QP is destroyed and its handle gone; freed once.
                unsafe { left.free() };
            }
        }
        Err(_) => {
            // Another thread's batch holds one of its CQs' locks: destroyed after that batch.
            // SAFETY: as in the batch branch; `run_or_hand` runs it now or hands it on.
            let ran = unsafe {
                let ran = teardown::run_or_hand(later_teardown(qp, into_later(meta)));
                drop(Box::from_raw(meta)); // the user context, once the QP is handed on
                ran
            };
            if ran {
                teardown::release_now();
            }
        }
    }
}
