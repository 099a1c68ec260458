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
//!
//! ```
//! use typed_verbs::{raw, Context};
//! let ctx = Context::open("sw0")?;
//! // SAFETY: a live context of this crate; the PD is deallocated once and not used after.
//! unsafe {
//!     let pd = raw::ibv_alloc_pd(ctx.as_raw()).expect("ibv_alloc_pd");
//!     raw::ibv_dealloc_pd(pd.as_ptr()).expect("ibv_dealloc_pd");
//! }
//! # Ok::<(), typed_verbs::Error>(())
//! ```

#![allow(clippy::missing_safety_doc)]

pub(crate) mod destroying;

use crate::backend;
use crate::ffi::{sys, RawAsyncEvent};
use std::os::raw::c_void;
use std::ptr::NonNull;

/// A verb's errno.
///
/// ```
/// fn describe(e: typed_verbs::raw::Errno) -> String {
///     std::io::Error::from_raw_os_error(e).to_string()
/// }
/// assert!(!describe(libc::EBUSY).is_empty());
/// ```
pub type Errno = i32;

/// `ibv_alloc_pd`.
///
/// # Errors
/// The verb's errno: `ENOMEM` when the device is out of PDs or memory.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// raw::ibv_dealloc_pd(pd).expect("ibv_dealloc_pd");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_alloc_pd(ctx: *mut sys::ibv_context) -> Result<NonNull<sys::ibv_pd>, Errno> {
    // SAFETY: the caller's contract (module docs).
    unsafe { backend::of(ctx).alloc_pd(ctx) }
}

/// `ibv_dealloc_pd`.
///
/// # Errors
/// The verb's errno: `EBUSY` while an object still uses the PD.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// raw::ibv_dealloc_pd(pd).expect("ibv_dealloc_pd");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_dealloc_pd(pd: *mut sys::ibv_pd) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).dealloc_pd(pd) }
}

/// `ibv_create_comp_channel`.
///
/// # Errors
/// The verb's errno: `EMFILE`/`ENFILE` when no fd is left, `ENOMEM`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// let ch = raw::ibv_create_comp_channel(c).expect("ibv_create_comp_channel").as_ptr();
/// raw::ibv_destroy_comp_channel(ch).expect("ibv_destroy_comp_channel");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_comp_channel(
    ctx: *mut sys::ibv_context,
) -> Result<NonNull<sys::ibv_comp_channel>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_comp_channel(ctx) }
}

/// `ibv_destroy_comp_channel`.
///
/// # Errors
/// The verb's errno: `EBUSY` while a CQ still uses the channel ("ibv_destroy_comp_channel() fails if any CQs are still associated with the completion event channel").
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let ch = raw::ibv_create_comp_channel(c).unwrap().as_ptr();
/// let cq = raw::ibv_create_cq(c, 4, std::ptr::null_mut(), ch, 0).unwrap().as_ptr();
/// assert_eq!(raw::ibv_destroy_comp_channel(ch), Err(libc::EBUSY));
/// raw::ibv_destroy_cq(cq).unwrap();
/// raw::ibv_destroy_comp_channel(ch).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_destroy_comp_channel(ch: *mut sys::ibv_comp_channel) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ch).context).destroy_comp_channel(ch) }
}

/// `ibv_create_cq`. A CQ given the channel of a typed [`CompChannel`](crate::cq::channel::CompChannel)
/// must not be made here if that channel's events are read with `CompChannel::get_cq_event`,
/// which reads the `cq_context` of the typed builders; read them with [`ibv_get_cq_event`].
///
/// # Errors
/// The verb's errno: `EINVAL` for `cqe` outside 1..=`max_cqe` or `comp_vector` at or past `num_comp_vectors`, `ENOMEM` when out of resources.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// assert_eq!(raw::ibv_create_cq(c, 0, std::ptr::null_mut(), std::ptr::null_mut(), 0).err(), Some(libc::EINVAL));
/// let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// raw::ibv_destroy_cq(cq).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
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
///
/// # Errors
/// The verb's errno: `EOPNOTSUPP` for a `wc_flags` bit, create flag or parent domain the device lacks, `EINVAL` for `cqe` or `comp_vector` out of range, `ENOMEM`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// let mut attr: sys::ibv_cq_init_attr_ex = std::mem::zeroed();
/// (attr.cqe, attr.wc_flags) = (16, typed_verbs::cq_ex::flags::STANDARD);
/// let cq = raw::ibv_create_cq_ex(c, &mut attr).expect("ibv_create_cq_ex").as_ptr();
/// raw::ibv_destroy_cq(cq.cast()).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_cq_ex(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_cq_init_attr_ex,
) -> Result<NonNull<sys::ibv_cq_ex>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_cq_ex(ctx, attr) }
}

