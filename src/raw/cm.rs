//! The connection manager (librdmacm's verbs, rdma_cm(7)).
//!
//! Dispatched by the event channel: a channel made for a software context is the software
//! device's connection manager's, and so are its ids and events; any other is librdmacm's. As
//! everywhere in the crate, ids never get a librdmacm QP (`id->qp` stays NULL): the program
//! builds its QP itself and moves it with `rdma_init_qp_attr`'s attributes, so an RC connect is
//! answered by RDMA_CM_EVENT_CONNECT_RESPONSE, to which the active side replies with
//! `rdma_establish`.
//!
//! The contract is the C verbs': pointers are live objects of the same connection manager,
//! events are acked once, ids are destroyed once (their reported events acked, or the destroy
//! waits), and a channel is destroyed after its ids.

use super::*;

/// `rdma_create_event_channel`, for the device of `ctx`: the software device's connection
/// manager for a software context, librdmacm's otherwise. The channel's fd (`ch->fd`) is
/// readable while an event waits; it blocks `rdma_get_cm_event` unless set O_NONBLOCK.
///
/// # Errors
/// `ENODEV` where the kernel has no rdma_ucm (librdmacm), `EMFILE`/`ENFILE` when no fd is
/// left, `ENOMEM`.
///
/// A whole exchange on the software device, a connect to a port nobody listens on:
///
/// ```
/// use std::ptr;
/// use typed_verbs::{ffi::sys, raw, Context};
/// use sys::rdma_cm_event_type::*;
/// let ctx = Context::open("sw0")?;
/// // SAFETY: live objects, each event acked once, the id destroyed before its channel.
/// unsafe {
///     let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
///     let id = raw::rdma_create_id(ch, ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///         .expect("id").as_ptr();
///     let mut dst: libc::sockaddr_in = std::mem::zeroed();
///     dst.sin_family = libc::AF_INET as libc::sa_family_t;
///     dst.sin_port = 7174u16.to_be();
///     dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
///     raw::rdma_resolve_addr(id, ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 2000)
///         .expect("resolve_addr");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_ADDR_RESOLVED);
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     raw::rdma_resolve_route(id, 2000).expect("resolve_route");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_ROUTE_RESOLVED);
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     let mut param: sys::rdma_conn_param = std::mem::zeroed();
///     param.qp_num = 1;
///     raw::rdma_connect(id, &mut param).expect("connect");
///     let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
///     assert_eq!((*ev).event, RDMA_CM_EVENT_REJECTED);
///     assert_eq!((*ev).status, 8); // IB_CM_REJ_INVALID_SERVICE_ID
///     raw::rdma_ack_cm_event(ev).expect("ack");
///     raw::rdma_destroy_id(id).expect("destroy_id");
///     raw::rdma_destroy_event_channel(ch);
/// }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_create_event_channel(
    ctx: *mut sys::ibv_context,
) -> Result<NonNull<sys::rdma_event_channel>, Errno> {
    // SAFETY: the caller's contract (a live context of this crate).
    let cm = unsafe { backend::cm_of(ctx) }.ok_or(libc::EOPNOTSUPP)?;
    // SAFETY: as above.
    unsafe { cm.create_event_channel(ctx) }
}

/// `rdma_destroy_event_channel`: after every id of the channel was destroyed.
///
/// ```
/// # use typed_verbs::{raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_destroy_event_channel(ch: *mut sys::rdma_event_channel) {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).destroy_event_channel(ch) }
}

/// `rdma_create_id` on `ch` with the port space `ps` (`RDMA_PS_TCP`: RC, `RDMA_PS_UDP`: UD);
/// `context` is returned in `id->context`.
///
/// # Errors
/// `ENOMEM`; on the software device `EOPNOTSUPP` for another port space.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP)
///     .expect("id").as_ptr();
/// assert_eq!((*id).qp_type, sys::ibv_qp_type::IBV_QPT_UD);
/// raw::rdma_destroy_id(id).expect("destroy");
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_create_id(
    ch: *mut sys::rdma_event_channel,
    context: *mut c_void,
    ps: sys::rdma_port_space::Type,
) -> Result<NonNull<sys::rdma_cm_id>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).create_id(ch, context, ps) }
}

