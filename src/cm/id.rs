//! Ids: create, resolve, listen, and the verbs of each state.

use super::*;

/// An owned `rdma_cm_id` of a channel, with its token (its `context`).
pub(super) struct OwnedId {
    pub(super) raw: NonNull<sys::rdma_cm_id>,
    pub(super) chan: Arc<ChanInner>,
    pub(super) token: usize,
    /// A connect request's id not answered yet: rejected before its destroy.
    pub(super) reject_on_drop: bool,
}

// SAFETY: librdmacm's calls on an id are thread-safe (each is a write to the kernel under the
// id's own lock); the typed layer reads `id->route`'s addresses only, fixed once bound, and
// writes `context` only before the id is handed out.
unsafe impl Send for OwnedId {}
// SAFETY: as above.
unsafe impl Sync for OwnedId {}

impl Drop for OwnedId {
    fn drop(&mut self) {
        let id = self.raw.as_ptr();
        if self.reject_on_drop {
            // SAFETY: a live id from a connect request, not answered.
            let _ = unsafe { self.chan.cm.reject(id, std::ptr::null(), 0) };
        }
        // SAFETY: a live id, destroyed once (here; `raw` is never copied out). Every event it
        // was reported was acked when read, so this does not wait for an ack
        // (rdma_get_cm_event(3): "Destruction of an rdma_cm_id will block until related
        // events have been acknowledged"). No QP of librdmacm's is on it.
        let _ = unsafe { self.chan.cm.destroy_id(id) };
        // Its unread events (a connect request's new id among them) go outside the lock.
        drop(self.chan.unregister(self.token));
    }
}

impl OwnedId {
    fn new<P: PortSpace>(ch: &EventChannel) -> Result<OwnedId> {
        let chan = Arc::clone(&ch.inner);
        let token = chan.register();
        // SAFETY: a live channel of this backend; the token is stored in `context`.
        match unsafe {
            chan.cm
                .create_id(chan.raw.as_ptr(), token as *mut c_void, P::RAW)
        } {
            Ok(raw) => Ok(OwnedId {
                raw,
                chan,
                token,
                reject_on_drop: false,
            }),
            Err(e) => {
                drop(chan.unregister(token));
                Err(Error::os(Verb::CreateId, e))
            }
        }
    }

    pub(super) fn as_ptr(&self) -> *mut sys::rdma_cm_id {
        self.raw.as_ptr()
    }

    /// The next event of this id, until `timeout` has passed.
    pub(super) fn next(&self, timeout: Option<Duration>) -> Result<Option<Copied>> {
        let deadline = timeout.and_then(deadline_after);
        Ok(match self.chan.wait(self.token, deadline)? {
            Waited::Event(e) => Some(e),
            Waited::TimedOut => None,
        })
    }

    /// The next event, or a timeout error naming `verb`.
    pub(super) fn expect_event(&self, verb: Verb, timeout: Duration) -> Result<Copied> {
        self.next(Some(timeout))?.ok_or(Error {
            verb,
            kind: ErrorKind::CmTimedOut(timeout),
        })
    }

    pub(super) fn init_qp_attr(
        &self,
        state: sys::ibv_qp_state::Type,
    ) -> Result<(sys::ibv_qp_attr, i32)> {
        // SAFETY: plain C data.
        let mut attr: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        attr.qp_state = state;
        let mut mask = 0;
        // SAFETY: a live id; attr and mask valid for reads and writes.
        unsafe {
            self.chan
                .cm
                .init_qp_attr(self.as_ptr(), &mut attr, &mut mask)
        }
        .map_err(|e| Error::os(Verb::InitQpAttr, e))?;
        Ok((attr, mask))
    }

    pub(super) fn addr(&self, src: bool) -> Option<SocketAddr> {
        // SAFETY: a live id; the route's addresses are plain sockaddr storage the backend
        // filled (zero while unset), read as the family says.
        unsafe {
            let a = &(*self.as_ptr()).route.addr;
            let ss: *const libc::sockaddr_storage = if src {
                std::ptr::addr_of!(a.src_addr_union.src_storage)
            } else {
                std::ptr::addr_of!(a.dst_addr_union.dst_storage)
            };
            sockaddr_to(ss)
        }
    }
}

