//! Typed connection management (librdmacm, rdma_cm(7)): a CM id's states are types, events
//! are read, copied and acked by the crate, and a connection's QP is the crate's own.
//!
//! - An [`EventChannel`] (`rdma_create_event_channel`) carries the events of every id made on
//!   it. It is cheap to clone, `Send + Sync` and `'static`; every id keeps it alive.
//! - A [`CmId<P, S>`](CmId) is an `rdma_cm_id` of port space `P` ([`Tcp`]: RC, [`Udp`]: UD) in
//!   state `S`: [`Idle`] → ([`Bound`] →) [`AddrResolved`] → [`RouteResolved`] → a
//!   [`Connection`] on the active side; [`Bound`] → [`Listening`] → a [`ConnectRequest`] →
//!   accepted (a [`Connection`]) or rejected on the passive side. A verb called in the wrong
//!   state does not compile.
//! - The QP of a connection is built by the program with [`Qp::builder`](crate::qp::Qp::builder)
//!   on its own context and moved RESET → INIT → RTR → RTS by the crate's typed transitions,
//!   fed with `rdma_init_qp_attr`'s attributes (their range checks apply). The CM never owns
//!   or touches it (`id->qp` stays NULL).
//! - Events: each raw event is copied (its type read as an integer, its status, private data,
//!   parameters) and acked at once, before any user code runs, so every event is acked exactly
//!   once and no `rdma_destroy_id` waits for an ack. A connect request's new id becomes an owned
//!   handle at once (only for that event type). Copied events are routed to their id through
//!   the channel (a token in `id->context`), so threads waiting for different ids on one
//!   channel each get their own; an id's unread events go with it when it is destroyed, and a
//!   connect request nobody will read is rejected and its id destroyed.
//! - Blocking verbs wait for their event with a timeout; with the `tokio` feature each has an
//!   `_async` twin awaiting the channel's fd. A dropped (cancelled) future drops what it owns;
//!   a forgotten value only leaks.
//!
//! An RC connection on the software device, both sides in one program:
//!
//! ```
//! use std::time::Duration;
//! use typed_verbs::prelude::*;
//! use typed_verbs::cm::{CmId, ConnParam, EventChannel, Tcp};
//!
//! let t = Duration::from_secs(5);
//! let ctx = Context::open("sw0")?;
//! let pd = Pd::new(&ctx)?;
//! let cq = Cq::builder(&ctx).cqe(16).build()?;
//! let ch = EventChannel::new(&ctx)?;
//! let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(8)?;
//! let addr = listener.local_addr().expect("bound");
//! let server = std::thread::scope(|s| {
//!     let server = s.spawn(|| -> typed_verbs::Result<_> {
//!         let req = listener.get_request(t)?;
//!         assert_eq!(&req.private_data()[..2], b"hi"); // RC pads private data to 56 bytes
//!         let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//!         req.accept(qp, &ConnParam { private_data: b"welcome", ..ConnParam::default() }, t)
//!     });
//!     let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, addr, t)?.resolve_route(t)?;
//!     let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
//!     let client = id.connect(qp, &ConnParam { private_data: b"hi", ..ConnParam::default() }, t)?;
//!     assert_eq!(&client.private_data()[..7], b"welcome"); // RC pads private data
//!     let server = server.join().unwrap()?;
//!     Ok::<_, typed_verbs::Error>((client, server))
//! })?;
//! # drop(server);
//! # Ok::<(), typed_verbs::Error>(())
//! ```

use crate::backend::{cm_of, CmPath};
use crate::cq::Threading;
use crate::device::Context;
pub use crate::error::CmEventKind;
use crate::error::{Error, ErrorKind, Result, Verb};
use crate::ffi::sync::{Condvar, Mutex};
use crate::ffi::sys;
use crate::qp::state::{
    AccessFlags, AddressVector, ConnectedInit, ConnectedInitModify, ErrorState, GlobalRoute, Init,
    Mtu, QpState, RcRtr, RcRts, Reset, Rts, SqPsn, Transitions, UdInit,
};
use crate::qp::Gid;
use crate::qp::Rc;
use crate::qp::Ud;
use crate::qp::{Qp, QpType, RecvSide, UsesSrq};
use std::collections::{HashMap, VecDeque};
use std::marker::PhantomData;
use std::mem::ManuallyDrop;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV4, SocketAddrV6};
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::ffi::qp_attr_mask as qam;
use crate::sealed::SealedCm;

// ---------------------------------------------------------------------------------------------
// Port spaces and states.

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

fn av_of(a: &sys::ibv_ah_attr) -> AddressVector {
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

// ---------------------------------------------------------------------------------------------
// The channel and its demultiplexer.

/// One event as the crate copied it from an `rdma_cm_event` (acked right after the copy).
struct Copied {
    /// `enum rdma_cm_event_type`, read as an integer.
    kind: u32,
    status: i32,
    private_data: Vec<u8>,
    conn: PeerParam,
    ud: Option<UdPeer>,
    /// The new id of a `RDMA_CM_EVENT_CONNECT_REQUEST` (for that event type only).
    child: Option<OwnedId>,
}

/// What the demultiplexer hands back to run after its lock is released: events nobody will
/// read (a connect request's id among them destroys itself on drop) and the wakers of the tasks
/// an event was routed to. No user code (a waker, a drop) runs under the lock.
#[derive(Default)]
struct AfterUnlock {
    events: Vec<Copied>,
    #[cfg(feature = "tokio")]
    wakers: Vec<std::task::Waker>,
}

impl AfterUnlock {
    /// Runs it (the lock is released).
    fn run(&mut self) {
        self.events.clear();
        #[cfg(feature = "tokio")]
        wake_all(self.wakers.drain(..));
    }
}

/// Wakes every waker, even after one panicked (a waker is user code): each task whose event was
/// routed is woken. The first panic is raised again once all are woken (unless the thread is
/// already unwinding, where a second panic would abort).
#[cfg(feature = "tokio")]
fn wake_all(wakers: impl IntoIterator<Item = std::task::Waker>) {
    let mut first = None;
    for w in wakers {
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| w.wake()));
        if let Err(p) = r {
            first.get_or_insert(p);
        }
    }
    if let Some(p) = first {
        if !std::thread::panicking() {
            std::panic::resume_unwind(p);
        }
    }
}

