//! C constants by name: `ibv_qp_attr_mask`, `ibv_event_type`, the `IBV_WC_EX_WITH_*` flags, and a
//! few more.

use super::*;

/// `enum ibv_qp_attr_mask` as the `int` mask `ibv_modify_qp` takes, from rdma-sys's values: one
/// set of names for the typed transitions, rdma_cm's QP attributes, the software device, and
/// programs that call [`raw::ibv_modify_qp`](crate::raw::ibv_modify_qp) themselves.
///
/// ```
/// use typed_verbs::ffi::qp_attr_mask as m;
/// // The mask of a UD QP's RESET -> INIT (ibv_modify_qp(3)).
/// let init = m::STATE | m::PKEY_INDEX | m::PORT | m::QKEY;
/// assert_eq!(init, 0x71); // IBV_QP_STATE 1, PKEY_INDEX 16, PORT 32, QKEY 64 in verbs.h
/// ```
///
/// Why C's enums are read as integers: [`crate::ffi`], and [the guide's FFI boundary](crate::guide::guarantees).
#[allow(missing_docs)]
pub mod qp_attr_mask {
    use super::sys::ibv_qp_attr_mask as m;
    pub const STATE: i32 = m::IBV_QP_STATE.0 as i32;
    pub const CUR_STATE: i32 = m::IBV_QP_CUR_STATE.0 as i32;
    pub const EN_SQD_ASYNC_NOTIFY: i32 = m::IBV_QP_EN_SQD_ASYNC_NOTIFY.0 as i32;
    pub const ACCESS_FLAGS: i32 = m::IBV_QP_ACCESS_FLAGS.0 as i32;
    pub const PKEY_INDEX: i32 = m::IBV_QP_PKEY_INDEX.0 as i32;
    pub const PORT: i32 = m::IBV_QP_PORT.0 as i32;
    pub const QKEY: i32 = m::IBV_QP_QKEY.0 as i32;
    pub const AV: i32 = m::IBV_QP_AV.0 as i32;
    pub const PATH_MTU: i32 = m::IBV_QP_PATH_MTU.0 as i32;
    pub const TIMEOUT: i32 = m::IBV_QP_TIMEOUT.0 as i32;
    pub const RETRY_CNT: i32 = m::IBV_QP_RETRY_CNT.0 as i32;
    pub const RNR_RETRY: i32 = m::IBV_QP_RNR_RETRY.0 as i32;
    pub const RQ_PSN: i32 = m::IBV_QP_RQ_PSN.0 as i32;
    pub const MAX_QP_RD_ATOMIC: i32 = m::IBV_QP_MAX_QP_RD_ATOMIC.0 as i32;
    pub const ALT_PATH: i32 = m::IBV_QP_ALT_PATH.0 as i32;
    pub const MIN_RNR_TIMER: i32 = m::IBV_QP_MIN_RNR_TIMER.0 as i32;
    pub const SQ_PSN: i32 = m::IBV_QP_SQ_PSN.0 as i32;
    pub const MAX_DEST_RD_ATOMIC: i32 = m::IBV_QP_MAX_DEST_RD_ATOMIC.0 as i32;
    pub const PATH_MIG_STATE: i32 = m::IBV_QP_PATH_MIG_STATE.0 as i32;
    pub const DEST_QPN: i32 = m::IBV_QP_DEST_QPN.0 as i32;
}

/// The values of `enum ibv_event_type`, as the integers [`RawAsyncEvent::event_type`] holds.
///
/// ```
/// use typed_verbs::{ffi::event_type, software, AsyncEvent, Context};
/// let ctx = Context::open("sw0")?;
/// software::raise_port_event(&ctx, event_type::LID_CHANGE, 1)?;
/// assert_eq!(ctx.get_async_event()?.event_type(), event_type::LID_CHANGE);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// Why C's enums are read as integers: [`crate::ffi`], and [the guide's FFI boundary](crate::guide::guarantees).
#[allow(missing_docs)]
pub mod event_type {
    use super::sys::ibv_event_type as e;
    pub const CQ_ERR: u32 = e::IBV_EVENT_CQ_ERR as u32;
    pub const QP_FATAL: u32 = e::IBV_EVENT_QP_FATAL as u32;
    pub const QP_REQ_ERR: u32 = e::IBV_EVENT_QP_REQ_ERR as u32;
    pub const QP_ACCESS_ERR: u32 = e::IBV_EVENT_QP_ACCESS_ERR as u32;
    pub const COMM_EST: u32 = e::IBV_EVENT_COMM_EST as u32;
    pub const SQ_DRAINED: u32 = e::IBV_EVENT_SQ_DRAINED as u32;
    pub const PATH_MIG: u32 = e::IBV_EVENT_PATH_MIG as u32;
    pub const PATH_MIG_ERR: u32 = e::IBV_EVENT_PATH_MIG_ERR as u32;
    pub const DEVICE_FATAL: u32 = e::IBV_EVENT_DEVICE_FATAL as u32;
    pub const PORT_ACTIVE: u32 = e::IBV_EVENT_PORT_ACTIVE as u32;
    pub const PORT_ERR: u32 = e::IBV_EVENT_PORT_ERR as u32;
    pub const LID_CHANGE: u32 = e::IBV_EVENT_LID_CHANGE as u32;
    pub const PKEY_CHANGE: u32 = e::IBV_EVENT_PKEY_CHANGE as u32;
    pub const SM_CHANGE: u32 = e::IBV_EVENT_SM_CHANGE as u32;
    pub const SRQ_ERR: u32 = e::IBV_EVENT_SRQ_ERR as u32;
    pub const SRQ_LIMIT_REACHED: u32 = e::IBV_EVENT_SRQ_LIMIT_REACHED as u32;
    pub const QP_LAST_WQE_REACHED: u32 = e::IBV_EVENT_QP_LAST_WQE_REACHED as u32;
    pub const CLIENT_REREGISTER: u32 = e::IBV_EVENT_CLIENT_REREGISTER as u32;
    pub const GID_CHANGE: u32 = e::IBV_EVENT_GID_CHANGE as u32;
    pub const WQ_FATAL: u32 = e::IBV_EVENT_WQ_FATAL as u32;
}

