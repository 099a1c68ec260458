//! Connecting an RC or UC QP to its peer in one call: the three transitions of ibv_modify_qp(3)
//! (RESET → INIT → RTR → RTS) with the attributes most programs use, from the two sides'
//! [`Endpoint`]s, which the program exchanges out of band (a socket, a file, rdma_cm).
//!
//! ```
//! use std::sync::Arc;
//! use typed_verbs::{AccessFlags, Context, CqEx, Pd, Qp, Rc, RcParams, Standard};
//!
//! let ctx = Arc::new(Context::open("sw0")?);
//! let pd = Arc::new(Pd::new(&ctx)?);
//! let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(8).build()?);
//! let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
//! let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?); // sent to the peer in a real program
//! let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE)?; // in RTS
//! let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE)?;
//! assert_eq!(a.query_rc_params()?, RcParams::default()); // what the device holds
//! # drop((a, b));
//! # Ok::<(), typed_verbs::Error>(())
//! ```
//!
//! The connection parameters are the caller's: [`Qp::connect_with`] takes them ([`RcParams`]
//! for RC: ACK timeout, retry counts, RNR timer, RDMA read depths; `()` for UC, which has none),
//! and [`Qp::connect`] takes their [`Default`], which reports a dead peer in bounded time on
//! every device (470 ms for RC: [`RcParams`] has the table, the guide's
//! [connection parameters](crate::guide::connection_parameters) page the reasoning).
//! [`Qp::query_rc_params`] reads back what the device holds.
//!
//! Programs that need other attributes use the transitions themselves
//! ([`Qp::to_init`], [`Qp::to_rtr`], [`Qp::to_rts`]).

use crate::backend;
use crate::cq::Threading;
use crate::error::{Error, ErrorKind, QpStateName, Result, Verb};
use crate::ffi::qp_attr_mask::{
    MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER, RETRY_CNT, RNR_RETRY, TIMEOUT,
};
use crate::ffi::sys;
use crate::qp::state::{
    checks, AccessFlags, AddressVector, ConnectedInit, GlobalRoute, Mtu, QpState, RcRtr, RcRts,
    Reset, Rts, SqPsn, Transitions, UcRtr,
};
use crate::qp::FixedDest;
use crate::qp::{Gid, Qp, QpType, Rc, RecvSide, Uc};
use std::time::Duration;

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
///
/// With the `serde` feature it is `Serialize` and `Deserialize`, a map of its fields by their
/// names, the GID as the text of an IPv6 address ([`Gid`]'s impls) and the MTU in bytes
/// ([`Mtu`]'s): `{"qp_num":17,"port_num":1,"lid":0,"gid":"fe80::1","gid_index":0,"psn":4660,"mtu":1024}`.
/// Reading one checks the ranges of the fields that do not depend on the device: the QP number
/// and the PSN fit in 24 bits (as [`Qp::connect`] checks them), and the port is not 0 (ports are
/// numbered from 1), so an endpoint with port 0 is written but not read back. A value out of its
/// range is an error that names the field; one past the field's integer type, a missing field
/// or a GID that is no IPv6 address is serde's error.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
/// let me = qp.endpoint(1, 0)?;
/// let line = serde_json::to_string(&me).unwrap(); // to the peer, which reads it back:
/// assert_eq!(serde_json::from_str::<Endpoint>(&line).unwrap(), me);
/// let bad = line.replace(&format!(r#""psn":{}"#, me.psn), r#""psn":16777216"#);
/// let e = serde_json::from_str::<Endpoint>(&bad).unwrap_err();
/// assert!(e.to_string().contains("psn"), "{e}"); // 2^24: past 24 bits
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "wire::Endpoint"))]
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

