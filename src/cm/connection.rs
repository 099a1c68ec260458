//! Connection parameters, requests and connections: a QP brought up by the CM's events.

use super::*;

/// What a connect or accept asks for (`struct rdma_conn_param`, the fields the program
/// chooses; the QP number is the crate's), and the two RC QP attributes the program sets
/// through the CM: the ACK timeout (`rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)`) and the RNR
/// timer. [`Default`]: no private data, one RDMA read in flight each way, and values that
/// report a dead peer in bounded time on every device, as [`RcParams`]'s do (the guide's
/// [connection parameters](crate::guide::connection_parameters) page):
///
/// | field | default | range | what it sets, and bounds |
/// |---|---|---|---|
/// | `retry_count` | 6 | 0..=7 | the QPs' `retry_cnt` (the active side's, for both QPs: the IB CM's REQ carries it): a dead peer fails a request after `retry_count` + 1 ACK timeouts. 7 never ends on rxe |
/// | `rnr_retry_count` | 7 | 0..=7 (7: for ever) | the peer's QP's `rnr_retry` (each side's goes to the other in the REQ or REP). Only a live peer sends RNR NAKs, so a dead one is still bounded by `retry_count` |
/// | `ack_timeout` | 14 | 0..=31 | this side's QP's `timeout`, 4.096 µs × 2^`ack_timeout` (67.1 ms; 0: none): 470 ms to a dead peer with the default `retry_count`. Without it the CM derives one from the path's packet lifetime (19, 2.1 s, on rxe: 15 s to a dead peer) |
/// | `min_rnr_timer` | 12 | 0..=31 | this side's QP's `min_rnr_timer` (0.64 ms; the CM's own is 0, which encodes 655 ms) |
///
/// librdmacm has an option for the ACK timeout (`RDMA_OPTION_ID_ACK_TIMEOUT`, RC ids only),
/// which the crate sets on the id before the connect or accept, so that `rdma_init_qp_attr`
/// gives it (the raw layer's [`rdma_set_option`](crate::raw::rdma_set_option) too). It has none
/// for the RNR timer (the kernel's `rdma_set_min_rnr_timer` is for kernel users only): the
/// crate writes `min_rnr_timer` into the RTR attributes it applies to the QP itself. Both
/// matter for RC only; a UD connect or accept checks their range and ignores them.
///
/// Every field is checked before any call (`OutOfRange` naming it, the connect's or accept's
/// verb and the range). [`Connection::qp`]'s
/// [`query_rc_params`](crate::Qp::query_rc_params) reads back what the QP got.
///
/// ```
/// use typed_verbs::cm::ConnParam;
/// let p = ConnParam { private_data: b"hello", ..ConnParam::default() };
/// assert_eq!((p.responder_resources, p.initiator_depth, p.retry_count, p.rnr_retry_count), (1, 1, 6, 7));
/// assert_eq!((p.ack_timeout, p.min_rnr_timer), (14, 12));
/// ```
///
/// [`RcParams`]: crate::connect::RcParams
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConnParam<'d> {
    /// Private data for the peer; at most the port space's limit ([`PortSpace`]), checked
    /// before the call. "Note that the actual amount of data transferred to the remote side is
    /// transport dependent and may be larger than that requested" (rdma_connect(3)): RC pads it.
    pub private_data: &'d [u8],
    /// "The maximum number of outstanding RDMA read and atomic operations that the local side
    /// will accept from the remote side" (RC only).
    pub responder_resources: u8,
    /// "The maximum number of outstanding RDMA read and atomic operations that the local side
    /// will have to the remote side" (RC only).
    pub initiator_depth: u8,
    /// Retries after a transport error or ACK timeout (0..=7, RC only; a connect's, which sets
    /// both QPs'). Default 6: 7 is unlimited on rxe.
    pub retry_count: u8,
    /// Retries after a receiver-not-ready NAK (0..=7, 7 is infinite; RC only).
    pub rnr_retry_count: u8,
    /// This side's QP's local ACK timeout, encoded (0..=31: 4.096 µs × 2^`ack_timeout`, 0 none;
    /// RC only): `rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)`. Default 14 (67.1 ms).
    pub ack_timeout: u8,
    /// This side's QP's RNR NAK timer, encoded (0..=31, as
    /// [`RcParams::min_rnr_timer`](crate::connect::RcParams::min_rnr_timer); RC only). Default
    /// 12 (0.64 ms).
    pub min_rnr_timer: u8,
}

impl Default for ConnParam<'_> {
    fn default() -> Self {
        ConnParam {
            private_data: &[],
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 6,
            rnr_retry_count: 7,
            ack_timeout: 14,
            min_rnr_timer: 12,
        }
    }
}