/// The `IBV_WC_EX_WITH_*` bits (enum ibv_wc_flags_ex).
///
/// ```
/// use typed_verbs::{cq_ex::flags, wc_flags, WcFlags};
/// assert_eq!(<wc_flags!(BYTE_LEN | IMM)>::BITS, flags::BYTE_LEN | flags::IMM);
/// ```
///
/// The flags as a CQ's type: [`crate::wc_flags`], and [the guide's guarantees](crate::guide::guarantees).
pub mod wc_ex_flags {
    /// `IBV_WC_EX_WITH_BYTE_LEN`
    pub const BYTE_LEN: u64 = 1 << 0;
    /// `IBV_WC_EX_WITH_IMM`
    pub const IMM: u64 = 1 << 1;
    /// `IBV_WC_EX_WITH_QP_NUM`
    pub const QP_NUM: u64 = 1 << 2;
    /// `IBV_WC_EX_WITH_SRC_QP`
    pub const SRC_QP: u64 = 1 << 3;
    /// `IBV_WC_EX_WITH_SLID`
    pub const SLID: u64 = 1 << 4;
    /// `IBV_WC_EX_WITH_SL`
    pub const SL: u64 = 1 << 5;
    /// `IBV_WC_EX_WITH_DLID_PATH_BITS`
    pub const DLID_PATH_BITS: u64 = 1 << 6;
    /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP`
    pub const COMPLETION_TIMESTAMP: u64 = 1 << 7;
    /// `IBV_WC_EX_WITH_CVLAN`
    pub const CVLAN: u64 = 1 << 8;
    /// `IBV_WC_EX_WITH_FLOW_TAG`
    pub const FLOW_TAG: u64 = 1 << 9;
    /// `IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK`
    pub const COMPLETION_TIMESTAMP_WALLCLOCK: u64 = 1 << 11;
    /// The fields `ibv_poll_cq` always returns (`IBV_WC_STANDARD_FLAGS`).
    pub const STANDARD: u64 = BYTE_LEN | IMM | QP_NUM | SRC_QP | SLID | SL | DLID_PATH_BITS;
    /// Every flag of the man page.
    pub const ALL: u64 =
        STANDARD | COMPLETION_TIMESTAMP | CVLAN | FLOW_TAG | COMPLETION_TIMESTAMP_WALLCLOCK;

    // The same values as verbs.h's, as rdma-sys generated them.
    use super::sys::ibv_create_cq_wc_flags as w;
    macro_rules! same_as_verbs_h {
        ($($ours:ident = $c:ident),*) => {$(
            static_assertions::const_assert_eq!($ours, w::$c.0 as u64);
        )*};
    }
    same_as_verbs_h!(
        BYTE_LEN = IBV_WC_EX_WITH_BYTE_LEN,
        IMM = IBV_WC_EX_WITH_IMM,
        QP_NUM = IBV_WC_EX_WITH_QP_NUM,
        SRC_QP = IBV_WC_EX_WITH_SRC_QP,
        SLID = IBV_WC_EX_WITH_SLID,
        SL = IBV_WC_EX_WITH_SL,
        DLID_PATH_BITS = IBV_WC_EX_WITH_DLID_PATH_BITS,
        COMPLETION_TIMESTAMP = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP,
        CVLAN = IBV_WC_EX_WITH_CVLAN,
        FLOW_TAG = IBV_WC_EX_WITH_FLOW_TAG,
        COMPLETION_TIMESTAMP_WALLCLOCK = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK
    );
}

/// `IBV_WC_WITH_IMM` in a completion's own `wc_flags` (enum ibv_wc_flags).
pub(crate) const IBV_WC_WITH_IMM: u32 = 1 << 1;
/// `IBV_WC_WITH_INV` in a completion's own `wc_flags`.
pub(crate) const IBV_WC_WITH_INV: u32 = 1 << 3;
/// `IBV_CQ_INIT_ATTR_MASK_FLAGS`.
pub(crate) const CQ_INIT_ATTR_MASK_FLAGS: u32 = 1 << 0;
/// `IBV_CQ_INIT_ATTR_MASK_PD`.
pub(crate) const CQ_INIT_ATTR_MASK_PD: u32 = 1 << 1;
/// `IBV_CREATE_CQ_ATTR_SINGLE_THREADED`.
pub const CREATE_CQ_ATTR_SINGLE_THREADED: u32 = 1 << 0;
/// `IBV_CREATE_CQ_ATTR_IGNORE_OVERRUN`.
pub const CREATE_CQ_ATTR_IGNORE_OVERRUN: u32 = 1 << 1;