impl Drop for AfterUnlock {
    fn drop(&mut self) {
        self.run();
    }
}

/// One id's events, in order, and the tasks waiting for them (several may wait on one id
/// through `&self`, as tasks sharing a listener do: each keeps its own waker).
#[derive(Default)]
struct Queue {
    events: VecDeque<Copied>,
    #[cfg(feature = "tokio")]
    wakers: Vec<std::task::Waker>,
}

#[derive(Default)]
struct Demux {
    /// The queues of the live ids, by token.
    queues: HashMap<usize, Queue>,
    /// A thread is polling the fd for the blocking waiters.
    leader: bool,
}

struct ChanInner {
    raw: NonNull<sys::rdma_event_channel>,
    cm: &'static dyn CmPath,
    demux: Mutex<Demux>,
    cond: Condvar,
    next_token: AtomicUsize,
}

// SAFETY: the channel pointer is used for `rdma_get_cm_event` under the demultiplexer's lock
// only and for the destroy in Drop (no other reference left); librdmacm's channel has no
// thread affinity. The backend is `Sync`.
unsafe impl Send for ChanInner {}
// SAFETY: as above: shared access reads events under the lock.
unsafe impl Sync for ChanInner {}

impl Drop for ChanInner {
    fn drop(&mut self) {
        // Queued events of ids that are gone (none: each id removes its queue, and holds the
        // channel), dropped before the channel.
        let queues = std::mem::take(&mut self.demux.lock().queues);
        drop(queues);
        // SAFETY: the last reference: every id of the channel held one and is destroyed, and
        // every event read was acked when it was read (rdma_destroy_event_channel(3): "All
        // rdma_cm_id's associated with the event channel must be destroyed, and all returned
        // events must be acked before calling this function").
        unsafe { self.cm.destroy_event_channel(self.raw.as_ptr()) }
    }
}

/// What a wait ended with.
enum Waited {
    Event(Copied),
    TimedOut,
}

impl ChanInner {
    fn fd(&self) -> i32 {
        // SAFETY: a live channel; `fd` is fixed at creation.
        unsafe { (*self.raw.as_ptr()).fd }
    }

    fn register(&self) -> usize {
        // Tokens start at 1: a NULL `context` is never one.
        let token = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
        self.demux.lock().queues.insert(token, Queue::default());
        token
    }

    /// Removes `token`'s queue; its events (and a connect request's id in them) are dropped
    /// by the caller after the lock is released.
    fn unregister(&self, token: usize) -> Option<Queue> {
        self.demux.lock().queues.remove(&token)
    }

    /// Reads every event waiting on the fd (O_NONBLOCK), copies and acks each, and routes it.
    /// Returns whether any was routed, and what must be dropped outside the lock.
    fn drain(self: &Arc<Self>, demux: &mut Demux, later: &mut AfterUnlock) -> Result<bool> {
        let mut routed = false;
        loop {
            // SAFETY: a live channel of this backend; the lock serializes readers.
            let ev = match unsafe { self.cm.get_cm_event(self.raw.as_ptr()) } {
                Ok(ev) => ev,
                Err(e) if e == libc::EAGAIN || e == libc::EWOULDBLOCK => return Ok(routed),
                Err(libc::EINTR) => continue,
                Err(e) => return Err(Error::os(Verb::GetCmEvent, e)),
            };
            // SAFETY: an event just returned and not acked: it and the ids it names are live.
            let (token, copied) = unsafe { self.copy_event(ev.as_ptr(), demux) };
            // SAFETY: acked once, here, right after the copy; nothing of it is kept (the
            // private data was copied). rdma_ack_cm_event(3): "there should be a one-to-one
            // correspondence between successful gets and acks".
            let acked = unsafe { self.cm.ack_cm_event(ev.as_ptr()) };
            if let Err(e) = acked {
                later.events.push(copied);
                return Err(Error::os(Verb::AckCmEvent, e));
            }
            match demux.queues.get_mut(&token) {
                Some(q) => {
                    q.events.push_back(copied);
                    #[cfg(feature = "tokio")]
                    later.wakers.append(&mut q.wakers);
                    routed = true;
                }
                // An id destroyed meanwhile: dropped (a request's new id rejected and
                // destroyed) once the lock is released.
                None => later.events.push(copied),
            }
        }
    }

