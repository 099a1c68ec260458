//! A CQ's wc_flags as a type (WcFlags, WcFlagSet and its aliases), and which readers each flag
//! allows.

use super::*;

/// A CQ's set of `wc_flags`, as a type. Implemented only by [`WcFlagSet`].
///
/// ```
/// use typed_verbs::{wc_flags, WcFlags};
/// fn bits<F: WcFlags>() -> u64 { F::BITS }
/// assert_eq!(bits::<wc_flags!(BYTE_LEN)>(), typed_verbs::cq_ex::flags::BYTE_LEN);
/// ```
pub trait WcFlags: sealed::Sealed + 'static {
    /// The `wc_flags` value passed to `ibv_create_cq_ex`.
    const BITS: u64;
}

/// The set of `IBV_WC_EX_WITH_*` flags of a CQ: one `bool` per flag, in the man page's order.
/// Name one with [`wc_flags!`](crate::wc_flags) (`wc_flags!(BYTE_LEN | IMM)`) or an alias
/// ([`Standard`], [`NoFields`], [`AllFields`]).
///
/// ```
/// use typed_verbs::{wc_flags, Context, CqEx};
/// let ctx = Context::open("sw0")?;
/// let cq = CqEx::<wc_flags!(BYTE_LEN | IMM | QP_NUM)>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub enum WcFlagSet<
    const BYTE_LEN: bool,
    const IMM: bool,
    const QP_NUM: bool,
    const SRC_QP: bool,
    const SLID: bool,
    const SL: bool,
    const DLID_PATH_BITS: bool,
    const COMPLETION_TIMESTAMP: bool,
    const CVLAN: bool,
    const FLOW_TAG: bool,
    const COMPLETION_TIMESTAMP_WALLCLOCK: bool,
> {}

/// Impls for every flag set: each trait's items, over the eleven flags as parameters.
macro_rules! every_flag_set {
    (@one [$($p:ident),*] $tr:path { $($body:tt)* }) => {
        impl<$(const $p: bool),*> $tr for WcFlagSet<$($p),*> {
            $($body)*
        }
    };
    ($params:tt $($tr:path { $($body:tt)* })*) => {$(
        every_flag_set!(@one $params $tr { $($body)* });
    )*};
}

every_flag_set! {
    [B, I, Q, SQ, SLID, SL, D, TS, CV, FT, WC]
    sealed::Sealed {}
    WcFlags {
        const BITS: u64 = (B as u64 * flags::BYTE_LEN)
            | (I as u64 * flags::IMM)
            | (Q as u64 * flags::QP_NUM)
            | (SQ as u64 * flags::SRC_QP)
            | (SLID as u64 * flags::SLID)
            | (SL as u64 * flags::SL)
            | (D as u64 * flags::DLID_PATH_BITS)
            | (TS as u64 * flags::COMPLETION_TIMESTAMP)
            | (CV as u64 * flags::CVLAN)
            | (FT as u64 * flags::FLOW_TAG)
            | (WC as u64 * flags::COMPLETION_TIMESTAMP_WALLCLOCK);
    }
}

/// The standard set: the seven fields `ibv_poll_cq` returns (`IBV_WC_STANDARD_FLAGS`).
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::Standard>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type Standard = WcFlagSet<true, true, true, true, true, true, true, false, false, false, false>;
/// No optional field: only wr_id, status, opcode, vendor_err and the completion's own flags.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// let cq = typed_verbs::CqEx::<typed_verbs::NoFields>::builder(&ctx).cqe(16).build()?; // wr_id and status only
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type NoFields =
    WcFlagSet<false, false, false, false, false, false, false, false, false, false, false>;
/// Every flag of the man page.
///
/// ```
/// # let ctx = typed_verbs::Context::open("sw0")?;
/// // sw0 has all eleven flags; rxe only the standard ones (EOPNOTSUPP).
/// let cq = typed_verbs::CqEx::<typed_verbs::AllFields>::builder(&ctx).cqe(16).build()?;
/// # drop(cq);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type AllFields = WcFlagSet<true, true, true, true, true, true, true, true, true, true, true>;

macro_rules! flag_traits {
    ($($trait:ident for <$($p:ident),*> [$($a:tt),*]: $msg:literal, $label:literal;)*) => {$(
        #[doc = concat!("Implemented by the flag sets from which `", stringify!($trait), "`'s field can be read.")]
        #[doc = concat!("\n\n```\nfn needs<F: typed_verbs::cq_ex::", stringify!($trait), ">() {}\nneeds::<typed_verbs::AllFields>(); // every flag set with the flag\n```")]
        #[diagnostic::on_unimplemented(
            message = $msg,
            label = $label,
            note = "a CQ's wc_flags are its type parameter: a field can be read only if its flag was requested at ibv_create_cq_ex"
        )]
        pub trait $trait: WcFlags + sealed::Sealed {}
        impl<$(const $p: bool),*> $trait for WcFlagSet<$($a),*> {}
    )*};
}

