//! QP states as types (ibv_modify_qp(3) and the kernel's QP state table).
//!
//! ```
//! use typed_verbs::{prelude::*, ErrorKind};
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;                    // Qp<.., Reset>
//! let Err(refused) = qp.try_to_init(UdInit { port_num: 2, pkey_index: 0, qkey: 0x11 }) else {
//!     panic!("sw0 has one port");
//! };
//! assert!(matches!(refused.error.kind, ErrorKind::OutOfRange { what: "port_num", .. }));
//! let qp = refused.qp;                                                     // still in RESET
//! let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?; // Qp<.., Init>
//! let qp = qp.to_rtr(())?;                                                 // Qp<.., Rtr>
//! let qp = qp.to_rts(SqPsn { sq_psn: 0 })?;                                // Qp<.., Rts>
//! qp.modify_rts(UdRtsModify { qkey: Some(0x22) })?;
//! let qp = qp.to_error()?;                                                 // Qp<.., ErrorState>
//! # drop(qp);
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The guide's [connection parameters](crate::guide::connection_parameters) page says how to
//! choose an RC QP's timers and retry counts, and its [guarantees](crate::guide::guarantees) page
//! lists the transitions' compile-time rules with the crate's others.
//!
//! A [`Qp`] is created in [`Reset`]; `to_init`, `to_rtr` and `to_rts` move it along
//! RESET → INIT → RTR → RTS, each taking the attributes that transition requires for the QP's
//! type as a struct whose fields are all required; `to_error` and `to_reset` work from any state.
//! A transition consumes the QP and returns it in the new state, or, if the device refuses, in
//! its old state inside a [`ModifyError`].
//!
//! The required attributes are the kernel's (`qp_state_table` in drivers/infiniband/core/verbs.c):
//!
//! | transition | RC | UC | UD | RAW_PACKET |
//! |---|---|---|---|---|
//! | RESET → INIT | pkey_index, port, access flags | pkey_index, port, access flags | pkey_index, port, qkey | port |
//! | INIT → RTR | address vector, path MTU, dest QPN, RQ PSN, max_dest_rd_atomic, min_rnr_timer | address vector, path MTU, dest QPN, RQ PSN | none | none |
//! | RTR → RTS | SQ PSN, timeout, retry_cnt, rnr_retry, max_rd_atomic | SQ PSN | SQ PSN | none |
//!
//! A QP in INIT or RTS may also change some attributes without leaving its state
//! ([`modify_init`](Qp::modify_init), [`modify_rts`](Qp::modify_rts)); each takes a struct of
//! `Option`s with exactly the table's optional attributes for that QP type:
//!
//! | modify | RC | UC | UD | RAW_PACKET |
//! |---|---|---|---|---|
//! | INIT → INIT | pkey_index, port, access flags | pkey_index, port, access flags | pkey_index, port, qkey | nothing |
//! | RTS → RTS | access flags, alt path, path migration state, min_rnr_timer | access flags, alt path, path migration state | qkey | nothing |
//!
//! Before the call, every attribute is held to its range, and a value outside is an
//! [`ErrorKind::OutOfRange`] naming the attribute as in `struct ibv_qp_attr`, the transition
//! (`ibv_modify_qp INIT->RTR`) and the range; the QP is unchanged (`try_to_*` gives it back):
//!
//! | attribute | range | why |
//! |---|---|---|
//! | `timeout`, `alt_timeout`, `min_rnr_timer` | 0..=31 | 5-bit encoded fields of the InfiniBand specification; rxe_qp_chk_attr: "invalid QP timeout %d > 31" |
//! | `retry_cnt`, `rnr_retry` | 0..=7 | 3-bit fields of the specification (rnr_retry 7 is "infinite") |
//! | `max_dest_rd_atomic` | 0..=`max_qp_rd_atom` | ibv_query_device(3): "Maximum number of RDMA Read & Atomic operations that can be outstanding per QP" (the responder's resources) |
//! | `max_rd_atomic` | 0..=`max_qp_init_rd_atom` | ibv_query_device(3): "Maximum depth per QP for initiation of RDMA Read & Atomic operations" |
//! | `port_num`, `alt_port_num`, `ah_attr.port_num` | 1..=`phys_port_cnt` | ports are numbered from 1 (the kernel's rdma_is_port_valid) |
//! | `pkey_index`, `alt_pkey_index` | below the port's `pkey_tbl_len` | ibv_query_port(3): "Length of partition table" |
//! | `ah_attr.grh.sgid_index` | below the port's `gid_tbl_len` | ibv_query_port(3): "Length of source GID table" (the kernel's rdma_get_gid_attr: EINVAL past it) |
//! | `ah_attr.sl` | 0..=15 | the service level is 4 bits (the InfiniBand specification's LRH SL); a larger value does not fit the header |
//! | `ah_attr.grh.flow_label` | 0..=0xFFFFF | 20 bits (the GRH's FlowLabel, IPv6's on RoCE v2); a wider value does not fit the header |
//! | `ah_attr.static_rate` | 0..=24 | an `enum ibv_rate` value (verbs.h: `IBV_RATE_MAX` 0, the port's current rate, to `IBV_RATE_1200_GBPS` 24) |
//! | `ah_attr.grh.hop_limit` | every `u8` | the GRH's HopLmt is 8 bits; on RoCE v2 it is the IP TTL (rxe copies it), where 0 and 1 keep the packet on its link; no value is invalid, none is checked |
//! | `ah_attr.grh.traffic_class` | every `u8` | the GRH's TClass is 8 bits (DSCP and ECN on RoCE v2); none is checked |
//!
//! The alternate path's address vector (`alt_ah_attr.*`) is held to the same ranges, and so is
//! an address handle's ([`AddressHandle::new`](crate::AddressHandle::new), named as in
//! `struct ibv_ah_attr`: `sl`, `static_rate`, `grh.flow_label`).
//!
//! The device's limits are read once per context (`ibv_query_device` when it is opened,
//! `ibv_query_port` of each port the first time a check needs the port's tables), and kept with
//! each QP: a transition makes no extra call. Only the tables' lengths and the device's limits
//! are kept; a port's live values (state, active MTU, LID) are queried where they are used. A P_Key
//! index given without a port (`modify_init`) is held to the longest table of the device's
//! ports. An index inside a table may still name an empty entry: the device answers that
//! (`ENODATA` for a source GID index without a GID, as the kernel's `rdma_get_gid_attr`).
//! Some devices accept more than this (rxe takes any P_Key index and a `max_dest_rd_atomic`
//! above its `max_qp_rd_atom`); the typed layer keeps to what every device documents.

