//! verbs.h's inline verbs, which rdma-sys 0.3 gets wrong on 64-bit (`verbs_get_ctx`), written
//! again.

use super::*;

check_layout!(verbs_context {
    sz,
    context,
    create_cq_ex,
    alloc_parent_domain,
    query_port
});
// container_of(ctx, struct verbs_context, context): the ibv_context is the last member.
const_assert_eq!(
    offset_of!(sys::verbs_context, context) + size_of::<sys::ibv_context>(),
    size_of::<sys::verbs_context>()
);

/// verbs.h's `verbs_get_ctx`: the extended context around `ctx`, if libibverbs made one.
///
/// rdma-sys has this wrong: it compares `abi_compat` with `u32::MAX`, but the header's
/// `__VERBS_ABI_IS_EXTENDED` is `(void *)UINTPTR_MAX`, so on 64-bit it never finds the extended
/// context, and every verb reached through it (`ibv_create_cq_ex`, `ibv_alloc_parent_domain`,
/// the real `ibv_query_port`) fails with EOPNOTSUPP or falls back.
///
/// # Safety
/// `ctx` is a live context opened by libibverbs.
unsafe fn verbs_get_ctx(ctx: *mut sys::ibv_context) -> Option<*mut sys::verbs_context> {
    // SAFETY: caller's contract.
    if unsafe { (*ctx).abi_compat } as usize != usize::MAX {
        return None;
    }
    // SAFETY: libibverbs embeds an extended context's ibv_context in a verbs_context.
    Some(unsafe { ctx.byte_sub(offset_of!(sys::verbs_context, context)) }.cast())
}

/// verbs.h's `verbs_get_ctx_op`: the provider's `op`, if its extended context is large enough
/// to have the field and the provider filled it.
macro_rules! verbs_get_ctx_op {
    ($ctx:expr, $op:ident) => {
        // SAFETY: `$ctx` is a live libibverbs context (the calling function's contract); the
        // extended context's `sz` says how much of it exists, and the field is read within it.
        unsafe {
            match verbs_get_ctx($ctx) {
                Some(v)
                    if (*v).sz
                        >= size_of::<sys::verbs_context>()
                            - offset_of!(sys::verbs_context, $op) =>
                {
                    (*v).$op
                }
                _ => None,
            }
        }
    };
}

/// A verb that only an extended context has, as verbs.h writes it: the provider's `op` called
/// with the context and `attr`, or EOPNOTSUPP when the provider lacks it.
macro_rules! extended_op {
    ($ctx:expr, $op:ident, $attr:expr) => {
        match verbs_get_ctx_op!($ctx, $op) {
            // SAFETY: the provider's `$op`, called as verbs.h calls it.
            Some(f) => Ok(unsafe { f($ctx, $attr) }),
            None => Err(libc::EOPNOTSUPP),
        }
    };
}

/// verbs.h's `ibv_create_cq_ex`: NULL with errno, or EOPNOTSUPP when the provider lacks it.
///
/// # Safety
/// `ctx` is a live libibverbs context; `attr` is valid for reads and writes.
pub(crate) unsafe fn ibv_create_cq_ex(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_cq_init_attr_ex,
) -> Result<*mut sys::ibv_cq_ex, i32> {
    extended_op!(ctx, create_cq_ex, attr)
}

/// verbs.h's `ibv_create_qp_ex`: with `comp_mask == IBV_QP_INIT_ATTR_PD` the legacy
/// `ibv_create_qp` (whose attributes are the prefix of the extended ones); otherwise the
/// provider's `create_qp_ex`, or EOPNOTSUPP when it lacks it. NULL with errno on failure.
///
/// # Safety
/// `ctx` is a live libibverbs context; `attr` is valid for reads and writes, its `pd` a live PD
/// of `ctx`.
pub(crate) unsafe fn ibv_create_qp_ex(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_qp_init_attr_ex,
) -> Result<*mut sys::ibv_qp, i32> {
    // SAFETY: caller's contract.
    if unsafe { (*attr).comp_mask } == sys::ibv_qp_init_attr_mask::IBV_QP_INIT_ATTR_PD.0 {
        // SAFETY: ibv_qp_init_attr is the prefix of ibv_qp_init_attr_ex (checked in layout.rs).
        return Ok(unsafe { sys::ibv_create_qp((*attr).pd, attr.cast()) });
    }
    extended_op!(ctx, create_qp_ex, attr)
}

/// verbs.h's `ibv_alloc_parent_domain`.
///
/// # Safety
/// `ctx` is a live libibverbs context; `attr` is valid for reads.
pub(crate) unsafe fn ibv_alloc_parent_domain(
    ctx: *mut sys::ibv_context,
    attr: *mut sys::ibv_parent_domain_init_attr,
) -> Result<*mut sys::ibv_pd, i32> {
    extended_op!(ctx, alloc_parent_domain, attr)
}

/// verbs.h's `ibv_query_port` (`___ibv_query_port`): the provider's `query_port` with the size
/// of our `ibv_port_attr`, or the compat verb on a context without it.
///
/// # Safety
/// `ctx` is a live libibverbs context; `out` is valid for writes.
pub(crate) unsafe fn ibv_query_port(
    ctx: *mut sys::ibv_context,
    port: u8,
    out: *mut sys::ibv_port_attr,
) -> i32 {
    match verbs_get_ctx_op!(ctx, query_port) {
        // SAFETY: the provider's query_port, told the size of the struct it fills.
        Some(f) => unsafe { f(ctx, port, out, size_of::<sys::ibv_port_attr>()) },
        None => {
            // SAFETY: as verbs.h: zero the struct, then let the compat verb fill its prefix.
            unsafe {
                out.write_bytes(0, 1);
                sys::ibv_query_port(ctx, port, out.cast())
            }
        }
    }
}

/// Calls one of an extended CQ's function pointers without checking it for NULL, as verbs.h's
/// inline functions do. Sound only where creation checked the pointer: `CqEx` creation checks
/// every pointer its flags need (`cq_ex::check_provider_ops`).
macro_rules! cq_ex_call {
    ($cq:expr, $op:ident $(, $arg:expr)*) => {
        ((*$cq).$op.unwrap_unchecked())($cq $(, $arg)*)
    };
}
pub(crate) use cq_ex_call;

/// Calls one of an extended QP's function pointers (`struct ibv_qp_ex`, ibv_wr_post(3))
/// without checking it for NULL, as verbs.h's inline `ibv_wr_*` functions do. Sound only where
/// creation checked the pointer: the typed extended QP's creation checks `wr_start`,
/// `wr_complete`, `wr_abort`, the setters it uses and the builder of every op in its type.
macro_rules! qp_ex_call {
    ($qpx:expr, $op:ident $(, $arg:expr)*) => {
        ((*$qpx).$op.unwrap_unchecked())($qpx $(, $arg)*)
    };
}
pub(crate) use qp_ex_call;

/// Calls one of a context's data-path operations (`ibv_context.ops`) without checking it for
/// NULL, as verbs.h's inline `ibv_post_send`/`ibv_post_recv` do. Sound only where creation
/// checked the pointer: `Qp` creation checks `post_send` and `post_recv`.
macro_rules! ctx_op_call {
    ($ctx:expr, $op:ident $(, $arg:expr)*) => {
        ((*$ctx).ops.$op.unwrap_unchecked())($($arg),*)
    };
}
pub(crate) use ctx_op_call;
