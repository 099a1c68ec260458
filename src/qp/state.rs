//! QP states as types (ibv_modify_qp(3) and the kernel's QP state table).
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
//!
//! The device's limits are read once, when the QP is created (`ibv_query_device`,
//! `ibv_query_port` of each port), and kept with it: a transition makes no extra call. A P_Key
//! index given without a port (`modify_init`) is held to the longest table of the device's
//! ports. An index inside a table may still name an empty entry: the device answers that
//! (`ENODATA` for a source GID index without a GID, as the kernel's `rdma_get_gid_attr`).
//! Some devices accept more than this (rxe takes any P_Key index and a `max_dest_rd_atomic`
//! above its `max_qp_rd_atom`); the typed layer keeps to what every device documents.
//!
//! ```
//! use typed_verbs::prelude::*;
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;                    // Qp<.., Reset>
//! let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?; // Qp<.., Init>
//! let qp = qp.to_rtr(())?;                                                 // Qp<.., Rtr>
//! let qp = qp.to_rts(SqPsn { sq_psn: 0 })?;                                // Qp<.., Rts>
//! qp.modify_rts(UdRtsModify { qkey: Some(0x22) })?;
//! let qp = qp.to_error()?;                                                 // Qp<.., ErrorState>
//! # drop(qp);
//! # Ok::<(), typed_verbs::Error>(())
//! ```

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

/// A path MTU (`enum ibv_mtu`), ordered by size.
///
/// ```
/// use typed_verbs::Mtu;
/// assert!(Mtu::Mtu1024 < Mtu::Mtu4096);
/// assert_eq!(Mtu::Mtu1024.min(Mtu::Mtu4096), Mtu::Mtu1024); // a connection takes the smaller
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[allow(missing_docs)]
pub enum Mtu {
    Mtu256 = 1,
    Mtu512 = 2,
    Mtu1024 = 3,
    Mtu2048 = 4,
    Mtu4096 = 5,
}

/// The global route of an address vector (`struct ibv_global_route`); RoCE devices need one.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// # let _ = grh;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GlobalRoute {
    /// The destination GID.
    pub dgid: Gid,
    /// Flow label.
    pub flow_label: u32,
    /// The local GID table index to send from.
    pub sgid_index: u8,
    /// Hop limit.
    pub hop_limit: u8,
    /// Traffic class.
    pub traffic_class: u8,
}

/// Where a connected QP sends (`struct ibv_ah_attr`).
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
/// # let _ = av;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AddressVector {
    /// Destination LID (InfiniBand; 0 on RoCE).
    pub dlid: u16,
    /// Service level.
    pub sl: u8,
    /// Source path bits.
    pub src_path_bits: u8,
    /// Static rate (0: the port's).
    pub static_rate: u8,
    /// The local port.
    pub port_num: u8,
    /// The global route; required on RoCE.
    pub grh: Option<GlobalRoute>,
}

impl AddressVector {
    pub(crate) fn to_sys(self) -> sys::ibv_ah_attr {
        let grh = self.grh.unwrap_or(GlobalRoute {
            dgid: Gid([0; 16]),
            flow_label: 0,
            sgid_index: 0,
            hop_limit: 0,
            traffic_class: 0,
        });
        sys::ibv_ah_attr {
            grh: sys::ibv_global_route {
                dgid: sys::ibv_gid { raw: grh.dgid.0 },
                flow_label: grh.flow_label,
                sgid_index: grh.sgid_index,
                hop_limit: grh.hop_limit,
                traffic_class: grh.traffic_class,
            },
            dlid: self.dlid,
            sl: self.sl,
            src_path_bits: self.src_path_bits,
            static_rate: self.static_rate,
            is_global: self.grh.is_some() as u8,
            port_num: self.port_num,
        }
    }
}

/// The attributes of one transition, written into `struct ibv_qp_attr` with their mask bits.
/// Sealed: `ibv_modify_qp` takes the mask `apply` returns.
///
/// Before the call, each attribute is held to its range and to the limits the device reported
/// (the module's docs list them); a value outside is an [`ErrorKind::OutOfRange`] naming the
/// attribute as in `struct ibv_qp_attr`, the transition, and the range.
///
/// ```
/// use typed_verbs::{qp_state::{TransitionAttr, Transitions}, Rc, ConnectedInit};
/// fn takes<A: TransitionAttr>() {}
/// takes::<<Rc as Transitions>::Init>(); // ConnectedInit
/// takes::<ConnectedInit>();
/// ```
pub trait TransitionAttr: crate::sealed::SealedTransitionAttr {
    #[doc(hidden)]
    fn apply(&self, attr: &mut sys::ibv_qp_attr) -> i32;
    #[doc(hidden)]
    fn check(&self, limits: &checks::Limits) -> std::result::Result<(), checks::Bad> {
        let _ = limits;
        Ok(())
    }
}

pub(crate) use checks::Limits;

/// The ranges of a transition's attributes, checked before `ibv_modify_qp` (the module's
/// docs list them).
mod checks {
    use super::AddressVector;
    use crate::ffi::sys;

    /// A port's table lengths as `ibv_query_port` reports them.
    #[derive(Debug, Clone, Copy)]
    pub(crate) struct PortTables {
        pkey_tbl_len: u64,
        gid_tbl_len: u64,
    }

    /// The limits the device reported, that a transition's attributes are checked against.
    #[derive(Debug, Clone)]
    pub struct Limits {
        max_qp_rd_atom: u64,
        max_qp_init_rd_atom: u64,
        /// Ports 1, 2, ...
        ports: Vec<PortTables>,
    }

    /// An attribute out of its range: what the typed layer turns into
    /// [`ErrorKind::OutOfRange`](crate::error::ErrorKind::OutOfRange).
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    pub struct Bad {
        pub(crate) what: &'static str,
        pub(crate) value: u64,
        pub(crate) min: u64,
        pub(crate) max: u64,
    }

    pub(crate) type Check = std::result::Result<(), Bad>;

