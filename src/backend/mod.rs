//! The control-path seam. Every create/destroy/query/modify verb goes through [`ControlPath`];
//! the implementation is chosen by the context an object belongs to, which is fixed when the
//! context is opened. No other module knows which backend it runs on.
//!
//! The data path (`ibv_poll_cq`, `ibv_start_poll`/`ibv_wc_read_*`, `ibv_req_notify_cq`,
//! `ibv_post_*`) does not come through here: it calls the function pointers in the C structures
//! (`ibv_context.ops`, `ibv_cq_ex`), which both backends fill, so that code is the same for both.
//! Events do: `ibv_get_cq_event`/`ibv_ack_cq_events` on a completion channel's fd and
//! `ibv_get_async_event`/`ibv_ack_async_event` on the context's async fd are libibverbs
//! functions, not provider ops, so the software device answers them here.
//!
//! Every method is `unsafe`: the pointers passed must be live objects of the backend's context,
//! and out-pointers must be valid for writes. Errors are errnos.
//!
//! The backends are a layer below the typed layer: they use only the C side (`ffi`, `sync`,
//! `dma`) and each other, never a typed-layer module (tests/layering.rs checks the sources).
//! The typed layer reaches the software provider only through this module: [`of`], the
//! software device list and opening ([`software_devices`], [`open_software`]) and
//! [`is_software`]. Its test hooks are the one exception, in the public `typed_verbs::software`
//! (src/software.rs).

pub(crate) mod rdma_core;
#[cfg(feature = "software-device")]
pub(crate) mod software;

use crate::ffi::sys;
use std::os::raw::c_void;
use std::ptr::NonNull;
#[cfg(feature = "software-device")]
use std::sync::Arc;

#[cfg(feature = "software-device")]
pub(crate) use software::SwDevice;

/// A verb's errno: what both backends report, and the raw verbs return
/// ([`typed_verbs::raw::Errno`](crate::raw::Errno)).
///
/// ```
/// fn describe(e: typed_verbs::raw::Errno) -> String {
///     std::io::Error::from_raw_os_error(e).to_string()
/// }
/// assert!(!describe(libc::EBUSY).is_empty());
/// ```
pub type Errno = i32;

/// Provider bugs in the extended QP's setters (`ibv_wr_post(3)`) that the typed layer works
/// around or refuses, so that it never corrupts a work request. The typed QP builder asks once
/// per extended QP (`ControlPath::qp_ex_quirks`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct QpExQuirks {
    /// `wr_set_sge_list` sets the request's length to `num_sge * sg_list[0].length` (rxe's
    /// provider before rdma-core 64, fixed by 406cd2ad0): a list is right only when every SGE
    /// has the first one's length.
    pub(crate) sge_list_sums_first: bool,
    /// `wr_set_inline_data_list` never adds up its buffers (rxe's provider before rdma-core
    /// 64, 1e8ed0aff): it can copy past its WQE. The typed layer never calls it; recorded for
    /// the raw layer's documentation and tests.
    pub(crate) inline_list_overflows: bool,
}