impl ConnParam<'_> {
    /// The C struct, after the checks: private data at most `max`, counts three bits, the
    /// timers five.
    pub(super) fn c_param(
        &self,
        verb: Verb,
        max: usize,
        qp_num: u32,
        srq: bool,
    ) -> Result<sys::rdma_conn_param> {
        let len = self.private_data.len();
        if len > max {
            return Err(Error::range(
                verb,
                "private_data_len",
                len as u64,
                0,
                max as u64,
            ));
        }
        for (what, v, max) in [
            ("retry_count", self.retry_count, 7),
            ("rnr_retry_count", self.rnr_retry_count, 7),
            ("ack_timeout", self.ack_timeout, 31),
            ("min_rnr_timer", self.min_rnr_timer, 31),
        ] {
            if v > max {
                return Err(Error::range(verb, what, v.into(), 0, max.into()));
            }
        }
        Ok(sys::rdma_conn_param {
            private_data: if len == 0 {
                std::ptr::null()
            } else {
                self.private_data.as_ptr().cast()
            },
            private_data_len: len as u8,
            responder_resources: self.responder_resources,
            initiator_depth: self.initiator_depth,
            flow_control: 1,
            retry_count: self.retry_count,
            rnr_retry_count: self.rnr_retry_count,
            srq: srq as u8,
            qp_num,
        })
    }

    /// `rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)` on an RC id (a UD id has no ACKs, and
    /// the kernel refuses the option on one with `EINVAL`): `rdma_init_qp_attr` then gives the
    /// QP's RTS this timeout instead of the path's.
    pub(super) fn set_ack_timeout<P: PortSpace>(&self, id: &OwnedId, verb: Verb) -> Result<()> {
        if P::RAW != sys::rdma_port_space::RDMA_PS_TCP {
            return Ok(());
        }
        let mut t = self.ack_timeout;
        // SAFETY: a live id; `t` is one readable byte for the call (copied).
        unsafe {
            id.chan.cm.set_option(
                id.as_ptr(),
                crate::raw::RDMA_OPTION_ID,
                crate::raw::RDMA_OPTION_ID_ACK_TIMEOUT,
                (&mut t as *mut u8).cast(),
                1,
            )
        }
        .map_err(|e| Error::os(verb, e))
    }
}

/// The peer's connection parameters, as its connect request or its accept reported them
/// (`param.conn` of the event; zeros for UD).
///
/// ```
/// let p = typed_verbs::cm::PeerParam::default();
/// assert_eq!(p.qp_num, 0);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PeerParam {
    /// RDMA reads and atomics the peer accepts from this side.
    pub responder_resources: u8,
    /// RDMA reads and atomics the peer will have outstanding to this side.
    pub initiator_depth: u8,
    /// Whether the peer has hardware flow control.
    pub flow_control: u8,
    /// The peer's transport retry count.
    pub retry_count: u8,
    /// The peer's RNR retry count.
    pub rnr_retry_count: u8,
    /// Whether the peer's QP takes its receives from an SRQ.
    pub srq: bool,
    /// The peer's QP number.
    pub qp_num: u32,
}

/// The peer of a UD "connection": where to send, as the SIDR reply said
/// (`param.ud` of `RDMA_CM_EVENT_ESTABLISHED`). Make an
/// [`AddressHandle`](crate::AddressHandle) from `av` on the QP's PD and send with a
/// [`UdDest`](crate::UdDest) of it, `qp_num` and `qkey`.
///
/// ```
/// # use typed_verbs::prelude::*;
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?;
/// # let grh = GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 };
/// let peer = typed_verbs::cm::UdPeer { av: AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: Some(grh) }, qp_num: 7, qkey: 0x01234567 };
/// let ah = typed_verbs::AddressHandle::new(&pd, peer.av)?;
/// let dest = UdDest::new(&ah, peer.qp_num, peer.qkey);
/// # let _ = dest;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdPeer {
    /// The address vector to the peer (`ah_attr`).
    pub av: AddressVector,
    /// The peer's QP number.
    pub qp_num: u32,
    /// The Q_Key the peer's QP accepts.
    pub qkey: u32,
}

/// A connect request (`RDMA_CM_EVENT_CONNECT_REQUEST`): the new id of that communication,
/// owned, and what the peer sent. Accept it with a QP ([`accept`](Self::accept)), reject it
/// ([`reject`](Self::reject)), or drop it: a dropped request is rejected and its id destroyed.
///
/// ```
/// # use std::time::Duration;
/// # use typed_verbs::{cm::{CmId, ConnParam, EventChannel, Tcp}, prelude::*, ErrorKind};
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let ch = EventChannel::new(&ctx)?; let t = Duration::from_secs(5);
/// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(4)?;
/// let addr = listener.local_addr().unwrap();
/// std::thread::scope(|s| {
///     s.spawn(|| {
///         let req = listener.get_request(t).unwrap();
///         req.reject(b"busy").unwrap();
///     });
///     let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, addr, t)?.resolve_route(t)?;
///     let e = id.connect(Qp::<Rc>::builder(&pd, &cq, &cq).build()?, &ConnParam::default(), t).unwrap_err();
///     match e.kind {
///         ErrorKind::Rejected { status, private_data } => assert_eq!((status, &private_data[..4]), (28, &b"busy"[..])),
///         other => panic!("{other:?}"),
///     }
///     Ok::<(), typed_verbs::Error>(())
/// })?;
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct ConnectRequest<P: PortSpace> {
    pub(super) id: OwnedId,
    pub(super) private_data: Vec<u8>,
    pub(super) param: PeerParam,
    pub(super) _m: PhantomData<fn() -> P>,
}

static_assertions::assert_impl_all!(ConnectRequest<Tcp>: Send, Sync);

impl<P: PortSpace> std::fmt::Debug for ConnectRequest<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ConnectRequest")
            .field("port_space", &P::NAME)
            .field("private_data", &self.private_data)
            .field("param", &self.param)
            .finish()
    }
}

/// The checks before a connect or accept: the QP's context is on the id's device.
pub(super) fn check_device(id: &OwnedId, verb: Verb, qp: *mut sys::ibv_qp) -> Result<()> {
    // SAFETY: a live QP; its context lives while it does.
    let ctx = unsafe { (*qp).context };
    // SAFETY: a live id and a live context.
    if unsafe { id.chan.cm.same_device(id.as_ptr(), ctx) } {
        Ok(())
    } else {
        Err(Error {
            verb,
            kind: ErrorKind::NotOnCmDevice,
        })
    }
}