    /// `value` in `min..=max`.
    pub(crate) fn within(what: &'static str, value: impl Into<u64>, min: u64, max: u64) -> Check {
        let value = value.into();
        if value < min || value > max {
            Err(Bad {
                what,
                value,
                min,
                max,
            })
        } else {
            Ok(())
        }
    }

    /// A 5-bit encoded field (`timeout`, `min_rnr_timer`): 0..=31.
    pub(crate) fn five_bits(what: &'static str, value: u8) -> Check {
        within(what, value, 0, 31)
    }

    /// A 3-bit field (`retry_cnt`, `rnr_retry`): 0..=7.
    pub(crate) fn three_bits(what: &'static str, value: u8) -> Check {
        within(what, value, 0, 7)
    }

    /// An index into a table of `len` entries; a device that reports no length (0) is not
    /// second-guessed.
    fn index(what: &'static str, value: impl Into<u64>, len: u64) -> Check {
        if len == 0 {
            return Ok(());
        }
        within(what, value, 0, len - 1)
    }

    impl Limits {
        /// Queries the limits of the device of `ctx`, whose attributes are `dev`: each port's
        /// tables (`ibv_query_port`, one call per port).
        ///
        /// # Safety
        /// `ctx` is a live context.
        pub(crate) unsafe fn query(
            ctx: *mut sys::ibv_context,
            dev: &sys::ibv_device_attr,
        ) -> std::result::Result<Limits, i32> {
            let mut ports = Vec::with_capacity(dev.phys_port_cnt.into());
            for port in 1..=dev.phys_port_cnt {
                // SAFETY: plain C data.
                let mut p: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
                // SAFETY: caller's contract; a port the device has; `p` valid for writes.
                unsafe { crate::backend::of(ctx).query_port(ctx, port, &mut p) }?;
                ports.push(PortTables {
                    pkey_tbl_len: p.pkey_tbl_len.into(),
                    gid_tbl_len: p.gid_tbl_len.max(0) as u64,
                });
            }
            Ok(Limits {
                max_qp_rd_atom: dev.max_qp_rd_atom.max(0) as u64,
                max_qp_init_rd_atom: dev.max_qp_init_rd_atom.max(0) as u64,
                ports,
            })
        }

        /// `port` in 1..=`phys_port_cnt`: its tables.
        pub(crate) fn port(
            &self,
            what: &'static str,
            port: u8,
        ) -> std::result::Result<PortTables, Bad> {
            within(what, port, 1, self.ports.len() as u64)?;
            Ok(self.ports[usize::from(port) - 1])
        }

        /// A P_Key index below the `pkey_tbl_len` of `port`, or of every port when the
        /// transition does not name one (the QP's port is not changed by it).
        pub(crate) fn pkey_index(
            &self,
            what: &'static str,
            port: Option<&PortTables>,
            i: u16,
        ) -> Check {
            match port {
                Some(p) => index(what, i, p.pkey_tbl_len),
                None => {
                    let len = self.ports.iter().map(|p| p.pkey_tbl_len).max().unwrap_or(0);
                    index(what, i, len)
                }
            }
        }

        /// `max_dest_rd_atomic` up to `max_qp_rd_atom`.
        pub(crate) fn max_dest_rd_atomic(&self, v: u8) -> Check {
            within("max_dest_rd_atomic", v, 0, self.max_qp_rd_atom)
        }

        /// `max_rd_atomic` up to `max_qp_init_rd_atom`.
        pub(crate) fn max_rd_atomic(&self, v: u8) -> Check {
            within("max_rd_atomic", v, 0, self.max_qp_init_rd_atom)
        }

        /// An address vector: its port, and its source GID index below that port's
        /// `gid_tbl_len`. `names` are the port's and the GID index's.
        pub(crate) fn av(&self, names: [&'static str; 2], av: &AddressVector) -> Check {
            let port = self.port(names[0], av.port_num)?;
            match av.grh {
                Some(g) => index(names[1], g.sgid_index, port.gid_tbl_len),
                None => Ok(()),
            }
        }
    }
}

/// `A: AttrOf<E, Q>` when a transition of a `Q` QP, whose attributes are `E`, takes `A`: only
/// for `A = E`. A bound rather than `E` in the signature, so that another QP type's (or
/// transition's) attributes are an error that says so: the argument's type is known before
/// the bound is looked at.
///
/// ```
/// use typed_verbs::prelude::*;
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// // `UdInit: AttrOf<UdInit, Ud>`, the one impl: a `ConnectedInit` here would not compile.
/// let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?;
/// # drop(qp);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not what this transition takes for a `{Q}` QP: pass a `{E}`",
    label = "the attributes of another QP type or transition",
    note = "each QP type's attributes per transition are the associated types of `typed_verbs::qp_state::Transitions` (`Init`, `Rtr`, `Rts`, `InitModify`, `RtsModify`)"
)]
pub trait AttrOf<E: TransitionAttr, Q: QpType>: crate::sealed::SealedAttrOf<(E, Q)> {
    #[doc(hidden)]
    fn into_attr(self) -> E;
}
impl<E: TransitionAttr, Q: QpType> crate::sealed::SealedAttrOf<(E, Q)> for E {}
impl<E: TransitionAttr, Q: QpType> AttrOf<E, Q> for E {
    #[inline(always)]
    fn into_attr(self) -> E {
        self
    }
}

impl crate::sealed::SealedTransitionAttr for () {}
impl crate::sealed::SealedTransitionAttr for ConnectedInit {}
impl crate::sealed::SealedTransitionAttr for UdInit {}
impl crate::sealed::SealedTransitionAttr for RawPacketInit {}
impl crate::sealed::SealedTransitionAttr for RcRtr {}
impl crate::sealed::SealedTransitionAttr for UcRtr {}
impl crate::sealed::SealedTransitionAttr for RcRts {}
impl crate::sealed::SealedTransitionAttr for SqPsn {}
impl crate::sealed::SealedTransitionAttr for ConnectedInitModify {}
impl crate::sealed::SealedTransitionAttr for UdInitModify {}
impl crate::sealed::SealedTransitionAttr for RcRtsModify {}
impl crate::sealed::SealedTransitionAttr for UcRtsModify {}
impl crate::sealed::SealedTransitionAttr for UdRtsModify {}

