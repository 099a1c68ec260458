//! The raw verbs' shared pieces (`typed_verbs::raw`, libibverbs itself on a real device): the C
//! flag values the tests pass, taken from rdma-sys (and `typed_verbs::ffi::qp_attr_mask`), a
//! cleanup list, zeroed attributes, the loopback address vector and the QP transitions.

use std::ptr;
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::Context;

pub use typed_verbs::ffi::qp_attr_mask as mask;

// enum ibv_access_flags, as the `int access` ibv_reg_mr and ibv_qp_attr take.
pub const LOCAL_WRITE: i32 = sys::ibv_access_flags::IBV_ACCESS_LOCAL_WRITE.0 as i32;
pub const REMOTE_WRITE: i32 = sys::ibv_access_flags::IBV_ACCESS_REMOTE_WRITE.0 as i32;
pub const REMOTE_READ: i32 = sys::ibv_access_flags::IBV_ACCESS_REMOTE_READ.0 as i32;
pub const REMOTE_ATOMIC: i32 = sys::ibv_access_flags::IBV_ACCESS_REMOTE_ATOMIC.0 as i32;

// enum ibv_send_flags
pub const SIGNALED: u32 = sys::ibv_send_flags::IBV_SEND_SIGNALED.0;
pub const SOLICITED: u32 = sys::ibv_send_flags::IBV_SEND_SOLICITED.0;
pub const INLINE: u32 = sys::ibv_send_flags::IBV_SEND_INLINE.0;

// enum ibv_wc_flags
pub const WC_GRH: u32 = sys::ibv_wc_flags::IBV_WC_GRH.0;
pub const WC_WITH_IMM: u32 = sys::ibv_wc_flags::IBV_WC_WITH_IMM.0;

// enum ibv_srq_attr_mask
pub const SRQ_MAX_WR: i32 = sys::ibv_srq_attr_mask::IBV_SRQ_MAX_WR.0 as i32;
pub const SRQ_LIMIT: i32 = sys::ibv_srq_attr_mask::IBV_SRQ_LIMIT.0 as i32;

/// Cleanup actions (raw objects to destroy), run in reverse order of registration when the
/// list is dropped.
#[derive(Default)]
pub struct Cleanup(pub Vec<Box<dyn FnOnce()>>);

impl Cleanup {
    pub fn new() -> Self {
        Cleanup::default()
    }

    /// Registers `f` to run before everything registered earlier.
    pub fn push(&mut self, f: impl FnOnce() + 'static) {
        self.0.push(Box::new(f));
    }
}

impl Drop for Cleanup {
    fn drop(&mut self) {
        while let Some(f) = self.0.pop() {
            f();
        }
    }
}

/// An all-zero `ibv_qp_attr`, to fill in for `ibv_modify_qp`.
pub fn qp_attr() -> sys::ibv_qp_attr {
    // SAFETY: ibv_qp_attr is plain C data; all-zero is a valid value.
    unsafe { std::mem::zeroed() }
}

/// The address attributes of a loopback peer on port 1: a global route to `dgid` (RoCE devices,
/// rxe among them, need one) from the local GID at `sgid_index`, hop limit 1.
pub fn ah_attr(dgid: sys::ibv_gid, sgid_index: u8) -> sys::ibv_ah_attr {
    sys::ibv_ah_attr {
        grh: sys::ibv_global_route {
            dgid,
            flow_label: 0,
            sgid_index,
            hop_limit: 1,
            traffic_class: 0,
        },
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        is_global: 1,
        port_num: 1,
    }
}

/// `ibv_query_qp` of the attributes in `mask`.
///
/// # Safety
/// `qp` is a live QP.
pub unsafe fn query_qp(qp: *mut sys::ibv_qp, mask: i32) -> sys::ibv_qp_attr {
    let mut a = qp_attr();
    // SAFETY: plain C data.
    let mut init: sys::ibv_qp_init_attr = unsafe { std::mem::zeroed() };
    // SAFETY: `qp` is live (the caller's promise); out-pointers valid.
    unsafe { raw::ibv_query_qp(qp, &mut a, mask, &mut init) }.expect("ibv_query_qp");
    a
}