/// # Safety
/// `ss` points to a readable `sockaddr_storage`.
unsafe fn sockaddr_to(ss: *const libc::sockaddr_storage) -> Option<SocketAddr> {
    // SAFETY: caller's contract; the family says which struct is in the storage.
    unsafe {
        match i32::from((*ss).ss_family) {
            libc::AF_INET => {
                let sin = &*ss.cast::<libc::sockaddr_in>();
                Some(SocketAddr::V4(SocketAddrV4::new(
                    Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)),
                    u16::from_be(sin.sin_port),
                )))
            }
            libc::AF_INET6 => {
                let sin6 = &*ss.cast::<libc::sockaddr_in6>();
                Some(SocketAddr::V6(SocketAddrV6::new(
                    Ipv6Addr::from(sin6.sin6_addr.s6_addr),
                    u16::from_be(sin6.sin6_port),
                    sin6.sin6_flowinfo,
                    sin6.sin6_scope_id,
                )))
            }
            _ => None,
        }
    }
}

/// A socket address as C's `sockaddr_storage` (a `sockaddr_in` or `sockaddr_in6`).
fn sockaddr_of(a: SocketAddr) -> libc::sockaddr_storage {
    // SAFETY: plain C data.
    let mut ss: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    match a {
        SocketAddr::V4(v4) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: v4.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from(*v4.ip()).to_be(),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: a sockaddr_in fits in a sockaddr_storage, which is aligned for it.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(ss).cast(), sin) };
        }
        SocketAddr::V6(v6) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: v6.port().to_be(),
                sin6_flowinfo: v6.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: v6.ip().octets(),
                },
                sin6_scope_id: v6.scope_id(),
            };
            // SAFETY: as above, for a sockaddr_in6.
            unsafe { std::ptr::write(std::ptr::addr_of_mut!(ss).cast(), sin6) };
        }
    }
    ss
}

/// A CM id (`rdma_cm_id`) of port space `P` in state `S`: the CM's "socket". Made with
/// [`CmId::new`] on an [`EventChannel`]; each verb consumes it and returns it in the next
/// state. Dropping it destroys the id (`rdma_destroy_id`, which never waits: its events were
/// acked when read). `Send + Sync`, `'static`.
///
/// ```
/// use std::time::Duration;
/// use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
/// let ctx = Context::open("sw0")?;
/// let ch = EventChannel::new(&ctx)?;
/// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(16)?;
/// let addr = listener.local_addr().unwrap();
/// let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, addr, Duration::from_secs(2))?;
/// assert_eq!(id.peer_addr(), Some(addr));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// Connecting before the route is resolved does not compile:
///
/// ```compile_fail,E0277
/// # use std::time::Duration;
/// # use typed_verbs::{prelude::*, cm::{CmId, ConnParam, EventChannel, Tcp}};
/// # let ctx = Context::open("sw0")?; let pd = Pd::new(&ctx)?; let cq = Cq::builder(&ctx).cqe(8).build()?;
/// # let ch = EventChannel::new(&ctx)?; let t = Duration::from_secs(1);
/// let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, "127.0.0.1:7471".parse().unwrap(), t)?;
/// let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
/// id.connect(qp, &ConnParam::default(), t)?; // needs resolve_route first
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub struct CmId<P: PortSpace, S: IdState = Idle> {
    pub(super) id: OwnedId,
    pub(super) _m: PhantomData<fn() -> (P, S)>,
}

impl<P: PortSpace, S: IdState> std::fmt::Debug for CmId<P, S> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CmId")
            .field("port_space", &P::NAME)
            .field("state", &std::any::type_name::<S>())
            .field("local", &self.local_addr())
            .field("peer", &self.peer_addr())
            .finish()
    }
}