impl TransitionAttr for () {
    fn apply(&self, _: &mut sys::ibv_qp_attr) -> i32 {
        0
    }
}

/// The names of a primary address vector's port and source GID index in `struct ibv_qp_attr`.
const AV_NAMES: [&str; 2] = ["ah_attr.port_num", "ah_attr.grh.sgid_index"];

/// RESET → INIT of an RC or UC QP.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?
///     .to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::REMOTE_WRITE })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnectedInit {
    /// The port.
    pub port_num: u8,
    /// The P_Key table index.
    pub pkey_index: u16,
    /// What the remote side may do to this QP's memory.
    pub access: AccessFlags,
}

impl TransitionAttr for ConnectedInit {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.port_num = self.port_num;
        a.pkey_index = self.pkey_index;
        a.qp_access_flags = self.access.bits();
        PORT | PKEY_INDEX | ACCESS_FLAGS
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        let port = l.port("port_num", self.port_num)?;
        l.pkey_index("pkey_index", Some(&port), self.pkey_index)
    }
}

/// RESET → INIT of a UD QP.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x1234 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdInit {
    /// The port.
    pub port_num: u8,
    /// The P_Key table index.
    pub pkey_index: u16,
    /// The Q_Key this QP accepts.
    pub qkey: u32,
}

impl TransitionAttr for UdInit {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.port_num = self.port_num;
        a.pkey_index = self.pkey_index;
        a.qkey = self.qkey;
        PORT | PKEY_INDEX | QKEY
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        let port = l.port("port_num", self.port_num)?;
        l.pkey_index("pkey_index", Some(&port), self.pkey_index)
    }
}

/// RESET → INIT of a RAW_PACKET QP.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<RawPacket>::builder(&pd, &cq, &cq).build()?.to_init(RawPacketInit { port_num: 1 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RawPacketInit {
    /// The port.
    pub port_num: u8,
}

impl TransitionAttr for RawPacketInit {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.port_num = self.port_num;
        PORT
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        l.port("port_num", self.port_num).map(drop)
    }
}

/// INIT → RTR of an RC QP.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?.to_init(init)?;
/// let peer = qp.qp_num(); // loopback: connected to itself
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
/// let qp = qp.to_rtr(RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: peer, rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcRtr {
    /// Where the remote QP is.
    pub av: AddressVector,
    /// The path MTU.
    pub path_mtu: Mtu,
    /// The remote QP's number.
    pub dest_qp_num: u32,
    /// The first PSN expected from the remote QP.
    pub rq_psn: u32,
    /// RDMA reads and atomics the remote QP may have outstanding here.
    pub max_dest_rd_atomic: u8,
    /// The RNR NAK timer (encoded, 0..=31).
    pub min_rnr_timer: u8,
}

impl TransitionAttr for RcRtr {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.ah_attr = self.av.to_sys();
        a.path_mtu = self.path_mtu as u32;
        a.dest_qp_num = self.dest_qp_num;
        a.rq_psn = self.rq_psn;
        a.max_dest_rd_atomic = self.max_dest_rd_atomic;
        a.min_rnr_timer = self.min_rnr_timer;
        AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        l.av(AV_NAMES, &self.av)?;
        l.max_dest_rd_atomic(self.max_dest_rd_atomic)?;
        checks::five_bits("min_rnr_timer", self.min_rnr_timer)
    }
}

/// INIT → RTR of a UC QP.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
/// let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?.to_init(init)?;
/// let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) };
/// let dest_qp_num = qp.qp_num();
/// let qp = qp.to_rtr(UcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num, rq_psn: 0 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UcRtr {
    /// Where the remote QP is.
    pub av: AddressVector,
    /// The path MTU.
    pub path_mtu: Mtu,
    /// The remote QP's number.
    pub dest_qp_num: u32,
    /// The first PSN expected from the remote QP.
    pub rq_psn: u32,
}

impl TransitionAttr for UcRtr {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.ah_attr = self.av.to_sys();
        a.path_mtu = self.path_mtu as u32;
        a.dest_qp_num = self.dest_qp_num;
        a.rq_psn = self.rq_psn;
        AV | PATH_MTU | DEST_QPN | RQ_PSN
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        l.av(AV_NAMES, &self.av)
    }
}

/// RTR → RTS of an RC QP.
///
/// ```
/// use typed_verbs::RcRts;
/// // ~67 ms ACK timeout, 7 retries, RNR retries without limit, one RDMA read in flight.
/// let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
/// # let _ = rts;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RcRts {
    /// The first PSN this QP sends.
    pub sq_psn: u32,
    /// The local ACK timeout (encoded, 4.096 µs × 2^timeout).
    pub timeout: u8,
    /// Retries after a timeout (0..=7).
    pub retry_cnt: u8,
    /// Retries after an RNR NAK (0..=7; 7 is infinite).
    pub rnr_retry: u8,
    /// RDMA reads and atomics this QP may have outstanding.
    pub max_rd_atomic: u8,
}

impl TransitionAttr for RcRts {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.sq_psn = self.sq_psn;
        a.timeout = self.timeout;
        a.retry_cnt = self.retry_cnt;
        a.rnr_retry = self.rnr_retry;
        a.max_rd_atomic = self.max_rd_atomic;
        SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        checks::five_bits("timeout", self.timeout)?;
        checks::three_bits("retry_cnt", self.retry_cnt)?;
        checks::three_bits("rnr_retry", self.rnr_retry)?;
        l.max_rd_atomic(self.max_rd_atomic)
    }
}

/// RTR → RTS of a UC or UD QP: only the send PSN.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
/// let qp = qp.to_rts(SqPsn { sq_psn: 0x1000 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SqPsn {
    /// The first PSN this QP sends.
    pub sq_psn: u32,
}

impl TransitionAttr for SqPsn {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        a.sq_psn = self.sq_psn;
        SQ_PSN
    }
}

