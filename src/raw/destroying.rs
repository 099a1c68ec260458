//! The destroy verbs of the objects async events name (CQ, QP, SRQ), above the backends.
//!
//! `ibv_destroy_cq`, `ibv_destroy_qp` and `ibv_destroy_srq` wait until the async events of
//! their object that were got are acked (`ibv_ack_async_event`), and a guard that holds such
//! an event may be held by the very thread that destroys. So every destroy of one of them,
//! the typed layer's and [`raw`](crate::raw)'s, goes through [`destroying`]: it acks the
//! events of the object that are still held first, and while it runs an event of the object
//! got on another thread is acked at once, so the destroy never waits on a guard.
//!
//! This module knows an event only as something to ack ([`Ack`]): the events themselves, and
//! their guards, are [`crate::event`]'s, which sits above every object.

use crate::backend;
use crate::ffi::sys;
use crate::sync::Mutex;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::sync::{Arc, OnceLock};

/// An async event got and not yet acked: acked once, by its guard or by its object's destroy,
/// whichever comes first (the implementation makes the second a no-op).
pub(crate) trait Ack: Send + Sync {
    /// `ibv_ack_async_event`, unless it was done already.
    fn ack(&self);
}

/// What is known of one object's async events.
#[derive(Default)]
struct HeldEvents {
    /// The events guards hold.
    slots: Vec<Arc<dyn Ack>>,
    /// Destroys of the object in progress: an event of it got meanwhile is acked at once.
    destroying: u32,
}

/// The async events held by guards, by the address of the object they name, so that the
/// object's destroy can ack them first.
fn held() -> &'static Mutex<HashMap<usize, HeldEvents>> {
    static HELD: OnceLock<Mutex<HashMap<usize, HeldEvents>>> = OnceLock::new();
    HELD.get_or_init(Default::default)
}

/// An event of `object` was got and is held by a guard: kept until [`release`], so that the
/// object's destroy acks it first; acked now if a destroy of the object is in progress (it
/// waits for that ack).
pub(crate) fn hold(object: usize, slot: Arc<dyn Ack>) {
    let mut held = held().lock();
    let h = held.entry(object).or_default();
    if h.destroying > 0 {
        slot.ack();
    } else {
        h.slots.push(slot);
    }
}

/// The guard of the event `slot` (its address) of `object` is gone (it acked it).
pub(crate) fn release(object: usize, slot: *const ()) {
    let mut held = held().lock();
    if let Some(h) = held.get_mut(&object) {
        h.slots.retain(|s| Arc::as_ptr(s).cast::<()>() != slot);
        if h.slots.is_empty() && h.destroying == 0 {
            held.remove(&object);
        }
    }
}

/// Runs `destroy`, the destroy verb of `object` (a CQ, QP or SRQ), after acking the async
/// events of it that guards still hold (see the module's docs). Every destroy of a CQ, QP or
/// SRQ goes through here ([`destroy_cq`], [`destroy_srq`], [`destroy_qp`]).
pub(crate) fn destroying<R>(object: *mut c_void, destroy: impl FnOnce() -> R) -> R {
    let key = object as usize;
    let slots = {
        let mut held = held().lock();
        let h = held.entry(key).or_default();
        h.destroying += 1;
        std::mem::take(&mut h.slots)
    };
    for s in slots {
        s.ack();
    }
    let r = destroy();
    let mut held = held().lock();
    if let Some(h) = held.get_mut(&key) {
        h.destroying -= 1;
        if h.destroying == 0 && h.slots.is_empty() {
            held.remove(&key);
        }
    }
    r
}

/// `ibv_destroy_cq` through the CQ's backend, inside [`destroying`]: the async events (CQ_ERR)
/// of the CQ that guards still hold are acked first, as the destroy waits for them. Every
/// destroy of a CQ goes through here, the typed layer's and [`raw`](crate::raw)'s.
///
/// # Safety
/// `cq` is a live CQ (an extended one through `ibv_cq_ex_to_cq`), not used after a destroy that
/// succeeded.
pub(crate) unsafe fn destroy_cq(cq: *mut sys::ibv_cq) -> std::result::Result<(), backend::Errno> {
    destroying(cq.cast(), || {
        // SAFETY: caller's contract.
        unsafe { backend::of((*cq).context).destroy_cq(cq) }
    })
}

/// `ibv_destroy_srq` through the SRQ's backend, inside [`destroying`] (as [`destroy_cq`]).
///
/// # Safety
/// `srq` is a live SRQ, not used after a destroy that succeeded.
pub(crate) unsafe fn destroy_srq(
    srq: *mut sys::ibv_srq,
) -> std::result::Result<(), backend::Errno> {
    destroying(srq.cast(), || {
        // SAFETY: caller's contract.
        unsafe { backend::of((*srq).context).destroy_srq(srq) }
    })
}

/// `ibv_destroy_qp` through the QP's backend, inside [`destroying`] (as [`destroy_cq`]).
///
/// # Safety
/// `qp` is a live QP, not used after a destroy that succeeded.
pub(crate) unsafe fn destroy_qp(qp: *mut sys::ibv_qp) -> std::result::Result<(), backend::Errno> {
    destroying(qp.cast(), || {
        // SAFETY: caller's contract.
        unsafe { backend::of((*qp).context).destroy_qp(qp) }
    })
}