/// The states a connection's QP may be handed over in: [`Reset`] (the crate moves it to INIT
/// first) or [`Init`] (after [`CmId::init_qp`] or [`ConnectRequest::init_qp`], with receives
/// posted). Sealed.
///
/// ```
/// fn takes<S: typed_verbs::cm::CmQpStart>() {}
/// takes::<typed_verbs::Reset>();
/// takes::<typed_verbs::Init>();
/// ```
#[diagnostic::on_unimplemented(
    message = "the CM takes a connection's QP in RESET or INIT, and this one is in `{Self}`: build it with `Qp::builder(..).build()` and hand it over as it is (or after `init_qp`, with receives posted)",
    label = "a QP in `{Self}`"
)]
pub trait CmQpStart: QpState + SealedCm {}
impl SealedCm for Reset {}
impl SealedCm for Init {}
impl CmQpStart for Reset {}
impl CmQpStart for Init {}

/// A QP of a connection, as the CM verbs move it.
type CmQp<'a, P, R, S, C, St, const SGE: usize> =
    Qp<'a, <P as PortSpace>::Transport, R, S, C, St, SGE>;

/// Moves `qp` to INIT with the id's attributes, unless it is there already.
pub(super) fn qp_to_init<
    'a,
    P: PortSpace,
    R: RecvSide,
    S: Threading,
    C,
    St: CmQpStart,
    const SGE: usize,
>(
    id: &OwnedId,
    qp: CmQp<'a, P, R, S, C, St, SGE>,
) -> Result<CmQp<'a, P, R, S, C, Init, SGE>> {
    if St::RAW == sys::ibv_qp_state::IBV_QPS_INIT {
        // SAFETY: the QP is in INIT (its state marker says so): only the marker changes.
        return Ok(unsafe { retype_qp(qp) });
    }
    let (a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_INIT)?;
    let attr = <P::Transport as CmTransport>::init_attr(&a, mask)?;
    // SAFETY: `St` is RESET here (the other CmQpStart state returned above).
    let qp: CmQp<'a, P, R, S, C, Reset, SGE> = unsafe { retype_qp(qp) };
    qp.to_init(attr)
}

/// # Safety
/// The QP is in the state `To` names.
unsafe fn retype_qp<
    'a,
    T: QpType,
    R: RecvSide,
    S: Threading,
    C,
    From: QpState,
    To: QpState,
    const SGE: usize,
>(
    qp: Qp<'a, T, R, S, C, From, SGE>,
) -> Qp<'a, T, R, S, C, To, SGE> {
    let qp = ManuallyDrop::new(qp);
    // SAFETY: the same QP, owned by the result (`qp` is not dropped); caller's contract on the
    // state.
    unsafe { Qp::from_raw_parts(qp.raw_nonnull()) }
}

/// The active side's QP, INIT → INIT with the id's INIT attributes once the connect response
/// came, as librdmacm's `ucma_modify_qp_rtr` does for its own QPs ("Need to update QP
/// attributes from default values"): before `rdma_connect` the kernel gives an active id's QP
/// REMOTE_WRITE only (`cma_ib_init_qp_attr`); once the IB CM knows the responder resources it
/// adds REMOTE_READ and REMOTE_ATOMIC (`cm_init_qp_init_attr`), without which the peer's RDMA
/// reads of this side's memory fail (`IBV_WC_REM_INV_REQ_ERR`).
pub(super) fn qp_reinit<R: RecvSide, S: Threading, C, const SGE: usize>(
    id: &OwnedId,
    qp: &Qp<'_, Rc, R, S, C, Init, SGE>,
) -> Result<()> {
    let (a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_INIT)?;
    let init = <Rc as CmTransport>::init_attr(&a, mask)?;
    qp.modify_init(ConnectedInitModify {
        port_num: Some(init.port_num),
        pkey_index: Some(init.pkey_index),
        access: Some(init.access),
    })
}

/// INIT → RTR → RTS with the id's attributes, and `min_rnr_timer` for an RC QP's RTR (the
/// CM's is 0, 655 ms, and librdmacm has no option to set it).
pub(super) fn qp_up<'a, P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize>(
    id: &OwnedId,
    qp: CmQp<'a, P, R, S, C, Init, SGE>,
    min_rnr_timer: u8,
) -> Result<CmQp<'a, P, R, S, C, Rts, SGE>> {
    let (mut a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_RTR)?;
    if mask & crate::ffi::qp_attr_mask::MIN_RNR_TIMER != 0 {
        a.min_rnr_timer = min_rnr_timer;
    }
    let rtr = <P::Transport as CmTransport>::rtr_attr(&a, mask)?;
    let qp = qp.to_rtr(rtr)?;
    let (a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_RTS)?;
    let rts = <P::Transport as CmTransport>::rts_attr(&a, mask)?;
    qp.to_rts(rts)
}

pub(super) fn uses_srq<R: RecvSide>() -> bool {
    std::any::TypeId::of::<R>() == std::any::TypeId::of::<UsesSrq>()
}