/// A PD of `ctx`, deallocated by the cleanup after everything registered later.
pub fn pd(ctx: &Context, c: &mut Cleanup) -> *mut sys::ibv_pd {
    // SAFETY: a live context.
    let pd = unsafe { raw::ibv_alloc_pd(ctx.as_raw()) }
        .expect("ibv_alloc_pd")
        .as_ptr();
    // SAFETY: destroyed once, after everything created later.
    c.push(move || unsafe { raw::ibv_dealloc_pd(pd) }.expect("ibv_dealloc_pd"));
    pd
}

/// A CQ of `ctx` with room for `cqe` completions (on `channel`, or null), destroyed by the
/// cleanup after the QPs registered later.
pub fn cq(
    ctx: &Context,
    cqe: i32,
    channel: *mut sys::ibv_comp_channel,
    c: &mut Cleanup,
) -> *mut sys::ibv_cq {
    // SAFETY: a live context; the channel is null or live.
    let cq = unsafe { raw::ibv_create_cq(ctx.as_raw(), cqe, ptr::null_mut(), channel, 0) }
        .expect("ibv_create_cq")
        .as_ptr();
    // SAFETY: destroyed once, after the QPs created later.
    c.push(move || unsafe { raw::ibv_destroy_cq(cq) }.expect("ibv_destroy_cq"));
    cq
}

/// An SRQ of `pd` with `max_wr` receives of one SGE, destroyed by the cleanup after the QPs
/// registered later.
pub fn srq(pd: *mut sys::ibv_pd, max_wr: u32, c: &mut Cleanup) -> *mut sys::ibv_srq {
    let mut attr = sys::ibv_srq_init_attr {
        srq_context: ptr::null_mut(),
        attr: sys::ibv_srq_attr {
            max_wr,
            max_sge: 1,
            srq_limit: 0,
        },
    };
    // SAFETY: a live PD; attr valid.
    let srq = unsafe { raw::ibv_create_srq(pd, &mut attr) }
        .expect("ibv_create_srq")
        .as_ptr();
    // SAFETY: destroyed once, after the QPs created later.
    c.push(move || unsafe { raw::ibv_destroy_srq(srq) }.expect("ibv_destroy_srq"));
    srq
}

/// The capabilities of a QP to create: work requests, SGEs and inline bytes.
pub fn qp_cap(
    send_wr: u32,
    recv_wr: u32,
    send_sge: u32,
    recv_sge: u32,
    inline: u32,
) -> sys::ibv_qp_cap {
    sys::ibv_qp_cap {
        max_send_wr: send_wr,
        max_recv_wr: recv_wr,
        max_send_sge: send_sge,
        max_recv_sge: recv_sge,
        max_inline_data: inline,
    }
}

/// The creation attributes of a QP of `qp_type` on `send_cq` and `recv_cq`, with `cap`; with an
/// SRQ (`srq` not null) it asks for no receive queue of its own (no receive WRs or SGEs).
pub fn qp_init_attr(
    qp_type: sys::ibv_qp_type::Type,
    send_cq: *mut sys::ibv_cq,
    recv_cq: *mut sys::ibv_cq,
    srq: *mut sys::ibv_srq,
    mut cap: sys::ibv_qp_cap,
) -> sys::ibv_qp_init_attr {
    if !srq.is_null() {
        cap.max_recv_wr = 0;
        cap.max_recv_sge = 0;
    }
    sys::ibv_qp_init_attr {
        qp_context: ptr::null_mut(),
        send_cq,
        recv_cq,
        srq,
        cap,
        qp_type,
        sq_sig_all: 0,
    }
}

/// Creates a QP that the cleanup destroys; the actual caps are written into `attr`.
pub fn qp(
    pd: *mut sys::ibv_pd,
    attr: &mut sys::ibv_qp_init_attr,
    c: &mut Cleanup,
) -> Result<*mut sys::ibv_qp, i32> {
    // SAFETY: a live PD; the CQs and SRQ in attr are live objects of its context.
    let qp = unsafe { raw::ibv_create_qp(pd, attr) }?.as_ptr();
    // SAFETY: destroyed once, before the CQs, SRQ and PD it uses.
    c.push(move || unsafe { raw::ibv_destroy_qp(qp) }.expect("ibv_destroy_qp"));
    Ok(qp)
}

/// The standard completion fields of `ibv_create_cq_ex` (`IBV_WC_STANDARD_FLAGS`), one bit each.
pub const STANDARD_WC_FLAGS: [u64; 7] = {
    use typed_verbs::cq_ex::flags::*;
    [BYTE_LEN, IMM, QP_NUM, SRC_QP, SLID, SL, DLID_PATH_BITS]
};