/// `ibv_destroy_cq` (an extended CQ through `ibv_cq_ex_to_cq`).
///
/// # Errors
/// The verb's errno: `EBUSY` while a QP still uses the CQ ("ibv_destroy_cq() fails if any queue pair is still associated with this CQ").
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// raw::ibv_destroy_cq(cq).expect("ibv_destroy_cq");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_destroy_cq(cq: *mut sys::ibv_cq) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::raw::destroying::destroy_cq(cq) }
}

/// `ibv_get_cq_event`: the CQ of the next completion event on `ch` and its `cq_context`.
/// Blocks unless the channel's fd is O_NONBLOCK (then EAGAIN when none waits).
///
/// # Errors
/// The verb's errno: `EAGAIN` on an O_NONBLOCK channel without an event; otherwise the errno of reading the channel's fd.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let ch = raw::ibv_create_comp_channel(c).unwrap().as_ptr();
/// libc::fcntl((*ch).fd, libc::F_SETFL, libc::O_NONBLOCK);
/// assert_eq!(raw::ibv_get_cq_event(ch).err(), Some(libc::EAGAIN)); // no event
/// raw::ibv_destroy_comp_channel(ch).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_get_cq_event(
    ch: *mut sys::ibv_comp_channel,
) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ch).context).get_cq_event(ch) }
}

/// `ibv_ack_cq_events`: acks `n` events of `cq` got with [`ibv_get_cq_event`].
/// `ibv_destroy_cq` waits until every event got is acked.
///
/// ```
/// # use typed_verbs::{raw, software, CompChannel, Context, CqEx, InjectedCompletion, Standard, WcOpcode};
/// let ctx = Context::open("sw0")?;
/// let c = ctx.as_raw();
/// // SAFETY: a live CQ of this context, destroyed once.
/// unsafe {
///     let cq = raw::ibv_create_cq(c, 4, std::ptr::null_mut(), std::ptr::null_mut(), 0).unwrap().as_ptr();
///     // After `let (cq, _) = raw::ibv_get_cq_event(ch)?`, each event is acked once:
///     raw::ibv_ack_cq_events(cq, 0); // (acking none is allowed too)
///     raw::ibv_destroy_cq(cq).unwrap();
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_ack_cq_events(cq: *mut sys::ibv_cq, n: u32) {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*cq).context).ack_cq_events(cq, n) }
}

/// `ibv_get_async_event`. Blocks unless the context's async fd is O_NONBLOCK.
///
/// The event is a [`RawAsyncEvent`], rdma-sys's `ibv_async_event` with `event_type` as an
/// integer: a type newer than the build's headers would be undefined behaviour in rdma-sys's
/// Rust enum.
///
/// # Errors
/// The verb's errno: `EAGAIN` on an O_NONBLOCK async fd without an event; otherwise the errno of reading it.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// libc::fcntl((*c).async_fd, libc::F_SETFL, libc::O_NONBLOCK);
/// let mut ev = typed_verbs::ffi::RawAsyncEvent::zeroed();
/// assert_eq!(raw::ibv_get_async_event(c, &mut ev), Err(libc::EAGAIN));
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_get_async_event(
    ctx: *mut sys::ibv_context,
    event: *mut RawAsyncEvent,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).get_async_event(ctx, event) }
}

/// `ibv_ack_async_event`: acks an event got with [`ibv_get_async_event`]; the destroy verb of
/// the object it names waits for it.
///
/// ```
/// use typed_verbs::{ffi::{event_type, RawAsyncEvent}, raw, software, Context};
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, event_type::PORT_ERR, 1)?;
/// let mut ev = RawAsyncEvent::zeroed();
/// // SAFETY: a live context; `ev` was got and is acked once.
/// unsafe {
///     raw::ibv_get_async_event(ctx.as_raw(), &mut ev).unwrap();
///     raw::ibv_ack_async_event(&mut ev);
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
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
///
/// # Errors
/// The verb's errno: `EINVAL` for a limit above the SRQ's ring or a mask the device refuses.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let mut sattr: sys::ibv_srq_init_attr = std::mem::zeroed();
/// # (sattr.attr.max_wr, sattr.attr.max_sge) = (16, 1);
/// # let srq = raw::ibv_create_srq(pd, &mut sattr).expect("ibv_create_srq").as_ptr();
/// let mut a = sys::ibv_srq_attr { max_wr: 0, max_sge: 0, srq_limit: 4 };
/// raw::ibv_modify_srq(srq, &mut a, sys::ibv_srq_attr_mask::IBV_SRQ_LIMIT.0 as i32).expect("ibv_modify_srq");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_modify_srq(
    srq: *mut sys::ibv_srq,
    attr: *mut sys::ibv_srq_attr,
    mask: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*srq).context).modify_srq(srq, attr, mask) }
}