/// Writes the attributes that are `Some` into `a`, returning their mask bits.
macro_rules! optional {
    ($a:ident, $mask:ident; $($field:expr => $bit:ident: $v:ident => $body:expr;)*) => {$(
        if let Some($v) = $field {
            $body;
            $mask |= $bit;
        }
    )*};
}

/// INIT → INIT of an RC or UC QP: what the kernel's state table lets it change ("optional"
/// attributes of INIT → INIT: `pkey_index`, `port`, `access_flags`). `None` leaves an
/// attribute as it is; [`Default`] changes nothing.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
/// qp.modify_init(ConnectedInitModify { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ConnectedInitModify {
    /// The port.
    pub port_num: Option<u8>,
    /// The P_Key table index.
    pub pkey_index: Option<u16>,
    /// What the remote side may do to this QP's memory.
    pub access: Option<AccessFlags>,
}

impl TransitionAttr for ConnectedInitModify {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        let mut mask = 0;
        optional! { a, mask;
            self.port_num => PORT: v => a.port_num = v;
            self.pkey_index => PKEY_INDEX: v => a.pkey_index = v;
            self.access => ACCESS_FLAGS: v => a.qp_access_flags = v.bits();
        }
        mask
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        let port = self.port_num.map(|p| l.port("port_num", p)).transpose()?;
        match self.pkey_index {
            Some(i) => l.pkey_index("pkey_index", port.as_ref(), i),
            None => Ok(()),
        }
    }
}

/// INIT → INIT of a UD QP: `pkey_index`, `port` and `qkey` (the kernel's state table).
/// `None` leaves an attribute as it is.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
/// qp.modify_init(UdInitModify { qkey: Some(2), ..Default::default() })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdInitModify {
    /// The port.
    pub port_num: Option<u8>,
    /// The P_Key table index.
    pub pkey_index: Option<u16>,
    /// The Q_Key this QP accepts.
    pub qkey: Option<u32>,
}

impl TransitionAttr for UdInitModify {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        let mut mask = 0;
        optional! { a, mask;
            self.port_num => PORT: v => a.port_num = v;
            self.pkey_index => PKEY_INDEX: v => a.pkey_index = v;
            self.qkey => QKEY: v => a.qkey = v;
        }
        mask
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        let port = self.port_num.map(|p| l.port("port_num", p)).transpose()?;
        match self.pkey_index {
            Some(i) => l.pkey_index("pkey_index", port.as_ref(), i),
            None => Ok(()),
        }
    }
}

/// The path migration state (`enum ibv_mig_state`).
///
/// ```
/// use typed_verbs::{PathMigState, RcRtsModify};
/// let m = RcRtsModify { path_mig_state: Some(PathMigState::Rearm), ..Default::default() }; // InfiniBand
/// # let _ = m;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum PathMigState {
    /// `IBV_MIG_MIGRATED`: the QP uses its alternate path; path migration is not armed.
    Migrated = 0,
    /// `IBV_MIG_REARM`: arm path migration (the QP moves to ARMED).
    Rearm = 1,
    /// `IBV_MIG_ARMED`: path migration is armed.
    Armed = 2,
}

/// The alternate path of a connected QP (`alt_ah_attr`, `alt_pkey_index`, `alt_port_num`,
/// `alt_timeout`, set together with `IBV_QP_ALT_PATH`). InfiniBand only: the kernel refuses
/// alternate paths on RoCE (rxe and the software device are RoCE) with `EINVAL`.
///
/// ```
/// use typed_verbs::{AddressVector, AltPath, RcRtsModify};
/// let av = AddressVector { dlid: 7, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 2, grh: None };
/// let alt = AltPath { av, pkey_index: 0, port_num: 2, timeout: 14 };
/// let m = RcRtsModify { alt_path: Some(alt), ..Default::default() }; // refused on RoCE (EINVAL)
/// # let _ = m;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AltPath {
    /// Where the remote QP is on the alternate path.
    pub av: AddressVector,
    /// The P_Key table index on the alternate path.
    pub pkey_index: u16,
    /// The local port of the alternate path.
    pub port_num: u8,
    /// The local ACK timeout on the alternate path (encoded, 0..=31).
    pub timeout: u8,
}

impl AltPath {
    /// Its port, P_Key index and source GID index against the device's tables, its timeout
    /// 0..=31 (rxe_qp_chk_attr: "invalid QP alt timeout %d > 31").
    fn check(&self, l: &checks::Limits) -> checks::Check {
        let port = l.port("alt_port_num", self.port_num)?;
        l.pkey_index("alt_pkey_index", Some(&port), self.pkey_index)?;
        l.av(
            ["alt_ah_attr.port_num", "alt_ah_attr.grh.sgid_index"],
            &self.av,
        )?;
        checks::five_bits("alt_timeout", self.timeout)
    }

    fn apply(&self, a: &mut sys::ibv_qp_attr) {
        a.alt_ah_attr = self.av.to_sys();
        a.alt_pkey_index = self.pkey_index;
        a.alt_port_num = self.port_num;
        a.alt_timeout = self.timeout;
    }
}

/// RTS → RTS of an RC QP: what the kernel's state table lets it change (access flags, the
/// alternate path, the path migration state, `min_rnr_timer`). `None` leaves an attribute as
/// it is. (`cur_qp_state`, also allowed, is the QP's type: RTS.)
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
/// # let a = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
/// # let e = a.endpoint(1, 0)?;
/// let qp = a.connect(&e, &e, AccessFlags::LOCAL_WRITE)?; // loopback to itself, in RTS
/// qp.modify_rts(RcRtsModify { min_rnr_timer: Some(14), ..Default::default() })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RcRtsModify {
    /// What the remote side may do to this QP's memory.
    pub access: Option<AccessFlags>,
    /// The RNR NAK timer (encoded, 0..=31).
    pub min_rnr_timer: Option<u8>,
    /// The alternate path.
    pub alt_path: Option<AltPath>,
    /// The path migration state.
    pub path_mig_state: Option<PathMigState>,
}

