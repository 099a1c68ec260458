//! Connecting an RC or UC QP to its peer in one call: the three transitions of ibv_modify_qp(3)
//! (RESET → INIT → RTR → RTS) with the attributes most programs use, from the two sides'
//! [`Endpoint`]s, which the program exchanges out of band (a socket, a file, rdma_cm).
//!
//! ```
//! use std::sync::Arc;
//! use typed_verbs::{AccessFlags, Context, CqEx, Pd, Qp, Rc, Standard};
//!
//! let ctx = Arc::new(Context::open("sw0")?);
//! let pd = Arc::new(Pd::new(&ctx)?);
//! let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(8).build()?);
//! let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?); // sent to the peer in a real program
//! let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?; // in RTS
//! let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
//! # drop((a, b));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! Programs that need other attributes use the transitions themselves
//! ([`Qp::to_init`], [`Qp::to_rtr`], [`Qp::to_rts`]).

use crate::backend;
use crate::cq::Threading;
use crate::error::{Error, QpStateName, Result, Verb};
use crate::ffi::sys;
use crate::qp::state::{
    AccessFlags, AddressVector, ConnectedInit, GlobalRoute, Mtu, RcRtr, RcRts, Reset, Rts, SqPsn,
    Transitions, UcRtr,
};
use crate::qp::FixedDest;
use crate::qp::{Gid, Qp, Rc, RecvSide, Uc};

/// What a peer needs to connect its RC or UC QP to this one: this QP's number, port, addresses,
/// first packet sequence number and path MTU. Made by [`Qp::endpoint`]; plain data, to send to
/// the peer however the program likes.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
/// let me: Endpoint = qp.endpoint(1, 0)?; // send it to the peer (it is plain data)
/// println!("qpn {} psn {} gid {:?}", me.qp_num, me.psn, me.gid);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Endpoint {
    /// The QP's number.
    pub qp_num: u32,
    /// The port (from 1).
    pub port_num: u8,
    /// The port's LID (InfiniBand; 0 on RoCE).
    pub lid: u16,
    /// The GID at `gid_index` of the port (RoCE needs it: the address vector's global route).
    pub gid: Gid,
    /// The index of `gid` in the port's GID table.
    pub gid_index: u8,
    /// The first packet sequence number this QP sends (24 bits).
    pub psn: u32,
    /// The port's active MTU: the connection uses the smaller of the two sides'.
    pub mtu: Mtu,
}

impl Mtu {
    /// The MTU of `enum ibv_mtu`'s value `v` (a port's `active_mtu`), or `None`.
    ///
    /// ```
    /// # let ctx = typed_verbs::Context::open("sw0")?;
    /// let mtu = typed_verbs::Mtu::from_raw(ctx.query_port(1)?.active_mtu);
    /// assert!(mtu.is_some());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn from_raw(v: u32) -> Option<Mtu> {
        Some(match v {
            1 => Mtu::Mtu256,
            2 => Mtu::Mtu512,
            3 => Mtu::Mtu1024,
            4 => Mtu::Mtu2048,
            5 => Mtu::Mtu4096,
            _ => return None,
        })
    }
}

/// The QP types [`Qp::connect`] brings up from two [`Endpoint`]s: the connected ones, RC and
/// UC, with the attributes of their INIT → RTR and RTR → RTS made from the endpoints (UC has
/// no RDMA reads, atomics, RNR or retries, so its RTR and RTS take only the path, the peer's
/// QP number and the PSNs). Sealed through [`Transitions`].
///
/// ```
/// use typed_verbs::prelude::*;
/// use typed_verbs::connect::Connectable;
/// fn pair<'a, T: Connectable>(pd: &'a Pd<'_>, cq: &'a Cq<'_>) -> Result<(Qp<'a, T>, Qp<'a, T>)> {
///     Ok((Qp::<T>::builder(pd, cq, cq).build()?, Qp::<T>::builder(pd, cq, cq).build()?))
/// }
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// let (a, b) = pair::<Uc>(&pd, &cq)?;
/// let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
/// let (a, b) = (a.connect(&ea, &eb, AccessFlags::REMOTE_WRITE)?, b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?);
/// # drop((a, b));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub trait Connectable: Transitions<Init = ConnectedInit> + FixedDest {
    #[doc(hidden)]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint) -> Self::Rtr;
    #[doc(hidden)]
    fn rts(local: &Endpoint) -> Self::Rts;
}

