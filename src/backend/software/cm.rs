//! The software device's connection manager: librdmacm's verbs (rdma_cm(7)) answered within
//! the process, as the kernel's rdma_cm (drivers/infiniband/core/cma.c, cm.c, ucma.c) answers
//! them through librdmacm for ids that have no librdmacm QP.
//!
//! What it models:
//! - Addresses: the loopback addresses (127.0.0.0/8, ::1) and the wildcard resolve to the device
//!   of the channel's context, port 1, GID index 0. A destination elsewhere has no route: the
//!   call fails with ENETUNREACH, as the kernel's `rdma_resolve_ip` fails at once when
//!   `ip_route_output` finds none. Binding a non-local address fails with EADDRNOTAVAIL
//!   (`rdma_translate_ip`).
//! - Ports: one table per port space (RDMA_PS_TCP, RDMA_PS_UDP) as the kernel's `cma_ps_find`;
//!   port 0 takes an ephemeral port in 32768..=60999 (the default `ip_local_port_range`); a port
//!   already bound fails with EADDRINUSE for the same address and EADDRNOTAVAIL where either
//!   side is the wildcard (`cma_check_port`, without SO_REUSEADDR); IPv4 and IPv6 ids of the
//!   same port conflict as the kernel's `afonly` rules make them.
//! - The IB CM's exchange between two ids of the process (REQ, REP, RTU, REJ, DREQ, DREP; SIDR
//!   REQ and REP for UD), with the events user space sees, their statuses and the private data
//!   padded to the CM message's size: a connect request carries 56 bytes (92 of the REQ less
//!   the 36 of the cma header), a connect response 196, a rejection 148; a UD connect request
//!   180 (216 - 36), its answer 136. A connect to a port nobody listens on is rejected with
//!   IB_CM_REJ_INVALID_SERVICE_ID (8) for RC, and answered IB_SIDR_UNSUPPORTED (1) for UD.
//! - `rdma_init_qp_attr` as `cma_ib_init_qp_attr` (no CM id yet, or UD) and `cm_init_qp_*_attr`
//!   (RC with a CM id) fill it, state by state.
//! - Destroying an id does what `cm_destroy_id` does to its peer (a REJ before the connection is
//!   established, a DREQ or DREP after), drops the id's unread events (an unread connect
//!   request's new id is destroyed with it, which rejects that connection) and then waits
//!   until every event reported for the id was acked.
//!
//! What it does not model: timers. The CM's retries and timeouts never fire (no REQ is lost in
//! the process), so there is no UNREACHABLE for a REQ without answer, no DISCONNECTED with
//! -ETIMEDOUT for a DREQ without answer, and no TIMEWAIT_EXIT. Nor multicast, rdma_migrate_id,
//! AF_IB, ports spaces other than TCP and UDP (EOPNOTSUPP), SO_REUSEADDR, or ECE.

use super::events::EventQueue;
use crate::backend::{CmPath, Errno};
use crate::ffi::sync::{Condvar, Mutex, MutexGuard};
use crate::ffi::sys;
use std::collections::HashMap;
use std::os::raw::c_void;
use std::ptr::{self, NonNull};
use std::sync::atomic::Ordering;
use std::sync::OnceLock;

// The CM message sizes (include/rdma/ib_cm.h, cm_msgs.h) and the cma header (cma.c).
const REQ_PRIVATE: usize = 92;
const REP_PRIVATE: usize = 196;
const REJ_PRIVATE: usize = 148;
const SIDR_REQ_PRIVATE: usize = 216;
const SIDR_REP_PRIVATE: usize = 136;
const CMA_HDR: usize = 36;

// enum ib_cm_rej_reason and ib_cm_sidr_status.
const REJ_INVALID_SERVICE_ID: i32 = 8;
const REJ_STALE_CONN: i32 = 10;
const REJ_CONSUMER_DEFINED: i32 = 28;
const SIDR_UNSUPPORTED: i32 = 1;
const SIDR_REJECT: i32 = 2;

/// RDMA_UDP_QKEY (include/rdma/rdma_cm.h): the Q_Key of every RDMA_PS_UDP id.
pub(crate) const UDP_QKEY: u32 = 0x0123_4567;
/// rdma_cma.h's RDMA_MAX_RESP_RES and RDMA_MAX_INIT_DEPTH: "as many as the device allows".
const MAX_DEPTH: u8 = 0xff;
/// The ack timeout `cm_init_qp_rts_attr` gives an RC QP (the path's packet lifetime through
/// `cm_ack_timeout`): 19, as measured on rxe0 (Linux 6.1) for both sides.
const ACK_TIMEOUT: u8 = 19;
/// How long the CM stays in TIMEWAIT: `cm_convert_to_ms` of the ack timeout (1 << (19 - 8)
/// ms). rxe0 reports RDMA_CM_EVENT_TIMEWAIT_EXIT about 2.3 s after the DREP under TCG.
const TIMEWAIT: std::time::Duration = std::time::Duration::from_millis(1 << (ACK_TIMEOUT - 8));
/// The hop limit of a RoCE path over IPv4 (`addr4_resolve`: the route's default, 64).
const HOP_LIMIT: u8 = 64;
/// The largest backlog (ucma.c's max_backlog) and the one a backlog of 0 or less gets.
const MAX_BACKLOG: i32 = 1024;
/// `ip_local_port_range`'s default.
const EPHEMERAL: (u16, u16) = (32768, 60999);

// enum ibv_access_flags
const REMOTE_WRITE: u32 = 1 << 1;
const REMOTE_READ: u32 = 1 << 2;
const REMOTE_ATOMIC: u32 = 1 << 3;

use crate::ffi::qp_attr_mask::{
    ACCESS_FLAGS, AV, DEST_QPN, MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER, PATH_MTU,
    PKEY_INDEX, PORT, QKEY, RETRY_CNT, RNR_RETRY, RQ_PSN, SQ_PSN, STATE, TIMEOUT,
};
use sys::rdma_cm_event_type as ev;

/// An IP address and port, as a `sockaddr_in` or `sockaddr_in6` holds them.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Addr {
    v6: bool,
    /// The address; an IPv4 one in the first four bytes.
    ip: [u8; 16],
    port: u16,
}

impl Addr {
    /// Reads a `sockaddr_in` or `sockaddr_in6`; EINVAL for NULL or another family (librdmacm's
    /// `ucma_addrlen` gives 0 for it).
    ///
    /// # Safety
    /// `sa` is NULL or readable for the size its family names.
    unsafe fn read(sa: *const libc::sockaddr) -> Result<Addr, Errno> {
        if sa.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: readable (caller); the family says which struct it is.
        unsafe {
            match i32::from((*sa).sa_family) {
                libc::AF_INET => {
                    let s = &*(sa as *const libc::sockaddr_in);
                    let mut ip = [0; 16];
                    ip[..4].copy_from_slice(&s.sin_addr.s_addr.to_ne_bytes());
                    Ok(Addr {
                        v6: false,
                        ip,
                        port: u16::from_be(s.sin_port),
                    })
                }
                libc::AF_INET6 => {
                    let s = &*(sa as *const libc::sockaddr_in6);
                    Ok(Addr {
                        v6: true,
                        ip: s.sin6_addr.s6_addr,
                        port: u16::from_be(s.sin6_port),
                    })
                }
                _ => Err(libc::EINVAL),
            }
        }
    }