/// The connection parameters of an RC QP that [`Qp::connect_with`] takes: how long this side
/// waits for an ACK and how often it retries before it reports the peer gone, and how it
/// answers and meets receiver-not-ready (RNR) NAKs. [`Qp::connect`] takes [`Default`], whose
/// values report a dead peer in bounded time on every device (the guide's
/// [connection parameters](crate::guide::connection_parameters) page has the reasoning):
///
/// | field | default | range | what it bounds | worst case to an error (default) |
/// |---|---|---|---|---|
/// | `timeout` | 14 | 0..=31 | the local ACK timeout, 4.096 µs × 2^`timeout` (0: no timer; a request a dead peer dropped is sent again only by the next post, and never fails) | 67.1 ms per try |
/// | `retry_cnt` | 6 | 0..=7 | retries after an ACK timeout: a dead peer completes the request with `IBV_WC_RETRY_EXC_ERR` after `retry_cnt` + 1 timeouts. 7 is not bounded on every device: rxe never counts it down | 7 × 67.1 ms = 470 ms |
/// | `rnr_retry` | 7 | 0..=7 (7: for ever) | retries after an RNR NAK, `IBV_WC_RNR_RETRY_EXC_ERR` past them. Only a live peer sends an RNR NAK (its device answers for a connected QP whose application has no receive posted), so this bounds a slow peer, not a dead one | unbounded while the peer answers; a peer that dies stops answering and `retry_cnt` bounds it |
/// | `min_rnr_timer` | 12 | 0..=31 | what this side asks the peer to wait after an RNR NAK it sends (encoded: 12 is 0.64 ms; [`RcParams::rnr_timer`]) | none (a wait, not a limit) |
/// | `max_rd_atomic` | 1 | 0..=`max_qp_init_rd_atom` | RDMA reads and atomics this side has in flight | none |
/// | `max_dest_rd_atomic` | 1 | 0..=`max_qp_rd_atom` | RDMA reads and atomics the peer may have in flight here | none |
///
/// Each field is checked before the first transition ([`ErrorKind::OutOfRange`] naming it,
/// `params.retry_cnt`, and the transition that sets it).
///
/// ```
/// use std::time::Duration;
/// use typed_verbs::connect::RcParams;
/// let p = RcParams::default();
/// assert_eq!((p.timeout, p.retry_cnt, p.rnr_retry, p.min_rnr_timer), (14, 6, 7, 12));
/// assert_eq!(p.dead_peer_bound(), Some(p.ack_timeout().unwrap() * 7)); // ~470 ms
/// // A peer that answers within 1 ms on a LAN: a 4 ms timeout, three retries (~17 ms).
/// let fast = RcParams { timeout: RcParams::timeout_at_least(Duration::from_millis(4)), retry_cnt: 3, ..p };
/// assert_eq!(fast.timeout, 10);
/// assert!(fast.dead_peer_bound().unwrap() < Duration::from_millis(20));
/// ```
///
/// With the `serde` feature it is `Serialize` and `Deserialize`, a map of its fields by their
/// names (`{"timeout":14,"retry_cnt":6,...}`), for peers that agree on them. Reading it checks
/// the ranges of the table that do not depend on the device (`timeout` and `min_rnr_timer`
/// 0..=31, `retry_cnt` and `rnr_retry` 0..=7; an error names the field); the two RDMA read
/// depths are the device's to bound, and [`Qp::connect_with`] checks them. Every field must be
/// present (no default is filled in). Parameters read from a peer are the peer's choice: a
/// `timeout` of 0 or a `retry_cnt` of 7 means a dead peer is never reported (rxe in Linux 6.1
/// counts 7 as unlimited), so check [`RcParams::dead_peer_bound`] before using them.
///
/// ```
/// # #[cfg(feature = "serde")] {
/// use typed_verbs::connect::RcParams;
/// let p = RcParams { retry_cnt: 3, ..Default::default() };
/// let text = serde_json::to_string(&p).unwrap();
/// assert_eq!(serde_json::from_str::<RcParams>(&text).unwrap(), p);
/// let e = serde_json::from_str::<RcParams>(&text.replace(r#""retry_cnt":3"#, r#""retry_cnt":8"#));
/// assert!(e.unwrap_err().to_string().contains("retry_cnt"));
/// # }
/// ```
///
/// [`ErrorKind::OutOfRange`]: crate::error::ErrorKind::OutOfRange
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[cfg_attr(feature = "serde", serde(try_from = "wire::RcParams"))]
pub struct RcParams {
    /// The local ACK timeout, encoded: 4.096 µs × 2^`timeout` (0..=31; 0 is no timer: a
    /// request that gets no answer is sent again only by the QP's next post).
    pub timeout: u8,
    /// Retries after an ACK timeout (0..=7; 7 is unlimited on rxe).
    pub retry_cnt: u8,
    /// Retries after an RNR NAK (0..=7; 7 retries for ever).
    pub rnr_retry: u8,
    /// The RNR NAK timer this side gives the peer, encoded (0..=31; [`RcParams::rnr_timer`]).
    pub min_rnr_timer: u8,
    /// RDMA reads and atomics this side may have outstanding (up to the device's
    /// `max_qp_init_rd_atom`).
    pub max_rd_atomic: u8,
    /// RDMA reads and atomics the peer may have outstanding here (up to the device's
    /// `max_qp_rd_atom`).
    pub max_dest_rd_atomic: u8,
}