impl<P: PortSpace> ConnectRequest<P> {
    /// The peer's private data (its length as the event reports it: "the size of the private
    /// data buffer may be larger than the amount of private data sent by the remote side",
    /// rdma_get_cm_event(3)).
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>) {
    /// let data: &[u8] = req.private_data();
    /// # }
    /// ```
    pub fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    /// The peer's connection parameters (RC; zeros for UD).
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>) {
    /// println!("peer QP {:#x}", req.peer_param().qp_num);
    /// # }
    /// ```
    pub fn peer_param(&self) -> PeerParam {
        self.param
    }

    /// The peer's address.
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>) {
    /// println!("from {:?}", req.peer_addr());
    /// # }
    /// ```
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.id.addr(false)
    }

    /// Moves `qp` RESET → INIT with the request's attributes (`rdma_init_qp_attr`), so that
    /// receives can be posted before [`accept`](Self::accept).
    ///
    /// # Errors
    /// [`ErrorKind::NotOnCmDevice`] when the QP is on another device than the request; the
    /// errno of `rdma_init_qp_attr`; a range or device error of the move to INIT. The QP is
    /// destroyed; the request stays.
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq, mr: &typed_verbs::Mr) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let qp = req.init_qp(Qp::<Rc>::builder(pd, cq, cq).build()?)?;
    /// qp.post_recv(1, &[mr.sge(0..64).unwrap()])?; // before the peer can send
    /// let conn = req.accept(qp, &typed_verbs::cm::ConnParam::default(), std::time::Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn init_qp<'a, R: RecvSide, S: Threading, C, const SGE: usize>(
        &self,
        qp: CmQp<'a, P, R, S, C, Reset, SGE>,
    ) -> Result<CmQp<'a, P, R, S, C, Init, SGE>> {
        check_device(&self.id, Verb::InitQpAttr, qp.as_raw())?;
        qp_to_init::<P, R, S, C, Reset, SGE>(&self.id, qp)
    }

    /// `rdma_reject` with `private_data`: "Called from the listening side to reject a
    /// connection or datagram service lookup request." (rdma_reject(3)). The peer's connect
    /// fails with [`ErrorKind::Rejected`] (status 28, consumer-defined, on InfiniBand and
    /// RoCE) and the data. The request's id is destroyed.
    ///
    /// # Errors
    /// [`ErrorKind::OutOfRange`] for private data over [`PortSpace::MAX_REJECT_DATA`] (before
    /// the call; the request is dropped, which rejects it without data); the errno of
    /// `rdma_reject` ([`Verb::Reject`]).
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>) -> typed_verbs::Result<()> {
    /// req.reject(b"no room")?;
    /// # Ok(()) }
    /// ```
    pub fn reject(mut self, private_data: &[u8]) -> Result<()> {
        let len = private_data.len();
        if len > P::MAX_REJECT_DATA {
            return Err(Error::range(
                Verb::Reject,
                "private_data_len",
                len as u64,
                0,
                P::MAX_REJECT_DATA as u64,
            ));
        }
        let data = if len == 0 {
            std::ptr::null()
        } else {
            private_data.as_ptr().cast()
        };
        self.id.reject_on_drop = false;
        // SAFETY: a live id from a connect request; `len` bytes readable at `data` (copied).
        unsafe { self.id.chan.cm.reject(self.id.as_ptr(), data, len as u8) }
            .map_err(|e| Error::os(Verb::Reject, e))
    }
}

impl ConnectRequest<Tcp> {
    /// `rdma_accept` with `qp` (RESET, or INIT after [`init_qp`](Self::init_qp)): the crate
    /// moves the QP to INIT, RTR and RTS with `rdma_init_qp_attr`'s attributes, accepts, and
    /// waits (up to `timeout`) for `RDMA_CM_EVENT_ESTABLISHED`. rdma_accept(3): "Called from
    /// the listening side to accept a connection or datagram service lookup request";
    /// "rdma_accept is called on the new rdma_cm_id".
    ///
    /// # Errors
    /// Before any call: [`ErrorKind::OutOfRange`] for private data over 196 bytes, a retry
    /// count over 7 or a timer over 31 ([`ConnParam`]), [`ErrorKind::NotOnCmDevice`] when the QP is on another device than the
    /// request. Then the errnos of `rdma_init_qp_attr`, the QP's transitions, `rdma_accept`
    /// ([`Verb::Accept`]); [`ErrorKind::CmEvent`] for another event than ESTABLISHED (the
    /// peer gave up: `RDMA_CM_EVENT_CONNECT_ERROR`, `RDMA_CM_EVENT_UNREACHABLE`);
    /// [`ErrorKind::CmTimedOut`]. The QP and the request's id are destroyed (the peer is
    /// rejected).
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = req.accept(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default(), std::time::Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn accept<'a, R: RecvSide, S: Threading, C, St: CmQpStart, const SGE: usize>(
        mut self,
        qp: Qp<'a, Rc, R, S, C, St, SGE>,
        param: &ConnParam<'_>,
        timeout: Duration,
    ) -> Result<Connection<'a, Tcp, R, S, C, SGE>> {
        let qp = self.accept_qp(qp, param, uses_srq::<R>())?;
        let ev = self.id.expect_event(Verb::Accept, timeout)?;
        self.established(qp, ev)
    }

    /// The end of an RC accept, once its event `ev` came: `RDMA_CM_EVENT_ESTABLISHED`, the
    /// connection; any other event, its error.
    pub(super) fn established<'a, R: RecvSide, S: Threading, C, const SGE: usize>(
        self,
        qp: Qp<'a, Rc, R, S, C, Rts, SGE>,
        ev: Copied,
    ) -> Result<Connection<'a, Tcp, R, S, C, SGE>> {
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED {
            return Err(event_error(Verb::Accept, ev));
        }
        Ok(self.into_connection(qp))
    }
}

