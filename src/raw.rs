//! The verbs below the typed layer, for conformance tests and for what the crate does not wrap.
//!
//! Each function is the libibverbs verb of the same name, dispatched to the backend of the
//! context the object belongs to: on a real device it is the libibverbs call itself, on the
//! software device the software provider's implementation. Failures are the errno the verb
//! reports. Nothing here checks the rules the typed layer enforces: that is the point (a test can
//! show that `ibv_destroy_cq` on a CQ a QP uses fails with EBUSY on both backends).
//!
//! # Safety
//! Every function is `unsafe` with the contract of the C verb: pointers are live objects of a
//! context opened by this crate (`Context::as_raw`), out-pointers are valid for writes, and an
//! object is not used after it was destroyed.
//!
//! Slot queues ([`crate::slots`]): every work request posted to a QP or SRQ in slot mode, and so
//! every completion on a [`SlotCq`](crate::SlotCq), carries a slot as its `wr_id`, which the
//! crate turns back into an owned `Slot` when it polls the completion. Posting to such a queue
//! through its raw pointer (`ibv_post_recv`, `ibv_post_srq_recv`, `ibv_post_send` of rdma-sys)
//! with any other `wr_id`, or polling a slot CQ through its raw pointer, violates this
//! contract.

#![allow(clippy::missing_safety_doc)]

use crate::backend;
use crate::ffi::{sys, RawAsyncEvent};
use std::os::raw::c_void;
use std::ptr::NonNull;

/// A verb's errno.
pub type Errno = i32;

/// `ibv_alloc_pd`.
pub unsafe fn ibv_alloc_pd(ctx: *mut sys::ibv_context) -> Result<NonNull<sys::ibv_pd>, Errno> {
    // SAFETY: the caller's contract (module docs).
    unsafe { backend::of(ctx).alloc_pd(ctx) }
}

/// `ibv_dealloc_pd`.
pub unsafe fn ibv_dealloc_pd(pd: *mut sys::ibv_pd) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).dealloc_pd(pd) }
}

/// `ibv_create_comp_channel`.
pub unsafe fn ibv_create_comp_channel(
    ctx: *mut sys::ibv_context,
) -> Result<NonNull<sys::ibv_comp_channel>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_comp_channel(ctx) }
}

/// `ibv_destroy_comp_channel`.
pub unsafe fn ibv_destroy_comp_channel(ch: *mut sys::ibv_comp_channel) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ch).context).destroy_comp_channel(ch) }
}

/// `ibv_create_cq`. A CQ given the channel of a typed [`CompChannel`](crate::CompChannel)
/// must not be made here if that channel's events are read with `CompChannel::get_cq_event`,
/// which reads the `cq_context` of the typed builders; read them with [`ibv_get_cq_event`].
pub unsafe fn ibv_create_cq(
    ctx: *mut sys::ibv_context,
    cqe: i32,
    cq_context: *mut c_void,
    channel: *mut sys::ibv_comp_channel,
    comp_vector: i32,
) -> Result<NonNull<sys::ibv_cq>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_cq(ctx, cqe, cq_context, channel, comp_vector) }
}

/// `ibv_create_cq_ex`.
pub unsafe fn ibv_create_cq_ex(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_cq_init_attr_ex,
) -> Result<NonNull<sys::ibv_cq_ex>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_cq_ex(ctx, attr) }
}

/// `ibv_destroy_cq` (an extended CQ through `ibv_cq_ex_to_cq`).
pub unsafe fn ibv_destroy_cq(cq: *mut sys::ibv_cq) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::event::destroy_cq(cq) }
}

/// `ibv_get_cq_event`: the CQ of the next completion event on `ch` and its `cq_context`.
/// Blocks unless the channel's fd is O_NONBLOCK (then EAGAIN when none waits).
pub unsafe fn ibv_get_cq_event(
    ch: *mut sys::ibv_comp_channel,
) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ch).context).get_cq_event(ch) }
}

/// `ibv_ack_cq_events`: acks `n` events of `cq` got with [`ibv_get_cq_event`].
/// `ibv_destroy_cq` waits until every event got is acked.
pub unsafe fn ibv_ack_cq_events(cq: *mut sys::ibv_cq, n: u32) {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*cq).context).ack_cq_events(cq, n) }
}