static_assertions::assert_impl_all!(CmId<Tcp, Listening>: Send, Sync);

impl<P: PortSpace> CmId<P, Idle> {
    /// `rdma_create_id` on `ch` in port space `P`. "Creates an identifier that is used to track
    /// communication information" (rdma_create_id(3)).
    ///
    /// # Errors
    /// The errno of `rdma_create_id` ([`Verb::CreateId`]).
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Udp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Udp>::new(&ch)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(ch: &EventChannel) -> Result<Self> {
        Ok(CmId {
            id: OwnedId::new::<P>(ch)?,
            _m: PhantomData,
        })
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    pub(super) fn retype<S2: IdState>(self) -> CmId<P, S2> {
        CmId {
            id: self.id,
            _m: PhantomData,
        }
    }

    /// Waits for the event of a resolution `verb` started with the CM's `timeout` (and the
    /// crate's slack), as [`resolved`](Self::resolved) takes it.
    fn wait_resolved<S2: IdState>(
        self,
        verb: Verb,
        kind: sys::rdma_cm_event_type::Type,
        timeout: Duration,
    ) -> Result<CmId<P, S2>> {
        let ev = self.id.expect_event(verb, timeout.saturating_add(SLACK))?;
        self.resolved(verb, kind, ev)
    }

    /// The end of a resolution `verb` once its event `ev` came: the id in its next state when
    /// `ev` is the `kind` that means success; any other event, its error.
    pub(super) fn resolved<S2: IdState>(
        self,
        verb: Verb,
        kind: sys::rdma_cm_event_type::Type,
        ev: Copied,
    ) -> Result<CmId<P, S2>> {
        if ev.kind != kind {
            return Err(event_error(verb, ev));
        }
        Ok(self.retype())
    }

    /// The local address (`id->route.addr.src_addr`), once bound or resolved.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?;
    /// assert_ne!(id.local_addr().unwrap().port(), 0); // an ephemeral port was chosen
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn local_addr(&self) -> Option<SocketAddr> {
        self.id
            .addr(true)
            .filter(|a| !(a.ip().is_unspecified() && a.port() == 0))
    }

    /// The destination address (`id->route.addr.dst_addr`), once resolved.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Tcp>::new(&ch)?;
    /// assert_eq!(id.peer_addr(), None);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn peer_addr(&self) -> Option<SocketAddr> {
        self.id
            .addr(false)
            .filter(|a| !(a.ip().is_unspecified() && a.port() == 0))
    }

    /// The `rdma_cm_id`, for reading. The id stays owned by `self`: never destroy it, and
    /// never call a verb that would make librdmacm own a QP or report an event the crate
    /// does not expect.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Tcp>::new(&ch)?;
    /// assert!(!id.as_raw().is_null());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn as_raw(&self) -> *mut sys::rdma_cm_id {
        self.id.as_ptr()
    }
}

/// The instant `timeout` from now; `None` (no deadline) where it is past what an `Instant`
/// holds, as for `Duration::MAX`.
pub(super) fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

fn wait_ms(timeout: Duration) -> i32 {
    timeout.as_millis().clamp(1, i32::MAX as u128) as i32
}

/// How long the crate waits for an event beyond the CM's own timeout: the CM's error event
/// (with its status) is the answer when the CM gives one.
const SLACK: Duration = Duration::from_secs(2);

/// The event that ends `rdma_resolve_addr` with success.
pub(super) const ADDR_RESOLVED: sys::rdma_cm_event_type::Type =
    sys::rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED;
/// The event that ends `rdma_resolve_route` with success.
pub(super) const ROUTE_RESOLVED: sys::rdma_cm_event_type::Type =
    sys::rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED;