/// `ibv_create_srq`.
///
/// # Errors
/// The verb's errno: `EINVAL` for `max_wr` or `max_sge` out of the device's range (rxe: `max_wr` 0 too), `ENOMEM`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// let mut sattr: sys::ibv_srq_init_attr = std::mem::zeroed();
/// (sattr.attr.max_wr, sattr.attr.max_sge) = (16, 1);
/// let srq = raw::ibv_create_srq(pd, &mut sattr).expect("ibv_create_srq").as_ptr();
/// raw::ibv_destroy_srq(srq).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_srq(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_srq_init_attr,
) -> Result<NonNull<sys::ibv_srq>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_srq(pd, attr) }
}

/// `ibv_destroy_srq`.
///
/// # Errors
/// The verb's errno: `EBUSY` while a QP still uses the SRQ ("ibv_destroy_srq() fails if any queue pair is still associated with this SRQ").
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let mut sattr: sys::ibv_srq_init_attr = std::mem::zeroed();
/// # (sattr.attr.max_wr, sattr.attr.max_sge) = (16, 1);
/// # let srq = raw::ibv_create_srq(pd, &mut sattr).expect("ibv_create_srq").as_ptr();
/// raw::ibv_destroy_srq(srq).expect("ibv_destroy_srq");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_destroy_srq(srq: *mut sys::ibv_srq) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::raw::destroying::destroy_srq(srq) }
}

/// `ibv_create_qp`.
///
/// # Errors
/// The verb's errno: `EINVAL` for caps over the device's limits or a type/SRQ combination it refuses, `EOPNOTSUPP` for a QP type it lacks, `ENOMEM`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// assert!((*qp).qp_num > 0);
/// raw::ibv_destroy_qp(qp).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_qp(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> Result<NonNull<sys::ibv_qp>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_qp(pd, attr) }
}

/// `ibv_modify_qp`.
///
/// # Errors
/// The verb's errno: `EINVAL` for a transition or attribute the device refuses (the kernel's state table), `ENODATA` for a GID index rxe lacks.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// # let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// # (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// # init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// # let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// let mut a: sys::ibv_qp_attr = std::mem::zeroed();
/// (a.qp_state, a.port_num, a.qkey) = (sys::ibv_qp_state::IBV_QPS_INIT, 1, 0x11);
/// let mask = sys::ibv_qp_attr_mask::IBV_QP_STATE.0 | sys::ibv_qp_attr_mask::IBV_QP_PKEY_INDEX.0
///     | sys::ibv_qp_attr_mask::IBV_QP_PORT.0 | sys::ibv_qp_attr_mask::IBV_QP_QKEY.0;
/// raw::ibv_modify_qp(qp, &mut a, mask as i32).expect("RESET->INIT");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_modify_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).modify_qp(qp, attr, mask) }
}

/// `ibv_query_gid`.
///
/// # Errors
/// The verb's errno: `EINVAL` for a port or index the device lacks.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// let mut gid = sys::ibv_gid { raw: [0; 16] };
/// raw::ibv_query_gid(c, 1, 0, &mut gid).expect("ibv_query_gid");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
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
///
/// # Errors
/// The verb's errno: `EBUSY` while the QP is attached to a multicast group ("ibv_destroy_qp() fails if the QP is attached to a multicast group").
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// # let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// # (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// # init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// # let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// raw::ibv_destroy_qp(qp).expect("ibv_destroy_qp");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_destroy_qp(qp: *mut sys::ibv_qp) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { crate::raw::destroying::destroy_qp(qp) }
}