impl Default for RcParams {
    /// Bounded on every device: timeout 14 (67.1 ms), 6 retries (470 ms to
    /// `IBV_WC_RETRY_EXC_ERR`), RNR retries for ever (only a live peer sends RNR NAKs), RNR
    /// timer 12 (0.64 ms), one RDMA read or atomic in flight each way.
    ///
    /// ```
    /// let p = typed_verbs::connect::RcParams::default();
    /// assert!(p.dead_peer_bound().is_some());
    /// ```
    fn default() -> Self {
        RcParams {
            timeout: 14,
            retry_cnt: 6,
            rnr_retry: 7,
            min_rnr_timer: 12,
            max_rd_atomic: 1,
            max_dest_rd_atomic: 1,
        }
    }
}

/// The RNR NAK timer's encoding (the InfiniBand specification's table, `min_rnr_timer`), in
/// units of 10 µs: index 0 is 655.36 ms.
const RNR_TIMER_10US: [u32; 32] = [
    65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536,
    2048, 3072, 4096, 6144, 8192, 12288, 16384, 24576, 32768, 49152,
];

impl RcParams {
    /// The ACK timeout `timeout` encodes, 4.096 µs × 2^`timeout`; `None` for 0 (no timeout)
    /// or a value past 31 (which the connect refuses).
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = typed_verbs::connect::RcParams::default();
    /// assert_eq!(p.ack_timeout(), Some(Duration::from_nanos(4096 << 14))); // 67.1 ms
    /// ```
    pub fn ack_timeout(&self) -> Option<Duration> {
        match self.timeout {
            1..=31 => Some(Duration::from_nanos(4096u64 << self.timeout)),
            _ => None,
        }
    }

    /// The smallest `timeout` whose ACK timeout is at least `d` (31, 2.4 hours, when none
    /// is; at least 1, since 0 means none).
    ///
    /// ```
    /// use std::time::Duration;
    /// use typed_verbs::connect::RcParams;
    /// assert_eq!(RcParams::timeout_at_least(Duration::from_millis(67)), 14);
    /// assert_eq!(RcParams::timeout_at_least(Duration::ZERO), 1);
    /// ```
    pub fn timeout_at_least(d: Duration) -> u8 {
        (1..=31u8)
            .find(|&t| Duration::from_nanos(4096u64 << t) >= d)
            .unwrap_or(31)
    }

    /// The RNR NAK timer `min_rnr_timer` encodes (the specification's table: 0 is 655.36 ms,
    /// 1 is 10 µs, ..., 12 is 640 µs, ..., 31 is 491.52 ms); values past 31 read as 31.
    ///
    /// ```
    /// use std::time::Duration;
    /// let p = typed_verbs::connect::RcParams::default();
    /// assert_eq!(p.rnr_timer(), Duration::from_micros(640));
    /// ```
    pub fn rnr_timer(&self) -> Duration {
        let i = usize::from(self.min_rnr_timer.min(31));
        Duration::from_micros(u64::from(RNR_TIMER_10US[i]) * 10)
    }

    /// How long, as programmed, a request to a dead peer takes to fail: `retry_cnt` + 1 ACK
    /// timeouts, after which the request completes with `IBV_WC_RETRY_EXC_ERR` and the QP
    /// moves to ERROR. `None` when that is not bounded on every device: `timeout` 0 (no
    /// timeout), or `retry_cnt` 7 (rxe never counts it down).
    ///
    /// ```
    /// use typed_verbs::connect::RcParams;
    /// assert!(RcParams { retry_cnt: 7, ..Default::default() }.dead_peer_bound().is_none());
    /// assert!(RcParams { timeout: 0, ..Default::default() }.dead_peer_bound().is_none());
    /// ```
    pub fn dead_peer_bound(&self) -> Option<Duration> {
        if self.retry_cnt >= 7 {
            return None;
        }
        Some(self.ack_timeout()? * (u32::from(self.retry_cnt) + 1))
    }

