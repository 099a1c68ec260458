//! Port spaces and id states, as types, and the rules of which verb each state allows.

use super::*;

/// A port space (`enum rdma_port_space`): [`Tcp`] (RC connections) or [`Udp`] (UD, SIDR).
/// Sealed. Its private data limits are the kernel's: the IB CM's message sizes
/// (`include/rdma/ib_cm.h`: REQ 92, REP 196, REJ 148, SIDR REQ 216, SIDR REP 136 bytes) less the
/// 36-byte header the RDMA CM puts in a REQ and a SIDR REQ (`cma_user_data_offset`).
///
/// ```
/// use typed_verbs::cm::{PortSpace, Tcp, Udp};
/// assert_eq!((Tcp::MAX_CONNECT_DATA, Tcp::MAX_ACCEPT_DATA, Tcp::MAX_REJECT_DATA), (56, 196, 148));
/// assert_eq!((Udp::MAX_CONNECT_DATA, Udp::MAX_ACCEPT_DATA), (180, 136));
/// ```
pub trait PortSpace: SealedCm + Send + Sync + 'static {
    /// The `enum rdma_port_space` value.
    const RAW: sys::rdma_port_space::Type;
    /// The QP type of its connections: [`Rc`] for [`Tcp`], [`Ud`] for [`Udp`].
    type Transport: CmTransport;
    /// Private data bytes `rdma_connect` may carry.
    const MAX_CONNECT_DATA: usize;
    /// Private data bytes `rdma_accept` may carry.
    const MAX_ACCEPT_DATA: usize;
    /// Private data bytes `rdma_reject` may carry.
    const MAX_REJECT_DATA: usize;
    /// `RDMA_PS_TCP` or `RDMA_PS_UDP`, for messages.
    const NAME: &'static str;
}

/// `RDMA_PS_TCP`: "Provides reliable, connection-oriented QP communication" (rdma_create_id(3));
/// its connections are [`Rc`] QPs.
///
/// ```
/// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
/// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
/// let id = CmId::<Tcp>::new(&ch)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Tcp {}
/// `RDMA_PS_UDP`: "Provides unreliable, connectionless QP communication" (rdma_create_id(3));
/// its "connections" are a [`Ud`] QP and the peer's address, QP number and Q_Key (SIDR).
///
/// ```
/// # use typed_verbs::{cm::{CmId, EventChannel, Udp}, Context};
/// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
/// let id = CmId::<Udp>::new(&ch)?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug)]
pub enum Udp {}

impl SealedCm for Tcp {}
impl SealedCm for Udp {}
impl PortSpace for Tcp {
    const RAW: sys::rdma_port_space::Type = sys::rdma_port_space::RDMA_PS_TCP;
    type Transport = Rc;
    const MAX_CONNECT_DATA: usize = 92 - 36;
    const MAX_ACCEPT_DATA: usize = 196;
    const MAX_REJECT_DATA: usize = 148;
    const NAME: &'static str = "RDMA_PS_TCP";
}
impl PortSpace for Udp {
    const RAW: sys::rdma_port_space::Type = sys::rdma_port_space::RDMA_PS_UDP;
    type Transport = Ud;
    const MAX_CONNECT_DATA: usize = 216 - 36;
    const MAX_ACCEPT_DATA: usize = 136;
    // A SIDR reject is a SIDR REP with a status: its private data is the REP's.
    const MAX_REJECT_DATA: usize = 136;
    const NAME: &'static str = "RDMA_PS_UDP";
}

/// The QP types a port space's connections use, and how `rdma_init_qp_attr`'s attributes
/// become the crate's typed transition attributes (their range checks then apply). Sealed.
///
/// ```
/// fn takes<T: typed_verbs::cm::CmTransport>() {}
/// takes::<typed_verbs::Rc>();
/// takes::<typed_verbs::Ud>();
/// ```
pub trait CmTransport: Transitions + SealedCm {
    #[doc(hidden)]
    fn init_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<Self::Init>;
    #[doc(hidden)]
    fn rtr_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<Self::Rtr>;
    #[doc(hidden)]
    fn rts_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<Self::Rts>;
}