/// What both backends provide. The method names are the verbs'.
#[allow(clippy::missing_safety_doc)]
pub(crate) trait ControlPath: Sync {
    unsafe fn close_device(&self, ctx: *mut sys::ibv_context) -> Result<(), Errno>;
    unsafe fn query_device(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut sys::ibv_device_attr,
    ) -> Result<(), Errno>;
    unsafe fn query_port(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        out: *mut sys::ibv_port_attr,
    ) -> Result<(), Errno>;
    unsafe fn alloc_pd(&self, ctx: *mut sys::ibv_context) -> Result<NonNull<sys::ibv_pd>, Errno>;
    unsafe fn alloc_parent_domain(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_parent_domain_init_attr,
    ) -> Result<NonNull<sys::ibv_pd>, Errno>;
    unsafe fn dealloc_pd(&self, pd: *mut sys::ibv_pd) -> Result<(), Errno>;
    /// `ibv_reg_mr_iova2`: `[addr, addr + len)` registered and addressed by work requests as
    /// `[iova, iova + len)` (`ibv_reg_mr` is `iova == addr`).
    unsafe fn reg_mr(
        &self,
        pd: *mut sys::ibv_pd,
        addr: *mut c_void,
        len: usize,
        iova: u64,
        access: i32,
    ) -> Result<NonNull<sys::ibv_mr>, Errno>;
    unsafe fn dereg_mr(&self, mr: *mut sys::ibv_mr) -> Result<(), Errno>;
    unsafe fn create_comp_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::ibv_comp_channel>, Errno>;
    unsafe fn destroy_comp_channel(&self, ch: *mut sys::ibv_comp_channel) -> Result<(), Errno>;
    unsafe fn create_cq(
        &self,
        ctx: *mut sys::ibv_context,
        cqe: i32,
        cq_context: *mut c_void,
        channel: *mut sys::ibv_comp_channel,
        comp_vector: i32,
    ) -> Result<NonNull<sys::ibv_cq>, Errno>;
    unsafe fn create_cq_ex(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_cq_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_cq_ex>, Errno>;
    /// The provider workarounds a typed extended CQ needs, installed just after its creation
    /// (the raw layer's `ibv_create_cq_ex` gets the provider as it is). Nothing by default.
    ///
    /// # Safety
    /// `cq` was just created on the live context `ctx` and is not shared yet.
    unsafe fn cq_ex_workarounds(&self, ctx: *mut sys::ibv_context, cq: NonNull<sys::ibv_cq_ex>) {
        let _ = (ctx, cq);
    }
    unsafe fn destroy_cq(&self, cq: *mut sys::ibv_cq) -> Result<(), Errno>;
    /// `ibv_get_cq_event`: the CQ of the next completion event on `ch` and its `cq_context`.
    /// Blocks unless the channel's fd is O_NONBLOCK (then EAGAIN when there is none).
    unsafe fn get_cq_event(
        &self,
        ch: *mut sys::ibv_comp_channel,
    ) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno>;
    /// `ibv_ack_cq_events`.
    unsafe fn ack_cq_events(&self, cq: *mut sys::ibv_cq, n: u32);
    /// `ibv_get_async_event`: blocks unless the context's async fd is O_NONBLOCK.
    unsafe fn get_async_event(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut crate::ffi::RawAsyncEvent,
    ) -> Result<(), Errno>;
    /// `ibv_ack_async_event`.
    unsafe fn ack_async_event(&self, ev: *mut crate::ffi::RawAsyncEvent);
    unsafe fn create_srq(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_srq_init_attr,
    ) -> Result<NonNull<sys::ibv_srq>, Errno>;
    unsafe fn modify_srq(
        &self,
        srq: *mut sys::ibv_srq,
        attr: *mut sys::ibv_srq_attr,
        mask: i32,
    ) -> Result<(), Errno>;
    unsafe fn query_srq(
        &self,
        srq: *mut sys::ibv_srq,
        out: *mut sys::ibv_srq_attr,
    ) -> Result<(), Errno>;
    unsafe fn destroy_srq(&self, srq: *mut sys::ibv_srq) -> Result<(), Errno>;
    unsafe fn create_qp(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_qp_init_attr,
    ) -> Result<NonNull<sys::ibv_qp>, Errno>;
    /// `ibv_create_qp_ex` (verbs.h): with `comp_mask == IBV_QP_INIT_ATTR_PD` the legacy
    /// `ibv_create_qp`; otherwise the provider's `create_qp_ex`, or EOPNOTSUPP when it has none.
    /// `attr.pd` is the QP's PD, of `ctx`.
    unsafe fn create_qp_ex(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_qp_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_qp>, Errno>;
    /// `ibv_qp_to_qp_ex`: the QP's `struct ibv_qp_ex`, or NULL when it was not created as an
    /// extended QP (no `VERBS_QP_EX`).
    unsafe fn qp_to_qp_ex(&self, qp: *mut sys::ibv_qp) -> *mut sys::ibv_qp_ex;
    /// What the provider of `ctx` gets wrong in the extended QP's setters, which the typed
    /// layer must avoid. Nothing by default.
    unsafe fn qp_ex_quirks(&self, ctx: *mut sys::ibv_context) -> QpExQuirks {
        let _ = ctx;
        QpExQuirks::default()
    }
    unsafe fn query_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
        init: *mut sys::ibv_qp_init_attr,
    ) -> Result<(), Errno>;
    unsafe fn modify_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
    ) -> Result<(), Errno>;
    unsafe fn destroy_qp(&self, qp: *mut sys::ibv_qp) -> Result<(), Errno>;
    unsafe fn create_ah(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_ah_attr,
    ) -> Result<NonNull<sys::ibv_ah>, Errno>;
    unsafe fn destroy_ah(&self, ah: *mut sys::ibv_ah) -> Result<(), Errno>;
    unsafe fn query_gid(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        index: i32,
        out: *mut sys::ibv_gid,
    ) -> Result<(), Errno>;
    unsafe fn attach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno>;
    unsafe fn detach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno>;
}

