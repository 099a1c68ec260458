//! The rdma-core backend: libibverbs' own functions, which dispatch to the kernel driver's
//! userspace provider (rxe, mlx5, ...).

use super::{ControlPath, Errno};
use crate::ffi::sys;
use std::os::raw::c_void;
use std::ptr::NonNull;

pub(crate) struct RdmaCore;
pub(crate) static RDMA_CORE: RdmaCore = RdmaCore;

fn errno() -> Errno {
    std::io::Error::last_os_error()
        .raw_os_error()
        .filter(|&e| e != 0)
        .unwrap_or(libc::EIO)
}

/// libibverbs returns NULL and sets errno on failure.
fn ptr<T>(p: *mut T) -> Result<NonNull<T>, Errno> {
    NonNull::new(p).ok_or_else(errno)
}

/// libibverbs returns 0 or an errno (some verbs return -1 and set errno instead).
fn rc(r: i32) -> Result<(), Errno> {
    match r {
        0 => Ok(()),
        -1 => Err(errno()),
        e if e < 0 => Err(-e),
        e => Err(e),
    }
}

impl ControlPath for RdmaCore {
    unsafe fn close_device(&self, ctx: *mut sys::ibv_context) -> Result<(), Errno> {
        // SAFETY: the caller passes a live context; libibverbs frees it.
        rc(unsafe { sys::ibv_close_device(ctx) })
    }
    unsafe fn query_device(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut sys::ibv_device_attr,
    ) -> Result<(), Errno> {
        // SAFETY: live context, `out` valid for writes (caller's contract).
        rc(unsafe { sys::ibv_query_device(ctx, out) })
    }
    unsafe fn query_port(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        out: *mut sys::ibv_port_attr,
    ) -> Result<(), Errno> {
        // SAFETY: as above. `ibv_query_port` is a macro in C around an inline function; the
        // crate's own copy (rdma-sys's cannot find the extended context on 64-bit).
        rc(unsafe { crate::ffi::ibv_query_port(ctx, port, out) })
    }
    unsafe fn alloc_pd(&self, ctx: *mut sys::ibv_context) -> Result<NonNull<sys::ibv_pd>, Errno> {
        // SAFETY: live context.
        ptr(unsafe { sys::ibv_alloc_pd(ctx) })
    }
    unsafe fn alloc_parent_domain(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_parent_domain_init_attr,
    ) -> Result<NonNull<sys::ibv_pd>, Errno> {
        // SAFETY: live context, attr valid. Err: the provider lacks the op; NULL: it failed.
        ptr(unsafe { crate::ffi::ibv_alloc_parent_domain(ctx, attr) }?)
    }
    unsafe fn dealloc_pd(&self, pd: *mut sys::ibv_pd) -> Result<(), Errno> {
        // SAFETY: live PD.
        rc(unsafe { sys::ibv_dealloc_pd(pd) })
    }
    unsafe fn reg_mr(
        &self,
        pd: *mut sys::ibv_pd,
        addr: *mut c_void,
        len: usize,
        iova: u64,
        access: i32,
    ) -> Result<NonNull<sys::ibv_mr>, Errno> {
        if iova == addr as u64 {
            // SAFETY: live PD; the caller keeps [addr, addr + len) allocated until dereg. The
            // exported ibv_reg_mr is what verbs.h's macro calls without
            // IBV_ACCESS_OPTIONAL_RANGE.
            ptr(unsafe { sys::ibv_reg_mr(pd, addr, len, access) })
        } else {
            // SAFETY: as above; ibv_reg_mr_iova2 (IBVERBS_1.8) passes `iova` to the provider's
            // reg_mr as its hca_va, and the kernel checks its page offset against addr's.
            ptr(unsafe { sys::ibv_reg_mr_iova2(pd, addr, len, iova, access as u32) })
        }
    }
    unsafe fn dereg_mr(&self, mr: *mut sys::ibv_mr) -> Result<(), Errno> {
        // SAFETY: live MR.
        rc(unsafe { sys::ibv_dereg_mr(mr) })
    }
    unsafe fn create_comp_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::ibv_comp_channel>, Errno> {
        // SAFETY: live context.
        ptr(unsafe { sys::ibv_create_comp_channel(ctx) })
    }
    unsafe fn destroy_comp_channel(&self, ch: *mut sys::ibv_comp_channel) -> Result<(), Errno> {
        // SAFETY: live channel.
        rc(unsafe { sys::ibv_destroy_comp_channel(ch) })
    }
    unsafe fn create_cq(
        &self,
        ctx: *mut sys::ibv_context,
        cqe: i32,
        cq_context: *mut c_void,
        channel: *mut sys::ibv_comp_channel,
        comp_vector: i32,
    ) -> Result<NonNull<sys::ibv_cq>, Errno> {
        // SAFETY: live context; channel NULL or live on the same context.
        ptr(unsafe { sys::ibv_create_cq(ctx, cqe, cq_context, channel, comp_vector) })
    }
    unsafe fn create_cq_ex(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_cq_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_cq_ex>, Errno> {
        // SAFETY: live context, attr valid. Err: the provider has no create_cq_ex; NULL: it
        // failed and set errno.
        ptr(unsafe { crate::ffi::ibv_create_cq_ex(ctx, attr) }?)
    }
    unsafe fn cq_ex_workarounds(&self, ctx: *mut sys::ibv_context, cq: NonNull<sys::ibv_cq_ex>) {
        // SAFETY: caller's contract.
        if unsafe { workarounds::single_completion_batches(ctx) } {
            // SAFETY: a CQ just created, not yet shared; the provider never reads its own
            // next_poll pointer, the application's calls do.
            unsafe { (*cq.as_ptr()).next_poll = Some(workarounds::rxe_next_poll) };
        }
    }
    unsafe fn destroy_cq(&self, cq: *mut sys::ibv_cq) -> Result<(), Errno> {
        // ibv_destroy_cq waits for the acks of the CQ's async events: the typed layer acks the
        // ones it holds before it calls this (crate::raw::destroying::destroy_cq).
        // SAFETY: live CQ (an extended CQ is passed through ibv_cq_ex_to_cq, a cast).
        rc(unsafe { sys::ibv_destroy_cq(cq) })
    }
    unsafe fn get_cq_event(
        &self,
        ch: *mut sys::ibv_comp_channel,
    ) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno> {
        let mut cq = std::ptr::null_mut();
        let mut cq_context = std::ptr::null_mut();
        // SAFETY: live channel; the out-pointers are valid for writes. It returns -1 with errno
        // (the read of the fd failed, EAGAIN on an O_NONBLOCK fd with no event).
        if unsafe { sys::ibv_get_cq_event(ch, &mut cq, &mut cq_context) } != 0 {
            return Err(errno());
        }
        Ok((ptr(cq)?, cq_context))
    }
    unsafe fn ack_cq_events(&self, cq: *mut sys::ibv_cq, n: u32) {
        // SAFETY: live CQ; the caller acks only events it got.
        unsafe { sys::ibv_ack_cq_events(cq, n) }
    }
    unsafe fn get_async_event(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut crate::ffi::RawAsyncEvent,
    ) -> Result<(), Errno> {
        // SAFETY: live context, `out` valid for writes; RawAsyncEvent has the C layout (checked
        // in ffi), and Rust never reads it as rdma-sys's struct, whose enum field could not
        // hold every value C may write.
        rc(unsafe { sys::ibv_get_async_event(ctx, out.cast()) })
    }
    unsafe fn ack_async_event(&self, ev: *mut crate::ffi::RawAsyncEvent) {
        // SAFETY: an event ibv_get_async_event returned, acked once; its object is live (its
        // destroy waits for the ack). Passed to C as its own struct, as above.
        unsafe { sys::ibv_ack_async_event(ev.cast()) }
    }
    unsafe fn create_srq(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_srq_init_attr,
    ) -> Result<NonNull<sys::ibv_srq>, Errno> {
        // SAFETY: live PD, attr valid; libibverbs writes the actual values back into attr.
        ptr(unsafe { sys::ibv_create_srq(pd, attr) })
    }
    unsafe fn modify_srq(
        &self,
        srq: *mut sys::ibv_srq,
        attr: *mut sys::ibv_srq_attr,
        mask: i32,
    ) -> Result<(), Errno> {
        // SAFETY: live SRQ, attr valid for reads and writes.
        rc(unsafe { sys::ibv_modify_srq(srq, attr, mask) })
    }
    unsafe fn query_srq(
        &self,
        srq: *mut sys::ibv_srq,
        out: *mut sys::ibv_srq_attr,
    ) -> Result<(), Errno> {
        // SAFETY: live SRQ, out valid.
        rc(unsafe { sys::ibv_query_srq(srq, out) })
    }
    unsafe fn destroy_srq(&self, srq: *mut sys::ibv_srq) -> Result<(), Errno> {
        // As destroy_cq: ibv_destroy_srq waits for the acks of the SRQ's async events.
        // SAFETY: live SRQ.
        rc(unsafe { sys::ibv_destroy_srq(srq) })
    }
    unsafe fn create_qp(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_qp_init_attr,
    ) -> Result<NonNull<sys::ibv_qp>, Errno> {
        // SAFETY: live PD; CQs and SRQ in attr are live objects of the same context.
        ptr(unsafe { sys::ibv_create_qp(pd, attr) })
    }
    unsafe fn create_qp_ex(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_qp_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_qp>, Errno> {
        // SAFETY: live context; attr valid, its PD, CQs and SRQ live objects of `ctx`.
        ptr(unsafe { crate::ffi::ibv_create_qp_ex(ctx, attr) }?)
    }
    unsafe fn qp_to_qp_ex(&self, qp: *mut sys::ibv_qp) -> *mut sys::ibv_qp_ex {
        // SAFETY: a live QP of libibverbs; the function reads its verbs_qp comp_mask.
        unsafe { sys::ibv_qp_to_qp_ex(qp) }
    }
    unsafe fn qp_ex_quirks(&self, ctx: *mut sys::ibv_context) -> super::QpExQuirks {
        // SAFETY: caller's contract: a live context.
        let buggy = unsafe { workarounds::is_rxe(ctx) }
            && workarounds::rdma_core_version().is_none_or(|v| v < 64);
        super::QpExQuirks {
            sge_list_sums_first: buggy,
            inline_list_overflows: buggy,
        }
    }
    unsafe fn query_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
        init: *mut sys::ibv_qp_init_attr,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, out-pointers valid.
        rc(unsafe { sys::ibv_query_qp(qp, attr, mask, init) })
    }
    unsafe fn modify_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, attr valid for reads.
        rc(unsafe { sys::ibv_modify_qp(qp, attr, mask) })
    }
    unsafe fn query_gid(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        index: i32,
        out: *mut sys::ibv_gid,
    ) -> Result<(), Errno> {
        // SAFETY: live context, `out` valid for writes.
        rc(unsafe { sys::ibv_query_gid(ctx, port, index, out) })
    }
    unsafe fn destroy_qp(&self, qp: *mut sys::ibv_qp) -> Result<(), Errno> {
        // As destroy_cq: ibv_destroy_qp waits for the acks of the QP's async events.
        // SAFETY: live QP.
        rc(unsafe { sys::ibv_destroy_qp(qp) })
    }
    unsafe fn create_ah(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_ah_attr,
    ) -> Result<NonNull<sys::ibv_ah>, Errno> {
        // SAFETY: live PD, attr valid for reads.
        ptr(unsafe { sys::ibv_create_ah(pd, attr) })
    }
    unsafe fn destroy_ah(&self, ah: *mut sys::ibv_ah) -> Result<(), Errno> {
        // SAFETY: live AH.
        rc(unsafe { sys::ibv_destroy_ah(ah) })
    }
    unsafe fn attach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, gid valid for reads.
        rc(unsafe { sys::ibv_attach_mcast(qp, gid, lid) })
    }
    unsafe fn detach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, gid valid for reads.
        rc(unsafe { sys::ibv_detach_mcast(qp, gid, lid) })
    }
}