/// Every bit of `need` in `mask`, or the error naming the first attribute missing.
fn require(mask: i32, need: &[(i32, &'static str)]) -> Result<()> {
    match need.iter().find(|(bit, _)| mask & bit == 0) {
        None => Ok(()),
        Some((_, what)) => Err(Error {
            verb: Verb::InitQpAttr,
            kind: ErrorKind::MissingAttr(what),
        }),
    }
}

pub(super) fn av_of(a: &sys::ibv_ah_attr) -> AddressVector {
    AddressVector {
        dlid: a.dlid,
        sl: a.sl,
        src_path_bits: a.src_path_bits,
        static_rate: a.static_rate,
        port_num: a.port_num,
        grh: (a.is_global != 0).then_some(GlobalRoute {
            // SAFETY: `raw` is the plain-bytes view of the GID union (every bit pattern valid).
            dgid: Gid(unsafe { a.grh.dgid.raw }),
            flow_label: a.grh.flow_label,
            sgid_index: a.grh.sgid_index,
            hop_limit: a.grh.hop_limit,
            traffic_class: a.grh.traffic_class,
        }),
    }
}

fn mtu_of(raw: u32) -> Result<Mtu> {
    Ok(match raw {
        1 => Mtu::Mtu256,
        2 => Mtu::Mtu512,
        3 => Mtu::Mtu1024,
        4 => Mtu::Mtu2048,
        5 => Mtu::Mtu4096,
        v => return Err(Error::range(Verb::InitQpAttr, "path_mtu", v.into(), 1, 5)),
    })
}

impl SealedCm for Rc {}
impl SealedCm for Ud {}
impl CmTransport for Rc {
    fn init_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<ConnectedInit> {
        require(
            mask,
            &[
                (qam::PORT, "port_num"),
                (qam::PKEY_INDEX, "pkey_index"),
                (qam::ACCESS_FLAGS, "qp_access_flags"),
            ],
        )?;
        Ok(ConnectedInit {
            port_num: a.port_num,
            pkey_index: a.pkey_index,
            access: AccessFlags::from_raw(a.qp_access_flags),
        })
    }
    fn rtr_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<RcRtr> {
        require(
            mask,
            &[
                (qam::AV, "ah_attr"),
                (qam::PATH_MTU, "path_mtu"),
                (qam::DEST_QPN, "dest_qp_num"),
                (qam::RQ_PSN, "rq_psn"),
                (qam::MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic"),
                (qam::MIN_RNR_TIMER, "min_rnr_timer"),
            ],
        )?;
        Ok(RcRtr {
            av: av_of(&a.ah_attr),
            path_mtu: mtu_of(a.path_mtu)?,
            dest_qp_num: a.dest_qp_num,
            rq_psn: a.rq_psn,
            max_dest_rd_atomic: a.max_dest_rd_atomic,
            min_rnr_timer: a.min_rnr_timer,
        })
    }
    fn rts_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<RcRts> {
        require(
            mask,
            &[
                (qam::SQ_PSN, "sq_psn"),
                (qam::TIMEOUT, "timeout"),
                (qam::RETRY_CNT, "retry_cnt"),
                (qam::RNR_RETRY, "rnr_retry"),
                (qam::MAX_QP_RD_ATOMIC, "max_rd_atomic"),
            ],
        )?;
        Ok(RcRts {
            sq_psn: a.sq_psn,
            timeout: a.timeout,
            retry_cnt: a.retry_cnt,
            rnr_retry: a.rnr_retry,
            max_rd_atomic: a.max_rd_atomic,
        })
    }
}
impl CmTransport for Ud {
    fn init_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<UdInit> {
        require(
            mask,
            &[
                (qam::PORT, "port_num"),
                (qam::PKEY_INDEX, "pkey_index"),
                (qam::QKEY, "qkey"),
            ],
        )?;
        Ok(UdInit {
            port_num: a.port_num,
            pkey_index: a.pkey_index,
            qkey: a.qkey,
        })
    }
    fn rtr_attr(_: &sys::ibv_qp_attr, _: i32) -> Result<()> {
        Ok(())
    }
    /// The kernel fills a UD id's attributes the same for every state (`cma_ib_init_qp_attr`:
    /// P_Key index, port, Q_Key), and librdmacm moves its own UD QPs to RTR with the state alone
    /// and to RTS with `sq_psn = 0` (`ucma_init_ud_qp`): so does the crate, unless the CM gave a
    /// send PSN.
    fn rts_attr(a: &sys::ibv_qp_attr, mask: i32) -> Result<SqPsn> {
        let sq_psn = if mask & qam::SQ_PSN != 0 { a.sq_psn } else { 0 };
        Ok(SqPsn { sq_psn })
    }
}

/// The state of a [`CmId`]. Sealed.
///
/// ```
/// fn takes<S: typed_verbs::cm::IdState>() {}
/// takes::<typed_verbs::cm::Listening>();
/// ```
pub trait IdState: SealedCm + Send + Sync + 'static {}

macro_rules! states {
    ($($(#[$m:meta])* $s:ident;)*) => {$(
        $(#[$m])*
        #[derive(Debug)]
        pub enum $s {}
        impl SealedCm for $s {}
        impl IdState for $s {}
    )*};
}

states! {
    /// Created, not bound to an address.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Idle, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id: CmId<Tcp, Idle> = CmId::new(&ch)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Idle;
    /// Bound to a local address (`rdma_bind_addr`).
    ///
    /// ```
    /// # use typed_verbs::{cm::{Bound, CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id: CmId<Tcp, Bound> = CmId::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Bound;
    /// The destination address resolved (`RDMA_CM_EVENT_ADDR_RESOLVED`): bound to a device.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{AddrResolved, CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let dst = "127.0.0.1:7471".parse().unwrap();
    /// let id: CmId<Tcp, AddrResolved> = CmId::new(&ch)?.resolve_addr(None, dst, Duration::from_secs(2))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    AddrResolved;
    /// The route resolved (`RDMA_CM_EVENT_ROUTE_RESOLVED`): ready to connect.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{RouteResolved, CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// # let t = Duration::from_secs(2);
    /// let id: CmId<Tcp, RouteResolved> = CmId::new(&ch)?.resolve_addr(None, "127.0.0.1:7471".parse().unwrap(), t)?.resolve_route(t)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    RouteResolved;
    /// Listening for connect requests (`rdma_listen`).
    ///
    /// ```
    /// # use typed_verbs::{cm::{Listening, CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id: CmId<Tcp, Listening> = CmId::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(4)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    Listening;
    /// The id of a connection whose QP was taken apart from it ([`Connection::into_parts`],
    /// [`Connection::disconnect`]): it can disconnect and wait for its events.
    ///
    /// ```
    /// # use typed_verbs::cm::{CmId, Connected, Tcp};
    /// fn takes(id: CmId<Tcp, Connected>) { drop(id) }
    /// ```
    Connected;
}

macro_rules! state_rule {
    ($($(#[$m:meta])* $tr:ident: $($st:ident),* ; $msg:literal;)*) => {$(
        $(#[$m])*
        #[diagnostic::on_unimplemented(message = $msg, label = "this CM id is in `{Self}`")]
        pub trait $tr: IdState {}
        $(impl $tr for $st {})*
    )*};
}

state_rule! {
    /// The states `rdma_bind_addr` takes an id from: [`Idle`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::CanBind>() {}
    /// needs::<typed_verbs::cm::Idle>();
    /// ```
    CanBind: Idle; "`bind` binds a new CM id (`Idle`), and this one is in `{Self}`: an id is bound once (rdma_bind_addr(3)); make a new `CmId` to bind another address";
    /// The states `rdma_resolve_addr` takes an id from: [`Idle`] and [`Bound`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::CanResolveAddr>() {}
    /// needs::<typed_verbs::cm::Bound>();
    /// ```
    CanResolveAddr: Idle, Bound; "`resolve_addr` starts an active connection from an `Idle` or `Bound` CM id, and this one is in `{Self}`: after `resolve_addr` comes `resolve_route`, then `connect`";
    /// The state `rdma_resolve_route` takes an id from: [`AddrResolved`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::CanResolveRoute>() {}
    /// needs::<typed_verbs::cm::AddrResolved>();
    /// ```
    CanResolveRoute: AddrResolved; "`resolve_route` needs the destination address resolved, and this CM id is in `{Self}`: \"The destination address must have already been resolved by calling rdma_resolve_addr\" (rdma_resolve_route(3)): call `resolve_addr` first";
    /// The state `rdma_connect` takes an id from: [`RouteResolved`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::CanConnect>() {}
    /// needs::<typed_verbs::cm::RouteResolved>();
    /// ```
    CanConnect: RouteResolved; "`connect` needs a resolved route, and this CM id is in `{Self}`: \"Users must have resolved a route to the destination address by having called rdma_resolve_route\" (rdma_connect(3)): call `resolve_addr` and `resolve_route` first";
    /// The state `rdma_listen` takes an id from: [`Bound`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::CanListen>() {}
    /// needs::<typed_verbs::cm::Bound>();
    /// ```
    CanListen: Bound; "`listen` needs a bound CM id, and this one is in `{Self}`: \"Users must have bound the rdma_cm_id to a local address by calling rdma_bind_addr before calling this routine\" (rdma_listen(3)): call `bind` first";
    /// Implemented by no state: `rdma_accept` is called on a [`ConnectRequest`]'s id, never on
    /// a CM id (a listener's or another's). It makes `accept` on a [`CmId`] an error that says
    /// so.
    ///
    /// ```compile_fail
    /// fn needs<S: typed_verbs::cm::AcceptedOnARequest>() {}
    /// needs::<typed_verbs::cm::Listening>();
    /// ```
    AcceptedOnARequest: ; "`accept` is called on the `ConnectRequest` a listener returns, and this is a CM id in `{Self}`: \"rdma_accept is not called on a listening rdma_cm_id\" (rdma_accept(3)): `let req = listener.get_request(timeout)?;` then `req.accept(qp, &param, timeout)`";
    /// The state connect requests arrive in: [`Listening`].
    ///
    /// ```
    /// fn needs<S: typed_verbs::cm::IsListening>() {}
    /// needs::<typed_verbs::cm::Listening>();
    /// ```
    IsListening: Listening; "connect requests come to a listening CM id, and this one is in `{Self}`: call `bind` and `listen` first (rdma_accept(3): \"rdma_accept is not called on a listening rdma_cm_id\": accept the `ConnectRequest` that `get_request` returns)";
}