impl TransitionAttr for RcRtsModify {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        let mut mask = 0;
        optional! { a, mask;
            self.access => ACCESS_FLAGS: v => a.qp_access_flags = v.bits();
            self.min_rnr_timer => MIN_RNR_TIMER: v => a.min_rnr_timer = v;
            self.alt_path => ALT_PATH: v => v.apply(a);
            self.path_mig_state => PATH_MIG_STATE: v => a.path_mig_state = v as u32;
        }
        mask
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        if let Some(t) = self.min_rnr_timer {
            checks::five_bits("min_rnr_timer", t)?;
        }
        self.alt_path.map_or(Ok(()), |p| p.check(l))
    }
}

/// RTS → RTS of a UC QP: access flags, the alternate path and the path migration state (the
/// kernel's state table). `None` leaves an attribute as it is.
///
/// ```
/// use typed_verbs::{AccessFlags, UcRtsModify};
/// let m = UcRtsModify { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() };
/// # let _ = m;
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UcRtsModify {
    /// What the remote side may do to this QP's memory.
    pub access: Option<AccessFlags>,
    /// The alternate path.
    pub alt_path: Option<AltPath>,
    /// The path migration state.
    pub path_mig_state: Option<PathMigState>,
}

impl TransitionAttr for UcRtsModify {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        let mut mask = 0;
        optional! { a, mask;
            self.access => ACCESS_FLAGS: v => a.qp_access_flags = v.bits();
            self.alt_path => ALT_PATH: v => v.apply(a);
            self.path_mig_state => PATH_MIG_STATE: v => a.path_mig_state = v as u32;
        }
        mask
    }
    fn check(&self, l: &checks::Limits) -> checks::Check {
        self.alt_path.map_or(Ok(()), |p| p.check(l))
    }
}

/// RTS → RTS of a UD QP: the Q_Key (the kernel's state table). `None` changes nothing.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
/// qp.modify_rts(UdRtsModify { qkey: Some(0x42) })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct UdRtsModify {
    /// The Q_Key this QP accepts.
    pub qkey: Option<u32>,
}

impl TransitionAttr for UdRtsModify {
    fn apply(&self, a: &mut sys::ibv_qp_attr) -> i32 {
        let mut mask = 0;
        optional! { a, mask;
            self.qkey => QKEY: v => a.qkey = v;
        }
        mask
    }
}

/// The attributes each transition takes for a QP type.
///
/// ```
/// use typed_verbs::{qp_state::Transitions, Ud, UdInit, SqPsn};
/// let init: <Ud as Transitions>::Init = UdInit { port_num: 1, pkey_index: 0, qkey: 1 };
/// let rtr: <Ud as Transitions>::Rtr = (); // UD needs nothing for RTR
/// let rts: <Ud as Transitions>::Rts = SqPsn { sq_psn: 0 };
/// # let _ = (init, rtr, rts);
/// ```
pub trait Transitions: QpType + sealed::Sealed {
    /// RESET → INIT.
    type Init: TransitionAttr;
    /// INIT → RTR.
    type Rtr: TransitionAttr;
    /// RTR → RTS.
    type Rts: TransitionAttr;
    /// INIT → INIT: what may change in INIT.
    type InitModify: TransitionAttr;
    /// RTS → RTS: what may change in RTS.
    type RtsModify: TransitionAttr;
}

impl Transitions for Rc {
    type Init = ConnectedInit;
    type Rtr = RcRtr;
    type Rts = RcRts;
    type InitModify = ConnectedInitModify;
    type RtsModify = RcRtsModify;
}
impl Transitions for Uc {
    type Init = ConnectedInit;
    type Rtr = UcRtr;
    type Rts = SqPsn;
    type InitModify = ConnectedInitModify;
    type RtsModify = UcRtsModify;
}
impl Transitions for Ud {
    type Init = UdInit;
    type Rtr = ();
    type Rts = SqPsn;
    type InitModify = UdInitModify;
    type RtsModify = UdRtsModify;
}
/// The kernel's table lets a RAW_PACKET QP change nothing in INIT → INIT and RTS → RTS.
impl Transitions for RawPacket {
    type Init = RawPacketInit;
    type Rtr = ();
    type Rts = ();
    type InitModify = ();
    type RtsModify = ();
}

/// A refused `ibv_modify_qp`: the QP, still in its old state, and why. What the `try_to_*`
/// transitions return; the `to_*` ones return the [`Error`] alone.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// let qp = match qp.try_to_init(UdInit { port_num: 9, pkey_index: 0, qkey: 1 }) { // no port 9
///     Ok(_) => unreachable!(),
///     Err(typed_verbs::ModifyError { qp, error }) => { eprintln!("{error}"); qp } // still in RESET
/// };
/// let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct ModifyError<Q> {
    /// The QP, unchanged.
    pub qp: Q,
    /// Why the device refused.
    pub error: Error,
}

impl<Q> fmt::Debug for ModifyError<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ModifyError")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<Q> fmt::Display for ModifyError<Q> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.error.fmt(f)
    }
}

impl<Q> std::error::Error for ModifyError<Q> {
    /// The error's source: this error prints as its [`Error`].
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        std::error::Error::source(&self.error)
    }
}

/// The error alone: the QP is dropped (destroyed; inside a polling batch, when the batch
/// ends). What `to_*` do when the device refuses; `?` does the same with a `try_to_*`'s error.
impl<Q> From<ModifyError<Q>> for Error {
    fn from(e: ModifyError<Q>) -> Error {
        e.error
    }
}

/// The result of a transition.
///
/// ```
/// use typed_verbs::{qp_state::Modified, Init, OwnRq, Reset, Shared, Ud};
/// fn bring_up<'a>(qp: typed_verbs::Qp<'a, Ud>) -> Modified<'a, Ud, OwnRq, Shared, (), Reset, Init> {
///     qp.try_to_init(typed_verbs::UdInit { port_num: 1, pkey_index: 0, qkey: 1 })
/// }
/// # let ctx = typed_verbs::Context::open("sw0")?; let pd = typed_verbs::Pd::new(&ctx)?; let cq = typed_verbs::Cq::builder(&ctx).cqe(8).build()?;
/// bring_up(typed_verbs::Qp::<Ud>::builder(&pd, &cq, &cq).build()?)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub type Modified<'a, T, R, S, C, From, To, const SGE: usize = 1> =
    std::result::Result<Qp<'a, T, R, S, C, To, SGE>, ModifyError<Qp<'a, T, R, S, C, From, SGE>>>;