    /// Each field in its range (`OutOfRange` naming it and the transition that sets it).
    fn check(&self, l: &checks::Limits) -> Result<()> {
        let rtr = Verb::ModifyQp {
            from: QpStateName::Init,
            to: QpStateName::Rtr,
        };
        let rts = Verb::ModifyQp {
            from: QpStateName::Rtr,
            to: QpStateName::Rts,
        };
        let checks: [(Verb, checks::Check); 6] = [
            (rts, checks::five_bits("params.timeout", self.timeout)),
            (rts, checks::three_bits("params.retry_cnt", self.retry_cnt)),
            (rts, checks::three_bits("params.rnr_retry", self.rnr_retry)),
            (
                rtr,
                checks::five_bits("params.min_rnr_timer", self.min_rnr_timer),
            ),
            (
                rts,
                l.max_rd_atomic("params.max_rd_atomic", self.max_rd_atomic),
            ),
            (
                rtr,
                l.max_dest_rd_atomic("params.max_dest_rd_atomic", self.max_dest_rd_atomic),
            ),
        ];
        for (verb, c) in checks {
            c.map_err(|b| Error::range(verb, b.what, b.value, b.min, b.max))?;
        }
        Ok(())
    }
}

/// [`Endpoint`] and [`RcParams`] as read from the wire, before they are checked (serde's
/// `try_from`): a value out of range is an error that names its field, never a value.
#[cfg(feature = "serde")]
mod wire {
    use crate::qp::state::checks::{self, Bad};
    use crate::qp::state::Mtu;
    use crate::qp::Gid;

    /// The error of a field out of its range.
    #[derive(Debug)]
    pub struct OutOfRange(Bad);

    impl std::fmt::Display for OutOfRange {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            let Bad {
                what,
                value,
                min,
                max,
            } = self.0;
            write!(f, "`{what}` is {value}, out of its range {min}..={max}")
        }
    }

    #[derive(serde::Deserialize)]
    pub struct Endpoint {
        qp_num: u32,
        port_num: u8,
        lid: u16,
        gid: Gid,
        gid_index: u8,
        psn: u32,
        mtu: Mtu,
    }

    impl TryFrom<Endpoint> for super::Endpoint {
        type Error = OutOfRange;
        fn try_from(e: Endpoint) -> Result<Self, OutOfRange> {
            // What connect checks of the peer's endpoint (24-bit QP numbers and PSNs), and a port.
            checks::within("qp_num", e.qp_num, 0, 0xff_ffff).map_err(OutOfRange)?;
            checks::within("psn", e.psn, 0, 0xff_ffff).map_err(OutOfRange)?;
            checks::within("port_num", e.port_num, 1, u8::MAX.into()).map_err(OutOfRange)?;
            Ok(super::Endpoint {
                qp_num: e.qp_num,
                port_num: e.port_num,
                lid: e.lid,
                gid: e.gid,
                gid_index: e.gid_index,
                psn: e.psn,
                mtu: e.mtu,
            })
        }
    }

    #[derive(serde::Deserialize)]
    pub struct RcParams {
        timeout: u8,
        retry_cnt: u8,
        rnr_retry: u8,
        min_rnr_timer: u8,
        max_rd_atomic: u8,
        max_dest_rd_atomic: u8,
    }

    impl TryFrom<RcParams> for super::RcParams {
        type Error = OutOfRange;
        fn try_from(p: RcParams) -> Result<Self, OutOfRange> {
            // The device-independent half of RcParams::check (the depths need the device's limits).
            checks::five_bits("timeout", p.timeout).map_err(OutOfRange)?;
            checks::three_bits("retry_cnt", p.retry_cnt).map_err(OutOfRange)?;
            checks::three_bits("rnr_retry", p.rnr_retry).map_err(OutOfRange)?;
            checks::five_bits("min_rnr_timer", p.min_rnr_timer).map_err(OutOfRange)?;
            Ok(super::RcParams {
                timeout: p.timeout,
                retry_cnt: p.retry_cnt,
                rnr_retry: p.rnr_retry,
                min_rnr_timer: p.min_rnr_timer,
                max_rd_atomic: p.max_rd_atomic,
                max_dest_rd_atomic: p.max_dest_rd_atomic,
            })
        }
    }
}