impl<T: Connectable, O: crate::qp::ex::OpsFor<T>> Connectable for crate::qp::Ex<T, O> {
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint) -> T::Rtr {
        T::rtr(av, path_mtu, remote)
    }
    #[inline]
    fn rts(local: &Endpoint) -> T::Rts {
        T::rts(local)
    }
}

impl Connectable for Rc {
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint) -> RcRtr {
        RcRtr {
            av,
            path_mtu,
            dest_qp_num: remote.qp_num,
            rq_psn: remote.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
        }
    }
    #[inline]
    fn rts(local: &Endpoint) -> RcRts {
        RcRts {
            sq_psn: local.psn,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        }
    }
}

impl Connectable for Uc {
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint) -> UcRtr {
        UcRtr {
            av,
            path_mtu,
            dest_qp_num: remote.qp_num,
            rq_psn: remote.psn,
        }
    }
    #[inline]
    fn rts(local: &Endpoint) -> SqPsn {
        SqPsn { sq_psn: local.psn }
    }
}

impl<'a, T: Connectable, R: RecvSide, S: Threading, C, const SGE: usize>
    Qp<'a, T, R, S, C, Reset, SGE>
{
    /// This QP's [`Endpoint`] on `port_num` with the GID at `gid_index`: `ibv_query_port` and
    /// `ibv_query_gid`. The port number is checked against the device's `phys_port_cnt` and
    /// the GID index against the port's `gid_tbl_len` before the calls (`OutOfRange`).
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`](crate::error::ErrorKind::OutOfRange) naming `port_num` (outside
    ///   `1..=phys_port_cnt`) or `gid_index` (at or past the port's `gid_tbl_len`), before the calls.
    /// - The device's errno from `ibv_query_port` or `ibv_query_gid`
    ///   ([`ErrorKind::Os`](crate::error::ErrorKind::Os)).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// let e = qp.endpoint(1, 0)?;
    /// assert_eq!(e.qp_num, qp.qp_num());
    /// assert!(qp.endpoint(2, 0).is_err()); // sw0 has one port
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn endpoint(&self, port_num: u8, gid_index: u8) -> Result<Endpoint> {
        let out = |what, value, min, max| {
            let verb = if what == "gid_index" {
                Verb::QueryGid
            } else {
                Verb::QueryPort
            };
            Error::range(verb, what, value, min, max)
        };
        let (ctx, port) = self.checked_port(port_num, gid_index, ["port_num", "gid_index"], out)?;
        let mut gid = sys::ibv_gid { raw: [0; 16] };
        // SAFETY: a live context; an index inside the port's table; `gid` valid for writes.
        unsafe { backend::of(ctx).query_gid(ctx, port_num, gid_index.into(), &mut gid) }
            .map_err(|e| Error::os(Verb::QueryGid, e))?;
        Ok(Endpoint {
            qp_num: self.qp_num(),
            port_num,
            lid: port.lid,
            // SAFETY: both members of the union are 16 plain bytes.
            gid: Gid(unsafe { gid.raw }),
            gid_index,
            psn: self.qp_num().wrapping_mul(0x9e37_79b9) & 0x00ff_ffff,
            mtu: Mtu::from_raw(port.active_mtu).unwrap_or(Mtu::Mtu1024),
        })
    }

    /// This QP's port `port_num` (`ibv_query_port`), once the port number is checked against the
    /// device's `phys_port_cnt` and `gid_index` against the port's `gid_tbl_len` before the
    /// calls; `out` makes the `OutOfRange` error of each, named by `names`. Also the context.
    fn checked_port(
        &self,
        port_num: u8,
        gid_index: u8,
        names: [&'static str; 2],
        out: impl Fn(&'static str, u64, u64, u64) -> Error,
    ) -> Result<(*mut sys::ibv_context, sys::ibv_port_attr)> {
        // SAFETY: a live QP's context is live.
        let ctx = unsafe { (*self.as_raw()).context };
        // SAFETY: as above.
        let dev = unsafe { crate::device::device_attr(ctx, Verb::QueryPort) }?;
        let ports = u64::from(dev.phys_port_cnt);
        if port_num == 0 || u64::from(port_num) > ports {
            return Err(out(names[0], port_num.into(), 1, ports));
        }
        // SAFETY: plain C data.
        let mut port: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: a live context, a port it has (checked); `port` valid for writes.
        unsafe { backend::of(ctx).query_port(ctx, port_num, &mut port) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let table = port.gid_tbl_len.max(0) as u64;
        if u64::from(gid_index) >= table {
            return Err(out(names[1], gid_index.into(), 0, table.saturating_sub(1)));
        }
        Ok((ctx, port))
    }

    /// Connects this QP (of endpoint `local`) to the peer QP of endpoint `remote`: RESET →
    /// INIT (port, P_Key index 0, `access` for what the peer may do here), → RTR (the peer's
    /// address, QP number and PSN; the smaller MTU; for RC one incoming RDMA read or atomic and
    /// RNR timer 12), → RTS (this side's PSN; for RC timeout 14, 7 retries, 7 RNR retries, one
    /// outgoing RDMA read or atomic). RC and UC QPs ([`Connectable`]).
    ///
    /// Checked before the transitions (`OutOfRange` naming the field): `local` is this QP's,
    /// its port exists and its GID index is in the port's table, and the PSNs and the remote
    /// QP number fit in 24 bits. A refused check or transition destroys the QP (it was taken by
    /// value) and names the transition in the error.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`](crate::error::ErrorKind::OutOfRange) naming the field (`local.qp_num`,
    ///   `local.psn`, `remote.psn`, `remote.qp_num`, `port_num`, `gid_index`), before the
    ///   transitions.
    /// - The device's errno from `ibv_query_port` or from the `ibv_modify_qp` of a transition
    ///   ([`ErrorKind::Os`](crate::error::ErrorKind::Os)), the error's verb naming the transition
    ///   (`ibv_modify_qp INIT->RTR`).
    ///
    /// In every case the QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    /// let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
    /// let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?); // exchanged out of band
    /// let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?;
    /// let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?; // a may write into b's regions
    /// # drop((a, b));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn connect(
        self,
        local: &Endpoint,
        remote: &Endpoint,
        access: impl Into<AccessFlags>,
    ) -> Result<Qp<'a, T, R, S, C, Rts, SGE>> {
        let access = access.into();
        let verb = Verb::ModifyQp {
            from: QpStateName::Reset,
            to: QpStateName::Init,
        };
        let range = |what, value: u64, min: u64, max: u64| {
            if value < min || value > max {
                Err(Error::range(verb, what, value, min, max))
            } else {
                Ok(())
            }
        };
        let own = u64::from(self.qp_num());
        range("local.qp_num", local.qp_num.into(), own, own)?;
        // PSNs and QP numbers are 24 bits.
        range("local.psn", local.psn.into(), 0, 0xff_ffff)?;
        range("remote.psn", remote.psn.into(), 0, 0xff_ffff)?;
        range("remote.qp_num", remote.qp_num.into(), 0, 0xff_ffff)?;
        let names = ["local.port_num", "local.gid_index"];
        let out = |what, value, min, max| Error::range(verb, what, value, min, max);
        self.checked_port(local.port_num, local.gid_index, names, out)?;
        let grh = (remote.gid != Gid::default()).then_some(GlobalRoute {
            dgid: remote.gid,
            flow_label: 0,
            sgid_index: local.gid_index,
            hop_limit: 1,
            traffic_class: 0,
        });
        let av = AddressVector {
            dlid: remote.lid,
            sl: 0,
            src_path_bits: 0,
            static_rate: 0,
            port_num: local.port_num,
            grh,
        };
        let init = ConnectedInit {
            port_num: local.port_num,
            pkey_index: 0,
            access,
        };
        let rtr = T::rtr(av, local.mtu.min(remote.mtu), remote);
        let rts = T::rts(local);
        self.to_init(init)?.to_rtr(rtr)?.to_rts(rts)
    }
}
