//! The attributes of each transition, their range checks, and which ones each QP type takes
//! (Transitions).

use super::*;

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

/// The ranges of a transition's attributes, checked before `ibv_modify_qp` (the module's
/// docs list them).
pub(crate) mod checks {
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

    /// The names of an address vector's checked fields, as the verb's C struct names them.
    pub(crate) struct AvNames {
        pub(crate) port_num: &'static str,
        pub(crate) sgid_index: &'static str,
        pub(crate) sl: &'static str,
        pub(crate) static_rate: &'static str,
        pub(crate) flow_label: &'static str,
    }

    /// The largest service level: SL is 4 bits (InfiniBand specification, LRH).
    pub(crate) const MAX_SL: u64 = 15;
    /// The largest flow label: 20 bits (the GRH's FlowLabel; IPv6's, on RoCE v2).
    pub(crate) const MAX_FLOW_LABEL: u64 = 0xf_ffff;
    /// The largest `enum ibv_rate` value verbs.h defines (`IBV_RATE_1200_GBPS`, 24; 0 is
    /// `IBV_RATE_MAX`, the port's current rate).
    pub(crate) const MAX_STATIC_RATE: u64 = 24;

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

    impl PortTables {
        /// The port's `gid_tbl_len`.
        pub(crate) fn gid_tbl_len(&self) -> u64 {
            self.gid_tbl_len
        }
    }

    impl Limits {
        /// The limits of the device of `ctx`, whose attributes are `dev`: each port's tables,
        /// read once per context (the context's cache, in `device.rs`), so that a QP or
        /// address handle made after the first makes no call for them.
        ///
        /// # Safety
        /// `ctx` is a live context.
        pub(crate) unsafe fn query(
            ctx: *mut sys::ibv_context,
            dev: &sys::ibv_device_attr,
        ) -> std::result::Result<Limits, i32> {
            // SAFETY: caller's contract.
            let ports = unsafe { crate::device::port_tables(ctx) }?;
            Ok(Limits {
                max_qp_rd_atom: dev.max_qp_rd_atom.max(0) as u64,
                max_qp_init_rd_atom: dev.max_qp_init_rd_atom.max(0) as u64,
                ports: ports
                    .iter()
                    .map(|p| PortTables {
                        pkey_tbl_len: p.pkey_tbl_len.into(),
                        gid_tbl_len: p.gid_tbl_len.into(),
                    })
                    .collect(),
            })
        }

        /// The device's number of ports (`phys_port_cnt`).
        pub(crate) fn port_count(&self) -> u8 {
            self.ports.len() as u8
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

        /// A `max_dest_rd_atomic` (named `what`) up to `max_qp_rd_atom`.
        pub(crate) fn max_dest_rd_atomic(&self, what: &'static str, v: u8) -> Check {
            within(what, v, 0, self.max_qp_rd_atom)
        }

        /// A `max_rd_atomic` (named `what`) up to `max_qp_init_rd_atom`.
        pub(crate) fn max_rd_atomic(&self, what: &'static str, v: u8) -> Check {
            within(what, v, 0, self.max_qp_init_rd_atom)
        }

        /// An address vector: its port, its source GID index below that port's `gid_tbl_len`,
        /// and its fields' ranges ([`AvNames`] names them).
        pub(crate) fn av(&self, names: &AvNames, av: &AddressVector) -> Check {
            let port = self.port(names.port_num, av.port_num)?;
            within(names.sl, av.sl, 0, MAX_SL)?;
            within(names.static_rate, av.static_rate, 0, MAX_STATIC_RATE)?;
            match av.grh {
                Some(g) => {
                    index(names.sgid_index, g.sgid_index, port.gid_tbl_len)?;
                    within(names.flow_label, g.flow_label, 0, MAX_FLOW_LABEL)
                }
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

/// The check of an INIT transition's `port_num` and `pkey_index`, each when it is set: the port
/// against the device's, the P_Key index against that port's table (or, without a port, every
/// port's).
fn port_and_pkey(
    l: &checks::Limits,
    port_num: Option<u8>,
    pkey_index: Option<u16>,
) -> checks::Check {
    let port = port_num.map(|p| l.port("port_num", p)).transpose()?;
    match pkey_index {
        Some(i) => l.pkey_index("pkey_index", port.as_ref(), i),
        None => Ok(()),
    }
}

/// The names of a primary address vector's fields in `struct ibv_qp_attr`.
const AV_NAMES: checks::AvNames = checks::AvNames {
    port_num: "ah_attr.port_num",
    sgid_index: "ah_attr.grh.sgid_index",
    sl: "ah_attr.sl",
    static_rate: "ah_attr.static_rate",
    flow_label: "ah_attr.grh.flow_label",
};

/// The names of an alternate path's address vector's fields in `struct ibv_qp_attr`.
const ALT_AV_NAMES: checks::AvNames = checks::AvNames {
    port_num: "alt_ah_attr.port_num",
    sgid_index: "alt_ah_attr.grh.sgid_index",
    sl: "alt_ah_attr.sl",
    static_rate: "alt_ah_attr.static_rate",
    flow_label: "alt_ah_attr.grh.flow_label",
};

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
        port_and_pkey(l, Some(self.port_num), Some(self.pkey_index))
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
        port_and_pkey(l, Some(self.port_num), Some(self.pkey_index))
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
        l.av(&AV_NAMES, &self.av)?;
        l.max_dest_rd_atomic("max_dest_rd_atomic", self.max_dest_rd_atomic)?;
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
        l.av(&AV_NAMES, &self.av)
    }
}

/// RTR → RTS of an RC QP.
///
/// ```
/// use typed_verbs::RcRts;
/// // ~67 ms ACK timeout, 6 retries (470 ms to a dead peer), RNR retries without limit, one
/// // RDMA read in flight: `connect::RcParams::default()`'s.
/// let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 6, rnr_retry: 7, max_rd_atomic: 1 };
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
        l.max_rd_atomic("max_rd_atomic", self.max_rd_atomic)
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
        port_and_pkey(l, self.port_num, self.pkey_index)
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
        port_and_pkey(l, self.port_num, self.pkey_index)
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
        l.av(&ALT_AV_NAMES, &self.av)?;
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

impl<T: Transitions, O: crate::qp::ex::OpsFor<T>> Transitions for crate::qp::Ex<T, O> {
    type Init = T::Init;
    type Rtr = T::Rtr;
    type Rts = T::Rts;
    type InitModify = T::InitModify;
    type RtsModify = T::RtsModify;
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
