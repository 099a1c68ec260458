//! libibverbs' verbs, as C names them, each dispatched to its context's backend.

use super::*;

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

/// `ibv_create_qp_ex` (verbs.h): with `comp_mask == IBV_QP_INIT_ATTR_PD` the legacy
/// `ibv_create_qp` (whose attributes are the prefix of `attr`); otherwise the provider's
/// `create_qp_ex`. With `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS` the QP is an extended one
/// ([`ibv_qp_to_qp_ex`]), which posts through the `ibv_wr_*` operations of ibv_wr_post(3) as
/// well as through `ibv_post_send`. `attr.pd` is the QP's PD, of `ctx`. [`ibv_destroy_qp`]
/// destroys it.
///
/// # Errors
/// The verb's errno: `EOPNOTSUPP` for a provider without `create_qp_ex`, a `comp_mask` bit or
/// a send operation it does not support for the QP type (and, on the software device, an empty
/// `send_ops_flags`); `EINVAL` without `IBV_QP_INIT_ATTR_PD` or as [`ibv_create_qp`].
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # let c = ctx.as_raw();
/// # unsafe {
/// # let pd = raw::ibv_alloc_pd(c).expect("ibv_alloc_pd").as_ptr();
/// # let cq = raw::ibv_create_cq(c, 16, std::ptr::null_mut(), std::ptr::null_mut(), 0).expect("ibv_create_cq").as_ptr();
/// let mut init: sys::ibv_qp_init_attr_ex = std::mem::zeroed();
/// (init.send_cq, init.recv_cq, init.qp_type, init.pd) = (cq, cq, sys::ibv_qp_type::IBV_QPT_RC, pd);
/// init.cap = sys::ibv_qp_cap { max_send_wr: 4, max_recv_wr: 4, max_send_sge: 1, max_recv_sge: 1, max_inline_data: 0 };
/// init.comp_mask = sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0
///     | sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
/// init.send_ops_flags = sys::ibv_qp_create_send_ops_flags::IBV_QP_EX_WITH_SEND.0.into();
/// let qp = raw::ibv_create_qp_ex(c, &mut init).expect("ibv_create_qp_ex").as_ptr();
/// let qpx = raw::ibv_qp_to_qp_ex(qp).expect("an extended QP");
/// assert!(qpx.as_ref().wr_send.is_some() && qpx.as_ref().wr_rdma_write.is_none());
/// raw::ibv_destroy_qp(qp).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_create_qp_ex(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_qp_init_attr_ex,
) -> Result<NonNull<sys::ibv_qp>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::of(ctx).create_qp_ex(ctx, attr) }
}

/// `ibv_qp_to_qp_ex`: the QP's `struct ibv_qp_ex` (the same memory: its `qp_base` is the QP),
/// or `None` for a QP not created with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`. Its operations are the
/// provider's; those not set are NULL (on rxe and the software device, the builders of the
/// operations not asked for).
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
/// assert!(raw::ibv_qp_to_qp_ex(qp).is_none(), "a legacy QP");
/// raw::ibv_destroy_qp(qp).unwrap();
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn ibv_qp_to_qp_ex(qp: *mut sys::ibv_qp) -> Option<NonNull<sys::ibv_qp_ex>> {
    // SAFETY: the caller's contract.
    NonNull::new(unsafe { backend::of((*qp).context).qp_to_qp_ex(qp) })
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
