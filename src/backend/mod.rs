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

pub(crate) type Errno = i32;

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
    unsafe fn reg_mr(
        &self,
        pd: *mut sys::ibv_pd,
        addr: *mut c_void,
        len: usize,
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