    /// Copies the event at `ev`. For a connect request, the new id gets a token (its own
    /// queue) and becomes an owned handle.
    ///
    /// # Safety
    /// `ev` is an event of this channel, not acked.
    unsafe fn copy_event(
        self: &Arc<Self>,
        ev: *const sys::rdma_cm_event,
        demux: &mut Demux,
    ) -> (usize, Copied) {
        // SAFETY: caller's contract: the event, its id (and listen_id) live until the ack.
        unsafe {
            // `enum rdma_cm_event_type` as C wrote it: rdma-sys binds it as an integer.
            let kind: u32 = (*ev).event;
            let status = (*ev).status;
            let id = (*ev).id;
            let ps: u32 = if id.is_null() { 0 } else { (*id).ps };
            let is_ud = ps == sys::rdma_port_space::RDMA_PS_UDP
                || ps == sys::rdma_port_space::RDMA_PS_IPOIB;
            let (data, len) = if is_ud {
                let ud = &(*ev).param.ud;
                (ud.private_data, ud.private_data_len)
            } else {
                let c = &(*ev).param.conn;
                (c.private_data, c.private_data_len)
            };
            let private_data = if data.is_null() || len == 0 {
                Vec::new()
            } else {
                std::slice::from_raw_parts(data.cast::<u8>(), len.into()).to_vec()
            };
            let conn = if is_ud {
                PeerParam::default()
            } else {
                let c = &(*ev).param.conn;
                PeerParam {
                    responder_resources: c.responder_resources,
                    initiator_depth: c.initiator_depth,
                    flow_control: c.flow_control,
                    retry_count: c.retry_count,
                    rnr_retry_count: c.rnr_retry_count,
                    srq: c.srq != 0,
                    qp_num: c.qp_num,
                }
            };
            let ud =
                (is_ud && kind == sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED).then(|| {
                    let u = &(*ev).param.ud;
                    UdPeer {
                        av: av_of(&u.ah_attr),
                        qp_num: u.qp_num,
                        qkey: u.qkey,
                    }
                });
            let (token, child) = if kind == sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_REQUEST {
                // rdma_get_cm_event(3): "If the event type is RDMA_CM_EVENT_CONNECT_REQUEST,
                // then this references a new id for that communication", and `listen_id`
                // "references the corresponding listening request identifier". The new id
                // inherited the listener's context: it gets its own token before anything
                // else reads it.
                let listen = (*ev).listen_id;
                let token = if listen.is_null() {
                    0
                } else {
                    (*listen).context as usize
                };
                let child = NonNull::new(id).map(|raw| {
                    let t = self.next_token.fetch_add(1, Ordering::Relaxed) + 1;
                    (*raw.as_ptr()).context = t as *mut c_void;
                    demux.queues.insert(t, Queue::default());
                    OwnedId {
                        raw,
                        chan: Arc::clone(self),
                        token: t,
                        reject_on_drop: true,
                    }
                });
                (token, child)
            } else {
                // Any other event's id is an existing id, never a new one.
                let token = if id.is_null() {
                    0
                } else {
                    (*id).context as usize
                };
                (token, None)
            };
            (
                token,
                Copied {
                    kind,
                    status,
                    private_data,
                    conn,
                    ud,
                    child,
                },
            )
        }
    }

    /// Waits for the next event of `token` until `deadline` (`None`: for ever). Threads waiting
    /// for different ids share the fd: one polls it and routes what it reads; the others wait
    /// on the condition variable.
    fn wait(self: &Arc<Self>, token: usize, deadline: Option<Instant>) -> Result<Waited> {
        let mut later = AfterUnlock::default();
        let r = self.wait_inner(token, deadline, &mut later);
        drop(later);
        r
    }

    fn wait_inner(
        self: &Arc<Self>,
        token: usize,
        deadline: Option<Instant>,
        later: &mut AfterUnlock,
    ) -> Result<Waited> {
        /// Gives the poller's role back (and wakes a waiter to take it), whatever happens.
        struct Leading<'a>(&'a ChanInner);
        impl Drop for Leading<'_> {
            fn drop(&mut self) {
                self.0.demux.lock().leader = false;
                self.0.cond.notify_all();
            }
        }
        loop {
            let mut d = self.demux.lock();
            if let Some(ev) = d.queues.get_mut(&token).and_then(|q| q.events.pop_front()) {
                return Ok(Waited::Event(ev));
            }
            if d.leader {
                let now = Instant::now();
                if deadline.is_some_and(|t| now >= t) {
                    return Ok(Waited::TimedOut);
                }
                // Bounded so that an event routed by an async reader is seen too.
                let slice = now + Duration::from_millis(50);
                let until = deadline.map_or(slice, |t| t.min(slice));
                self.cond.wait_until(&mut d, until);
                continue;
            }
            d.leader = true;
            drop(d);
            // Declared after the lock's guard is gone: its drop takes the lock.
            let _leading = Leading(self);
            return self.lead(token, deadline, later);
        }
    }

    /// The poller's loop: read and route what the fd has, and wait on the fd, until `token`
    /// has an event or `deadline` passes.
    fn lead(
        self: &Arc<Self>,
        token: usize,
        deadline: Option<Instant>,
        later: &mut AfterUnlock,
    ) -> Result<Waited> {
        loop {
            {
                let mut d = self.demux.lock();
                let routed = self.drain(&mut d, later)?;
                if routed {
                    self.cond.notify_all();
                }
                if let Some(ev) = d.queues.get_mut(&token).and_then(|q| q.events.pop_front()) {
                    return Ok(Waited::Event(ev));
                }
            }
            // Outside the lock: a request's id destroys itself through it; wakers are user code.
            later.run();
            let now = Instant::now();
            if deadline.is_some_and(|t| now >= t) {
                return Ok(Waited::TimedOut);
            }
            let slice = Duration::from_millis(50);
            let wait = deadline.map_or(slice, |t| (t - now).min(slice));
            let mut pfd = libc::pollfd {
                fd: self.fd(),
                events: libc::POLLIN,
                revents: 0,
            };
            let ms = wait.as_millis().clamp(1, 50) as i32;
            // SAFETY: one valid pollfd; the fd is the channel's, open while `self` lives.
            let r = unsafe { libc::poll(&mut pfd, 1, ms) };
            if r < 0 {
                let e = std::io::Error::last_os_error()
                    .raw_os_error()
                    .unwrap_or(libc::EIO);
                if e != libc::EINTR {
                    return Err(Error::os(Verb::GetCmEvent, e));
                }
            }
        }
    }
}

