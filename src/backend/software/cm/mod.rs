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

/// Addresses: what an id binds and resolves (IPv4 and IPv6 on the software device's ports).
mod addr;
/// The verbs of rdma_cm(7) for the software device (its CmPath).
mod path;
/// The connection manager's state: ids, channels and their events, and how an event is made.
mod state;
/// Timers: TIMEWAIT_EXIT after a disconnect.
mod timers;

use addr::*;
use state::*;
use timers::*;

use super::events::EventQueue;
use crate::backend::{CmPath, Errno};
use crate::ffi::sys;
use crate::sync::{Condvar, Mutex, MutexGuard};
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
/// rdma_cma.h's option level `RDMA_OPTION_ID` and its option `RDMA_OPTION_ID_ACK_TIMEOUT`
/// (a `uint8_t`).
const OPTION_ID: i32 = 0;
const OPTION_ID_ACK_TIMEOUT: i32 = 3;
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
    /// The ACK timeout `rdma_set_option(RDMA_OPTION_ID_ACK_TIMEOUT)` set, which the RTS
    /// attributes give instead of the path's (cma.c's `timeout_set`). Not inherited by a
    /// listener's new ids.
    ack_timeout: Option<u8>,
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