/// The QP types [`Qp::connect`] brings up from two [`Endpoint`]s: the connected ones, RC and
/// UC, with the attributes of their INIT → RTR and RTR → RTS made from the endpoints and the
/// connection parameters ([`Params`](Connectable::Params): [`RcParams`] for RC; `()` for UC,
/// which has no ACKs, RDMA reads, atomics, RNR or retries, so its RTR and RTS take only the
/// path, the peer's QP number and the PSNs). Sealed through [`Transitions`].
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
    /// The connection parameters [`Qp::connect_with`] takes ([`Qp::connect`] takes their
    /// [`Default`]): [`RcParams`] for RC, `()` for UC.
    type Params: Copy + Default + std::fmt::Debug + PartialEq;
    #[doc(hidden)]
    fn check(params: &Self::Params, limits: &checks::Limits) -> Result<()>;
    #[doc(hidden)]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint, params: &Self::Params)
        -> Self::Rtr;
    #[doc(hidden)]
    fn rts(local: &Endpoint, params: &Self::Params) -> Self::Rts;
}

impl<T: Connectable, O: crate::qp::ex::OpsFor<T>> Connectable for crate::qp::Ex<T, O> {
    type Params = T::Params;
    #[inline]
    fn check(params: &T::Params, limits: &checks::Limits) -> Result<()> {
        T::check(params, limits)
    }
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint, params: &T::Params) -> T::Rtr {
        T::rtr(av, path_mtu, remote, params)
    }
    #[inline]
    fn rts(local: &Endpoint, params: &T::Params) -> T::Rts {
        T::rts(local, params)
    }
}

impl Connectable for Rc {
    type Params = RcParams;
    #[inline]
    fn check(params: &RcParams, limits: &checks::Limits) -> Result<()> {
        params.check(limits)
    }
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint, params: &RcParams) -> RcRtr {
        RcRtr {
            av,
            path_mtu,
            dest_qp_num: remote.qp_num,
            rq_psn: remote.psn,
            max_dest_rd_atomic: params.max_dest_rd_atomic,
            min_rnr_timer: params.min_rnr_timer,
        }
    }
    #[inline]
    fn rts(local: &Endpoint, params: &RcParams) -> RcRts {
        RcRts {
            sq_psn: local.psn,
            timeout: params.timeout,
            retry_cnt: params.retry_cnt,
            rnr_retry: params.rnr_retry,
            max_rd_atomic: params.max_rd_atomic,
        }
    }
}

impl Connectable for Uc {
    type Params = ();
    #[inline]
    fn check(_: &(), _: &checks::Limits) -> Result<()> {
        Ok(())
    }
    #[inline]
    fn rtr(av: AddressVector, path_mtu: Mtu, remote: &Endpoint, _: &()) -> UcRtr {
        UcRtr {
            av,
            path_mtu,
            dest_qp_num: remote.qp_num,
            rq_psn: remote.psn,
        }
    }
    #[inline]
    fn rts(local: &Endpoint, _: &()) -> SqPsn {
        SqPsn { sq_psn: local.psn }
    }
}

/// Seals [`ParamsOf`] and [`WithRcParams`]: their impls are the ones below.
mod sealed {
    pub trait ParamsOf<E, Q> {}
    pub trait WithRcParams {}
}

/// `P: ParamsOf<E, Q>` when [`Qp::connect_with`] of a `Q` QP, whose connection parameters are
/// `E` ([`Connectable::Params`]), takes `P`: only for `P = E`. A bound rather than `E` in the
/// signature, so that another QP type's parameters are an error that says so.
///
/// ```
/// use typed_verbs::connect::{ParamsOf, RcParams};
/// use typed_verbs::{Rc, Uc};
/// fn takes<P: ParamsOf<E, Q>, E, Q>() {}
/// takes::<RcParams, RcParams, Rc>();
/// takes::<(), (), Uc>(); // UC has no ACKs, retries or RNR
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` are not the connection parameters of a `{Q}` QP: pass a `{E}`",
    label = "the connection parameters of another QP type",
    note = "each QP type's connection parameters are `typed_verbs::connect::Connectable::Params`: `RcParams` for RC, `()` for UC (no ACKs, retries or RNR)"
)]
pub trait ParamsOf<E, Q>: sealed::ParamsOf<E, Q> {
    #[doc(hidden)]
    fn into_params(self) -> E;
}
impl<E, Q> sealed::ParamsOf<E, Q> for E {}
impl<E, Q> ParamsOf<E, Q> for E {
    #[inline(always)]
    fn into_params(self) -> E {
        self
    }
}

/// The QP types whose connection parameters are [`RcParams`], which
/// [`Qp::query_rc_params`] reads: RC, and the extended RC QP.
///
/// ```
/// fn takes<T: typed_verbs::connect::WithRcParams>() {}
/// takes::<typed_verbs::Rc>();
/// ```
#[diagnostic::on_unimplemented(
    message = "a `{Self}` QP has no RC connection parameters (ACK timeout, retry counts, RNR timer): call `query_rc_params` on an RC QP (`Qp<Rc>` or an extended RC QP)",
    label = "not an RC QP",
    note = "UC has no ACKs, retries or RNR; its `connect_with` takes `()`"
)]
pub trait WithRcParams: Connectable<Params = RcParams> + sealed::WithRcParams {}
impl sealed::WithRcParams for Rc {}
impl<O: crate::qp::ex::OpsFor<Rc>> sealed::WithRcParams for crate::qp::Ex<Rc, O> {}
impl WithRcParams for Rc {}
impl<O: crate::qp::ex::OpsFor<Rc>> WithRcParams for crate::qp::Ex<Rc, O> {}