impl ConnectRequest<Udp> {
    /// `rdma_accept` of a UD service lookup (SIDR) with `qp` (RESET or INIT): the crate moves
    /// the QP to INIT (Q_Key from the CM), RTR and RTS and answers with its QP number and
    /// Q_Key. No event follows on this side: the connection is returned at once.
    ///
    /// # Errors
    /// As the RC [`accept`](ConnectRequest::<Tcp>::accept), with 136 bytes of private data at
    /// most; no event is waited for.
    ///
    /// ```
    /// # fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Udp>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = req.accept(Qp::<Ud>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default())?;
    /// # Ok(()) }
    /// ```
    pub fn accept<'a, R: RecvSide, S: Threading, C, St: CmQpStart, const SGE: usize>(
        mut self,
        qp: Qp<'a, Ud, R, S, C, St, SGE>,
        param: &ConnParam<'_>,
    ) -> Result<Connection<'a, Udp, R, S, C, SGE>> {
        // The SIDR reply carries the id's Q_Key (the kernel's `cma_set_qkey`: RDMA_UDP_QKEY in
        // RDMA_PS_UDP), which `rdma_init_qp_attr` gave the QP in INIT: `struct
        // rdma_conn_param` has no Q_Key field.
        let qp = self.accept_qp(qp, param, false)?;
        Ok(self.into_connection(qp))
    }
}

impl<P: PortSpace> ConnectRequest<P> {
    /// An accept's steps up to and with `rdma_accept`, the same for RC (before its wait for
    /// ESTABLISHED, blocking or awaited) and UD: the checks before any call, the QP to INIT,
    /// RTR and RTS with the request's attributes, `rdma_accept`. After the call the request's
    /// id is no longer rejected when dropped.
    pub(super) fn accept_qp<'a, R: RecvSide, S: Threading, C, St: CmQpStart, const SGE: usize>(
        &mut self,
        qp: CmQp<'a, P, R, S, C, St, SGE>,
        param: &ConnParam<'_>,
        srq: bool,
    ) -> Result<CmQp<'a, P, R, S, C, Rts, SGE>> {
        let mut c = param.c_param(Verb::Accept, P::MAX_ACCEPT_DATA, qp.qp_num(), srq)?;
        check_device(&self.id, Verb::Accept, qp.as_raw())?;
        param.set_ack_timeout::<P>(&self.id, Verb::Accept)?;
        let qp = qp_to_init::<P, R, S, C, St, SGE>(&self.id, qp)?;
        let qp = qp_up::<P, R, S, C, SGE>(&self.id, qp, param.min_rnr_timer)?;
        // SAFETY: a live id from a connect request; `c` and its private data valid for the
        // call (copied).
        unsafe { self.id.chan.cm.accept(self.id.as_ptr(), &mut c) }
            .map_err(|e| Error::os(Verb::Accept, e))?;
        self.id.reject_on_drop = false;
        Ok(qp)
    }

    /// The connection of an accepted request: its QP, its id, and the peer's private data
    /// and parameters from the request.
    fn into_connection<'a, R: RecvSide, S: Threading, C, const SGE: usize>(
        self,
        qp: CmQp<'a, P, R, S, C, Rts, SGE>,
    ) -> Connection<'a, P, R, S, C, SGE> {
        Connection {
            qp,
            id: self.id,
            private_data: self.private_data,
            param: self.param,
            ud_peer: None,
            _m: PhantomData,
        }
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// Moves `qp` RESET → INIT with the id's attributes (`rdma_init_qp_attr`), so that
    /// receives can be posted before [`connect`](Self::connect).
    ///
    /// # Errors
    /// [`ErrorKind::NotOnCmDevice`] when the QP is on another device than the id's; the errno
    /// of `rdma_init_qp_attr`; a range or device error of the transition. The QP is destroyed.
    ///
    /// ```
    /// # fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::RouteResolved>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let qp = id.init_qp(Qp::<Rc>::builder(pd, cq, cq).build()?)?; // in INIT: post receives now
    /// # Ok(()) }
    /// ```
    pub fn init_qp<'a, R: RecvSide, Th: Threading, C, const SGE: usize>(
        &self,
        qp: CmQp<'a, P, R, Th, C, Reset, SGE>,
    ) -> Result<CmQp<'a, P, R, Th, C, Init, SGE>>
    where
        S: CanConnect,
    {
        check_device(&self.id, Verb::InitQpAttr, qp.as_raw())?;
        qp_to_init::<P, R, Th, C, Reset, SGE>(&self.id, qp)
    }
}