/// `ibv_query_qp`: every attribute the provider reports, whatever `mask` asks for.
///
/// # Errors
/// The verb's errno: the provider's errno.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// # let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// # (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// # init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// # let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// let (mut a, mut i): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) = (std::mem::zeroed(), std::mem::zeroed());
/// raw::ibv_query_qp(qp, &mut a, sys::ibv_qp_attr_mask::IBV_QP_STATE.0 as i32, &mut i).expect("ibv_query_qp");
/// assert_eq!(a.qp_state, sys::ibv_qp_state::IBV_QPS_RESET);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
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
///
/// # Errors
/// The verb's errno: `EINVAL` for access flags the device refuses (remote write without local write), `ENOMEM` when out of regions or pinnable memory.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// let mut buf = vec![0u8; 4096];
/// let mr = raw::ibv_reg_mr(pd, buf.as_mut_ptr().cast(), buf.len(), 1).expect("ibv_reg_mr").as_ptr();
/// raw::ibv_dereg_mr(mr).unwrap(); // before `buf` goes
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_reg_mr(
    pd: *mut sys::ibv_pd,
    addr: *mut c_void,
    len: usize,
    access: i32,
) -> Result<NonNull<sys::ibv_mr>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).reg_mr(pd, addr, len, addr as u64, access) }
}

/// `ibv_dereg_mr`.
///
/// # Errors
/// The verb's errno: the provider's errno (`EBUSY` for a region a memory window is bound to).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// let mut buf = vec![0u8; 64];
/// let mr = raw::ibv_reg_mr(pd, buf.as_mut_ptr().cast(), buf.len(), 0).unwrap().as_ptr();
/// raw::ibv_dereg_mr(mr).expect("ibv_dereg_mr");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_dereg_mr(mr: *mut sys::ibv_mr) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*mr).context).dereg_mr(mr) }
}

/// `ibv_create_ah`.
///
/// # Errors
/// The verb's errno: `EINVAL` for an address the port refuses (no global route on RoCE), `ENODATA` for a GID index rxe lacks, `ENOMEM`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// let mut dgid = sys::ibv_gid { raw: [0; 16] };
/// raw::ibv_query_gid(c, 1, 0, &mut dgid).unwrap();
/// let mut av: sys::ibv_ah_attr = std::mem::zeroed();
/// (av.is_global, av.port_num, av.grh.dgid, av.grh.hop_limit) = (1, 1, dgid, 1);
/// let ah = raw::ibv_create_ah(pd, &mut av).expect("ibv_create_ah").as_ptr();
/// raw::ibv_destroy_ah(ah).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_ah(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_ah_attr,
) -> Result<NonNull<sys::ibv_ah>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*pd).context).create_ah(pd, attr) }
}

/// `ibv_destroy_ah`.
///
/// # Errors
/// The verb's errno: the provider's errno.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// let mut dgid = sys::ibv_gid { raw: [0; 16] };
/// raw::ibv_query_gid(c, 1, 0, &mut dgid).unwrap();
/// let mut av: sys::ibv_ah_attr = std::mem::zeroed();
/// (av.is_global, av.port_num, av.grh.dgid, av.grh.hop_limit) = (1, 1, dgid, 1);
/// let ah = raw::ibv_create_ah(pd, &mut av).unwrap().as_ptr();
/// raw::ibv_destroy_ah(ah).expect("ibv_destroy_ah");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_destroy_ah(ah: *mut sys::ibv_ah) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*ah).context).destroy_ah(ah) }
}

/// `ibv_attach_mcast`.
///
/// # Errors
/// The verb's errno: `EINVAL` for a QP that is not UD or a GID that is not multicast, `ENOMEM` past `max_mcast_qp_attach`.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// # let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// # (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// # init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// # let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// let group = sys::ibv_gid { raw: [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] };
/// raw::ibv_attach_mcast(qp, &group, 0).expect("ibv_attach_mcast");
/// assert_eq!(raw::ibv_destroy_qp(qp), Err(libc::EBUSY)); // attached
/// raw::ibv_detach_mcast(qp, &group, 0).unwrap();
/// raw::ibv_destroy_qp(qp).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_attach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    lid: u16,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).attach_mcast(qp, gid, lid) }
}