impl<'a, T: Connectable, R: RecvSide, S: Threading, C, const SGE: usize>
    Qp<'a, T, R, S, C, Reset, SGE>
{
    /// This QP's [`Endpoint`] on `port_num` with the GID at `gid_index`: `ibv_query_port` (for
    /// the port's live LID and active MTU) and `ibv_query_gid`. The port number is checked
    /// against the device's `phys_port_cnt` and the GID index against the port's
    /// `gid_tbl_len` before the calls, both read once per context (when the QP was made).
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming `port_num` (outside
    ///   `1..=phys_port_cnt`) or `gid_index` (at or past the port's `gid_tbl_len`), before the calls.
    /// - [`ErrorKind::EmptyGid`] naming the port and the index
    ///   when the entry at `gid_index` holds no GID (`ibv_query_gid` reads a zero GID there,
    ///   which as the peer's destination would name no one).
    /// - The device's errno from `ibv_query_port` or `ibv_query_gid`
    ///   ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// let e = qp.endpoint(1, 0)?;
    /// assert_eq!(e.qp_num, qp.qp_num());
    /// assert!(qp.endpoint(2, 0).is_err()); // sw0 has one port
    /// let empty = qp.endpoint(1, 1).unwrap_err(); // sw0 has one GID, at index 0
    /// assert!(matches!(empty.kind, typed_verbs::ErrorKind::EmptyGid { port: 1, index: 1 }));
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
        self.checked_port(port_num, gid_index, ["port_num", "gid_index"], out)?;
        // SAFETY: a live QP's context is live.
        let ctx = unsafe { (*self.as_raw()).context };
        // The live values: the LID and the active MTU may change while the context is open.
        // SAFETY: plain C data.
        let mut port: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        // SAFETY: a live context, a port it has (checked); `port` valid for writes.
        unsafe { backend::of(ctx).query_port(ctx, port_num, &mut port) }
            .map_err(|e| Error::os(Verb::QueryPort, e))?;
        let mut gid = sys::ibv_gid { raw: [0; 16] };
        // SAFETY: a live context; an index inside the port's table; `gid` valid for writes.
        unsafe { backend::of(ctx).query_gid(ctx, port_num, gid_index.into(), &mut gid) }
            .map_err(|e| Error::os(Verb::QueryGid, e))?;
        // SAFETY: both members of the union are 16 plain bytes.
        let gid = Gid(unsafe { gid.raw });
        if gid == Gid::default() {
            return Err(Error {
                verb: Verb::QueryGid,
                kind: ErrorKind::EmptyGid {
                    port: port_num,
                    index: gid_index.into(),
                },
            });
        }
        Ok(Endpoint {
            qp_num: self.qp_num(),
            port_num,
            lid: port.lid,
            gid,
            gid_index,
            psn: self.qp_num().wrapping_mul(0x9e37_79b9) & 0x00ff_ffff,
            mtu: Mtu::from_raw(port.active_mtu).unwrap_or(Mtu::Mtu1024),
        })
    }

    /// `port_num` checked against the device's `phys_port_cnt` and `gid_index` against the
    /// port's `gid_tbl_len`, as read when the QP was made (once per context: no call here);
    /// `out` makes the `OutOfRange` error of each, named by `names`.
    fn checked_port(
        &self,
        port_num: u8,
        gid_index: u8,
        names: [&'static str; 2],
        out: impl Fn(&'static str, u64, u64, u64) -> Error,
    ) -> Result<()> {
        let limits = self.limits();
        let port = limits.port(names[0], port_num).map_err(|_| {
            let ports = u64::from(limits.port_count());
            out(names[0], port_num.into(), 1, ports)
        })?;
        let table = port.gid_tbl_len();
        if u64::from(gid_index) >= table {
            return Err(out(names[1], gid_index.into(), 0, table.saturating_sub(1)));
        }
        Ok(())
    }

    /// Connects this QP (of endpoint `local`) to the peer QP of endpoint `remote` with the
    /// default connection parameters: [`connect_with`](Self::connect_with)`(local, remote,
    /// access, Default::default())`. For RC that is [`RcParams::default`]: on RTR → RTS ACK
    /// timeout 14 (67.1 ms), 6 retries, RNR retries for ever, one outgoing RDMA read or atomic;
    /// on INIT → RTR RNR timer 12 (0.64 ms), one incoming RDMA read or atomic. A dead peer is
    /// reported in 470 ms ([`RcParams::dead_peer_bound`]). RC and UC QPs ([`Connectable`]).
    ///
    /// # Errors
    /// As [`connect_with`](Self::connect_with). In every case the QP is destroyed.
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
        self.connect_with::<T::Params>(local, remote, access, T::Params::default())
    }

    /// Connects this QP (of endpoint `local`) to the peer QP of endpoint `remote` with the
    /// connection parameters `params` ([`RcParams`] for RC, `()` for UC): RESET → INIT (port,
    /// P_Key index 0, `access` for what the peer may do here), → RTR (the peer's address with
    /// service level 0, the port's rate, and for a peer with a GID a global route of hop limit 1,
    /// traffic class 0 and flow label 0; the peer's QP number and PSN; the smaller MTU; for RC
    /// `params.max_dest_rd_atomic` and `params.min_rnr_timer`), → RTS (this side's PSN; for RC
    /// `params.timeout`, `params.retry_cnt`, `params.rnr_retry` and `params.max_rd_atomic`).
    ///
    /// Checked before the transitions (`OutOfRange` naming the field): `local` is this QP's,
    /// its port exists and its GID index is in the port's table (read once per context: no call
    /// is made for it), the PSNs and the remote QP number fit in 24 bits, and each field of
    /// `params` is in its range ([`RcParams`]'s table). A refused check or transition destroys
    /// the QP (it was taken by value) and names the transition in the error.
    ///
    /// # Errors
    /// - [`ErrorKind::OutOfRange`] naming the field (`local.qp_num`,
    ///   `local.psn`, `remote.psn`, `remote.qp_num`, `local.port_num`, `local.gid_index`,
    ///   `params.timeout`, `params.retry_cnt`, `params.rnr_retry`, `params.min_rnr_timer`,
    ///   `params.max_rd_atomic`, `params.max_dest_rd_atomic`), before the transitions.
    /// - The device's errno from the `ibv_modify_qp` of a transition
    ///   ([`ErrorKind::Os`]), the error's verb naming the transition
    ///   (`ibv_modify_qp INIT->RTR`).
    ///
    /// In every case the QP is destroyed.
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// use typed_verbs::connect::RcParams;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    /// let (a, b) = (Qp::<Rc>::builder(&pd, &cq, &cq).build()?, Qp::<Rc>::builder(&pd, &cq, &cq).build()?);
    /// let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    /// let params = RcParams { timeout: 12, retry_cnt: 3, ..Default::default() }; // 4 × 16.8 ms
    /// let a = a.connect_with(&ea, &eb, AccessFlags::LOCAL_WRITE, params)?;
    /// assert_eq!(a.query_rc_params()?, params);
    /// let b = b.connect_with(&eb, &ea, AccessFlags::LOCAL_WRITE, params)?;
    /// # drop((a, b));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn connect_with<P>(
        self,
        local: &Endpoint,
        remote: &Endpoint,
        access: impl Into<AccessFlags>,
        params: P,
    ) -> Result<Qp<'a, T, R, S, C, Rts, SGE>>
    where
        P: ParamsOf<T::Params, T>,
    {
        let params = params.into_params();
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
        T::check(&params, self.limits())?;
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
        let rtr = T::rtr(av, local.mtu.min(remote.mtu), remote, &params);
        let rts = T::rts(local, &params);
        self.to_init(init)?.to_rtr(rtr)?.to_rts(rts)
    }
}