impl<S: IdState> CmId<Tcp, S> {
    /// `rdma_connect` with `qp` (RESET, or INIT after [`init_qp`](Self::init_qp)): "For an
    /// rdma_cm_id of type RDMA_PS_TCP, this call initiates a connection request to a remote
    /// destination." (rdma_connect(3)). The crate moves the QP to INIT, connects, waits (up to
    /// `timeout`) for `RDMA_CM_EVENT_CONNECT_RESPONSE`, moves the QP to RTR and RTS with
    /// `rdma_init_qp_attr`'s attributes and calls `rdma_establish` ("this function should be
    /// called by the active side to complete the connection, after getting connect response
    /// event", rdma_establish(3)).
    ///
    /// # Errors
    /// Before any call: [`ErrorKind::OutOfRange`] for private data over 56 bytes, a retry
    /// count over 7 or a timer over 31 ([`ConnParam`]); [`ErrorKind::NotOnCmDevice`]. Then [`ErrorKind::Rejected`] with the reject
    /// reason and the peer's private data (`RDMA_CM_EVENT_REJECTED`: status 28 for a consumer
    /// reject, 8 when nobody listens on the port); [`ErrorKind::CmEvent`] for
    /// `RDMA_CM_EVENT_UNREACHABLE` or `RDMA_CM_EVENT_CONNECT_ERROR`; [`ErrorKind::CmTimedOut`];
    /// the errnos of the calls. The verb is [`Verb::Connect`] (or the transition's). The QP
    /// and the id are destroyed.
    ///
    /// ```
    /// # fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::RouteResolved>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = id.connect(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default(), std::time::Duration::from_secs(5))?;
    /// # Ok(()) }
    /// ```
    pub fn connect<'a, R: RecvSide, Th: Threading, C, St: CmQpStart, const SGE: usize>(
        self,
        qp: Qp<'a, Rc, R, Th, C, St, SGE>,
        param: &ConnParam<'_>,
        timeout: Duration,
    ) -> Result<Connection<'a, Tcp, R, Th, C, SGE>>
    where
        S: CanConnect,
    {
        let qp = self.connect_qp(qp, param)?;
        let ev = self.id.expect_event(Verb::Connect, timeout)?;
        self.connected(qp, ev, param.min_rnr_timer)
    }

    /// An RC connect's steps up to and with `rdma_connect`, before its wait for the connect
    /// response (blocking or awaited): the checks before any call, the QP to INIT,
    /// `rdma_connect`.
    pub(super) fn connect_qp<'a, R: RecvSide, Th: Threading, C, St: CmQpStart, const SGE: usize>(
        &self,
        qp: Qp<'a, Rc, R, Th, C, St, SGE>,
        param: &ConnParam<'_>,
    ) -> Result<Qp<'a, Rc, R, Th, C, Init, SGE>>
    where
        S: CanConnect,
    {
        let mut c = param.c_param(
            Verb::Connect,
            Tcp::MAX_CONNECT_DATA,
            qp.qp_num(),
            uses_srq::<R>(),
        )?;
        check_device(&self.id, Verb::Connect, qp.as_raw())?;
        param.set_ack_timeout::<Tcp>(&self.id, Verb::Connect)?;
        let qp = qp_to_init::<Tcp, R, Th, C, St, SGE>(&self.id, qp)?;
        // SAFETY: a live id with its route resolved; `c` and its private data valid for the
        // call (copied).
        unsafe { self.id.chan.cm.connect(self.as_raw(), &mut c) }
            .map_err(|e| Error::os(Verb::Connect, e))?;
        Ok(qp)
    }

    /// The end of an RC connect, once its event `ev` came: on
    /// `RDMA_CM_EVENT_CONNECT_RESPONSE`, the QP to RTR (with `min_rnr_timer`) and RTS with the
    /// id's attributes and `rdma_establish`; any other event, its error.
    pub(super) fn connected<'a, R: RecvSide, Th: Threading, C, const SGE: usize>(
        self,
        qp: Qp<'a, Rc, R, Th, C, Init, SGE>,
        ev: Copied,
        min_rnr_timer: u8,
    ) -> Result<Connection<'a, Tcp, R, Th, C, SGE>> {
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_RESPONSE {
            return Err(event_error(Verb::Connect, ev));
        }
        qp_reinit(&self.id, &qp)?;
        let qp = qp_up::<Tcp, R, Th, C, SGE>(&self.id, qp, min_rnr_timer)?;
        // SAFETY: a live id after its connect response, without a librdmacm QP.
        unsafe { self.id.chan.cm.establish(self.as_raw()) }
            .map_err(|e| Error::os(Verb::Establish, e))?;
        Ok(Connection {
            qp,
            id: self.id,
            private_data: ev.private_data,
            param: ev.conn,
            ud_peer: None,
            _m: PhantomData,
        })
    }
}

impl<S: IdState> CmId<Udp, S> {
    /// `rdma_connect` of a UD id: "For an rdma_cm_id of type RDMA_PS_UDP, it initiates a
    /// lookup of the remote QP providing the datagram service." (rdma_connect(3)). The crate
    /// moves `qp` (RESET or INIT) to INIT, RTR and RTS with the id's attributes (the Q_Key is
    /// the CM's), sends the lookup and waits (up to `timeout`) for
    /// `RDMA_CM_EVENT_ESTABLISHED`, whose `param.ud` is the peer ([`Connection::ud_peer`]).
    ///
    /// # Errors
    /// Before any call: [`ErrorKind::OutOfRange`] for private data over 180 bytes;
    /// [`ErrorKind::NotOnCmDevice`]. Then [`ErrorKind::Rejected`] or [`ErrorKind::CmEvent`]
    /// (`RDMA_CM_EVENT_UNREACHABLE`) when the peer refused or did not answer;
    /// [`ErrorKind::CmTimedOut`]; the errnos of the calls. The QP and the id are destroyed.
    ///
    /// ```
    /// # fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Udp, typed_verbs::cm::RouteResolved>, pd: &typed_verbs::Pd, cq: &typed_verbs::Cq) -> typed_verbs::Result<()> {
    /// # use typed_verbs::prelude::*;
    /// let conn = id.connect(Qp::<Ud>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default(), std::time::Duration::from_secs(5))?;
    /// let peer = conn.ud_peer().expect("the active side learns its peer");
    /// # Ok(()) }
    /// ```
    pub fn connect<'a, R: RecvSide, Th: Threading, C, St: CmQpStart, const SGE: usize>(
        self,
        qp: Qp<'a, Ud, R, Th, C, St, SGE>,
        param: &ConnParam<'_>,
        timeout: Duration,
    ) -> Result<Connection<'a, Udp, R, Th, C, SGE>>
    where
        S: CanConnect,
    {
        let mut c = param.c_param(Verb::Connect, Udp::MAX_CONNECT_DATA, qp.qp_num(), false)?;
        check_device(&self.id, Verb::Connect, qp.as_raw())?;
        let qp = qp_to_init::<Udp, R, Th, C, St, SGE>(&self.id, qp)?;
        let qp = qp_up::<Udp, R, Th, C, SGE>(&self.id, qp, param.min_rnr_timer)?;
        // SAFETY: a live id with its route resolved; `c` valid for the call.
        unsafe { self.id.chan.cm.connect(self.as_raw(), &mut c) }
            .map_err(|e| Error::os(Verb::Connect, e))?;
        let ev = self.id.expect_event(Verb::Connect, timeout)?;
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED || ev.ud.is_none() {
            return Err(event_error(Verb::Connect, ev));
        }
        Ok(Connection {
            qp,
            id: self.id,
            ud_peer: ev.ud,
            private_data: ev.private_data,
            param: ev.conn,
            _m: PhantomData,
        })
    }
}