macro_rules! require_state {
    ($($tr:ident: $st:ident, $msg:literal;)*) => {$(
        #[doc = concat!("Implemented by [`", stringify!($st), "`] only.")]
        #[doc = concat!("\n\n```\nfn needs<S: typed_verbs::qp_state::", stringify!($tr), ">() {}\nneeds::<typed_verbs::", stringify!($st), ">();\n```")]
        #[diagnostic::on_unimplemented(message = $msg, label = "not the state this transition starts from")]
        pub trait $tr: QpState + sealed::Sealed {}
        impl $tr for $st {}
    )*};
}

require_state! {
    FromReset: Reset, "`to_init` takes a QP from RESET to INIT, and this one is in `{Self}`, past RESET: to change its attributes in INIT (access flags, P_Key index, port) call `modify_init` (keeps posted receives), or go on with the next transition (`to_rtr` from INIT, `to_rts` from RTR); `to_reset` starts over and drops posted receives; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromReset`";
    FromInit: Init, "`to_rtr` takes a QP from INIT to RTR, and this one is in `{Self}`: from RESET call `to_init` first; a QP already in RTR goes on with `to_rts` (in RTS, `modify_rts`); in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromInit`";
    FromRtr: Rtr, "`to_rts` takes a QP from RTR to RTS, and this one is in `{Self}`: call `to_rtr` first (from RESET, `to_init` and `to_rtr`); a QP already in RTS is up (change it with `modify_rts`); in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::FromRtr`";
    InInit: Init, "`modify_init` changes a QP in INIT (INIT -> INIT), and this one is in `{Self}`: from RESET call `to_init` first; in RTS use `modify_rts`; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::InInit`";
    InRts: Rts, "`modify_rts` changes a QP in RTS (RTS -> RTS), and this one is in `{Self}`: bring it up first (`to_init`, `to_rtr`, `to_rts`, the steps it has not made), or in INIT use `modify_init`; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::InRts`";
}

/// Implemented by every state but [`Reset`]: the states a QP may go to ERR from. The kernel's
/// `qp_state_table` has no RESET → ERR (its RESET row names only RESET and INIT), so
/// `ibv_modify_qp` refuses it with `EINVAL` on every device; the typed layer does not compile it.
///
/// ```
/// use typed_verbs::prelude::*;
/// use typed_verbs::qp_state::{NotReset, QpState};
/// // Generic code that flushes a QP states the bound.
/// fn flush<St: QpState + NotReset>(qp: Qp<'_, Ud, OwnRq, Shared, (), St>) -> typed_verbs::Result<()> {
///     qp.to_error().map(drop)
/// }
/// let ctx = Context::open("sw0")?;
/// let pd = Pd::new(&ctx)?;
/// let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
/// flush(qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[diagnostic::on_unimplemented(
    message = "`to_error` takes a QP to ERR from any state but RESET, and this one is in `{Self}` (the kernel's state table has no RESET -> ERR): call `to_init` first, or drop the QP; in generic code over the state `St`, add the bound `St: typed_verbs::qp_state::NotReset`",
    label = "this QP is in `{Self}`"
)]
pub trait NotReset: QpState + sealed::Sealed {}
impl NotReset for Init {}
impl NotReset for Rtr {}
impl NotReset for Rts {}
impl NotReset for ErrorState {}