/// `ibv_get_async_event`. Blocks unless the context's async fd is O_NONBLOCK.
///
/// The event is a [`RawAsyncEvent`], rdma-sys's `ibv_async_event` with `event_type` as an
/// integer: a type newer than the build's headers would be undefined behaviour in rdma-sys's
/// Rust enum.
pub unsafe fn ibv_get_async_event(
    ctx: *mut sys::ibv_context,
    event: *mut RawAsyncEvent,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).get_async_event(ctx, event) }
}

/// `ibv_ack_async_event`: acks an event got with [`ibv_get_async_event`]; the destroy verb of
/// the object it names waits for it.
pub unsafe fn ibv_ack_async_event(event: *mut RawAsyncEvent) {
    use crate::ffi::event_type::*;
    // SAFETY: the caller's contract: an event got and not acked, whose object is live; the
    // union member read is the one its type names.
    unsafe {
        let ctx = match (*event).event_type {
            CQ_ERR => (*(*event).element.cq).context,
            SRQ_ERR | SRQ_LIMIT_REACHED => (*(*event).element.srq).context,
            QP_FATAL | QP_REQ_ERR | QP_ACCESS_ERR | COMM_EST | SQ_DRAINED | PATH_MIG
            | PATH_MIG_ERR | QP_LAST_WQE_REACHED => (*(*event).element.qp).context,
            // A WQ's event (only rdma-core has WQs), a port's or the device's, which
            // libibverbs acks by doing nothing (so does the software device), or a type newer
            // than the build's headers, which only libibverbs knows.
            _ => return sys::ibv_ack_async_event(event.cast()),
        };
        backend::of(ctx).ack_async_event(event)
    }
}

/// `ibv_modify_srq`.
pub unsafe fn ibv_modify_srq(
    srq: *mut sys::ibv_srq,
    attr: *mut sys::ibv_srq_attr,
    mask: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*srq).context).modify_srq(srq, attr, mask) }
}

/// `ibv_create_srq`.
pub unsafe fn ibv_create_srq(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> Result<NonNull<sys::ibv_srq>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_srq(pd, attr) }
}

/// `ibv_destroy_srq`.
pub unsafe fn ibv_destroy_srq(srq: *mut sys::ibv_srq) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::event::destroy_srq(srq) }
}

/// `ibv_create_qp`.
pub unsafe fn ibv_create_qp(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> Result<NonNull<sys::ibv_qp>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_qp(pd, attr) }
}

/// `ibv_modify_qp`.
pub unsafe fn ibv_modify_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).modify_qp(qp, attr, mask) }
}

/// `ibv_query_gid`.
pub unsafe fn ibv_query_gid(
    ctx: *mut sys::ibv_context,
    port: u8,
    index: i32,
    out: *mut sys::ibv_gid,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).query_gid(ctx, port, index, out) }
}

/// `ibv_destroy_qp`.
pub unsafe fn ibv_destroy_qp(qp: *mut sys::ibv_qp) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::event::destroy_qp(qp) }
}

/// `ibv_query_qp`: every attribute the provider reports, whatever `mask` asks for.
pub unsafe fn ibv_query_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: i32,
    init: *mut sys::ibv_qp_init_attr,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).query_qp(qp, attr, mask, init) }
}

/// `ibv_reg_mr`. The caller keeps `[addr, addr + len)` allocated until `ibv_dereg_mr`.
pub unsafe fn ibv_reg_mr(
    pd: *mut sys::ibv_pd,
    addr: *mut c_void,
    len: usize,
    access: i32,
) -> Result<NonNull<sys::ibv_mr>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).reg_mr(pd, addr, len, access) }
}

/// `ibv_dereg_mr`.
pub unsafe fn ibv_dereg_mr(mr: *mut sys::ibv_mr) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*mr).context).dereg_mr(mr) }
}

/// `ibv_create_ah`.
pub unsafe fn ibv_create_ah(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_ah_attr,
) -> Result<NonNull<sys::ibv_ah>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_ah(pd, attr) }
}

/// `ibv_destroy_ah`.
pub unsafe fn ibv_destroy_ah(ah: *mut sys::ibv_ah) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ah).context).destroy_ah(ah) }
}

/// `ibv_attach_mcast`.
pub unsafe fn ibv_attach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    lid: u16,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).attach_mcast(qp, gid, lid) }
}

/// `ibv_detach_mcast`.
pub unsafe fn ibv_detach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    lid: u16,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).detach_mcast(qp, gid, lid) }
}