impl<'a, T: QpType, R: RecvSide, S: Threading, C, St: QpState, const SGE: usize>
    Qp<'a, T, R, S, C, St, SGE>
{
    /// `ibv_query_qp` for the connection parameters the device holds for this RC QP: the ACK
    /// timeout, the retry counts, the RNR timer and the RDMA read and atomic depths (as set by
    /// [`connect_with`](Qp::connect_with), the transitions, or the connection manager). Zeros
    /// before they were set. A device may round a depth up (rxe keeps a power of two).
    ///
    /// # Errors
    /// The device's errno from `ibv_query_qp` ([`ErrorKind::Os`]).
    ///
    /// ```
    /// # use typed_verbs::prelude::*;
    /// use typed_verbs::connect::RcParams;
    /// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    /// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    /// let e = qp.endpoint(1, 0)?;
    /// let qp = qp.connect(&e, &e, AccessFlags::LOCAL_WRITE)?; // loopback to itself
    /// assert_eq!(qp.query_rc_params()?, RcParams::default());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn query_rc_params(&self) -> Result<RcParams>
    where
        T: WithRcParams,
    {
        // SAFETY: plain C data.
        let (mut a, mut init): (sys::ibv_qp_attr, sys::ibv_qp_init_attr) =
            unsafe { std::mem::zeroed() };
        let mask =
            TIMEOUT | RETRY_CNT | RNR_RETRY | MIN_RNR_TIMER | MAX_QP_RD_ATOMIC | MAX_DEST_RD_ATOMIC;
        let qp = self.as_raw();
        // SAFETY: a live QP; out-pointers valid for writes.
        unsafe { backend::of((*qp).context).query_qp(qp, &mut a, mask, &mut init) }
            .map_err(|e| Error::os(Verb::QueryQp, e))?;
        Ok(RcParams {
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            min_rnr_timer: a.min_rnr_timer,
            max_rd_atomic: a.max_rd_atomic,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
        })
    }
}