// One row per flag of the man page: the trait a reader of that field needs, and the flag sets
// (the flag's own parameter `true`) that have it.
flag_traits! {
    WithByteLen for <I, Q, SQ, SLID, SL, D, TS, CV, FT, WC> [true, I, Q, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`byte_len` needs a CQ created with IBV_WC_EX_WITH_BYTE_LEN, which this CQ's flag type does not promise: add BYTE_LEN to it (`CqEx<wc_flags!(... | BYTE_LEN)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithByteLen`",
        "`byte_len` needs IBV_WC_EX_WITH_BYTE_LEN in the CQ's wc_flags";
    WithImm for <B, Q, SQ, SLID, SL, D, TS, CV, FT, WC> [B, true, Q, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`imm_data` needs a CQ created with IBV_WC_EX_WITH_IMM, which this CQ's flag type does not promise: add IMM to it (`CqEx<wc_flags!(... | IMM)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithImm`",
        "`imm_data` needs IBV_WC_EX_WITH_IMM in the CQ's wc_flags";
    WithQpNum for <B, I, SQ, SLID, SL, D, TS, CV, FT, WC> [B, I, true, SQ, SLID, SL, D, TS, CV, FT, WC]:
        "`qp_num` needs a CQ created with IBV_WC_EX_WITH_QP_NUM, which this CQ's flag type does not promise: add QP_NUM to it (`CqEx<wc_flags!(... | QP_NUM)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithQpNum`",
        "`qp_num` needs IBV_WC_EX_WITH_QP_NUM in the CQ's wc_flags";
    WithSrcQp for <B, I, Q, SLID, SL, D, TS, CV, FT, WC> [B, I, Q, true, SLID, SL, D, TS, CV, FT, WC]:
        "`src_qp` needs a CQ created with IBV_WC_EX_WITH_SRC_QP, which this CQ's flag type does not promise: add SRC_QP to it (`CqEx<wc_flags!(... | SRC_QP)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSrcQp`",
        "`src_qp` needs IBV_WC_EX_WITH_SRC_QP in the CQ's wc_flags";
    WithSlid for <B, I, Q, SQ, SL, D, TS, CV, FT, WC> [B, I, Q, SQ, true, SL, D, TS, CV, FT, WC]:
        "`slid` needs a CQ created with IBV_WC_EX_WITH_SLID, which this CQ's flag type does not promise: add SLID to it (`CqEx<wc_flags!(... | SLID)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSlid`",
        "`slid` needs IBV_WC_EX_WITH_SLID in the CQ's wc_flags";
    WithSl for <B, I, Q, SQ, SLID, D, TS, CV, FT, WC> [B, I, Q, SQ, SLID, true, D, TS, CV, FT, WC]:
        "`sl` needs a CQ created with IBV_WC_EX_WITH_SL, which this CQ's flag type does not promise: add SL to it (`CqEx<wc_flags!(... | SL)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithSl`",
        "`sl` needs IBV_WC_EX_WITH_SL in the CQ's wc_flags";
    WithDlidPathBits for <B, I, Q, SQ, SLID, SL, TS, CV, FT, WC> [B, I, Q, SQ, SLID, SL, true, TS, CV, FT, WC]:
        "`dlid_path_bits` needs a CQ created with IBV_WC_EX_WITH_DLID_PATH_BITS, which this CQ's flag type does not promise: add DLID_PATH_BITS to it (`CqEx<wc_flags!(... | DLID_PATH_BITS)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithDlidPathBits`",
        "`dlid_path_bits` needs IBV_WC_EX_WITH_DLID_PATH_BITS in the CQ's wc_flags";
    WithCompletionTimestamp for <B, I, Q, SQ, SLID, SL, D, CV, FT, WC> [B, I, Q, SQ, SLID, SL, D, true, CV, FT, WC]:
        "`completion_ts` needs a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP, which this CQ's flag type does not promise: add COMPLETION_TIMESTAMP to it (`CqEx<wc_flags!(... | COMPLETION_TIMESTAMP)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCompletionTimestamp`",
        "`completion_ts` needs IBV_WC_EX_WITH_COMPLETION_TIMESTAMP in the CQ's wc_flags";
    WithCvlan for <B, I, Q, SQ, SLID, SL, D, TS, FT, WC> [B, I, Q, SQ, SLID, SL, D, TS, true, FT, WC]:
        "`cvlan` needs a CQ created with IBV_WC_EX_WITH_CVLAN, which this CQ's flag type does not promise: add CVLAN to it (`CqEx<wc_flags!(... | CVLAN)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCvlan`",
        "`cvlan` needs IBV_WC_EX_WITH_CVLAN in the CQ's wc_flags";
    WithFlowTag for <B, I, Q, SQ, SLID, SL, D, TS, CV, WC> [B, I, Q, SQ, SLID, SL, D, TS, CV, true, WC]:
        "`flow_tag` needs a CQ created with IBV_WC_EX_WITH_FLOW_TAG, which this CQ's flag type does not promise: add FLOW_TAG to it (`CqEx<wc_flags!(... | FLOW_TAG)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithFlowTag`",
        "`flow_tag` needs IBV_WC_EX_WITH_FLOW_TAG in the CQ's wc_flags";
    WithCompletionTimestampWallclock for <B, I, Q, SQ, SLID, SL, D, TS, CV, FT> [B, I, Q, SQ, SLID, SL, D, TS, CV, FT, true]:
        "`completion_wallclock_ns` needs a CQ created with IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK, which this CQ's flag type does not promise: add COMPLETION_TIMESTAMP_WALLCLOCK to it (`CqEx<wc_flags!(... | COMPLETION_TIMESTAMP_WALLCLOCK)>`), or, in generic code over the flags `F`, add the bound `F: typed_verbs::cq_ex::WithCompletionTimestampWallclock`",
        "`completion_wallclock_ns` needs IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK in the CQ's wc_flags";
}