    fn any_of(v6: bool) -> Addr {
        Addr {
            v6,
            ip: [0; 16],
            port: 0,
        }
    }

    fn is_any(&self) -> bool {
        self.ip == [0; 16]
    }

    /// 127.0.0.0/8 or ::1 (or ::ffff:127.x.y.z).
    fn is_loopback(&self) -> bool {
        if !self.v6 {
            return self.ip[0] == 127;
        }
        let mut one = [0u8; 16];
        one[15] = 1;
        self.ip == one
            || (self.ip[..10] == [0; 10] && self.ip[10..12] == [0xff; 2] && self.ip[12] == 127)
    }

    /// Whether the address belongs to the software device (binding or resolving it works).
    fn is_local(&self) -> bool {
        self.is_any() || self.is_loopback()
    }

    fn with_port(mut self, port: u16) -> Addr {
        self.port = port;
        self
    }

    fn same_ip(&self, o: &Addr) -> bool {
        self.v6 == o.v6 && self.ip == o.ip
    }

    /// Writes the address as a `sockaddr_in` or `sockaddr_in6` (the rest zeroed).
    fn store(&self) -> libc::sockaddr_storage {
        // SAFETY: sockaddr_storage is plain C data; all-zero is valid.
        let mut st: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
        if self.v6 {
            // SAFETY: sockaddr_storage is larger than and aligned for sockaddr_in6.
            let s = unsafe { &mut *(&mut st as *mut _ as *mut libc::sockaddr_in6) };
            s.sin6_family = libc::AF_INET6 as libc::sa_family_t;
            s.sin6_port = self.port.to_be();
            s.sin6_addr.s6_addr = self.ip;
        } else {
            // SAFETY: as above, for sockaddr_in.
            let s = unsafe { &mut *(&mut st as *mut _ as *mut libc::sockaddr_in) };
            s.sin_family = libc::AF_INET as libc::sa_family_t;
            s.sin_port = self.port.to_be();
            s.sin_addr.s_addr =
                u32::from_ne_bytes([self.ip[0], self.ip[1], self.ip[2], self.ip[3]]);
        }
        st
    }
}

/// The rdma_cm state of an id (`enum rdma_cm_state`, the states user space can see).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum St {
    Idle,
    AddrBound,
    AddrResolved,
    RouteResolved,
    Listen,
    Connect,
    Disconnect,
}

/// The IB CM id of an rdma_cm id (`enum ib_cm_state`); `None` while it has none.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Cm {
    None,
    /// A CM id that is idle: after a rejection, or after a SIDR exchange.
    Idle,
    Listen,
    ReqSent,
    ReqRcvd,
    RepSent,
    RepRcvd,
    Established,
    DreqSent,
    DreqRcvd,
    Timewait,
    SidrReqSent,
    SidrReqRcvd,
}

/// An id as the software CM keeps it.
struct Id {
    /// The `IdBox` (`*mut IdBox`).
    raw: usize,
    /// The `Channel` (`*mut Channel`).
    ch: usize,
    ud: bool,
    ps: u32,
    st: St,
    cm: Cm,
    /// Being destroyed: no more events are queued for it.
    dying: bool,
    /// The local address once bound (with its port), the remote one once known.
    src: Option<Addr>,
    dst: Option<Addr>,
    /// Holds `src.port` in the port table.
    holds_port: bool,
    /// Whether the id is bound to the device (a local address, a resolution, a request).
    on_device: bool,
    /// A listener's backlog left: requests not yet read.
    backlog: i32,
    /// The other end of the connection.
    peer: u64,
    qpn: u32,
    peer_qpn: u32,
    psn: u32,
    peer_psn: u32,
    resp_res: u8,
    init_depth: u8,
    retry: u8,
    rnr_retry: u8,
    /// Events read from the channel and acked, as librdmacm's `events_completed` against the
    /// kernel's `events_reported`.
    reported: u64,
    acked: u64,
    /// How many times the CM entered TIMEWAIT (names the timer that ends it).
    timewait: u64,
}

/// `struct rdma_cm_id` and the handle that names its state.
#[repr(C)]
struct IdBox {
    raw: sys::rdma_cm_id,
    handle: u64,
}

/// `struct rdma_event_channel` (its fd is the queue's eventfd) and the context it resolves
/// addresses for.
#[repr(C)]
struct Channel {
    raw: sys::rdma_event_channel,
    ctx: usize,
    q: EventQueue<Ev>,
}

/// `struct rdma_cm_event` and the private data it points at (valid until the ack).
#[repr(C)]
struct EventBox {
    raw: sys::rdma_cm_event,
    data: [u8; 256],
    /// The id whose count of reported events this event is in (a connect request's listener).
    owner: u64,
    /// The new id of a connect request (0 otherwise).
    child: u64,
}

/// A queued event. The box moves between threads with the queue.
struct Ev(Box<EventBox>);
// SAFETY: the box's pointers name objects of this module, used only under its lock or by the
// thread the event was handed to.
unsafe impl Send for Ev {}

#[derive(Default)]
struct State {
    ids: HashMap<u64, Id>,
    /// Live channels (addresses) and how many ids each holds.
    channels: HashMap<usize, usize>,
    /// Bound ports: (port space, port) -> ids.
    ports: HashMap<(u32, u16), Vec<u64>>,
    next: u64,
    seed: u64,
}

struct Global {
    m: Mutex<State>,
    /// Signalled on every ack: destroy_id waits on it.
    acked: Condvar,
}

fn global() -> &'static Global {
    static G: OnceLock<Global> = OnceLock::new();
    G.get_or_init(|| {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9_7f4a_7c15)
            | 1;
        Global {
            m: Mutex::new(State {
                next: 1,
                seed,
                ..State::default()
            }),
            acked: Condvar::new(),
        }
    })
}

fn lock() -> MutexGuard<'static, State> {
    global().m.lock()
}