/// An event of a connection after it is up (what the peer or the device did), read with
/// [`Connection::next_event`].
///
/// ```
/// use typed_verbs::cm::ConnEvent;
/// let e = ConnEvent::Disconnected;
/// assert_ne!(e, ConnEvent::TimewaitExit);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConnEvent {
    /// `RDMA_CM_EVENT_DISCONNECTED`: this side or the peer disconnected (or the peer's id was
    /// destroyed).
    Disconnected,
    /// `RDMA_CM_EVENT_TIMEWAIT_EXIT`: the QP may be reused.
    TimewaitExit,
    /// `RDMA_CM_EVENT_DEVICE_REMOVAL`.
    DeviceRemoval,
    /// `RDMA_CM_EVENT_ADDR_CHANGE`.
    AddrChange,
    /// Another event type (as C wrote it) and its status.
    Other {
        /// The event.
        event: CmEventKind,
        /// Its status.
        status: i32,
    },
}

pub(super) fn conn_event(ev: &Copied) -> Option<ConnEvent> {
    use sys::rdma_cm_event_type::*;
    Some(match ev.kind {
        RDMA_CM_EVENT_DISCONNECTED => ConnEvent::Disconnected,
        RDMA_CM_EVENT_TIMEWAIT_EXIT => ConnEvent::TimewaitExit,
        RDMA_CM_EVENT_DEVICE_REMOVAL => ConnEvent::DeviceRemoval,
        RDMA_CM_EVENT_ADDR_CHANGE => ConnEvent::AddrChange,
        // The active side may see ESTABLISHED after its `rdma_establish`: nothing to report.
        RDMA_CM_EVENT_ESTABLISHED => return None,
        k => ConnEvent::Other {
            event: CmEventKind::from_raw(k),
            status: ev.status,
        },
    })
}

impl<P: PortSpace> CmId<P, Connected> {
    /// The next event of the connection, waiting up to `timeout`; `None` when none came.
    ///
    /// # Errors
    /// The errno of `rdma_get_cm_event` ([`Verb::GetCmEvent`]).
    ///
    /// ```
    /// # fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::Connected>) -> typed_verbs::Result<()> {
    /// if id.next_event(std::time::Duration::from_secs(1))? == Some(typed_verbs::cm::ConnEvent::Disconnected) {}
    /// # Ok(()) }
    /// ```
    pub fn next_event(&self, timeout: Duration) -> Result<Option<ConnEvent>> {
        next_conn_event(&self.id, timeout)
    }

    /// `rdma_disconnect` (see [`Connection::disconnect`]).
    ///
    /// # Errors
    /// The errno of `rdma_disconnect` ([`Verb::Disconnect`]).
    ///
    /// ```
    /// # fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::Connected>) -> typed_verbs::Result<()> {
    /// id.disconnect()?;
    /// # Ok(()) }
    /// ```
    pub fn disconnect(&self) -> Result<()> {
        // SAFETY: a live id; without a librdmacm QP no QP is touched.
        unsafe { self.id.chan.cm.disconnect(self.as_raw()) }
            .map_err(|e| Error::os(Verb::Disconnect, e))
    }
}

fn next_conn_event(id: &OwnedId, timeout: Duration) -> Result<Option<ConnEvent>> {
    let deadline = deadline_after(timeout);
    loop {
        let left = deadline.map(|t| t.saturating_duration_since(Instant::now()));
        match id.next(left)? {
            None => return Ok(None),
            Some(ev) => {
                if let Some(e) = conn_event(&ev) {
                    return Ok(Some(e));
                }
            }
        }
    }
}