/// The connection manager of a live id.
unsafe fn cm_of_id(id: *mut sys::rdma_cm_id) -> &'static dyn backend::CmPath {
    // SAFETY: the caller's contract: a live id, whose channel is live.
    unsafe { backend::cm_of_channel((*id).channel) }
}

/// `rdma_destroy_id`: blocks until every event reported for the id was acked. Destroying a
/// connected RC id disconnects its peer (RDMA_CM_EVENT_DISCONNECTED there); one still
/// connecting rejects the peer.
///
/// # Errors
/// The verb's errno.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///     .expect("id").as_ptr();
/// raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_destroy_id(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).destroy_id(id) }
}

/// `rdma_bind_addr` (`sockaddr_in` or `sockaddr_in6`; port 0 takes an ephemeral port).
///
/// # Errors
/// `EADDRINUSE` for an address and port already bound, `EADDRNOTAVAIL` for a non-local address
/// (or a port bound on the wildcard), `EINVAL` for an id already bound.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP)
///     .expect("id").as_ptr();
/// let mut a: libc::sockaddr_in = std::mem::zeroed();
/// a.sin_family = libc::AF_INET as libc::sa_family_t;
/// raw::rdma_bind_addr(id, &mut a as *mut _ as *mut libc::sockaddr).expect("bind");
/// assert_ne!((*id).route.addr.src_addr_union.src_sin.sin_port, 0); // ephemeral
/// raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_bind_addr(
    id: *mut sys::rdma_cm_id,
    addr: *mut libc::sockaddr,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).bind_addr(id, addr) }
}

/// `rdma_resolve_addr`: RDMA_CM_EVENT_ADDR_RESOLVED or RDMA_CM_EVENT_ADDR_ERROR follows.
///
/// # Errors
/// `ENETUNREACH` for a destination without a route, `EINVAL` in the wrong state or for
/// addresses of two families.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000)
///     .expect("resolve_addr");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// assert_eq!((*ev).event, sys::rdma_cm_event_type::RDMA_CM_EVENT_ADDR_RESOLVED);
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_resolve_addr(
    id: *mut sys::rdma_cm_id,
    src: *mut libc::sockaddr,
    dst: *mut libc::sockaddr,
    timeout_ms: i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).resolve_addr(id, src, dst, timeout_ms) }
}

/// `rdma_resolve_route`: RDMA_CM_EVENT_ROUTE_RESOLVED or RDMA_CM_EVENT_ROUTE_ERROR follows.
/// The id's address must be resolved (RDMA_CM_EVENT_ADDR_RESOLVED read): librdmacm reads the
/// id's device and crashes on an id without one.
///
/// # Errors
/// `EINVAL` in another state (where librdmacm does not crash first).
///
/// See [`rdma_create_event_channel`] for a whole exchange.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// # let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// # dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// # dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// # raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000).expect("resolve");
/// # raw::rdma_ack_cm_event(raw::rdma_get_cm_event(ch).expect("event").as_ptr()).expect("ack");
/// raw::rdma_resolve_route(id, 1000).expect("resolve_route");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// assert_eq!((*ev).event, sys::rdma_cm_event_type::RDMA_CM_EVENT_ROUTE_RESOLVED);
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_resolve_route(id: *mut sys::rdma_cm_id, timeout_ms: i32) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).resolve_route(id, timeout_ms) }
}

/// `rdma_listen`: connect requests arrive as RDMA_CM_EVENT_CONNECT_REQUEST with a new id.
///
/// # Errors
/// `EINVAL` in the wrong state; the errors of `rdma_bind_addr` for an id not yet bound.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// raw::rdma_listen(id, 4).expect("listen"); // on the IPv4 wildcard, an ephemeral port
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_listen(id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).listen(id, backlog) }
}