/// The connection manager's seam: librdmacm's verbs (rdma_cm(7)), as [`ControlPath`] is
/// libibverbs'. A backend is chosen per event channel ([`cm_of`]) and every id made on the
/// channel, and every event read from it, belongs to that backend.
///
/// The shapes are librdmacm's, on its C structures (`rdma_event_channel`, `rdma_cm_id`,
/// `rdma_cm_event`, `rdma_conn_param`), with one rule both backends follow: an id never has a
/// QP of librdmacm's own (`id->qp` stays NULL; the typed layer builds the QP with the crate's
/// builder and moves it through the states with `rdma_init_qp_attr`'s attributes). So, as
/// rdma_cm(7) and rdma_connect(3) say for ids without a QP:
/// - an RC connect's reply is `RDMA_CM_EVENT_CONNECT_RESPONSE` on the active side, after which
///   the program moves its QP to RTR and RTS and calls `rdma_establish` (which sends the RTU; the
///   passive side then gets `RDMA_CM_EVENT_ESTABLISHED`);
/// - `rdma_accept` and `rdma_disconnect` do not touch any QP (the caller moves its own);
/// - a UD (`RDMA_PS_UDP`) connect is a SIDR exchange: the passive side gets
///   `RDMA_CM_EVENT_CONNECT_REQUEST`, its `rdma_accept` answers, and the active side gets
///   `RDMA_CM_EVENT_ESTABLISHED` with `param.ud` (the peer's QP number, Q_Key and address).
///
/// `id->verbs` is not read by the typed layer (the software backend leaves it NULL): the device
/// an id is bound to is compared with a context by [`CmPath::same_device`].
///
/// Every method is `unsafe`: pointers must be live objects of this backend (a channel from its
/// `create_event_channel`, ids from its `create_id` or from its `RDMA_CM_EVENT_CONNECT_REQUEST`
/// events, events from its `get_cm_event` not yet acked), addresses valid `sockaddr_in` or
/// `sockaddr_in6`, and out-pointers valid for writes. Errors are errnos.
#[allow(clippy::missing_safety_doc)]
pub(crate) trait CmPath: Sync {
    /// `rdma_create_event_channel`. `ctx` is the context the channel was opened for: the
    /// software backend resolves the channel's addresses to that context's device; librdmacm
    /// ignores it (the kernel resolves an address to whichever device owns it).
    unsafe fn create_event_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::rdma_event_channel>, Errno>;
    /// `rdma_destroy_event_channel`. The caller has destroyed every id of the channel first
    /// (rdma_destroy_event_channel(3): "All rdma_cm_id's associated with the event channel must
    /// be destroyed, and all returned events must be acked before calling this function").
    unsafe fn destroy_event_channel(&self, ch: *mut sys::rdma_event_channel);
    /// `rdma_create_id` with the port space `ps` (`RDMA_PS_TCP` for RC, `RDMA_PS_UDP` for UD);
    /// `context` is stored in `id->context` and returned with its events.
    unsafe fn create_id(
        &self,
        ch: *mut sys::rdma_event_channel,
        context: *mut c_void,
        ps: sys::rdma_port_space::Type,
    ) -> Result<NonNull<sys::rdma_cm_id>, Errno>;
    /// `rdma_destroy_id`: blocks until every event reported for the id has been acked.
    unsafe fn destroy_id(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno>;
    /// `rdma_bind_addr` (port 0: an ephemeral port is chosen).
    unsafe fn bind_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        addr: *mut libc::sockaddr,
    ) -> Result<(), Errno>;
    /// `rdma_resolve_addr` (`src` may be NULL); the result is an `RDMA_CM_EVENT_ADDR_RESOLVED`
    /// or `RDMA_CM_EVENT_ADDR_ERROR` event.
    unsafe fn resolve_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        src: *mut libc::sockaddr,
        dst: *mut libc::sockaddr,
        timeout_ms: i32,
    ) -> Result<(), Errno>;
    /// `rdma_resolve_route`: `RDMA_CM_EVENT_ROUTE_RESOLVED` or `RDMA_CM_EVENT_ROUTE_ERROR`.
    unsafe fn resolve_route(&self, id: *mut sys::rdma_cm_id, timeout_ms: i32) -> Result<(), Errno>;
    /// `rdma_listen`.
    unsafe fn listen(&self, id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno>;
    /// `rdma_connect` (`param.qp_num` names the caller's QP).
    unsafe fn connect(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno>;
    /// `rdma_accept` on an id from a connect request (`param.qp_num`, and `param.qkey` for UD).
    unsafe fn accept(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno>;
    /// `rdma_reject` with up to `len` bytes of private data at `data` (NULL when `len` is 0).
    unsafe fn reject(
        &self,
        id: *mut sys::rdma_cm_id,
        data: *const c_void,
        len: u8,
    ) -> Result<(), Errno>;
    /// `rdma_establish`: the active side's answer to `RDMA_CM_EVENT_CONNECT_RESPONSE`.
    unsafe fn establish(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno>;
    /// `rdma_disconnect`.
    unsafe fn disconnect(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno>;
    /// `rdma_init_qp_attr`: the attributes (and their mask) that move a QP of this connection
    /// to `attr.qp_state`, which the caller sets.
    unsafe fn init_qp_attr(
        &self,
        id: *mut sys::rdma_cm_id,
        attr: *mut sys::ibv_qp_attr,
        mask: *mut i32,
    ) -> Result<(), Errno>;
    /// `rdma_set_option`: `optlen` bytes at `optval` for the option `optname` of `level`.
    /// The software CM knows `RDMA_OPTION_ID_ACK_TIMEOUT` only (`ENOSYS` for the others, as
    /// the kernel's ucma answers an option it does not know).
    unsafe fn set_option(
        &self,
        id: *mut sys::rdma_cm_id,
        level: i32,
        optname: i32,
        optval: *mut c_void,
        optlen: usize,
    ) -> Result<(), Errno>;
    /// `rdma_get_cm_event`: blocks unless the channel's fd is O_NONBLOCK (then EAGAIN). The
    /// event stays valid, with its private data, until [`CmPath::ack_cm_event`].
    unsafe fn get_cm_event(
        &self,
        ch: *mut sys::rdma_event_channel,
    ) -> Result<NonNull<sys::rdma_cm_event>, Errno>;
    /// `rdma_ack_cm_event`: frees the event.
    unsafe fn ack_cm_event(&self, ev: *mut sys::rdma_cm_event) -> Result<(), Errno>;
    /// Whether the device `id` is bound to (after a bind, an address resolution, or from a
    /// connect request) is the device of the context `ctx`. False while the id is unbound.
    unsafe fn same_device(&self, id: *mut sys::rdma_cm_id, ctx: *mut sys::ibv_context) -> bool;
}

/// The connection manager of the context `ctx` belongs to: the software device's for its
/// contexts, librdmacm's otherwise. `None` where the backend has no connection manager.
///
/// # Safety
/// `ctx` must be a live context opened by this crate.
pub(crate) unsafe fn cm_of(ctx: *mut sys::ibv_context) -> Option<&'static dyn CmPath> {
    #[cfg(feature = "software-device")]
    if software::owns_context(ctx) {
        return software::cm();
    }
    #[cfg(not(feature = "software-device"))]
    let _ = ctx;
    Some(&rdma_core::RDMA_CORE)
}

/// The connection manager an event channel belongs to: the software device's for the channels
/// it made, librdmacm's otherwise (for the raw verbs, which get a channel, an id or an event
/// rather than a context).
///
/// # Safety
/// `ch` must be a live event channel made through [`cm_of`]'s backend.
#[allow(dead_code)]
pub(crate) unsafe fn cm_of_channel(ch: *mut sys::rdma_event_channel) -> &'static dyn CmPath {
    #[cfg(feature = "software-device")]
    if software::owns_cm_channel(ch) {
        if let Some(cm) = software::cm() {
            return cm;
        }
    }
    #[cfg(not(feature = "software-device"))]
    let _ = ch;
    &rdma_core::RDMA_CORE
}

/// The control path of the context `ctx` belongs to.
///
/// # Safety
/// `ctx` must be a live context opened by this crate.
pub(crate) unsafe fn of(ctx: *mut sys::ibv_context) -> &'static dyn ControlPath {
    #[cfg(feature = "software-device")]
    if software::owns_context(ctx) {
        return &software::SOFTWARE;
    }
    #[cfg(not(feature = "software-device"))]
    let _ = ctx;
    &rdma_core::RDMA_CORE
}

/// Whether `ctx` is a context of a software device (never, without the `software-device`
/// feature).
pub(crate) fn is_software(ctx: *mut sys::ibv_context) -> bool {
    #[cfg(feature = "software-device")]
    return software::owns_context(ctx);
    #[cfg(not(feature = "software-device"))]
    {
        let _ = ctx;
        false
    }
}

/// The software device's count of `query_device` and `query_port` calls on this thread, for
/// the crate's tests that the typed layer reads a context's limits once rather than per call.
#[cfg(all(test, feature = "software-device"))]
pub(crate) fn software_queries() -> u64 {
    software::QUERIES.with(|q| q.get())
}

/// The registered software devices, in registration order (the default one first). rdma-core's
/// are listed by libibverbs (`ibv_get_device_list`).
#[cfg(feature = "software-device")]
pub(crate) fn software_devices() -> Vec<Arc<SwDevice>> {
    software::devices()
}

/// Opens a context on a software device (its `ibv_open_device`, which cannot fail).
#[cfg(feature = "software-device")]
pub(crate) fn open_software(dev: &Arc<SwDevice>) -> NonNull<sys::ibv_context> {
    software::open(dev)
}