/// An event channel (`rdma_create_event_channel`): the events of every [`CmId`] made on it
/// arrive here and are routed to their id. Cheap to clone (a reference count); `Send + Sync`
/// and `'static`, so servers keep it in a struct or a task. Destroyed after its last clone and
/// its last id.
///
/// rdma_create_event_channel(3): "Asynchronous events are reported to users through event
/// channels."
///
/// ```
/// use typed_verbs::{cm::EventChannel, Context};
/// let ctx = Context::open("sw0")?;
/// let ch = EventChannel::new(&ctx)?;
/// let shared = ch.clone();
/// std::thread::spawn(move || drop(shared)).join().unwrap();
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Clone)]
pub struct EventChannel {
    inner: Arc<ChanInner>,
}

static_assertions::assert_impl_all!(EventChannel: Send, Sync);

impl std::fmt::Debug for EventChannel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventChannel")
            .field("fd", &self.inner.fd())
            .finish()
    }
}

impl EventChannel {
    /// `rdma_create_event_channel` on the connection manager of `ctx`'s device: librdmacm for
    /// a real device, the in-process one for the software device. The channel's fd is made
    /// O_NONBLOCK (the crate waits with poll(2)). The channel does not borrow `ctx`: librdmacm's
    /// channel is independent of any context; the software device's counts as a live object of
    /// `ctx`, so closing `ctx` before the channel and its ids are gone fails with `EBUSY`
    /// ([`Context::try_close`]), and a `Context` dropped then stays open (a leak, never a
    /// dangling channel). Keep the context (an `Arc<Context>`) as long as the channel.
    ///
    /// # Errors
    /// `EOPNOTSUPP` where the device has no connection manager; otherwise the errno of
    /// `rdma_create_event_channel` (`ENODEV` without the kernel's `rdma_ucm`) or of making the
    /// fd non-blocking. The verb is [`Verb::CreateEventChannel`].
    ///
    /// ```
    /// # use typed_verbs::{cm::EventChannel, Context};
    /// let ctx = Context::open("sw0")?;
    /// let ch = EventChannel::new(&ctx)?;
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn new(ctx: &Context) -> Result<EventChannel> {
        let verb = Verb::CreateEventChannel;
        // SAFETY: a live context of this crate.
        let cm = unsafe { cm_of(ctx.as_raw()) }.ok_or(Error::os(verb, libc::EOPNOTSUPP))?;
        // SAFETY: a live context, of the backend `cm` was chosen for.
        let raw =
            unsafe { cm.create_event_channel(ctx.as_raw()) }.map_err(|e| Error::os(verb, e))?;
        let inner = Arc::new(ChanInner {
            raw,
            cm,
            demux: Mutex::new(Demux::default()),
            cond: Condvar::new(),
            next_token: AtomicUsize::new(0),
        });
        let fd = inner.fd();
        // SAFETY: fcntl on the channel's open fd (dropping `inner` on error destroys it).
        let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
        // SAFETY: as above.
        if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
            return Err(Error::last_os(verb));
        }
        Ok(EventChannel { inner })
    }

    /// The channel's file descriptor (O_NONBLOCK; readable while an event waits). Owned by the
    /// channel: register it with a poller, never close it.
    ///
    /// ```
    /// # use typed_verbs::{cm::EventChannel, Context};
    /// # let ctx = Context::open("sw0")?;
    /// let ch = EventChannel::new(&ctx)?;
    /// assert!(ch.fd() >= 0);
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn fd(&self) -> i32 {
        self.inner.fd()
    }
}

// ---------------------------------------------------------------------------------------------
// Ids.

/// An owned `rdma_cm_id` of a channel, with its token (its `context`).
struct OwnedId {
    raw: NonNull<sys::rdma_cm_id>,
    chan: Arc<ChanInner>,
    token: usize,
    /// A connect request's id not answered yet: rejected before its destroy.
    reject_on_drop: bool,
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

    fn as_ptr(&self) -> *mut sys::rdma_cm_id {
        self.raw.as_ptr()
    }

    /// The next event of this id, until `timeout` has passed.
    fn next(&self, timeout: Option<Duration>) -> Result<Option<Copied>> {
        let deadline = timeout.and_then(deadline_after);
        Ok(match self.chan.wait(self.token, deadline)? {
            Waited::Event(e) => Some(e),
            Waited::TimedOut => None,
        })
    }

    /// The next event, or a timeout error naming `verb`.
    fn expect_event(&self, verb: Verb, timeout: Duration) -> Result<Copied> {
        self.next(Some(timeout))?.ok_or(Error {
            verb,
            kind: ErrorKind::CmTimedOut(timeout),
        })
    }