/// `ibv_detach_mcast`.
///
/// # Errors
/// The verb's errno: `EINVAL` for a group the QP has not joined (rxe).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// # let mut init: sys::ibv_qp_init_attr = std::mem::zeroed();
/// # (init.send_cq, init.recv_cq, init.qp_type) = (cq, cq, sys::ibv_qp_type::IBV_QPT_UD);
/// # init.cap = sys::ibv_qp_cap { max_send_wr: 1, max_recv_wr: 1, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// # let qp = raw::ibv_create_qp(pd, &mut init).expect("ibv_create_qp").as_ptr();
/// # let group = sys::ibv_gid { raw: [0xff, 0x0e, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1] };
/// # raw::ibv_attach_mcast(qp, &group, 0).unwrap();
/// raw::ibv_detach_mcast(qp, &group, 0).expect("ibv_detach_mcast");
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_detach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    lid: u16,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of((*qp).context).detach_mcast(qp, gid, lid) }
}

// ---------------------------------------------------------------------------------------------
// The connection manager (librdmacm's verbs, rdma_cm(7)).
//
// Dispatched by the event channel: a channel made for a software context is the software
// device's connection manager's, and so are its ids and events; any other is librdmacm's. As
// everywhere in the crate, ids never get a librdmacm QP (`id->qp` stays NULL): the program
// builds its QP itself and moves it with `rdma_init_qp_attr`'s attributes, so an RC connect is
// answered by RDMA_CM_EVENT_CONNECT_RESPONSE, to which the active side replies with
// `rdma_establish`.
//
// The contract is the C verbs': pointers are live objects of the same connection manager,
// events are acked once, ids are destroyed once (their reported events acked, or the destroy
// waits), and a channel is destroyed after its ids.
// ---------------------------------------------------------------------------------------------

/// `rdma_create_event_channel`, for the device of `ctx`: the software device's connection
/// manager for a software context, librdmacm's otherwise. The channel's fd (`ch->fd`) is
/// readable while an event waits; it blocks `rdma_get_cm_event` unless set O_NONBLOCK.
///
/// # Errors
/// `ENODEV` where the kernel has no rdma_ucm (librdmacm), `EMFILE`/`ENFILE` when no fd is
/// left, `ENOMEM`.
///
/// A whole exchange on the software device, a connect to a port nobody listens on:
///
/// ```
/// use std::ptr;
/// use typed_verbs::{ffi::sys, raw, Context};
/// use sys::rdma_cm_event_type::*;
/// let ctx = Context::open("sw0")?;
/// // SAFETY: live objects, each event acked once, the id destroyed before its channel.
/// unsafe {
///     let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
///     let id = raw::rdma_create_id(ch, ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///         .expect("id").as_ptr();
///     let mut dst: libc::sockaddr_in = std::mem::zeroed();
///     dst.sin_family = libc::AF_INET as libc::sa_family_t;
///     dst.sin_port = 7174u16.to_be();
///     dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
///     raw::rdma_resolve_addr(id, ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 2000)
///         .expect("resolve_addr");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_ADDR_RESOLVED);
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     raw::rdma_resolve_route(id, 2000).expect("resolve_route");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_ROUTE_RESOLVED);
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     let mut param: sys::rdma_conn_param = std::mem::zeroed();
///     param.qp_num = 1;
///     raw::rdma_connect(id, &mut param).expect("connect");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_REJECTED);
///     assert_eq!((*ev).status, 8); // IB_CM_REJ_INVALID_SERVICE_ID
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     raw::rdma_destroy_id(id).expect("destroy_id");
///     raw::rdma_destroy_event_channel(ch);
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_create_event_channel(
    ctx: *mut sys::ibv_context,
) -> Result<NonNull<sys::rdma_event_channel>, Errno> {
    // SAFETY: the caller's contract (a live context of this crate).
    let cm = unsafe { backend::cm_of(ctx) }.ok_or(libc::EOPNOTSUPP)?;
    // SAFETY: as above.
    unsafe { cm.create_event_channel(ctx) }
}

/// `rdma_destroy_event_channel`: after every id of the channel was destroyed.
///
/// ```
/// # use typed_verbs::{raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_destroy_event_channel(ch: *mut sys::rdma_event_channel) {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).destroy_event_channel(ch) }
}

/// `rdma_create_id` on `ch` with the port space `ps` (`RDMA_PS_TCP`: RC, `RDMA_PS_UDP`: UD);
/// `context` is returned in `id->context`.
///
/// # Errors
/// `ENOMEM`; on the software device `EOPNOTSUPP` for another port space.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP)
///     .expect("id").as_ptr();
/// assert_eq!((*id).qp_type, sys::ibv_qp_type::IBV_QPT_UD);
/// raw::rdma_destroy_id(id).expect("destroy");
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_create_id(
    ch: *mut sys::rdma_event_channel,
    context: *mut c_void,
    ps: sys::rdma_port_space::Type,
) -> Result<NonNull<sys::rdma_cm_id>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).create_id(ch, context, ps) }
}