impl<'a, T: Transitions, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_modify_qp` with `attr` and its mask, plus the state; the QP in `To`, or back.
    fn modify<To: QpState>(
        self,
        mut attr: sys::ibv_qp_attr,
        mask: i32,
    ) -> Modified<'a, T, R, S, C, St, To, SGE> {
        attr.qp_state = To::RAW;
        let qp = self.as_raw();
        let verb = Verb::ModifyQp {
            from: QpStateName::from_raw(St::RAW),
            to: QpStateName::from_raw(To::RAW),
        };
        // The modify to RESET takes the provider's CQ locks (mlx5: `__mlx5_cq_clean`), which a
        // thread inside a batch never waits for (crate::object::teardown): refused, as for destroy.
        if To::RAW == sys::ibv_qp_state::IBV_QPS_RESET && crate::object::teardown::inside_batch() {
            return Err(ModifyError {
                qp: self,
                error: Error {
                    verb,
                    kind: ErrorKind::BatchOpen,
                },
            });
        }
        // The same locks, held by a batch another thread has open on one of its CQs: waited for,
        // one CQ at a time (crate::object::teardown's gates), for at most `TEARDOWN_WAIT`.
        let gates = if To::RAW == sys::ibv_qp_state::IBV_QPS_RESET {
            // SAFETY: a live QP, whose CQs live while it does; out of any batch (checked above).
            match unsafe { crate::object::teardown::close_gates_waiting(crate::qp::cqs_of(qp)) } {
                Some(gates) => Some(gates),
                None => {
                    return Err(ModifyError {
                        qp: self,
                        error: Error {
                            verb,
                            kind: ErrorKind::BatchOpen,
                        },
                    })
                }
            }
        } else {
            None
        };
        // SAFETY: a live QP; `attr` valid for the call.
        let modified = unsafe { backend::of((*qp).context).modify_qp(qp, &mut attr, mask | STATE) };
        drop(gates);
        match modified {
            Ok(()) => Ok(self.retype()),
            Err(e) => Err(ModifyError {
                qp: self,
                error: Error::os(verb, e),
            }),
        }
    }

    fn retype<To: QpState>(self) -> Qp<'a, T, R, S, C, To, SGE> {
        let this = ManuallyDrop::new(self);
        // SAFETY: the same QP under another state marker; `this` is not dropped.
        unsafe { Qp::from_raw_parts(this.raw_nonnull()) }
    }

    fn zeroed_attr() -> sys::ibv_qp_attr {
        // SAFETY: plain C data.
        unsafe { std::mem::zeroed() }
    }

    /// `ibv_modify_qp` with the attributes `attr` writes.
    fn modify_with<To: QpState>(
        self,
        attr: &impl TransitionAttr,
    ) -> Modified<'a, T, R, S, C, St, To, SGE> {
        if let Err(b) = attr.check(self.limits()) {
            let verb = Verb::ModifyQp {
                from: QpStateName::from_raw(St::RAW),
                to: QpStateName::from_raw(To::RAW),
            };
            return Err(ModifyError {
                qp: self,
                error: Error::range(verb, b.what, b.value, b.min, b.max),
            });
        }
        let mut a = Self::zeroed_attr();
        let mask = attr.apply(&mut a);
        self.modify(a, mask)
    }

    /// RESET → INIT with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error (naming the transition) returned; [`try_to_init`](Self::try_to_init)
    /// gives the QP back instead.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] before the call for a port outside the device's or a P_Key
    /// index past the port's table (the module's table lists the ranges); otherwise the device's
    /// errno from `ibv_modify_qp` ([`ErrorKind::Os`]). The error's verb names `RESET->INIT`.
    /// The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_init<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Init, SGE>>
    where
        St: FromReset,
        A: AttrOf<T::Init, T>,
    {
        Ok(self.try_to_init(attr)?)
    }

    /// RESET → INIT, giving the QP back, still in RESET, if the device refuses.
    ///
    /// # Errors
    /// As [`to_init`](Self::to_init); the [`ModifyError`] holds the QP, still in RESET.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    /// let qp = qp.try_to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 7 })?; // `?` drops the QP on failure
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_init<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Init, SGE>
    where
        St: FromReset,
        A: AttrOf<T::Init, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// INIT → RTR with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error returned; [`try_to_rtr`](Self::try_to_rtr) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `INIT->RTR`: `EINVAL` for an address vector the port refuses (no global route on RoCE),
    /// `ENODATA` for a `sgid_index` inside the GID table whose entry holds no GID; an attribute
    /// outside its range (`min_rnr_timer` over 31, `max_dest_rd_atomic` over the device's
    /// `max_qp_rd_atom`, a port or `sgid_index` past the device's) is [`ErrorKind::OutOfRange`]
    /// before the call. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_rtr(())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_rtr<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Rtr, SGE>>
    where
        St: FromInit,
        A: AttrOf<T::Rtr, T>,
    {
        Ok(self.try_to_rtr(attr)?)
    }

    /// INIT → RTR, giving the QP back, still in INIT, if the device refuses.
    ///
    /// # Errors
    /// As [`to_rtr`](Self::to_rtr); the [`ModifyError`] holds the QP, still in INIT.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_rtr(())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_rtr<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Rtr, SGE>
    where
        St: FromInit,
        A: AttrOf<T::Rtr, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// RTR → RTS with the attributes the QP type requires. If the device refuses, the QP is
    /// destroyed and the error returned; [`try_to_rts`](Self::try_to_rts) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `RTR->RTS`: `EINVAL` for an attribute the device refuses; an attribute outside its range
    /// (`timeout` over 31, `retry_cnt` or `rnr_retry` over 7, `max_rd_atomic` over the device's
    /// `max_qp_init_rd_atom`) is [`ErrorKind::OutOfRange`] before the call. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
    /// let qp = qp.to_rts(SqPsn { sq_psn: 0 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_rts<A>(self, attr: A) -> Result<Qp<'a, T, R, S, C, Rts, SGE>>
    where
        St: FromRtr,
        A: AttrOf<T::Rts, T>,
    {
        Ok(self.try_to_rts(attr)?)
    }

    /// RTR → RTS, giving the QP back, still in RTR, if the device refuses.
    ///
    /// # Errors
    /// As [`to_rts`](Self::to_rts); the [`ModifyError`] holds the QP, still in RTR.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
    /// let qp = qp.try_to_rts(SqPsn { sq_psn: 0 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_rts<A>(self, attr: A) -> Modified<'a, T, R, S, C, St, Rts, SGE>
    where
        St: FromRtr,
        A: AttrOf<T::Rts, T>,
    {
        self.modify_with(&attr.into_attr())
    }

    /// Any state but RESET → ERR: outstanding work requests complete with
    /// `IBV_WC_WR_FLUSH_ERR`. From RESET it does not compile ([`NotReset`]: the kernel has no
    /// RESET → ERR). If the device refuses, the QP is destroyed and the error returned;
    /// [`try_to_error`](Self::try_to_error) gives it back.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming the
    /// transition to `ERR`. The QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_error()?; // receives posted so far complete with WR_FLUSH_ERR
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_error(self) -> Result<Qp<'a, T, R, S, C, ErrorState, SGE>>
    where
        St: NotReset,
    {
        Ok(self.try_to_error()?)
    }

    /// Any state but RESET → ERR, giving the QP back, in its old state, if the device refuses.
    ///
    /// # Errors
    /// As [`to_error`](Self::to_error); the [`ModifyError`] holds the QP, in its old state.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_error()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_error(self) -> Modified<'a, T, R, S, C, St, ErrorState, SGE>
    where
        St: NotReset,
    {
        self.modify_with(&())
    }

    /// Any state → RESET (from RESET too, as the kernel allows). If the device refuses (or
    /// the call is made inside a polling batch, [`ErrorKind::BatchOpen`]), the QP is dropped
    /// and the error returned: [`try_to_reset`](Self::try_to_reset) gives it back.
    ///
    /// # Errors
    /// - [`ErrorKind::BatchOpen`] inside a polling batch, before the call. Out of any batch, a
    ///   batch another thread has open on one of the QP's CQs is waited for, as for a lock (see
    ///   [the safety model](crate::safety)), one CQ at a time, for at most a second: `BatchOpen`
    ///   after that (a batch that long, a batch whose closure waits for this thread, two CQs
    ///   that never leave a gap, or other teardowns of the CQ that held it that long).
    /// - The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming the
    ///   transition to `RESET`.
    ///
    /// The QP is dropped.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.to_reset()?; // back to RESET: it may be brought up again
    /// let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 2 })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn to_reset(self) -> Result<Qp<'a, T, R, S, C, Reset, SGE>> {
        Ok(self.try_to_reset()?)
    }

    /// Any state → RESET, giving the QP back, in its old state, if the device refuses.
    ///
    /// # Errors
    /// As [`to_reset`](Self::to_reset); the [`ModifyError`] holds the QP, in its old state.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// let qp = qp.try_to_reset()?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn try_to_reset(self) -> Modified<'a, T, R, S, C, St, Reset, SGE> {
        self.modify_with(&())
    }

    /// INIT → INIT: changes what the kernel's state table lets a QP in INIT change (for RC and
    /// UC: port, P_Key index, access flags; for UD: port, P_Key index, Q_Key), leaving the
    /// attributes that are `None` as they are. The QP stays in INIT, so it is borrowed; if the
    /// device refuses, nothing changed and the error names `ibv_modify_qp INIT->INIT`.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `INIT->INIT`; a port or P_Key index past the device's is [`ErrorKind::OutOfRange`] before
    /// the call. Nothing changed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// qp.modify_init(UdInitModify { qkey: Some(9), ..Default::default() })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn modify_init<A>(&self, attr: A) -> Result<()>
    where
        St: InInit,
        A: AttrOf<T::InitModify, T>,
    {
        self.modify_in_place(&attr.into_attr())
    }

    /// RTS → RTS: changes what the kernel's state table lets a QP in RTS change (for RC: access
    /// flags, `min_rnr_timer`, the alternate path, the path migration state; for UC the same
    /// but `min_rnr_timer`; for UD the Q_Key), leaving the attributes that are `None` as they
    /// are. The QP stays in RTS; if the device refuses, nothing changed and the error names
    /// `ibv_modify_qp RTS->RTS`.
    ///
    /// # Errors
    /// The device's errno from `ibv_modify_qp` ([`ErrorKind::Os`]), the error's verb naming
    /// `RTS->RTS` (e.g. `EINVAL` for an alternate path on RoCE); an attribute outside its range
    /// (`min_rnr_timer` or `alt_timeout` over 31, a port or index past the device's) is
    /// [`ErrorKind::OutOfRange`] before the call. Nothing changed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// # let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    /// qp.modify_rts(UdRtsModify { qkey: Some(9) })?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn modify_rts<A>(&self, attr: A) -> Result<()>
    where
        St: InRts,
        A: AttrOf<T::RtsModify, T>,
    {
        self.modify_in_place(&attr.into_attr())
    }

    /// `ibv_modify_qp` from `St` to `St` with the attributes `attr` writes.
    fn modify_in_place(&self, attr: &impl TransitionAttr) -> Result<()> {
        let name = QpStateName::from_raw(St::RAW);
        if let Err(b) = attr.check(self.limits()) {
            let verb = Verb::ModifyQp {
                from: name,
                to: name,
            };
            return Err(Error::range(verb, b.what, b.value, b.min, b.max));
        }
        let mut a = Self::zeroed_attr();
        let mask = attr.apply(&mut a);
        a.qp_state = St::RAW;
        let qp = self.as_raw();
        // SAFETY: a live QP; `a` valid for the call. A modify that stays in INIT or RTS takes
        // no CQ lock, so it is allowed inside a polling batch.
        unsafe { backend::of((*qp).context).modify_qp(qp, &mut a, mask | STATE) }.map_err(|e| {
            Error::os(
                Verb::ModifyQp {
                    from: name,
                    to: name,
                },
                e,
            )
        })
    }

    /// `ibv_query_qp` for the state the device reports.
    ///
    /// # Errors
    /// The device's errno from `ibv_query_qp` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # use typed_verbs::ffi::sys::ibv_qp_state;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    /// assert_eq!(qp.query_state()?, ibv_qp_state::IBV_QPS_INIT);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_state(&self) -> Result<sys::ibv_qp_state::Type> {
        // SAFETY: plain C data.
        let (mut attr, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { std::mem::zeroed() };
        let qp = self.as_raw();
        // SAFETY: a live QP; out-pointers valid.
        unsafe { backend::of((*qp).context).query_qp(qp, &mut attr, STATE, &mut init) }
            .map_err(|e| Error::os(Verb::QueryQp, e))?;
        Ok(attr.qp_state)
    }
}