    fn init_qp_attr(&self, state: sys::ibv_qp_state::Type) -> Result<(sys::ibv_qp_attr, i32)> {
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

    fn addr(&self, src: bool) -> Option<SocketAddr> {
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
    id: OwnedId,
    _m: PhantomData<fn() -> (P, S)>,
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
    fn retype<S2: IdState>(self) -> CmId<P, S2> {
        CmId {
            id: self.id,
            _m: PhantomData,
        }
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
fn deadline_after(timeout: Duration) -> Option<Instant> {
    Instant::now().checked_add(timeout)
}

fn wait_ms(timeout: Duration) -> i32 {
    timeout.as_millis().clamp(1, i32::MAX as u128) as i32
}

/// How long the crate waits for an event beyond the CM's own timeout: the CM's error event
/// (with its status) is the answer when the CM gives one.
const SLACK: Duration = Duration::from_secs(2);

/// An error event (or one another verb did not expect) as the error of `verb`.
fn event_error(verb: Verb, ev: Copied) -> Error {
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
    fn start_resolve_addr(
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
        let ev = self
            .id
            .expect_event(Verb::ResolveAddr, timeout.saturating_add(SLACK))?;
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED {
            return Err(event_error(Verb::ResolveAddr, ev));
        }
        Ok(self.retype())
    }
}

impl<P: PortSpace, S: IdState> CmId<P, S> {
    fn start_resolve_route(&self, timeout: Duration) -> Result<()>
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
        let ev = self
            .id
            .expect_event(Verb::ResolveRoute, timeout.saturating_add(SLACK))?;
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED {
            return Err(event_error(Verb::ResolveRoute, ev));
        }
        Ok(self.retype())
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
    fn request_of(ev: Copied) -> Result<ConnectRequest<P>>
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

// ---------------------------------------------------------------------------------------------
// Connection parameters, requests and connections.

/// What a connect or accept asks for (`struct rdma_conn_param`, the fields the program
/// chooses; the QP number is the crate's). [`Default`]: no private data, one RDMA read in
/// flight each way, seven retries.
///
/// ```
/// use typed_verbs::cm::ConnParam;
/// let p = ConnParam { private_data: b"hello", ..ConnParam::default() };
/// assert_eq!((p.responder_resources, p.initiator_depth, p.retry_count, p.rnr_retry_count), (1, 1, 7, 7));
/// ```
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
    /// Retries after a transport error (0..=7, RC only; a connect's).
    pub retry_count: u8,
    /// Retries after a receiver-not-ready NAK (0..=7, 7 is infinite; RC only).
    pub rnr_retry_count: u8,
}

impl Default for ConnParam<'_> {
    fn default() -> Self {
        ConnParam {
            private_data: &[],
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 7,
            rnr_retry_count: 7,
        }
    }
}

impl ConnParam<'_> {
    /// The C struct, after the checks: private data at most `max`, counts three bits.
    fn c_param(
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
        for (what, v) in [
            ("retry_count", self.retry_count),
            ("rnr_retry_count", self.rnr_retry_count),
        ] {
            if v > 7 {
                return Err(Error::range(verb, what, v.into(), 0, 7));
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
    id: OwnedId,
    private_data: Vec<u8>,
    param: PeerParam,
    _m: PhantomData<fn() -> P>,
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
fn check_device(id: &OwnedId, verb: Verb, qp: *mut sys::ibv_qp) -> Result<()> {
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
fn qp_to_init<'a, P: PortSpace, R: RecvSide, S: Threading, C, St: CmQpStart, const SGE: usize>(
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
fn qp_reinit<R: RecvSide, S: Threading, C, const SGE: usize>(
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

/// INIT → RTR → RTS with the id's attributes.
fn qp_up<'a, P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize>(
    id: &OwnedId,
    qp: CmQp<'a, P, R, S, C, Init, SGE>,
) -> Result<CmQp<'a, P, R, S, C, Rts, SGE>> {
    let (a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_RTR)?;
    let rtr = <P::Transport as CmTransport>::rtr_attr(&a, mask)?;
    let qp = qp.to_rtr(rtr)?;
    let (a, mask) = id.init_qp_attr(sys::ibv_qp_state::IBV_QPS_RTS)?;
    let rts = <P::Transport as CmTransport>::rts_attr(&a, mask)?;
    qp.to_rts(rts)
}

fn uses_srq<R: RecvSide>() -> bool {
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
    /// Before any call: [`ErrorKind::OutOfRange`] for private data over 196 bytes or a retry
    /// count over 7, [`ErrorKind::NotOnCmDevice`] when the QP is on another device than the
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
        let c = param.c_param(
            Verb::Accept,
            Tcp::MAX_ACCEPT_DATA,
            qp.qp_num(),
            uses_srq::<R>(),
        )?;
        check_device(&self.id, Verb::Accept, qp.as_raw())?;
        let qp = qp_to_init::<Tcp, R, S, C, St, SGE>(&self.id, qp)?;
        let qp = qp_up::<Tcp, R, S, C, SGE>(&self.id, qp)?;
        let mut c = c;
        // SAFETY: a live id from a connect request; `c` and its private data valid for the
        // call (copied).
        unsafe { self.id.chan.cm.accept(self.id.as_ptr(), &mut c) }
            .map_err(|e| Error::os(Verb::Accept, e))?;
        self.id.reject_on_drop = false;
        let ev = self.id.expect_event(Verb::Accept, timeout)?;
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED {
            return Err(event_error(Verb::Accept, ev));
        }
        Ok(Connection {
            qp,
            id: self.id,
            private_data: self.private_data,
            param: self.param,
            ud_peer: None,
            _m: PhantomData,
        })
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
        let mut c = param.c_param(Verb::Accept, Udp::MAX_ACCEPT_DATA, qp.qp_num(), false)?;
        check_device(&self.id, Verb::Accept, qp.as_raw())?;
        let qp = qp_to_init::<Udp, R, S, C, St, SGE>(&self.id, qp)?;
        let qp = qp_up::<Udp, R, S, C, SGE>(&self.id, qp)?;
        // The SIDR reply carries the id's Q_Key (the kernel's `cma_set_qkey`: RDMA_UDP_QKEY in
        // RDMA_PS_UDP), which `rdma_init_qp_attr` gave the QP in INIT: `struct
        // rdma_conn_param` has no Q_Key field.
        // SAFETY: a live id from a connect request; `c` valid for the call.
        unsafe { self.id.chan.cm.accept(self.id.as_ptr(), &mut c) }
            .map_err(|e| Error::os(Verb::Accept, e))?;
        self.id.reject_on_drop = false;
        Ok(Connection {
            qp,
            id: self.id,
            private_data: self.private_data,
            param: self.param,
            ud_peer: None,
            _m: PhantomData,
        })
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
    /// Before any call: [`ErrorKind::OutOfRange`] for private data over 56 bytes or a retry
    /// count over 7; [`ErrorKind::NotOnCmDevice`]. Then [`ErrorKind::Rejected`] with the reject
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
        let mut c = param.c_param(
            Verb::Connect,
            Tcp::MAX_CONNECT_DATA,
            qp.qp_num(),
            uses_srq::<R>(),
        )?;
        check_device(&self.id, Verb::Connect, qp.as_raw())?;
        let qp = qp_to_init::<Tcp, R, Th, C, St, SGE>(&self.id, qp)?;
        // SAFETY: a live id with its route resolved; `c` and its private data valid for the
        // call (copied).
        unsafe { self.id.chan.cm.connect(self.as_raw(), &mut c) }
            .map_err(|e| Error::os(Verb::Connect, e))?;
        let ev = self.id.expect_event(Verb::Connect, timeout)?;
        if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_RESPONSE {
            return Err(event_error(Verb::Connect, ev));
        }
        qp_reinit(&self.id, &qp)?;
        let qp = qp_up::<Tcp, R, Th, C, SGE>(&self.id, qp)?;
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
        let qp = qp_up::<Udp, R, Th, C, SGE>(&self.id, qp)?;
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

fn conn_event(ev: &Copied) -> Option<ConnEvent> {
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
    qp: CmQp<'a, P, R, S, C, Rts, SGE>,
    id: OwnedId,
    private_data: Vec<u8>,
    param: PeerParam,
    ud_peer: Option<UdPeer>,
    _m: PhantomData<fn() -> P>,
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

// ---------------------------------------------------------------------------------------------
// tokio.

#[cfg(feature = "tokio")]
mod tokio_cm {
    use super::*;
    use std::os::fd::{FromRawFd, OwnedFd};
    use std::task::{Context as TaskCx, Poll};
    use tokio::io::unix::AsyncFd;

    impl ChanInner {
        /// The channel's fd for one wait, registered with the reactor of the runtime the wait
        /// runs in: a duplicate of it (the same open file), owned by the wait. Each wait has its
        /// own registration, so its task is woken by the fd whichever runtime it runs in and
        /// however many tasks wait (tokio wakes one reader's waker per registration).
        fn wait_fd(&self) -> Result<AsyncFd<OwnedFd>> {
            let verb = Verb::GetCmEvent;
            if tokio::runtime::Handle::try_current().is_err() {
                return Err(Error::os(verb, libc::ENXIO));
            }
            // SAFETY: F_DUPFD_CLOEXEC on the channel's fd, open while `self` lives.
            let fd = unsafe { libc::fcntl(self.fd(), libc::F_DUPFD_CLOEXEC, 0) };
            if fd < 0 {
                return Err(Error::last_os(verb));
            }
            // SAFETY: `fd` was just made by the dup and is owned by nothing else.
            let fd = unsafe { OwnedFd::from_raw_fd(fd) };
            // SAFETY: the AsyncFd owns the fd, which it deregisters before it closes it.
            unsafe { AsyncFd::register_with_interest(fd, tokio::io::Interest::READABLE) }.map_err(
                |e| {
                    let e = std::io::Error::from(e);
                    Error::os(verb, e.raw_os_error().unwrap_or(libc::EIO))
                },
            )
        }

        /// One poll of the wait for `token`'s next event.
        fn poll_event(
            self: &Arc<Self>,
            token: usize,
            afd: &AsyncFd<OwnedFd>,
            cx: &mut TaskCx<'_>,
            later: &mut AfterUnlock,
        ) -> Poll<Result<Copied>> {
            loop {
                // Cloned and (the one it replaces) dropped outside the lock: a waker's clone
                // and drop are user code.
                let waker = cx.waker().clone();
                let mut d = self.demux.lock();
                let routed = match self.drain(&mut d, later) {
                    Ok(r) => r,
                    Err(e) => return Poll::Ready(Err(e)),
                };
                if routed {
                    self.cond.notify_all();
                }
                let Some(q) = d.queues.get_mut(&token) else {
                    return Poll::Ready(Err(Error::os(Verb::GetCmEvent, libc::EBADF)));
                };
                if let Some(ev) = q.events.pop_front() {
                    return Poll::Ready(Ok(ev));
                }
                // `will_wake` compares pointers only (no user code under the lock).
                let old = match q.wakers.iter_mut().find(|w| w.will_wake(&waker)) {
                    Some(same) => Some(std::mem::replace(same, waker)),
                    None => {
                        q.wakers.push(waker);
                        None
                    }
                };
                drop(d);
                drop(old);
                match afd.poll_read_ready(cx) {
                    Poll::Pending => return Poll::Pending,
                    Poll::Ready(Err(e)) => {
                        return Poll::Ready(Err(Error::os(
                            Verb::GetCmEvent,
                            e.raw_os_error().unwrap_or(libc::EIO),
                        )))
                    }
                    Poll::Ready(Ok(mut guard)) => {
                        // Drained again at the top; readiness is renewed by the next poll.
                        guard.clear_ready();
                    }
                }
            }
        }

        /// Takes every waiting task's waker (`token`'s own among them, which cannot be told
        /// apart from another task's waiting on the same id) and wakes them, each then
        /// registering its waker again: no waker of a finished wait stays queued. A spurious
        /// wake of this task is harmless.
        fn forget_waker(&self, _token: usize) {
            let wakers: Vec<_> = {
                let mut d = self.demux.lock();
                d.queues
                    .values_mut()
                    .flat_map(|q| std::mem::take(&mut q.wakers))
                    .collect()
            };
            // Outside the lock: wakers are user code.
            wake_all(wakers);
        }
    }

    impl OwnedId {
        /// The next event of this id, awaited.
        pub(super) async fn next_async(&self) -> Result<Copied> {
            /// Removes the waker when the wait ends or is cancelled.
            struct Forget<'a>(&'a OwnedId);
            impl Drop for Forget<'_> {
                fn drop(&mut self) {
                    self.0.chan.forget_waker(self.0.token);
                }
            }
            let _forget = Forget(self);
            let afd = self.chan.wait_fd()?;
            let mut later = AfterUnlock::default();
            let r = std::future::poll_fn(|cx| {
                let r = self.chan.poll_event(self.token, &afd, cx, &mut later);
                later.run();
                r
            })
            .await;
            r
        }
    }

    impl<P: PortSpace, S: IdState> CmId<P, S> {
        /// [`resolve_addr`](Self::resolve_addr), awaited (feature `tokio`). The CM's `timeout`
        /// bounds it (its `RDMA_CM_EVENT_ADDR_ERROR` answers); a dropped future destroys the id.
        ///
        /// # Errors
        /// As [`resolve_addr`](Self::resolve_addr); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # use std::time::Duration;
        /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
        /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// rt.block_on(async {
        ///     let ctx = Context::open("sw0")?;
        ///     let ch = EventChannel::new(&ctx)?;
        ///     let id = CmId::<Tcp>::new(&ch)?.resolve_addr_async(None, "127.0.0.1:7471".parse().unwrap(), Duration::from_secs(2)).await?;
        ///     Ok::<(), typed_verbs::Error>(())
        /// })?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub async fn resolve_addr_async(
            self,
            src: Option<SocketAddr>,
            dst: SocketAddr,
            timeout: Duration,
        ) -> Result<CmId<P, AddrResolved>>
        where
            S: CanResolveAddr,
        {
            self.start_resolve_addr(src, dst, timeout)?;
            let ev = self.id.next_async().await?;
            if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED {
                return Err(event_error(Verb::ResolveAddr, ev));
            }
            Ok(self.retype())
        }
    }

    impl<P: PortSpace, S: IdState> CmId<P, S> {
        /// [`resolve_route`](Self::resolve_route), awaited (feature `tokio`).
        ///
        /// # Errors
        /// As [`resolve_route`](Self::resolve_route); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # use std::time::Duration;
        /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
        /// let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// rt.block_on(async {
        ///     let ctx = Context::open("sw0")?;
        ///     let ch = EventChannel::new(&ctx)?;
        ///     let t = Duration::from_secs(2);
        ///     let id = CmId::<Tcp>::new(&ch)?.resolve_addr_async(None, "127.0.0.1:7471".parse().unwrap(), t).await?;
        ///     let id = id.resolve_route_async(t).await?;
        ///     Ok::<(), typed_verbs::Error>(())
        /// })?;
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub async fn resolve_route_async(self, timeout: Duration) -> Result<CmId<P, RouteResolved>>
        where
            S: CanResolveRoute,
        {
            self.start_resolve_route(timeout)?;
            let ev = self.id.next_async().await?;
            if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED {
                return Err(event_error(Verb::ResolveRoute, ev));
            }
            Ok(self.retype())
        }
    }

    impl<P: PortSpace, S: IdState> CmId<P, S> {
        /// [`get_request`](Self::get_request), awaited without a timeout (feature `tokio`;
        /// wrap it in `tokio::time::timeout` for one). A dropped future loses nothing: a
        /// request not yet returned stays queued for the next call.
        ///
        /// # Errors
        /// As [`get_request`](Self::get_request); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # use typed_verbs::{cm::{CmId, EventChannel, Tcp}, Context};
        /// # let rt = tokio::runtime::Builder::new_current_thread().enable_io().build().unwrap();
        /// # let ctx = Context::open("sw0")?;
        /// # let ch = EventChannel::new(&ctx)?;
        /// let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(4)?;
        /// # let _g = rt.enter();
        /// let fut = listener.get_request_async();
        /// drop(fut); // cancelled: nothing lost
        /// # Ok::<(), typed_verbs::Error>(())
        /// ```
        pub async fn get_request_async(&self) -> Result<ConnectRequest<P>>
        where
            S: IsListening,
        {
            Self::request_of(self.id.next_async().await?)
        }
    }

    impl ConnectRequest<Tcp> {
        /// [`accept`](Self::accept), awaiting `RDMA_CM_EVENT_ESTABLISHED` (feature `tokio`;
        /// bound it with `tokio::time::timeout`). A dropped future destroys the QP and the
        /// request's id.
        ///
        /// # Errors
        /// As [`accept`](Self::accept); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # async fn f(req: typed_verbs::cm::ConnectRequest<typed_verbs::cm::Tcp>, pd: &typed_verbs::Pd<'_>, cq: &typed_verbs::Cq<'_>) -> typed_verbs::Result<()> {
        /// # use typed_verbs::prelude::*;
        /// let conn = req.accept_async(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default()).await?;
        /// # Ok(()) }
        /// ```
        pub async fn accept_async<
            'a,
            R: RecvSide,
            S: Threading,
            C,
            St: CmQpStart,
            const SGE: usize,
        >(
            mut self,
            qp: Qp<'a, Rc, R, S, C, St, SGE>,
            param: &ConnParam<'_>,
        ) -> Result<Connection<'a, Tcp, R, S, C, SGE>> {
            // The C parameters (raw pointers) do not live across the await: the future is
            // `Send` when the QP is.
            let qp = {
                let mut c = param.c_param(
                    Verb::Accept,
                    Tcp::MAX_ACCEPT_DATA,
                    qp.qp_num(),
                    uses_srq::<R>(),
                )?;
                check_device(&self.id, Verb::Accept, qp.as_raw())?;
                let qp = qp_to_init::<Tcp, R, S, C, St, SGE>(&self.id, qp)?;
                let qp = qp_up::<Tcp, R, S, C, SGE>(&self.id, qp)?;
                // SAFETY: a live id from a connect request; `c` valid for the call.
                unsafe { self.id.chan.cm.accept(self.id.as_ptr(), &mut c) }
                    .map_err(|e| Error::os(Verb::Accept, e))?;
                qp
            };
            self.id.reject_on_drop = false;
            let ev = self.id.next_async().await?;
            if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_ESTABLISHED {
                return Err(event_error(Verb::Accept, ev));
            }
            Ok(Connection {
                qp,
                id: self.id,
                private_data: self.private_data,
                param: self.param,
                ud_peer: None,
                _m: PhantomData,
            })
        }
    }

    impl<S: IdState> CmId<Tcp, S> {
        /// [`connect`](Self::connect), awaiting the peer's answer (feature `tokio`; bound it
        /// with `tokio::time::timeout`). A dropped future destroys the QP and the id.
        ///
        /// # Errors
        /// As [`connect`](Self::connect); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # async fn f(id: typed_verbs::cm::CmId<typed_verbs::cm::Tcp, typed_verbs::cm::RouteResolved>, pd: &typed_verbs::Pd<'_>, cq: &typed_verbs::Cq<'_>) -> typed_verbs::Result<()> {
        /// # use typed_verbs::prelude::*;
        /// let conn = id.connect_async(Qp::<Rc>::builder(pd, cq, cq).build()?, &typed_verbs::cm::ConnParam::default()).await?;
        /// # Ok(()) }
        /// ```
        pub async fn connect_async<
            'a,
            R: RecvSide,
            Th: Threading,
            C,
            St: CmQpStart,
            const SGE: usize,
        >(
            self,
            qp: Qp<'a, Rc, R, Th, C, St, SGE>,
            param: &ConnParam<'_>,
        ) -> Result<Connection<'a, Tcp, R, Th, C, SGE>>
        where
            S: CanConnect,
        {
            // As accept_async: no raw pointer across the await.
            let qp = {
                let mut c = param.c_param(
                    Verb::Connect,
                    Tcp::MAX_CONNECT_DATA,
                    qp.qp_num(),
                    uses_srq::<R>(),
                )?;
                check_device(&self.id, Verb::Connect, qp.as_raw())?;
                let qp = qp_to_init::<Tcp, R, Th, C, St, SGE>(&self.id, qp)?;
                // SAFETY: a live id with its route resolved; `c` valid for the call.
                unsafe { self.id.chan.cm.connect(self.as_raw(), &mut c) }
                    .map_err(|e| Error::os(Verb::Connect, e))?;
                qp
            };
            let ev = self.id.next_async().await?;
            if ev.kind != sys::rdma_cm_event_type::RDMA_CM_EVENT_CONNECT_RESPONSE {
                return Err(event_error(Verb::Connect, ev));
            }
            qp_reinit(&self.id, &qp)?;
            let qp = qp_up::<Tcp, R, Th, C, SGE>(&self.id, qp)?;
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

    impl<'a, P: PortSpace, R: RecvSide, S: Threading, C, const SGE: usize>
        Connection<'a, P, R, S, C, SGE>
    {
        /// [`next_event`](Self::next_event), awaited without a timeout (feature `tokio`).
        ///
        /// # Errors
        /// As [`next_event`](Self::next_event); `ENXIO` outside a tokio runtime.
        ///
        /// ```
        /// # async fn f(conn: &typed_verbs::cm::Connection<'_, typed_verbs::cm::Tcp>) -> typed_verbs::Result<()> {
        /// let ev = conn.next_event_async().await?; // e.g. the peer's disconnect
        /// # Ok(()) }
        /// ```
        pub async fn next_event_async(&self) -> Result<ConnEvent> {
            loop {
                let ev = self.id.next_async().await?;
                if let Some(e) = conn_event(&ev) {
                    return Ok(e);
                }
            }
        }
    }
}