/// The connection manager of a live id.
unsafe fn cm_of_id(id: *mut sys::rdma_cm_id) -> &'static dyn backend::CmPath {
    // SAFETY: the caller's contract: a live id, whose channel is live.
    unsafe { backend::cm_of_channel((*id).channel) }
}

/// `rdma_destroy_id`: blocks until every event reported for the id was acked. Destroying a
/// connected RC id disconnects its peer (RDMA_CM_EVENT_DISCONNECTED there); one still
/// connecting rejects the peer.
///
/// # Errors
/// The verb's errno.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///     .expect("id").as_ptr();
/// raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_destroy_id(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).destroy_id(id) }
}

/// `rdma_bind_addr` (`sockaddr_in` or `sockaddr_in6`; port 0 takes an ephemeral port).
///
/// # Errors
/// `EADDRINUSE` for an address and port already bound, `EADDRNOTAVAIL` for a non-local address
/// (or a port bound on the wildcard), `EINVAL` for an id already bound.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///     .expect("id").as_ptr();
/// let mut a: libc::sockaddr_in = std::mem::zeroed();
/// a.sin_family = libc::AF_INET as libc::sa_family_t;
/// raw::rdma_bind_addr(id, &mut a as *mut _ as *mut libc::sockaddr).expect("bind");
/// assert_ne!((*id).route.addr.src_addr_union.src_sin.sin_port, 0); // ephemeral
/// raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_bind_addr(
    id: *mut sys::rdma_cm_id,
    addr: *mut libc::sockaddr,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).bind_addr(id, addr) }
}

/// `rdma_resolve_addr`: RDMA_CM_EVENT_ADDR_RESOLVED or RDMA_CM_EVENT_ADDR_ERROR follows.
///
/// # Errors
/// `ENETUNREACH` for a destination without a route, `EINVAL` in the wrong state or for
/// addresses of two families.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000)
///     .expect("resolve_addr");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// assert_eq!((*ev).event, sys::rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED);
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_resolve_addr(
    id: *mut sys::rdma_cm_id,
    src: *mut libc::sockaddr,
    dst: *mut libc::sockaddr,
    timeout_ms: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).resolve_addr(id, src, dst, timeout_ms) }
}

/// `rdma_resolve_route`: RDMA_CM_EVENT_ROUTE_RESOLVED or RDMA_CM_EVENT_ROUTE_ERROR follows.
/// The id's address must be resolved (RDMA_CM_EVENT_ADDR_RESOLVED read): librdmacm reads the
/// id's device and crashes on an id without one.
///
/// # Errors
/// `EINVAL` in another state (where librdmacm does not crash first).
///
/// See [`rdma_create_event_channel`] for a whole exchange.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// # let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// # dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// # dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// # raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000).expect("resolve");
/// # raw::rdma_ack_cm_event(raw::rdma_get_cm_event(ch).expect("event").as_ptr()).expect("ack");
/// raw::rdma_resolve_route(id, 1000).expect("resolve_route");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// assert_eq!((*ev).event, sys::rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED);
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_resolve_route(id: *mut sys::rdma_cm_id, timeout_ms: i32) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).resolve_route(id, timeout_ms) }
}

/// `rdma_listen`: connect requests arrive as RDMA_CM_EVENT_CONNECT_REQUEST with a new id.
///
/// # Errors
/// `EINVAL` in the wrong state; the errors of `rdma_bind_addr` for an id not yet bound.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// raw::rdma_listen(id, 4).expect("listen"); // on the IPv4 wildcard, an ephemeral port
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_listen(id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).listen(id, backlog) }
}

/// `rdma_connect` with `param.qp_num` naming the caller's QP: RDMA_CM_EVENT_CONNECT_RESPONSE
/// (RC) or RDMA_CM_EVENT_ESTABLISHED (UD), or REJECTED / UNREACHABLE / CONNECT_ERROR follows.
///
/// An RC (`RDMA_PS_TCP`) id's route must be resolved: librdmacm checks `param`'s resources
/// against the id's device, and crashes on an id without one.
///
/// # Errors
/// `EINVAL` in the wrong state, for too much private data (RC 56 bytes, UD 180) or
/// resources beyond the device's.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP).expect("id").as_ptr();
/// let mut param: sys::rdma_conn_param = std::mem::zeroed();
/// assert_eq!(raw::rdma_connect(id, &mut param), Err(libc::EINVAL)); // no route yet
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_connect(
    id: *mut sys::rdma_cm_id,
    param: *mut sys::rdma_conn_param,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).connect(id, param) }
}