impl Context {
    /// `ibv_query_gid`: the GID at `index` of `port`. An index inside the port's table that
    /// holds no GID gives a zero GID (as rdma-core's `ibv_query_gid`, "Preserve API behavior
    /// for empty GID").
    ///
    /// # Errors
    /// `OutOfRange` before the call for a port outside 1..=`phys_port_cnt` (`port_num`) or an
    /// index at or past the port's `gid_tbl_len` (`index`, as `ibv_query_port` reports it;
    /// the kernel's rdma_get_gid_attr refuses it with EINVAL); the device's errno otherwise.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let gid = ctx.query_gid(1, 0)?;
    /// println!("{:02x?}", gid.0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_gid(&self, port: u8, index: u32) -> Result<Gid> {
        let cnt = self.attr().phys_port_cnt;
        if port == 0 || port > cnt {
            return Err(Error::range(
                Verb::QueryGid,
                "port_num",
                port.into(),
                1,
                cnt.into(),
            ));
        }
        let table = self.query_port(port)?.gid_tbl_len;
        let out = || {
            Error::range(
                Verb::QueryGid,
                "index",
                index.into(),
                0,
                table.saturating_sub(1).into(),
            )
        };
        if index >= table {
            return Err(out());
        }
        let mut g = sys::ibv_gid { raw: [0; 16] };
        let index = i32::try_from(index).map_err(|_| out())?;
        // SAFETY: a live context; `g` valid for writes.
        unsafe { backend::of(self.as_raw()).query_gid(self.as_raw(), port, index, &mut g) }
            .map_err(|e| Error::os(Verb::QueryGid, e))?;
        // SAFETY: both members of the union are 16 plain bytes.
        Ok(Gid(unsafe { g.raw }))
    }
}