/// An error event (or one another verb did not expect) as the error of `verb`.
pub(super) fn event_error(verb: Verb, ev: Copied) -> Error {
    if ev.kind == sys::rdma_cm_event_type::RDMA_CM_EVENT_REJECTED {
        return Error {
            verb,
            kind: ErrorKind::Rejected {
                status: ev.status,
                private_data: ev.private_data,
            },
        };
    }
    Error {
        verb,
        kind: ErrorKind::CmEvent {
            event: CmEventKind::from_raw(ev.kind),
            status: ev.status,
        },
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// `rdma_bind_addr`: "Associates a source address with an rdma_cm_id. The address may be
    /// wildcarded." (rdma_bind_addr(3)). Port 0 picks an available port ([`local_addr`]
    /// tells which).
    ///
    /// [`local_addr`]: CmId::local_addr
    ///
    /// # Errors
    /// The errno of `rdma_bind_addr` ([`Verb::BindAddr`]): `EADDRINUSE` for a port taken,
    /// `EADDRNOTAVAIL` for an address no RDMA device has. The id is destroyed.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Tcp>::new(&ch)?.bind("0.0.0.0:0".parse().unwrap())?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn bind(self, addr: SocketAddr) -> Result<CmId<P, Bound>>
    where
        S: CanBind,
    {
        let mut ss = sockaddr_of(addr);
        // SAFETY: a live id; a valid sockaddr_in/in6 in `ss`, copied by the call.
        unsafe {
            self.id
                .chan
                .cm
                .bind_addr(self.as_raw(), std::ptr::addr_of_mut!(ss).cast())
        }
        .map_err(|e| Error::os(Verb::BindAddr, e))?;
        Ok(self.retype())
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    pub(super) fn start_resolve_addr(
        &self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        t: Duration,
    ) -> Result<()>
    where
        S: CanResolveAddr,
    {
        let mut src = src.map(sockaddr_of);
        let mut dst = sockaddr_of(dst);
        let src_ptr = src.as_mut().map_or(std::ptr::null_mut(), |s| {
            (s as *mut libc::sockaddr_storage).cast()
        });
        // SAFETY: a live id; valid addresses (src may be NULL), copied by the call.
        unsafe {
            self.id.chan.cm.resolve_addr(
                self.as_raw(),
                src_ptr,
                std::ptr::addr_of_mut!(dst).cast(),
                wait_ms(t),
            )
        }
        .map_err(|e| Error::os(Verb::ResolveAddr, e))
    }

    /// `rdma_resolve_addr`, waiting for its event: "Resolve destination and optional source
    /// addresses from IP addresses to an RDMA address. If successful, the specified
    /// rdma_cm_id will be bound to a local device." (rdma_resolve_addr(3)). `timeout` is the
    /// CM's ("Time to wait for resolution to complete"); the crate waits a little longer for
    /// the CM's answer.
    ///
    /// # Errors
    /// The errno of `rdma_resolve_addr`; [`ErrorKind::CmEvent`] with
    /// `RDMA_CM_EVENT_ADDR_ERROR` and its status (a negative errno, such as `-EHOSTUNREACH` or
    /// `-ETIMEDOUT`); [`ErrorKind::CmTimedOut`] when no event came. The verb is
    /// [`Verb::ResolveAddr`]. The id is destroyed.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, "127.0.0.1:7471".parse().unwrap(), Duration::from_secs(2))?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn resolve_addr(
        self,
        src: Option<SocketAddr>,
        dst: SocketAddr,
        timeout: Duration,
    ) -> Result<CmId<P, AddrResolved>>
    where
        S: CanResolveAddr,
    {
        self.start_resolve_addr(src, dst, timeout)?;
        self.wait_resolved(Verb::ResolveAddr, ADDR_RESOLVED, timeout)
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    pub(super) fn start_resolve_route(&self, timeout: Duration) -> Result<()>
    where
        S: CanResolveRoute,
    {
        // SAFETY: a live id with its address resolved (its type says so).
        unsafe {
            self.id
                .chan
                .cm
                .resolve_route(self.as_raw(), wait_ms(timeout))
        }
        .map_err(|e| Error::os(Verb::ResolveRoute, e))
    }

    /// `rdma_resolve_route`, waiting for its event: "Resolves an RDMA route to the destination
    /// address in order to establish a connection. The destination address must have already
    /// been resolved by calling rdma_resolve_addr." (rdma_resolve_route(3)): the id's type
    /// says it was.
    ///
    /// # Errors
    /// The errno of `rdma_resolve_route`; [`ErrorKind::CmEvent`] with
    /// `RDMA_CM_EVENT_ROUTE_ERROR` and its status; [`ErrorKind::CmTimedOut`]. The verb is
    /// [`Verb::ResolveRoute`]. The id is destroyed.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?; let t = Duration::from_secs(2);
    /// let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, "127.0.0.1:7471".parse().unwrap(), t)?.resolve_route(t)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn resolve_route(self, timeout: Duration) -> Result<CmId<P, RouteResolved>>
    where
        S: CanResolveRoute,
    {
        self.start_resolve_route(timeout)?;
        self.wait_resolved(Verb::ResolveRoute, ROUTE_RESOLVED, timeout)
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// `rdma_listen`: "Initiates a listen for incoming connection requests or datagram service
    /// lookup. The listen will be restricted to the locally bound source address."
    /// (rdma_listen(3)). The id's type says it is bound.
    ///
    /// # Errors
    /// The errno of `rdma_listen` ([`Verb::Listen`]; `EADDRINUSE` when another id listens
    /// there). The id is destroyed.
    ///
    /// ```
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(16)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn listen(self, backlog: i32) -> Result<CmId<P, Listening>>
    where
        S: CanListen,
    {
        // SAFETY: a live, bound id.
        unsafe { self.id.chan.cm.listen(self.as_raw(), backlog) }
            .map_err(|e| Error::os(Verb::Listen, e))?;
        Ok(self.retype())
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    /// Not a verb of a CM id: it does not compile (no state implements
    /// [`AcceptedOnARequest`]), with a message that names [`ConnectRequest::accept`].
    #[doc(hidden)]
    pub fn accept<Q>(&self, _qp: Q, _param: &ConnParam<'_>, _timeout: Duration) -> Result<()>
    where
        S: AcceptedOnARequest,
    {
        unreachable!("no state implements AcceptedOnARequest")
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    pub(super) fn request_of(ev: Copied) -> Result<ConnectRequest<P>>
    where
        S: IsListening,
    {
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
            return Err(event_error(Verb::GetCmEvent, ev));
        }
        let Copied {
            child,
            private_data,
            conn,
            ..
        } = ev;
        let id = child.ok_or(Error::os(Verb::GetCmEvent, libc::EPROTO))?;
        Ok(ConnectRequest {
            id,
            private_data,
            param: conn,
            _m: PhantomData,
        })
    }

    /// The next connect request to this listener (`RDMA_CM_EVENT_CONNECT_REQUEST`), waiting up
    /// to `timeout`. rdma_accept(3): "after calling rdma_listen, the user waits for an
    /// RDMA_CM_EVENT_CONNECT_REQUEST event to occur. Connection request events give the user a
    /// newly created rdma_cm_id, similar to a new socket": the [`ConnectRequest`] owns it.
    ///
    /// # Errors
    /// [`ErrorKind::CmTimedOut`] when none came in time (verb [`Verb::GetCmEvent`]);
    /// [`ErrorKind::CmEvent`] for another event on the listener (`RDMA_CM_EVENT_DEVICE_REMOVAL`);
    /// the errno of `rdma_get_cm_event`.
    ///
    /// ```
    /// # use std::time::Duration;
    /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context, ErrorKind};
    /// # let ctx = Context::open("sw0")?; let ch = EventChannel::new(&ctx)?;
    /// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(16)?;
    /// let e = listener.get_request(Duration::from_millis(10)).unwrap_err(); // nobody connects
    /// assert!(matches!(e.kind, ErrorKind::CmTimedOut(_)));
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn get_request(&self, timeout: Duration) -> Result<ConnectRequest<P>>
    where
        S: IsListening,
    {
        Self::request_of(self.id.expect_event(Verb::GetCmEvent, timeout)?)
    }
}