impl State {
    fn random(&mut self) -> u64 {
        // xorshift64*
        let mut x = self.seed;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.seed = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    fn psn(&mut self) -> u32 {
        (self.random() >> 40) as u32 & 0xff_ffff
    }

    /// The handle of a live id of this module.
    ///
    /// # Safety
    /// `id` is an id this module made and has not freed.
    unsafe fn handle(&self, id: *mut sys::rdma_cm_id) -> Result<u64, Errno> {
        if id.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: an IdBox, whose first field is the rdma_cm_id.
        let h = unsafe { (*(id as *mut IdBox)).handle };
        if self.ids.contains_key(&h) {
            Ok(h)
        } else {
            Err(libc::EINVAL)
        }
    }

    fn id(&mut self, h: u64) -> &mut Id {
        self.ids.get_mut(&h).expect("a live id")
    }

    /// Queues an event of type `ty` for the id `to` (dropped if it is gone or being destroyed),
    /// with `fill` writing the parameters.
    fn deliver(&mut self, to: u64, ty: u32, status: i32, fill: impl FnOnce(&mut EventBox)) {
        let Some(id) = self.ids.get(&to) else { return };
        if id.dying {
            return;
        }
        let mut b = new_event(id.raw as *mut sys::rdma_cm_id, ty, status, to);
        fill(&mut b);
        // SAFETY: the id's channel outlives it (destroy_event_channel's contract, and the
        // channel count below keeps a channel with ids from being freed).
        unsafe { channel(id.ch) }.q.push(Ev(b));
    }

    /// A REJ from `from`'s side to its peer: REJECTED (status `reason`, 148 bytes of private
    /// data) where the peer is still connecting; the peer's CM goes idle.
    fn send_rej(&mut self, peer: u64, reason: i32, data: &[u8]) {
        let Some(p) = self.ids.get_mut(&peer) else {
            return;
        };
        if !matches!(p.cm, Cm::ReqSent | Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd) {
            return;
        }
        p.cm = Cm::Idle;
        if p.st != St::Connect {
            return;
        }
        self.deliver(peer, ev::RDMA_CM_EVENT_REJECTED, reason, |e| {
            set_conn_data(e, data, REJ_PRIVATE)
        });
    }

    /// A SIDR REP with a status other than success: UNREACHABLE with that status.
    fn send_sidr_fail(&mut self, peer: u64, status: i32, data: &[u8]) {
        let Some(p) = self.ids.get_mut(&peer) else {
            return;
        };
        if p.cm != Cm::SidrReqSent {
            return;
        }
        p.cm = Cm::Idle;
        if p.st != St::Connect {
            return;
        }
        self.deliver(peer, ev::RDMA_CM_EVENT_UNREACHABLE, status, |e| {
            set_ud_data(e, data, SIDR_REP_PRIVATE)
        });
    }

    /// `h`'s CM enters TIMEWAIT (it sent or received the DREP): TIMEWAIT_EXIT follows after
    /// [`TIMEWAIT`], if the id is still there.
    fn enter_timewait(&mut self, h: u64) {
        let Some(i) = self.ids.get_mut(&h) else {
            return;
        };
        i.cm = Cm::Timewait;
        i.timewait += 1;
        let n = i.timewait;
        arm_timewait(std::time::Instant::now() + TIMEWAIT, h, n);
    }

    /// A timer of [`State::enter_timewait`] fired.
    fn timewait_exit(&mut self, h: u64, n: u64) {
        let Some(i) = self.ids.get_mut(&h) else {
            return;
        };
        if i.cm != Cm::Timewait || i.timewait != n {
            return;
        }
        i.cm = Cm::Idle;
        // cma_ib_handler passes IB_CM_TIMEWAIT_EXIT on only in RDMA_CM_DISCONNECT.
        if i.st == St::Disconnect {
            self.deliver(h, ev::RDMA_CM_EVENT_TIMEWAIT_EXIT, 0, |_| {});
        }
    }

    /// A DREQ or DREP reaching `peer`: DISCONNECTED where its rdma_cm state is still CONNECT.
    fn peer_disconnected(&mut self, peer: u64) {
        let Some(p) = self.ids.get_mut(&peer) else {
            return;
        };
        if p.st != St::Connect {
            return;
        }
        p.st = St::Disconnect;
        self.deliver(peer, ev::RDMA_CM_EVENT_DISCONNECTED, 0, |_| {});
    }

    /// Binds `h` to `addr` (port 0: an ephemeral one), as cma_get_port does.
    fn bind_port(&mut self, h: u64, addr: Addr) -> Result<Addr, Errno> {
        let ps = self.id(h).ps;
        let port = if addr.port == 0 {
            let span = u64::from(EPHEMERAL.1 - EPHEMERAL.0) + 1;
            let start = self.random() % span;
            (0..span)
                .map(|i| EPHEMERAL.0 + ((start + i) % span) as u16)
                .find(|p| !self.ports.contains_key(&(ps, *p)))
                .ok_or(libc::EADDRNOTAVAIL)?
        } else {
            if let Some(owners) = self.ports.get(&(ps, addr.port)) {
                for o in owners {
                    let Some(cur) = self.ids.get(o).and_then(|i| i.src) else {
                        continue;
                    };
                    // cma_check_port skips ids of another family only when both are afonly:
                    // IPv4 ids are, IPv6 ones are not (bindv6only = 0), so it never does.
                    if addr.is_any() || cur.is_any() {
                        return Err(libc::EADDRNOTAVAIL);
                    }
                    if addr.same_ip(&cur) {
                        return Err(libc::EADDRINUSE);
                    }
                }
            }
            addr.port
        };
        self.ports.entry((ps, port)).or_default().push(h);
        let bound = addr.with_port(port);
        let id = self.id(h);
        id.src = Some(bound);
        id.holds_port = true;
        Ok(bound)
    }

    fn release_port(&mut self, h: u64) {
        let id = self.id(h);
        if !id.holds_port {
            return;
        }
        id.holds_port = false;
        let key = (id.ps, id.src.map_or(0, |a| a.port));
        if let Some(v) = self.ports.get_mut(&key) {
            v.retain(|o| *o != h);
            if v.is_empty() {
                self.ports.remove(&key);
            }
        }
    }

    /// The listener for a connect to `dst` in port space `ps`: one bound to that address, or
    /// to the wildcard.
    fn listener(&self, ps: u32, dst: &Addr) -> Option<u64> {
        let owners = self.ports.get(&(ps, dst.port))?;
        let listening = |o: &&u64| {
            self.ids
                .get(o)
                .is_some_and(|i| i.st == St::Listen && !i.dying)
        };
        let addr_of = |o: &u64| self.ids.get(o).and_then(|i| i.src);
        owners
            .iter()
            .filter(listening)
            .find(|o| addr_of(o).is_some_and(|a| a.same_ip(dst)))
            .or_else(|| {
                owners
                    .iter()
                    .filter(listening)
                    .find(|o| addr_of(o).is_some_and(|a| a.is_any()))
            })
            .copied()
    }

    /// Writes the id's addresses and port into its `rdma_cm_id`.
    fn publish(&self, h: u64) {
        let id = &self.ids[&h];
        let p = id.raw as *mut IdBox;
        // SAFETY: a live IdBox; only this module writes it, under the lock.
        unsafe {
            let r = &mut (*p).raw;
            if let Some(a) = id.src {
                r.route.addr.src_addr_union.src_storage = a.store();
            }
            if let Some(a) = id.dst {
                r.route.addr.dst_addr_union.dst_storage = a.store();
            }
            if id.on_device {
                r.port_num = 1;
                let gid = sys::ibv_gid {
                    raw: super::port_gid(),
                };
                r.route.addr.addr.ibaddr = sys::rdma_ib_addr {
                    sgid: gid,
                    dgid: if id.dst.is_some() {
                        gid
                    } else {
                        sys::ibv_gid { raw: [0; 16] }
                    },
                    pkey: 0xffff_u16.to_be(),
                };
            }
        }
    }

    /// Removes the id's unread events from its channel; the new ids of unread connect requests
    /// are destroyed (which rejects those connections), as ucma_cleanup_ctx_events does.
    fn drop_unread(&mut self, h: u64) {
        let ch = self.ids[&h].ch;
        // SAFETY: the id's channel is live.
        let gone = unsafe { channel(ch) }.q.take_matching(|e| e.0.owner == h);
        for e in gone {
            if e.0.child != 0 {
                self.kill(e.0.child);
            }
        }
    }

    /// What destroying `h` does to its peer and its bindings (cm_destroy_id); then `h` is
    /// marked dying. Does not wait for acks nor free the id.
    fn retire(&mut self, h: u64) {
        let (cm, peer) = {
            let id = self.id(h);
            id.dying = true;
            (id.cm, id.peer)
        };
        match cm {
            // cm_destroy_id sends a REJ (IB_CM_REJ_TIMEOUT) here; on rxe0 (Linux 6.1) it
            // leaves the passive side's CM id idle without any event: an accept there is then
            // EINVAL.
            Cm::ReqSent => {
                if let Some(p) = self.ids.get_mut(&peer) {
                    if p.cm == Cm::ReqRcvd {
                        p.cm = Cm::Idle;
                    }
                }
            }
            Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd => {
                self.send_rej(peer, REJ_CONSUMER_DEFINED, &[])
            }
            Cm::Established => {
                // DREQ: the peer answers with its own disconnect or destroy.
                if let Some(p) = self.ids.get_mut(&peer) {
                    if p.cm == Cm::Established {
                        p.cm = Cm::DreqRcvd;
                        self.peer_disconnected(peer);
                    }
                }
            }
            // DREP.
            Cm::DreqRcvd if self.ids.get(&peer).is_some_and(|p| p.cm == Cm::DreqSent) => {
                self.enter_timewait(peer);
                self.peer_disconnected(peer);
            }
            Cm::SidrReqRcvd => self.send_sidr_fail(peer, SIDR_REJECT, &[]),
            _ => {}
        }
        self.id(h).cm = Cm::None;
        self.release_port(h);
        self.drop_unread(h);
    }

    /// Destroys an id nobody was handed yet (the new id of an unread connect request).
    fn kill(&mut self, h: u64) {
        if !self.ids.contains_key(&h) {
            return;
        }
        self.retire(h);
        self.free(h);
    }

    /// Frees the id's memory and state (every reported event acked).
    fn free(&mut self, h: u64) {
        if let Some(id) = self.ids.remove(&h) {
            if let Some(n) = self.channels.get_mut(&id.ch) {
                *n -= 1;
            }
            // SAFETY: the id's channel is live (it had an id until now).
            unsafe { counters(id.ch) }
                .cm_ids
                .fetch_sub(1, Ordering::Relaxed);
            // SAFETY: made by Box::into_raw in new_id; removed from the table first, so nothing
            // finds it any more.
            drop(unsafe { Box::from_raw(id.raw as *mut IdBox) });
        }
    }

    /// A new id on channel `ch` (of the software context `ctx`'s device).
    fn new_id(&mut self, ch: usize, context: *mut c_void, ps: u32, ud: bool) -> u64 {
        let h = self.next;
        self.next += 1;
        // SAFETY: rdma_cm_id is plain C data (pointers, unions of sockaddrs); all-zero is valid.
        let mut b: Box<IdBox> = Box::new(IdBox {
            raw: unsafe { std::mem::zeroed() },
            handle: h,
        });
        b.raw.channel = ch as *mut sys::rdma_event_channel;
        b.raw.context = context;
        b.raw.ps = ps;
        b.raw.qp_type = if ud {
            sys::ibv_qp_type::IBV_QPT_UD
        } else {
            sys::ibv_qp_type::IBV_QPT_RC
        };
        let raw = Box::into_raw(b) as usize;
        // SAFETY: the channel is live, and so is its software context (its cm_channels count
        // keeps the context from closing).
        unsafe { counters(ch) }
            .cm_ids
            .fetch_add(1, Ordering::Relaxed);
        let psn = self.psn();
        self.ids.insert(
            h,
            Id {
                raw,
                ch,
                ud,
                ps,
                st: St::Idle,
                cm: Cm::None,
                dying: false,
                src: None,
                dst: None,
                holds_port: false,
                on_device: false,
                backlog: 0,
                peer: 0,
                qpn: 0,
                peer_qpn: 0,
                psn,
                peer_psn: 0,
                resp_res: 0,
                init_depth: 0,
                retry: 0,
                rnr_retry: 0,
                reported: 0,
                acked: 0,
                timewait: 0,
            },
        );
        *self.channels.entry(ch).or_default() += 1;
        h
    }
}

/// The live-object counters of the context channel `ch` was made for.
///
/// # Safety
/// `ch` is a live channel of this module.
unsafe fn counters<'a>(ch: usize) -> &'a super::Counters {
    // SAFETY: caller's contract; a channel's context is a live software context (its
    // cm_channels count keeps it from closing while the channel lives).
    unsafe { &super::sw_context(channel(ch).ctx as *mut sys::ibv_context).live }
}

/// # Safety
/// `ch` is a live channel of this module.
unsafe fn channel<'a>(ch: usize) -> &'a Channel {
    // SAFETY: caller's contract.
    unsafe { &*(ch as *const Channel) }
}

fn new_event(id: *mut sys::rdma_cm_id, ty: u32, status: i32, owner: u64) -> Box<EventBox> {
    // SAFETY: rdma_cm_event is plain C data; all-zero is valid (NULL pointers, zero lengths).
    let mut b: Box<EventBox> = Box::new(EventBox {
        raw: unsafe { std::mem::zeroed() },
        data: [0; 256],
        owner,
        child: 0,
    });
    b.raw.id = id;
    b.raw.event = ty;
    b.raw.status = status;
    b
}

/// `data` zero-padded to `len` bytes as the conn param's private data.
fn set_conn_data(e: &mut EventBox, data: &[u8], len: usize) {
    e.data[..data.len()].copy_from_slice(data);
    // The union member `conn` is the one the event's type uses (writing a Copy field is safe).
    e.raw.param.conn.private_data_len = len as u8;
    e.raw.param.conn.private_data = e.data.as_ptr().cast();
}

/// `data` zero-padded to `len` bytes as the UD param's private data.
fn set_ud_data(e: &mut EventBox, data: &[u8], len: usize) {
    e.data[..data.len()].copy_from_slice(data);
    // The union member `ud` is the one the event's type uses (writing a Copy field is safe).
    e.raw.param.ud.private_data_len = len as u8;
    e.raw.param.ud.private_data = e.data.as_ptr().cast();
}

/// The private data a caller passed: `len` bytes at `p` (none when NULL or 0).
///
/// # Safety
/// `p` readable for `len` bytes unless NULL.
unsafe fn user_data<'a>(p: *const c_void, len: u8) -> &'a [u8] {
    if p.is_null() || len == 0 {
        &[]
    } else {
        // SAFETY: caller's contract.
        unsafe { std::slice::from_raw_parts(p.cast(), len.into()) }
    }
}

/// The device's `max_qp_rd_atom` and `max_qp_init_rd_atom` (librdmacm's
/// `max_responder_resources` and `max_initiator_depth`).
fn max_rd_atom() -> u8 {
    super::objects::MAX_QP_RD_ATOM
}

pub(crate) struct SoftwareCm;
pub(crate) static SOFTWARE_CM: SoftwareCm = SoftwareCm;

/// Whether `ch` is a live event channel of the software connection manager.
pub(crate) fn owns_channel(ch: *mut sys::rdma_event_channel) -> bool {
    lock().channels.contains_key(&(ch as usize))
}

impl CmPath for SoftwareCm {
    unsafe fn create_event_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::rdma_event_channel>, Errno> {
        let q = EventQueue::new()?;
        let ch = Box::new(Channel {
            raw: sys::rdma_event_channel { fd: q.raw_fd() },
            ctx: ctx as usize,
            q,
        });
        let p = Box::into_raw(ch);
        lock().channels.insert(p as usize, 0);
        // SAFETY: a live software context (caller's contract).
        unsafe { super::sw_context(ctx) }
            .live
            .cm_channels
            .fetch_add(1, Ordering::Relaxed);
        Ok(NonNull::new(p.cast()).expect("Box::into_raw is not NULL"))
    }