/// Where a QP sends: address vectors (AddressVector, GlobalRoute, Mtu), and a port's GIDs
/// (ibv_query_gid).
mod address;
/// The attributes of each transition, their range checks, and which ones each QP type takes
/// (Transitions).
mod attr;
/// The transitions: ibv_modify_qp from one state type to the next, and what a refused one gives
/// back.
mod modify;

pub use address::*;
pub use attr::*;
pub use modify::*;

use crate::backend;
use crate::cq::Threading;
use crate::device::Context;
use crate::error::{Error, ErrorKind, QpStateName, Result, Verb};
use crate::ffi::qp_attr_mask::{
    ACCESS_FLAGS, ALT_PATH, AV, DEST_QPN, MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER,
    PATH_MIG_STATE, PATH_MTU, PKEY_INDEX, PORT, QKEY, RETRY_CNT, RNR_RETRY, RQ_PSN, SQ_PSN, STATE,
    TIMEOUT,
};
use crate::ffi::sys;
pub use crate::mr::access::AccessFlags;
use crate::qp::{Gid, Qp, QpType, RawPacket, Rc, RecvSide, Uc, Ud};
use crate::sealed;
use std::fmt;
use std::mem::ManuallyDrop;

/// A QP state: [`Reset`], [`Init`], [`Rtr`], [`Rts`] or [`ErrorState`].
///
/// ```
/// use typed_verbs::{ffi::sys::ibv_qp_state, qp_state::QpState, Init, Rts};
/// assert_eq!(<Init as QpState>::RAW, ibv_qp_state::IBV_QPS_INIT);
/// assert_eq!(<Rts as QpState>::RAW, ibv_qp_state::IBV_QPS_RTS);
/// ```
pub trait QpState: sealed::Sealed + 'static {
    /// The `enum ibv_qp_state` value.
    const RAW: sys::ibv_qp_state::Type;
}

macro_rules! states {
    ($($(#[$m:meta])* $s:ident = $c:ident,)*) => {$(
        $(#[$m])*
        #[derive(Debug)]
        pub enum $s {}
        impl sealed::Sealed for $s {}
        impl QpState for $s {
            const RAW: sys::ibv_qp_state::Type = sys::ibv_qp_state::$c;
        }
    )*};
}

states! {
    /// `IBV_QPS_RESET`: as created.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Ud, OwnRq, Shared, (), Reset> = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Reset = IBV_QPS_RESET,
    /// `IBV_QPS_INIT`: receives may be posted.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp: Qp<'_, Ud, OwnRq, Shared, (), Init> = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Init = IBV_QPS_INIT,
    /// `IBV_QPS_RTR`: ready to receive.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?;
    /// let qp: Qp<'_, Ud, OwnRq, Shared, (), Rtr> = qp.to_rtr(())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Rtr = IBV_QPS_RTR,
    /// `IBV_QPS_RTS`: ready to send.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?;
    /// let qp: Qp<'_, Ud, OwnRq, Shared, (), Rts> = qp.to_rts(SqPsn { sq_psn: 0 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Rts = IBV_QPS_RTS,
    /// `IBV_QPS_ERR`: outstanding work requests are flushed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?;
    /// let qp: Qp<'_, Ud, OwnRq, Shared, (), ErrorState> = qp.to_error()?; // posted receives flush
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    ErrorState = IBV_QPS_ERR,
}

pub(crate) use attr::checks;
pub(crate) use attr::checks::{AvNames, Limits};