/// librdmacm returns 0, or -1 and sets errno.
fn cm_rc(r: i32) -> Result<(), Errno> {
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

impl super::CmPath for RdmaCore {
    unsafe fn create_event_channel(
        &self,
        _ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::rdma_event_channel>, Errno> {
        // SAFETY: no arguments; NULL and errno on failure (ENODEV without the kernel's rdma_ucm).
        ptr(unsafe { sys::rdma_create_event_channel() })
    }
    unsafe fn destroy_event_channel(&self, ch: *mut sys::rdma_event_channel) {
        // SAFETY: a live channel whose ids are destroyed and whose events are acked (caller).
        unsafe { sys::rdma_destroy_event_channel(ch) }
    }
    unsafe fn create_id(
        &self,
        ch: *mut sys::rdma_event_channel,
        context: *mut c_void,
        ps: sys::rdma_port_space::Type,
    ) -> Result<NonNull<sys::rdma_cm_id>, Errno> {
        let mut id = std::ptr::null_mut();
        // SAFETY: a live channel (non-NULL: never librdmacm's synchronous mode); `id` is valid
        // for writes.
        cm_rc(unsafe { sys::rdma_create_id(ch, &mut id, context, ps) })?;
        NonNull::new(id).ok_or(libc::EIO)
    }
    unsafe fn destroy_id(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        // SAFETY: a live id; librdmacm frees it (after the acks of its reported events).
        cm_rc(unsafe { sys::rdma_destroy_id(id) })
    }
    unsafe fn bind_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        addr: *mut libc::sockaddr,
    ) -> Result<(), Errno> {
        // SAFETY: a live id and a valid address (caller).
        cm_rc(unsafe { sys::rdma_bind_addr(id, addr) })
    }
    unsafe fn resolve_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        src: *mut libc::sockaddr,
        dst: *mut libc::sockaddr,
        timeout_ms: i32,
    ) -> Result<(), Errno> {
        // SAFETY: a live id, valid addresses (`src` may be NULL), copied by librdmacm.
        cm_rc(unsafe { sys::rdma_resolve_addr(id, src, dst, timeout_ms) })
    }
    unsafe fn resolve_route(&self, id: *mut sys::rdma_cm_id, timeout_ms: i32) -> Result<(), Errno> {
        // SAFETY: a live id.
        cm_rc(unsafe { sys::rdma_resolve_route(id, timeout_ms) })
    }
    unsafe fn listen(&self, id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno> {
        // SAFETY: a live id.
        cm_rc(unsafe { sys::rdma_listen(id, backlog) })
    }
    unsafe fn connect(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        // SAFETY: a live id; `param` and its private data valid for reads (copied).
        cm_rc(unsafe { sys::rdma_connect(id, param) })
    }
    unsafe fn accept(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        // SAFETY: as connect.
        cm_rc(unsafe { sys::rdma_accept(id, param) })
    }
    unsafe fn reject(
        &self,
        id: *mut sys::rdma_cm_id,
        data: *const c_void,
        len: u8,
    ) -> Result<(), Errno> {
        // SAFETY: a live id; `len` bytes at `data` readable (copied).
        cm_rc(unsafe { sys::rdma_reject(id, data, len) })
    }
    unsafe fn establish(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        // SAFETY: a live id without a librdmacm QP (rdma_establish returns EINVAL otherwise).
        cm_rc(unsafe { sys::rdma_establish(id) })
    }
    unsafe fn disconnect(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        // SAFETY: a live id; without a librdmacm QP no QP is modified.
        cm_rc(unsafe { sys::rdma_disconnect(id) })
    }
    unsafe fn init_qp_attr(
        &self,
        id: *mut sys::rdma_cm_id,
        attr: *mut sys::ibv_qp_attr,
        mask: *mut i32,
    ) -> Result<(), Errno> {
        // SAFETY: a live id; `attr` (with qp_state set) and `mask` valid for reads and writes.
        cm_rc(unsafe { sys::rdma_init_qp_attr(id, attr, mask) })
    }
    unsafe fn set_option(
        &self,
        id: *mut sys::rdma_cm_id,
        level: i32,
        optname: i32,
        optval: *mut c_void,
        optlen: usize,
    ) -> Result<(), Errno> {
        // SAFETY: a live id; `optval` valid for reads of `optlen` bytes (librdmacm copies them
        // into the ucma command).
        cm_rc(unsafe { sys::rdma_set_option(id, level, optname, optval, optlen) })
    }
    unsafe fn get_cm_event(
        &self,
        ch: *mut sys::rdma_event_channel,
    ) -> Result<NonNull<sys::rdma_cm_event>, Errno> {
        let mut ev = std::ptr::null_mut();
        // SAFETY: a live channel; `ev` valid for writes.
        cm_rc(unsafe { sys::rdma_get_cm_event(ch, &mut ev) })?;
        NonNull::new(ev).ok_or(libc::EIO)
    }
    unsafe fn ack_cm_event(&self, ev: *mut sys::rdma_cm_event) -> Result<(), Errno> {
        // SAFETY: an event from get_cm_event, acked once (caller); librdmacm frees it.
        cm_rc(unsafe { sys::rdma_ack_cm_event(ev) })
    }
    unsafe fn same_device(&self, id: *mut sys::rdma_cm_id, ctx: *mut sys::ibv_context) -> bool {
        // SAFETY: a live id and context. `id->verbs` is librdmacm's own context on the device
        // the id is bound to (NULL while unbound); both devices come from libibverbs' device
        // list, so the same device has the same name.
        unsafe {
            let verbs = (*id).verbs;
            if verbs.is_null() || ctx.is_null() {
                return false;
            }
            let (a, b) = ((*verbs).device, (*ctx).device);
            if a == b {
                return true;
            }
            let (na, nb) = (sys::ibv_get_device_name(a), sys::ibv_get_device_name(b));
            !na.is_null()
                && !nb.is_null()
                && std::ffi::CStr::from_ptr(na) == std::ffi::CStr::from_ptr(nb)
        }
    }
}

/// rdma-core providers' known faults, each named, with the devices it is installed for and
/// what it costs (as wgpu-hal's backends keep theirs).
mod workarounds {
    use crate::ffi::sys;
    use std::os::unix::ffi::OsStrExt;

    /// Whether the CQs of `ctx` need [`rxe_next_poll`]: rxe (Soft-RoCE), vendor 0xffffff,
    /// part 0, as the kernel's rxe reports.
    ///
    /// # Safety
    /// `ctx` is a live context.
    pub(super) unsafe fn single_completion_batches(ctx: *mut sys::ibv_context) -> bool {
        // SAFETY: caller's contract.
        unsafe { is_rxe(ctx) }
    }

    /// Whether `ctx` is rxe (Soft-RoCE): vendor 0xffffff, part 0, as the kernel's rxe reports.
    ///
    /// # Safety
    /// `ctx` is a live context.
    pub(super) unsafe fn is_rxe(ctx: *mut sys::ibv_context) -> bool {
        // SAFETY: plain C data, filled by the call.
        let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        // SAFETY: caller's contract; `a` valid for writes.
        let ok = unsafe { sys::ibv_query_device(ctx, &mut a) } == 0;
        ok && a.vendor_id == 0x00ff_ffff && a.vendor_part_id == 0
    }

    /// The release of rdma-core whose libibverbs the process loaded (44 for `libibverbs.so.1.14.44.0`),
    /// from the real name of the file that holds `ibv_get_device_list`; `None` when it cannot be
    /// told (a static build, a renamed file).
    ///
    /// rxe's extended QP before release 64 sums `wr_set_sge_list`'s lengths as `num_sge` times
    /// the first one (fixed by 406cd2ad0) and never adds up `wr_set_inline_data_list`'s buffers,
    /// copying past its WQE (1e8ed0aff); the typed layer avoids both there.
    pub(super) fn rdma_core_version() -> Option<u32> {
        // SAFETY: plain C data, filled by the call.
        let mut info: libc::Dl_info = unsafe { std::mem::zeroed() };
        let sym = sys::ibv_get_device_list as *const std::os::raw::c_void;
        // SAFETY: `sym` is an address in the process; `info` valid for writes.
        if unsafe { libc::dladdr(sym, &mut info) } == 0 || info.dli_fname.is_null() {
            return None;
        }
        // SAFETY: dladdr's answer: a NUL-terminated path, valid while the library is loaded
        // (libibverbs is never unloaded: the crate links it).
        let path = unsafe { std::ffi::CStr::from_ptr(info.dli_fname) };
        let path = std::path::Path::new(std::ffi::OsStr::from_bytes(path.to_bytes()));
        let real = std::fs::canonicalize(path).ok()?;
        parse_libibverbs_version(real.file_name()?.to_str()?)
    }

    /// The rdma-core release in libibverbs' file name, `libibverbs.so.1.<abi>.<release>.0`.
    pub(super) fn parse_libibverbs_version(name: &str) -> Option<u32> {
        let rest = name.strip_prefix("libibverbs.so.1.")?;
        let mut parts = rest.split('.');
        let (abi, release, last) = (parts.next()?, parts.next()?, parts.next()?);
        let number = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        if parts.next().is_some() || !number(abi) || !number(last) || !number(release) {
            return None;
        }
        release.parse().ok()
    }

    #[cfg(test)]
    mod tests {
        use super::parse_libibverbs_version as parse;

        #[test]
        fn libibverbs_file_names() {
            assert_eq!(parse("libibverbs.so.1.14.44.0"), Some(44));
            assert_eq!(parse("libibverbs.so.1.15.64.0"), Some(64));
            assert_eq!(parse("libibverbs.so.1.14.50.1"), Some(50));
            assert_eq!(parse("libibverbs.so.1"), None);
            assert_eq!(parse("libibverbs.so.1.14"), None);
            assert_eq!(parse("libibverbs.so.1.14.44"), None);
            assert_eq!(parse("libibverbs.so.1.14.44.0.1"), None);
            assert_eq!(parse("libibverbs.so.1.14.x.0"), None);
            assert_eq!(parse("libibverbs.so.1.14..0"), None);
            assert_eq!(parse("libmlx5.so.1.24.44.0"), None);
        }

        #[test]
        fn the_loaded_libibverbs_has_a_release() {
            // The machine's libibverbs is a shared library with rdma-core's usual name.
            if let Some(v) = super::rdma_core_version() {
                assert!(v >= 17, "release {v}");
            }
        }
    }

    crate::ffi::c_entry! {
        /// rxe's provider as rdma-core shipped it before release 55 (Debian 12 has 44) ends the
        /// batch itself when `next_poll` finds the CQ empty: it stores the consumer index and
        /// unlocks. The `end_poll` that ibv_create_cq_ex(3) then requires advances and unlocks a
        /// second time, which corrupts the CQ. The release cannot be told at run time, so on rxe
        /// every batch of a typed CQ is one completion long: `next_poll` answers ENOENT without
        /// touching the provider, and the provider's `end_poll` ends the batch, as start_poll +
        /// end_poll always did correctly. Other providers keep their own `next_poll`; the poll
        /// loop pays nothing for this.
        pub(super) fn rxe_next_poll(_cq: *mut sys::ibv_cq_ex) -> std::os::raw::c_int = on_panic(libc::EIO) {
            libc::ENOENT
        }
    }
}