    unsafe fn destroy_event_channel(&self, ch: *mut sys::rdma_event_channel) {
        let mut s = lock();
        match s.channels.get(&(ch as usize)) {
            Some(0) => {
                s.channels.remove(&(ch as usize));
            }
            // Ids still use it (the caller broke the contract): leaked rather than freed
            // under them.
            _ => return,
        }
        drop(s);
        // SAFETY: the channel is still allocated; its context is live until this count drops.
        unsafe { counters(ch as usize) }
            .cm_channels
            .fetch_sub(1, Ordering::Relaxed);
        // SAFETY: made by Box::into_raw in create_event_channel and removed from the table;
        // no id refers to it. Its unread events (there are none: every id is gone) drop with
        // the queue.
        drop(unsafe { Box::from_raw(ch as *mut Channel) });
    }

    unsafe fn create_id(
        &self,
        ch: *mut sys::rdma_event_channel,
        context: *mut c_void,
        ps: sys::rdma_port_space::Type,
    ) -> Result<NonNull<sys::rdma_cm_id>, Errno> {
        let ud = match ps {
            sys::rdma_port_space::RDMA_PS_TCP => false,
            sys::rdma_port_space::RDMA_PS_UDP => true,
            _ => return Err(libc::EOPNOTSUPP),
        };
        let mut s = lock();
        if !s.channels.contains_key(&(ch as usize)) {
            return Err(libc::EINVAL);
        }
        let h = s.new_id(ch as usize, context, ps, ud);
        Ok(NonNull::new(s.ids[&h].raw as *mut sys::rdma_cm_id).expect("not NULL"))
    }