/// `rdma_connect` with `param.qp_num` naming the caller's QP: RDMA_CM_EVENT_CONNECT_RESPONSE
/// (RC) or RDMA_CM_EVENT_ESTABLISHED (UD), or REJECTED / UNREACHABLE / CONNECT_ERROR follows.
///
/// An RC (`RDMA_PS_TCP`) id's route must be resolved: librdmacm checks `param`'s resources
/// against the id's device, and crashes on an id without one.
///
/// # Errors
/// `EINVAL` in the wrong state, for too much private data (RC 56 bytes, UD 180) or
/// resources beyond the device's.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP).expect("id").as_ptr();
/// let mut param: sys::rdma_conn_param = std::mem::zeroed();
/// assert_eq!(raw::rdma_connect(id, &mut param), Err(libc::EINVAL)); // no route yet
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_connect(
    id: *mut sys::rdma_cm_id,
    param: *mut sys::rdma_conn_param,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).connect(id, param) }
}

/// `rdma_accept` on the new id of a connect request (`param.qp_num` names the caller's QP).
///
/// An RC id must be one from a connect request (librdmacm reads its device, as for
/// [`rdma_connect`]).
///
/// # Errors
/// `EINVAL` in the wrong state, or for too much private data (RC 196 bytes, UD 136: then the
/// request is rejected too).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_UDP).expect("id").as_ptr();
/// let mut param: sys::rdma_conn_param = std::mem::zeroed();
/// assert_eq!(raw::rdma_accept(id, &mut param), Err(libc::EINVAL)); // no request
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_accept(
    id: *mut sys::rdma_cm_id,
    param: *mut sys::rdma_conn_param,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).accept(id, param) }
}

/// `rdma_reject` with `len` bytes of private data at `data`: the peer gets
/// RDMA_CM_EVENT_REJECTED with status 28 (IB_CM_REJ_CONSUMER_DEFINED) for RC,
/// RDMA_CM_EVENT_UNREACHABLE with status 2 (IB_SIDR_REJECT) for UD.
///
/// # Errors
/// `EINVAL` without a request to reject, or for more than 148 bytes (UD 136).
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_reject(id, std::ptr::null(), 0), Err(libc::EINVAL)); // no request
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_reject(
    id: *mut sys::rdma_cm_id,
    data: *const c_void,
    len: u8,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).reject(id, data, len) }
}

/// `rdma_establish`: the active side's RTU after RDMA_CM_EVENT_CONNECT_RESPONSE (its QP in
/// RTS); the passive side gets RDMA_CM_EVENT_ESTABLISHED.
///
/// # Errors
/// `EINVAL` unless a connect response was received.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_establish(id), Err(libc::EINVAL));
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_establish(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).establish(id) }
}

/// `rdma_disconnect`: both sides get RDMA_CM_EVENT_DISCONNECTED (the peer at once, this side
/// when the peer answers with its own disconnect or destroy). No QP is touched.
///
/// # Errors
/// `EINVAL` for an id that never connected.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// assert_eq!(raw::rdma_disconnect(id), Err(libc::EINVAL));
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_disconnect(id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).disconnect(id) }
}

/// `rdma_init_qp_attr`: the attributes and mask that move a QP of this connection to
/// `attr.qp_state` (set by the caller).
///
/// # Errors
/// `EINVAL` for an id without a device, or a state the connection cannot give yet.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// let mut attr: sys::ibv_qp_attr = std::mem::zeroed();
/// attr.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
/// let mut mask = 0;
/// assert_eq!(raw::rdma_init_qp_attr(id, &mut attr, &mut mask), Err(libc::EINVAL)); // unbound
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_init_qp_attr(
    id: *mut sys::rdma_cm_id,
    attr: *mut sys::ibv_qp_attr,
    mask: *mut i32,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).init_qp_attr(id, attr, mask) }
}

/// rdma_cma.h's option level `RDMA_OPTION_ID`, for [`rdma_set_option`].
///
/// ```
/// assert_eq!(typed_verbs::raw::RDMA_OPTION_ID, 0);
/// ```
pub const RDMA_OPTION_ID: i32 = 0;