#[cfg(all(test, feature = "software-device"))]
mod tests {
    use crate::backend::software_queries;
    use crate::cq::Cq;
    use crate::device::Context;
    use crate::pd::Pd;
    use crate::qp::state::{AccessFlags, AddressVector, GlobalRoute};
    use crate::qp::{ah::AddressHandle, Qp, Rc};

    /// The device's limits and the ports' tables are read once per context: after the first QP,
    /// a QP's creation, `connect`, an address handle and `Context::query_gid` make no
    /// `ibv_query_device` or `ibv_query_port`, and `endpoint` one `ibv_query_port` (for the
    /// port's live LID and MTU).
    #[test]
    fn limits_are_read_once_per_context() {
        let ctx = Context::open("sw0").unwrap();
        let pd = Pd::new(&ctx).unwrap();
        let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
        drop(Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap()); // the first reads the ports
        let before = software_queries();
        let (a, b) = (
            Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap(),
            Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap(),
        );
        assert_eq!(
            software_queries(),
            before,
            "a QP's creation after the first"
        );
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        assert_eq!(
            software_queries(),
            before + 2,
            "one ibv_query_port per endpoint"
        );
        let a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
        let b = b.connect(&eb, &ea, AccessFlags::LOCAL_WRITE).unwrap();
        let gid = ctx.query_gid(1, 0).unwrap();
        let grh = GlobalRoute {
            dgid: gid,
            flow_label: 0,
            sgid_index: 0,
            hop_limit: 1,
            traffic_class: 0,
        };
        let av = AddressVector {
            dlid: 0,
            sl: 0,
            src_path_bits: 0,
            static_rate: 0,
            port_num: 1,
            grh: Some(grh),
        };
        let ah = AddressHandle::new(&pd, av).unwrap();
        assert_eq!(
            software_queries(),
            before + 2,
            "connect, query_gid and an address handle"
        );
        drop((a, b, ah));
        // Another context of the same device reads its own, once.
        let other = Context::open("sw0").unwrap();
        let before = software_queries();
        other.query_gid(1, 0).unwrap();
        other.query_gid(1, 0).unwrap();
        assert_eq!(
            software_queries(),
            before + 1,
            "one ibv_query_port of its one port"
        );
    }
}