    unsafe fn destroy_id(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let g = global();
        let mut s = g.m.lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        s.retire(h);
        // librdmacm's rdma_destroy_id: "wait for all events to be acked".
        loop {
            let i = &s.ids[&h];
            if i.reported == i.acked {
                break;
            }
            g.acked.wait(&mut s);
        }
        s.free(h);
        Ok(())
    }

    unsafe fn bind_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        addr: *mut libc::sockaddr,
    ) -> Result<(), Errno> {
        // SAFETY: caller's contract: a valid address.
        let a = unsafe { Addr::read(addr) }?;
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st != St::Idle {
            return Err(libc::EINVAL);
        }
        if !a.is_local() {
            return Err(libc::EADDRNOTAVAIL);
        }
        s.bind_port(h, a)?;
        let i = s.id(h);
        i.st = St::AddrBound;
        i.on_device = !a.is_any();
        s.publish(h);
        Ok(())
    }

    unsafe fn resolve_addr(
        &self,
        id: *mut sys::rdma_cm_id,
        src: *mut libc::sockaddr,
        dst: *mut libc::sockaddr,
        _timeout_ms: i32,
    ) -> Result<(), Errno> {
        // SAFETY: caller's contract.
        let d = unsafe { Addr::read(dst) }?;
        // SAFETY: as above; `src` may be NULL.
        let sa = if src.is_null() {
            None
        } else {
            Some(unsafe { Addr::read(src) }?)
        };
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // resolve_prepare_src: an idle id is bound first (to `src`, or the wildcard of the
        // destination's family, port 0).
        match s.id(h).st {
            St::Idle => {
                let a = sa.unwrap_or(Addr::any_of(d.v6));
                if a.v6 != d.v6 {
                    return Err(libc::EINVAL);
                }
                if !a.is_local() {
                    return Err(libc::EADDRNOTAVAIL);
                }
                s.bind_port(h, a)?;
                s.id(h).st = St::AddrBound;
            }
            St::AddrBound => {}
            _ => return Err(libc::EINVAL),
        }
        let bound = s.id(h).src.expect("bound");
        if bound.v6 != d.v6 {
            return Err(libc::EINVAL);
        }
        if !d.is_local() {
            // No route from here: rdma_resolve_ip fails at once.
            return Err(libc::ENETUNREACH);
        }
        let i = s.id(h);
        i.dst = Some(d);
        if bound.is_any() && !d.is_any() {
            // The route's source address for a loopback destination is the destination.
            i.src = Some(Addr {
                port: bound.port,
                ..d
            });
        }
        i.on_device = true;
        i.st = St::AddrResolved;
        s.publish(h);
        s.deliver(h, ev::RDMA_CM_EVENT_ADDR_RESOLVED, 0, |_| {});
        Ok(())
    }

    unsafe fn resolve_route(
        &self,
        id: *mut sys::rdma_cm_id,
        _timeout_ms: i32,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st != St::AddrResolved {
            return Err(libc::EINVAL);
        }
        s.id(h).st = St::RouteResolved;
        // SAFETY: a live IdBox, written under the lock.
        unsafe { (*(s.ids[&h].raw as *mut IdBox)).raw.route.num_paths = 1 };
        s.deliver(h, ev::RDMA_CM_EVENT_ROUTE_RESOLVED, 0, |_| {});
        Ok(())
    }