/// rdma_cma.h's `RDMA_OPTION_ID_ACK_TIMEOUT` (level [`RDMA_OPTION_ID`], a `uint8_t`): the
/// local ACK timeout, encoded as `ibv_qp_attr.timeout`, that [`rdma_init_qp_attr`] gives an RC
/// QP's RTS instead of the one derived from the path. RC ids only (`EINVAL` on a UD one).
/// There is no option for the RNR timer (`min_rnr_timer`) in librdmacm: set it in the RTR
/// attributes before `ibv_modify_qp`.
///
/// ```
/// assert_eq!(typed_verbs::raw::RDMA_OPTION_ID_ACK_TIMEOUT, 3);
/// ```
pub const RDMA_OPTION_ID_ACK_TIMEOUT: i32 = 3;

/// `rdma_set_option`: `optlen` bytes at `optval` for the option `optname` of `level`
/// (rdma_set_option(3)). The software device's connection manager knows
/// [`RDMA_OPTION_ID_ACK_TIMEOUT`] only, and answers `ENOSYS` for the others.
///
/// # Errors
/// `EINVAL` for a length the option does not take, or the ACK timeout on a UD id; `ENOSYS`
/// for an option the connection manager does not know.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// let mut timeout: u8 = 14; // 67.1 ms, for the QP's RTS from rdma_init_qp_attr
/// raw::rdma_set_option(id, raw::RDMA_OPTION_ID, raw::RDMA_OPTION_ID_ACK_TIMEOUT, (&mut timeout as *mut u8).cast(), 1).expect("set_option");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
///
/// # Safety
/// `id` is a live id; `optval` is valid for reads of `optlen` bytes.
pub unsafe fn rdma_set_option(
    id: *mut sys::rdma_cm_id,
    level: i32,
    optname: i32,
    optval: *mut std::os::raw::c_void,
    optlen: usize,
) -> Result<(), Errno> {
    // SAFETY: the caller's contract.
    unsafe { cm_of_id(id).set_option(id, level, optname, optval, optlen) }
}

/// `rdma_get_cm_event`: the next event of the channel, valid (with its private data) until
/// [`rdma_ack_cm_event`]. Blocks unless the channel's fd is O_NONBLOCK.
///
/// # Errors
/// `EAGAIN` on an O_NONBLOCK channel without an event.
///
/// ```
/// # use typed_verbs::{raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// let fl = libc::fcntl((*ch).fd, libc::F_GETFL);
/// libc::fcntl((*ch).fd, libc::F_SETFL, fl | libc::O_NONBLOCK);
/// assert_eq!(raw::rdma_get_cm_event(ch).err(), Some(libc::EAGAIN));
/// raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_get_cm_event(
    ch: *mut sys::rdma_event_channel,
) -> Result<NonNull<sys::rdma_cm_event>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { backend::cm_of_channel(ch).get_cm_event(ch) }
}

/// `rdma_ack_cm_event`: frees the event (once).
///
/// # Errors
/// `EINVAL` for NULL.
///
/// ```
/// # use typed_verbs::{ffi::sys, raw, Context};
/// # let ctx = Context::open("sw0")?;
/// # unsafe {
/// # let ch = raw::rdma_create_event_channel(ctx.as_raw()).expect("channel").as_ptr();
/// # let id = raw::rdma_create_id(ch, std::ptr::null_mut(), sys::rdma_port_space::RDMA_PS_TCP).expect("id").as_ptr();
/// # let mut dst: libc::sockaddr_in = std::mem::zeroed();
/// # dst.sin_family = libc::AF_INET as libc::sa_family_t;
/// # dst.sin_addr.s_addr = u32::from_be_bytes([127, 0, 0, 1]).to_be();
/// # raw::rdma_resolve_addr(id, std::ptr::null_mut(), &mut dst as *mut _ as *mut libc::sockaddr, 1000).expect("resolve");
/// let ev = raw::rdma_get_cm_event(ch).expect("event").as_ptr();
/// raw::rdma_ack_cm_event(ev).expect("ack");
/// # raw::rdma_destroy_id(id).expect("destroy");
/// # raw::rdma_destroy_event_channel(ch);
/// # }
/// # Ok::<(), typed_verbs::Error>(())
/// ```
pub unsafe fn rdma_ack_cm_event(event: *mut sys::rdma_cm_event) -> Result<(), Errno> {
    if event.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: the caller's contract: an unacked event, whose id (and so its channel) is live.
    unsafe { cm_of_id((*event).id).ack_cm_event(event) }
}