/// A connection: the connected id and its QP in RTS, made by [`CmId::connect`] or
/// [`ConnectRequest::accept`]. `P` is the port space ([`Tcp`]: an [`Rc`] QP; [`Udp`]: a [`Ud`]
/// QP and, on the active side, the peer's address); the other parameters are the QP's.
/// Dropped, it destroys the QP, then the id (the peer sees `RDMA_CM_EVENT_DISCONNECTED`).
/// A connection of a `Qp<'static, ..>` (built on `Arc`'d parents) is `'static`, and `Send` when
/// its QP is.
///
/// ```
/// use std::sync::Arc;
/// use typed_verbs::{cm::{Connection, Tcp}, Qp, Rc};
/// struct Server { conns: Vec<Connection<'static, Tcp>> } // kept in a struct, sent to tasks
/// fn is_send<T: Send + 'static>() {}
/// is_send::<Connection<'static, Tcp>>();
/// ```
pub struct Connection<
    'a,
    P: PortSpace,
    R: RecvSide = crate::qp::OwnRq,
    S: Threading = crate::cq::Shared,
    C = (),
    const SGE: usize = 1,
> {
    // Dropped first: the QP before the id.
    pub(super) qp: CmQp<'a, P, R, S, C, Rts, SGE>,
    pub(super) id: OwnedId,
    pub(super) private_data: Vec<u8>,
    pub(super) param: PeerParam,
    pub(super) ud_peer: Option<UdPeer>,
    pub(super) _m: PhantomData<fn() -> P>,
}

impl<P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize> std::fmt::Debug
    for Connection<'_, P, R, S, C, SGE>
{
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("port_space", &P::NAME)
            .field("qp_num", &self.qp.qp_num())
            .field("peer", &self.id.addr(false))
            .field("ud_peer", &self.ud_peer)
            .finish()
    }
}

impl<'a, P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize>
    Connection<'a, P, R, S, C, SGE>
{
    /// The QP, in RTS: post sends and receives through it.
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// println!("QP {:#x}", conn.qp().qp_num());
    /// # }
    /// ```
    pub fn qp(&self) -> &CmQp<'a, P, R, S, C, Rts, SGE> {
        &self.qp
    }

    /// The private data the peer sent with its accept (active side) or its connect request
    /// (passive side), as long as the event reported it (RC pads it).
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// let data = conn.private_data();
    /// # }
    /// ```
    pub fn private_data(&self) -> &[u8] {
        &self.private_data
    }

    /// The peer's connection parameters (RC).
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// println!("peer QP {:#x}", conn.peer_param().qp_num);
    /// # }
    /// ```
    pub fn peer_param(&self) -> PeerParam {
        self.param
    }

    /// The UD peer (active side of a [`Udp`] connection): its address vector, QP number and
    /// Q_Key. `None` for RC and on the passive side (which learns its peers from their
    /// datagrams).
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// assert!(conn.ud_peer().is_none());
    /// # }
    /// ```
    pub fn ud_peer(&self) -> Option<UdPeer> {
        self.ud_peer
    }

    /// The local address.
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// println!("{:?} -> {:?}", conn.local_addr(), conn.peer_addr());
    /// # }
    /// ```
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id.addr(true)
    }

    /// The peer's address.
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) {
    /// println!("{:?}", conn.peer_addr());
    /// # }
    /// ```
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.id.addr(false)
    }

    /// The next event of the connection (the peer's disconnect is
    /// [`ConnEvent::Disconnected`]), waiting up to `timeout`; `None` when none came.
    ///
    /// # Errors
    /// The errno of `rdma_get_cm_event` ([`Verb::GetCmEvent`]).
    ///
    /// ```
    /// # fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) -> typed_verbs::Result<()> {
    /// if conn.next_event(std::time::Duration::ZERO)? == Some(typed_verbs::cm::ConnEvent::Disconnected) {
    ///     // the peer is gone
    /// }
    /// # Ok(()) }
    /// ```
    pub fn next_event(&self, timeout: Duration) -> Result<Option<ConnEvent>> {
        next_conn_event(&self.id, timeout)
    }

    /// `rdma_disconnect`, then the QP to ERR: "Disconnects a connection and transitions any
    /// associated QP to the error state, which will flush any posted work requests to the
    /// completion queue" (rdma_disconnect(3)): the CM does not own the QP, so the crate moves
    /// it. "After successfully disconnecting, an RDMA_CM_EVENT_DISCONNECTED event will be
    /// generated on both sides of the connection": wait for it with the returned id's
    /// [`next_event`](CmId::next_event).
    ///
    /// # Errors
    /// The errno of `rdma_disconnect` ([`Verb::Disconnect`]) or of the move to ERR. The QP and
    /// the id are destroyed.
    ///
    /// ```
    /// # fn f(conn: typed_verbs::cm::Connection<'static, typed_verbs::cm::Tcp>) -> typed_verbs::Result<()> {
    /// let (qp, id) = conn.disconnect()?; // the QP in ERR: its posted WRs flush
    /// # Ok(()) }
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn disconnect(self) -> Result<(CmQp<'a, P, R, S, C, ErrorState, SGE>, CmId<P, Connected>)> {
        let (qp, id) = self.into_parts();
        id.disconnect()?;
        Ok((qp.to_error()?, id))
    }

    /// The QP and the connected id, apart (the id's drop then destroys it; drop the QP first
    /// or not, as the program needs).
    ///
    /// ```
    /// # fn f(conn: typed_verbs::cm::Connection<'static, typed_verbs::cm::Tcp>) {
    /// let (qp, id) = conn.into_parts();
    /// # }
    /// ```
    #[allow(clippy::type_complexity)]
    pub fn into_parts(self) -> (CmQp<'a, P, R, S, C, Rts, SGE>, CmId<P, Connected>) {
        let Connection { qp, id, .. } = self;
        (
            qp,
            CmId {
                id,
                _m: PhantomData,
            },
        )
    }
}