    unsafe fn listen(&self, id: *mut sys::rdma_cm_id, backlog: i32) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        if s.id(h).st == St::Idle {
            // rdma_listen binds an idle id to the IPv4 wildcard first.
            s.bind_port(h, Addr::any_of(false))?;
            s.id(h).st = St::AddrBound;
        }
        let i = s.id(h);
        if i.st != St::AddrBound {
            return Err(libc::EINVAL);
        }
        i.st = St::Listen;
        i.cm = Cm::Listen;
        i.backlog = if backlog > 0 && backlog < MAX_BACKLOG {
            backlog
        } else {
            MAX_BACKLOG
        };
        s.publish(h);
        Ok(())
    }

    unsafe fn connect(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (ud, st) = {
            let i = s.id(h);
            (i.ud, i.st)
        };
        // librdmacm's ucma_valid_param: an RC id without a QP needs a param.
        if param.is_null() && !ud {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: readable when not NULL.
        let p = (!param.is_null()).then(|| unsafe { *param });
        let max = max_rd_atom();
        if let (Some(p), false) = (p, ud) {
            if (p.responder_resources != MAX_DEPTH && p.responder_resources > max)
                || (p.initiator_depth != MAX_DEPTH && p.initiator_depth > max)
            {
                return Err(libc::EINVAL);
            }
        }
        if st != St::RouteResolved {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract.
        let data = p.map_or(&[][..], |p| unsafe {
            user_data(p.private_data, p.private_data_len)
        });
        let limit = if ud { SIDR_REQ_PRIVATE } else { REQ_PRIVATE } - CMA_HDR;
        if data.len() > limit {
            return Err(libc::EINVAL);
        }
        let p = p.unwrap_or(sys::rdma_conn_param {
            private_data: ptr::null(),
            private_data_len: 0,
            responder_resources: 0,
            initiator_depth: 0,
            flow_control: 0,
            retry_count: 7,
            rnr_retry_count: 7,
            srq: 0,
            qp_num: 0,
        });
        let depth = |v: u8| if v == MAX_DEPTH { max } else { v };
        let dst = s.id(h).dst.expect("resolved");
        let src = s.id(h).src.expect("bound");
        let lst = s.listener(s.ids[&h].ps, &dst);
        {
            let i = s.id(h);
            i.st = St::Connect;
            i.qpn = p.qp_num;
            i.init_depth = depth(p.initiator_depth);
            i.resp_res = depth(p.responder_resources);
            i.retry = p.retry_count.min(7);
            i.rnr_retry = p.rnr_retry_count.min(7);
            i.cm = if ud { Cm::SidrReqSent } else { Cm::ReqSent };
        }
        // cm_match_req's check for stale connections, before it looks for a listener: a REQ
        // naming a remote QP that another connection of the CM still holds is refused
        // (cm_insert_remote_qpn).
        let stale = !ud
            && s.ids.iter().any(|(o, i)| {
                *o != h
                    && !i.dying
                    && i.peer_qpn == p.qp_num
                    && matches!(
                        i.cm,
                        Cm::ReqRcvd
                            | Cm::RepSent
                            | Cm::RepRcvd
                            | Cm::Established
                            | Cm::DreqSent
                            | Cm::DreqRcvd
                            | Cm::Timewait
                    )
            });
        if stale {
            s.send_rej(h, REJ_STALE_CONN, &[]);
            return Ok(());
        }
        let listener = match lst {
            Some(l) if s.ids[&l].backlog > 0 => l,
            Some(_) => {
                // ucma's backlog is full: the request is refused as a destroyed new id
                // refuses it.
                if ud {
                    s.send_sidr_fail(h, SIDR_REJECT, &[]);
                } else {
                    s.send_rej(h, REJ_CONSUMER_DEFINED, &[]);
                }
                return Ok(());
            }
            None => {
                if ud {
                    s.send_sidr_fail(h, SIDR_UNSUPPORTED, &[]);
                } else {
                    s.send_rej(h, REJ_INVALID_SERVICE_ID, &[]);
                }
                return Ok(());
            }
        };
        // The listener's new id: same channel and context, addresses swapped.
        let (lch, lraw, lctx) = {
            let l = &s.ids[&listener];
            // SAFETY: a live IdBox.
            (l.ch, l.raw, unsafe { (*(l.raw as *mut IdBox)).raw.context })
        };
        let lps = s.ids[&listener].ps;
        let c = s.new_id(lch, lctx, lps, ud);
        let (my_psn, my_init, my_resp, my_retry, my_rnr) = {
            let i = &s.ids[&h];
            (i.psn, i.init_depth, i.resp_res, i.retry, i.rnr_retry)
        };
        let lport = s.ids[&listener].src.map_or(dst.port, |a| a.port);
        {
            let ci = s.id(c);
            ci.st = St::Connect;
            ci.cm = if ud { Cm::SidrReqRcvd } else { Cm::ReqRcvd };
            ci.src = Some(dst.with_port(lport));
            ci.dst = Some(src);
            ci.on_device = true;
            ci.peer = h;
            ci.peer_qpn = p.qp_num;
            ci.peer_psn = my_psn;
            // cm_format_req_event: the passive side's view is the active side's, swapped.
            ci.resp_res = my_init;
            ci.init_depth = my_resp;
            ci.retry = my_retry;
            ci.rnr_retry = my_rnr;
        }
        s.publish(c);
        s.id(h).peer = c;
        s.id(listener).backlog -= 1;
        let craw = s.ids[&c].raw as *mut sys::rdma_cm_id;
        let mut e = new_event(craw, ev::RDMA_CM_EVENT_CONNECT_REQUEST, 0, listener);
        e.child = c;
        e.raw.listen_id = lraw as *mut sys::rdma_cm_id;
        if ud {
            set_ud_data(&mut e, data, SIDR_REQ_PRIVATE - CMA_HDR);
        } else {
            set_conn_data(&mut e, data, REQ_PRIVATE - CMA_HDR);
            // SAFETY: writing Copy fields of the `conn` member.
            unsafe {
                let cp = &mut e.raw.param.conn;
                cp.responder_resources = my_init;
                cp.initiator_depth = my_resp;
                cp.flow_control = p.flow_control;
                cp.retry_count = my_retry;
                cp.rnr_retry_count = my_rnr;
                cp.srq = p.srq;
                cp.qp_num = p.qp_num;
            }
        }
        // SAFETY: the listener's channel is live.
        unsafe { channel(lch) }.q.push(Ev(e));
        Ok(())
    }

    unsafe fn accept(
        &self,
        id: *mut sys::rdma_cm_id,
        param: *mut sys::rdma_conn_param,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (ud, st, cm, peer) = {
            let i = s.id(h);
            (i.ud, i.st, i.cm, i.peer)
        };
        if param.is_null() && !ud {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: readable when not NULL.
        let p = (!param.is_null()).then(|| unsafe { *param });
        let max = max_rd_atom();
        if let (Some(p), false) = (p, ud) {
            if (p.responder_resources != MAX_DEPTH && p.responder_resources > max)
                || (p.initiator_depth != MAX_DEPTH && p.initiator_depth > max)
            {
                return Err(libc::EINVAL);
            }
        }
        if st != St::Connect {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract.
        let data = p.map_or(&[][..], |p| unsafe {
            user_data(p.private_data, p.private_data_len)
        });
        if ud {
            if cm != Cm::SidrReqRcvd {
                return Err(libc::EINVAL);
            }
            if data.len() > SIDR_REP_PRIVATE {
                // __rdma_accept's failure path rejects the request.
                s.id(h).cm = Cm::Idle;
                s.send_sidr_fail(peer, SIDR_REJECT, &[]);
                return Err(libc::EINVAL);
            }
            let qpn = p.map_or(0, |p| p.qp_num);
            s.id(h).qpn = qpn;
            s.id(h).cm = Cm::Idle;
            if s.ids.get(&peer).is_some_and(|a| a.cm == Cm::SidrReqSent) {
                s.id(peer).cm = Cm::Idle;
                s.id(peer).peer_qpn = qpn;
                if s.ids[&peer].st == St::Connect {
                    s.deliver(peer, ev::RDMA_CM_EVENT_ESTABLISHED, 0, |e| {
                        set_ud_data(e, data, SIDR_REP_PRIVATE);
                        // SAFETY: writing Copy fields of the `ud` member.
                        unsafe {
                            let u = &mut e.raw.param.ud;
                            u.qp_num = qpn;
                            u.qkey = UDP_QKEY;
                            u.ah_attr = peer_ah();
                        }
                    });
                }
            }
            return Ok(());
        }
        if cm != Cm::ReqRcvd {
            return Err(libc::EINVAL);
        }
        let p = p.expect("checked above");
        if data.len() > REP_PRIVATE {
            s.id(h).cm = Cm::Idle;
            s.send_rej(peer, REJ_CONSUMER_DEFINED, &[]);
            return Err(libc::EINVAL);
        }
        let (init, resp) = {
            let i = s.id(h);
            // librdmacm's rdma_accept: 0xff keeps what the request offered, within the device.
            i.init_depth = if p.initiator_depth == MAX_DEPTH {
                i.init_depth.min(max)
            } else {
                p.initiator_depth
            };
            i.resp_res = if p.responder_resources == MAX_DEPTH {
                i.resp_res.min(max)
            } else {
                p.responder_resources
            };
            i.qpn = p.qp_num;
            i.cm = Cm::RepSent;
            (i.init_depth, i.resp_res)
        };
        let my_psn = s.ids[&h].psn;
        let rnr = p.rnr_retry_count.min(7);
        let Some(a) = s.ids.get_mut(&peer) else {
            return Ok(());
        };
        if a.cm != Cm::ReqSent {
            return Ok(());
        }
        a.cm = Cm::RepRcvd;
        a.peer_qpn = p.qp_num;
        a.peer_psn = my_psn;
        // cm_rep_handler: the active side's view is the passive side's, swapped.
        a.init_depth = resp;
        a.resp_res = init;
        a.rnr_retry = rnr;
        if a.st != St::Connect {
            return Ok(());
        }
        s.deliver(peer, ev::RDMA_CM_EVENT_CONNECT_RESPONSE, 0, |e| {
            set_conn_data(e, data, REP_PRIVATE);
            // SAFETY: writing Copy fields of the `conn` member.
            unsafe {
                let c = &mut e.raw.param.conn;
                c.responder_resources = init;
                c.initiator_depth = resp;
                c.flow_control = p.flow_control;
                c.rnr_retry_count = rnr;
                c.srq = p.srq;
                c.qp_num = p.qp_num;
            }
        });
        Ok(())
    }

    unsafe fn reject(
        &self,
        id: *mut sys::rdma_cm_id,
        data: *const c_void,
        len: u8,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // SAFETY: caller's contract.
        let d = unsafe { user_data(data, len) };
        let (ud, cm, peer) = {
            let i = s.id(h);
            (i.ud, i.cm, i.peer)
        };
        if cm == Cm::None {
            return Err(libc::EINVAL);
        }
        if ud {
            if cm != Cm::SidrReqRcvd || d.len() > SIDR_REP_PRIVATE {
                return Err(libc::EINVAL);
            }
            s.id(h).cm = Cm::Idle;
            s.send_sidr_fail(peer, SIDR_REJECT, d);
            return Ok(());
        }
        if d.len() > REJ_PRIVATE
            || !matches!(cm, Cm::ReqSent | Cm::ReqRcvd | Cm::RepRcvd | Cm::RepSent)
        {
            return Err(libc::EINVAL);
        }
        s.id(h).cm = Cm::Idle;
        // ucma_reject: librdmacm's reason 0 is IB_CM_REJ_CONSUMER_DEFINED.
        s.send_rej(peer, REJ_CONSUMER_DEFINED, d);
        Ok(())
    }

    unsafe fn establish(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (st, cm, peer, ud) = {
            let i = s.id(h);
            (i.st, i.cm, i.peer, i.ud)
        };
        if st != St::Connect || ud {
            return Err(libc::EINVAL);
        }
        match cm {
            Cm::RepRcvd => {
                // The RTU.
                s.id(h).cm = Cm::Established;
                if let Some(p) = s.ids.get_mut(&peer) {
                    if p.cm == Cm::RepSent {
                        p.cm = Cm::Established;
                        if p.st == St::Connect {
                            s.deliver(peer, ev::RDMA_CM_EVENT_ESTABLISHED, 0, |_| {});
                        }
                    }
                }
                Ok(())
            }
            Cm::ReqRcvd => {
                // cma_rep_recv fails to send an RTU here and rejects the request.
                s.id(h).cm = Cm::Idle;
                s.send_rej(peer, REJ_CONSUMER_DEFINED, &[]);
                Err(libc::EINVAL)
            }
            _ => Err(libc::EINVAL),
        }
    }

    unsafe fn disconnect(&self, id: *mut sys::rdma_cm_id) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        let (cm, peer, on_device) = {
            let i = s.id(h);
            (i.cm, i.peer, i.on_device)
        };
        // librdmacm's ucma_shutdown needs the id's device; the kernel a CM id.
        if !on_device || cm == Cm::None {
            return Err(libc::EINVAL);
        }
        match cm {
            Cm::Established => {
                // DREQ.
                s.id(h).cm = Cm::DreqSent;
                if let Some(p) = s.ids.get_mut(&peer) {
                    if p.cm == Cm::Established {
                        p.cm = Cm::DreqRcvd;
                        s.peer_disconnected(peer);
                    }
                }
            }
            Cm::DreqRcvd => {
                // DREP: both ends are disconnected now, and wait in TIMEWAIT.
                s.enter_timewait(h);
                if s.ids.get(&peer).is_some_and(|p| p.cm == Cm::DreqSent) {
                    s.enter_timewait(peer);
                    s.peer_disconnected(peer);
                }
            }
            // rdma_disconnect succeeds whatever the CM state once the id has a CM id.
            _ => {}
        }
        Ok(())
    }

    unsafe fn init_qp_attr(
        &self,
        id: *mut sys::rdma_cm_id,
        attr: *mut sys::ibv_qp_attr,
        mask: *mut i32,
    ) -> Result<(), Errno> {
        let mut s = lock();
        // SAFETY: caller's contract.
        let h = unsafe { s.handle(id) }?;
        // SAFETY: caller's contract: readable and writable.
        let state = unsafe { (*attr).qp_state };
        let i = s.id(h);
        if !i.on_device {
            return Err(libc::EINVAL);
        }
        // SAFETY: ibv_qp_attr is plain C data; ucma_init_qp_attr zeroes it too.
        let mut a: sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
        a.qp_state = state;
        let m;
        use sys::ibv_qp_state::*;
        if i.ud || i.cm == Cm::None {
            // cma_ib_init_qp_attr, whatever the state asked for.
            a.pkey_index = 0;
            a.port_num = 1;
            let mut mm = STATE | PKEY_INDEX | PORT;
            if i.ud {
                a.qkey = UDP_QKEY;
                mm |= QKEY;
            } else {
                a.qp_access_flags = 0;
                mm |= ACCESS_FLAGS;
            }
            if state == IBV_QPS_RTR {
                a.rq_psn = i.peer_psn;
            }
            m = mm;
        } else {
            let connected = matches!(
                i.cm,
                Cm::ReqRcvd | Cm::RepSent | Cm::RepRcvd | Cm::Established
            );
            match state {
                IBV_QPS_INIT if connected || i.cm == Cm::ReqSent => {
                    a.qp_access_flags = REMOTE_WRITE;
                    if i.resp_res > 0 {
                        a.qp_access_flags |= REMOTE_READ | REMOTE_ATOMIC;
                    }
                    a.pkey_index = 0;
                    a.port_num = 1;
                    m = STATE | ACCESS_FLAGS | PKEY_INDEX | PORT;
                }
                IBV_QPS_RTR if connected => {
                    a.ah_attr = peer_ah();
                    a.path_mtu = super::ACTIVE_MTU;
                    a.dest_qp_num = i.peer_qpn;
                    a.rq_psn = i.peer_psn;
                    a.max_dest_rd_atomic = i.resp_res;
                    a.min_rnr_timer = 0;
                    m = STATE
                        | AV
                        | PATH_MTU
                        | DEST_QPN
                        | RQ_PSN
                        | MAX_DEST_RD_ATOMIC
                        | MIN_RNR_TIMER;
                }
                IBV_QPS_RTS if connected => {
                    a.sq_psn = i.psn;
                    a.retry_cnt = i.retry;
                    a.rnr_retry = i.rnr_retry;
                    a.max_rd_atomic = i.init_depth;
                    a.timeout = ACK_TIMEOUT;
                    m = STATE | SQ_PSN | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC | TIMEOUT;
                }
                _ => return Err(libc::EINVAL),
            }
        }
        // SAFETY: caller's contract: writable.
        unsafe {
            attr.write(a);
            mask.write(m);
        }
        Ok(())
    }

    unsafe fn get_cm_event(
        &self,
        ch: *mut sys::rdma_event_channel,
    ) -> Result<NonNull<sys::rdma_cm_event>, Errno> {
        loop {
            let q = {
                let mut s = lock();
                if !s.channels.contains_key(&(ch as usize)) {
                    return Err(libc::EINVAL);
                }
                // SAFETY: a live channel (just checked, under the lock that frees channels).
                let c = unsafe { channel(ch as usize) };
                if let Some(Ev(b)) = c.q.try_pop() {
                    // Counted under the lock destroy_id takes, before anything can look for
                    // it in the queue: the owner's destroy now waits for its ack.
                    if let Some(o) = s.ids.get_mut(&b.owner) {
                        o.reported += 1;
                        if b.child != 0 {
                            o.backlog += 1;
                        }
                    }
                    let p = Box::into_raw(b);
                    return Ok(NonNull::new(p.cast()).expect("not NULL"));
                }
                &c.q
            };
            // Unlocked: the channel stays live while the caller uses it (its contract).
            q.wait_readable()?;
        }
    }

    unsafe fn ack_cm_event(&self, e: *mut sys::rdma_cm_event) -> Result<(), Errno> {
        if e.is_null() {
            return Err(libc::EINVAL);
        }
        // SAFETY: caller's contract: an event get_cm_event returned (an EventBox made by
        // Box::into_raw), acked once.
        let b = unsafe { Box::from_raw(e as *mut EventBox) };
        let g = global();
        let mut s = g.m.lock();
        if let Some(o) = s.ids.get_mut(&b.owner) {
            o.acked += 1;
            g.acked.notify_all();
        }
        drop(s);
        drop(b);
        Ok(())
    }

    unsafe fn same_device(&self, id: *mut sys::rdma_cm_id, ctx: *mut sys::ibv_context) -> bool {
        let s = lock();
        // SAFETY: caller's contract.
        let Ok(h) = (unsafe { s.handle(id) }) else {
            return false;
        };
        let i = &s.ids[&h];
        if !i.on_device || ctx.is_null() {
            return false;
        }
        // SAFETY: the id's channel is live, and so is the context it was made for (the
        // typed layer's channel holds it); `ctx` is live (caller).
        unsafe {
            let chctx = channel(i.ch).ctx as *mut sys::ibv_context;
            !chctx.is_null() && (*chctx).device == (*ctx).device
        }
    }
}

/// The address vector of the peer as the CM gives it: global, with the port's GID (both ends
/// are on this device), SGID index 0, port 1.
fn peer_ah() -> sys::ibv_ah_attr {
    sys::ibv_ah_attr {
        grh: sys::ibv_global_route {
            dgid: sys::ibv_gid {
                raw: super::port_gid(),
            },
            flow_label: 0,
            sgid_index: 0,
            hop_limit: HOP_LIMIT,
            traffic_class: 0,
        },
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        is_global: 1,
        port_num: 1,
    }
}

/// The TIMEWAIT timers of every id: one thread, started with the first, that sleeps until the
/// earliest is due and then delivers its TIMEWAIT_EXIT (under the CM's lock, taken alone).
struct Timers {
    due: Mutex<std::collections::BinaryHeap<std::cmp::Reverse<(std::time::Instant, u64, u64)>>>,
    wake: Condvar,
    started: Mutex<bool>,
}

static TIMERS: Timers = Timers {
    due: Mutex::new(std::collections::BinaryHeap::new()),
    wake: Condvar::new(),
    started: Mutex::new(false),
};

/// Arms the timer that ends TIMEWAIT number `n` of id `h` at `at`. Called under the CM's lock
/// (the timers' lock comes after it). Without a thread (one cannot be made) the timer is
/// dropped: the id stays in TIMEWAIT, which only the missing event shows.
fn arm_timewait(at: std::time::Instant, h: u64, n: u64) {
    {
        let mut started = TIMERS.started.lock();
        if !*started {
            let spawned = std::thread::Builder::new()
                .name("typed-verbs-sw-cm".into())
                .spawn(|| TIMERS.run());
            if spawned.is_err() {
                return;
            }
            *started = true;
        }
    }
    TIMERS.due.lock().push(std::cmp::Reverse((at, h, n)));
    TIMERS.wake.notify_one();
}

impl Timers {
    fn run(&self) {
        loop {
            let (h, n) = {
                let mut due = self.due.lock();
                loop {
                    match due.peek() {
                        None => self.wake.wait(&mut due),
                        Some(&std::cmp::Reverse((at, h, n))) => {
                            if std::time::Instant::now() >= at {
                                due.pop();
                                break (h, n);
                            }
                            self.wake.wait_until(&mut due, at);
                        }
                    }
                }
            };
            // `due` is released: the CM's lock is taken alone.
            lock().timewait_exit(h, n);
        }
    }
}