/// `rdma_accept` on the new id of a connect request (`param.qp_num` names the caller's QP).
///
/// An RC id must be one from a connect request (librdmacm reads its device, as for
/// [`rdma_connect`]).
///
/// # Errors
/// `EINVAL` in the wrong state, or for too much private data (RC 196 bytes, UD 136: then the
/// request is rejected too).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP).expect("id").as_ptr();
/// let mut param: sys::rdma_conn_param = std::mem::zeroed();
/// assert_eq!(raw::rdma_accept(id, &mut param), Err(libc::EINVAL)); // no request
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_accept(
    id: *mut sys::rdma_cm_id,
    param: *mut sys::rdma_conn_param,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).accept(id, param) }
}

/// `rdma_reject` with `len` bytes of private data at `data`: the peer gets
/// RDMA_CM_EVENT_REJECTED with status 28 (IB_CM_REJ_CONSUMER_DEFINED) for RC,
/// RDMA_CM_EVENT_UNREACHABLE with status 2 (IB_SIDR_REJECT) for UD.
///
/// # Errors
/// `EINVAL` without a request to reject, or for more than 148 bytes (UD 136).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_reject(id, std::ptr::null(), 0), Err(libc::EINVAL)); // no request
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_reject(
    id: *mut sys::rdma_cm_id,
    data: *const c_void,
    len: u8,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).reject(id, data, len) }
}

/// `rdma_establish`: the active side's RTU after RDMA_CM_EVENT_CONNECT_RESPONSE (its QP in
/// RTS); the passive side gets RDMA_CM_EVENT_ESTABLISHED.
///
/// # Errors
/// `EINVAL` unless a connect response was received.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_establish(id), Err(libc::EINVAL));
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_establish(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).establish(id) }
}

/// `rdma_disconnect`: both sides get RDMA_CM_EVENT_DISCONNECTED (the peer at once, this side
/// when the peer answers with its own disconnect or destroy). No QP is touched.
///
/// # Errors
/// `EINVAL` for an id that never connected.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_disconnect(id), Err(libc::EINVAL));
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_disconnect(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).disconnect(id) }
}

/// `rdma_init_qp_attr`: the attributes and mask that move a QP of this connection to
/// `attr.qp_state` (set by the caller).
///
/// # Errors
/// `EINVAL` for an id without a device, or a state the connection cannot give yet.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// let mut attr: sys::ibv_qp_attr = std::mem::zeroed();
/// attr.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
/// let mut mask = 0;
/// assert_eq!(raw::rdma_init_qp_attr(id, &mut attr, &mut mask), Err(libc::EINVAL)); // unbound
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_init_qp_attr(
    id: *mut sys::rdma_cm_id,
    attr: *mut sys::ibv_qp_attr,
    mask: *mut i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).init_qp_attr(id, attr, mask) }
}

/// `rdma_get_cm_event`: the next event of the channel, valid (with its private data) until
/// [`rdma_ack_cm_event`]. Blocks unless the channel's fd is O_NONBLOCK.
///
/// # Errors
/// `EAGAIN` on an O_NONBLOCK channel without an event.
///
/// ```
/// # use typed_verbs::{raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let fl = libc::fcntl((*ch).fd, libc::F_GETFL);
/// libc::fcntl((*ch).fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
/// assert_eq!(raw::rdma_get_cm_event(ch).err(), Some(libc::EAGAIN));
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_get_cm_event(
    ch: *mut sys::rdma_event_channel,
) -> Result<NonNull<sys::rdma_cm_event>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).get_cm_event(ch) }
}

/// `rdma_ack_cm_event`: frees the event (once).
///
/// # Errors
/// `EINVAL` for NULL.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// # let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// # dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// # dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// # raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000).expect("resolve");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_ack_cm_event(event: *mut sys::rdma_cm_event) -> Result<(), Errno> {
    if event.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller's contract: an unacked event, whose id (and so its channel) is live.
    unsafe { cm_of_id((*event).id).ack_cm_event(event) }
}
