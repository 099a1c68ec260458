//! The software device: an in-process verbs provider, the crate's embedded default. It sits
//! below the typed layer, beside rdma-core: the typed layer reaches it through the seam
//! ([`ControlPath`] and the C structures' function pointers), and its test hooks through the
//! public module `typed_verbs::software` (src/software.rs), which turns the errnos here into
//! typed errors.
//!
//! It fills the very C structures a hardware provider fills (`ibv_device`, `ibv_context` with its
//! `ops`, `ibv_pd`, `ibv_comp_channel`, `ibv_cq_ex` with its polling function pointers, `ibv_srq`,
//! `ibv_qp`), so the typed layer's data path is the same code on it and on rdma-core. Its
//! control path (the crate's internal backend seam) follows the kernel's rules as
//! rxe shows them: EBUSY for an object still in use, EINVAL for a limit, EOPNOTSUPP for a flag the
//! device lacks, actual sizes rounded up as rxe rounds them.
//!
//! Its data path moves data as rxe does, synchronously and within the process: `ibv_post_send`,
//! `ibv_post_recv` and `ibv_post_srq_recv` deliver RC, UC and UD messages, RDMA reads and writes
//! and atomics between software QPs (of any context of any software device in the process),
//! checking keys and access rights and writing the completions rxe writes, errors and flushes
//! included (the model, and what it leaves out, is described in the `data` module's source).
//!
//! A device named [`DEFAULT_DEVICE`] with [`SwConfig::default`] is always in the device list.
//! [`register`] adds more, each with its own limits, so a test can make one behave like a given
//! real device. [`push`] puts a completion into a CQ, so polling can be tested without traffic.

// The connection manager (rdma_cm(7)): addresses, ids and their events, the CM's verbs.
mod cm;
// CQs: the ring, its readers (`start_poll`, `next_poll`, `read_*`), overruns.
mod cq;
// The data path: posts, deliveries between QPs, completions, RNR retries.
mod data;
// Async events and their queues.
mod events;
// PDs, address handles, completion channels, regions, SRQs and QPs.
mod objects;
#[cfg(test)]
pub(crate) use objects::{MrKeys, MAX_KEY_INDEX};

pub(crate) use cq::{has_overrun, lost_completions, push, Cqe, Pushed};

use crate::backend::{ControlPath, Errno};
use crate::ffi::sys;
use crate::ffi::wc_ex_flags as wcf;
use crate::sync::{Mutex, RwLock};
use std::collections::HashSet;
use std::os::raw::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, OnceLock};

/// The name of the software device that is always present.
pub const DEFAULT_DEVICE: &str = "sw0";

/// Limits and features of a software device. The defaults are documented on each field; they
/// follow what rxe reports where a test could notice the difference.
///
/// ```
/// use typed_verbs::software::{self, SwConfig};
/// // A software device with a small CQ limit and no completion timestamps.
/// let config = SwConfig { max_cqe: 64, wc_flags: typed_verbs::cq_ex::flags::STANDARD, ..SwConfig::default() };
/// software::register("sw-small", config)?;
/// let ctx = typed_verbs::Context::open("sw-small")?;
/// assert_eq!(ctx.attr().max_cqe, 64);
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SwConfig {
    /// `max_cqe`. Default 32767 (as rxe).
    pub max_cqe: u32,
    /// `max_qp_wr`. Default 16384.
    pub max_qp_wr: u32,
    /// `max_sge`. Default 32 (as rxe).
    pub max_sge: u32,
    /// `max_srq_wr`. Default 16384.
    pub max_srq_wr: u32,
    /// `max_srq_sge`. Default 27 (as rxe).
    pub max_srq_sge: u32,
    /// Largest `max_inline_data` a QP may ask for. Default 512.
    pub max_inline_data: u32,
    /// `num_comp_vectors` of a context. Default 2.
    pub num_comp_vectors: u32,
    /// `max_qp`, `max_cq`, `max_srq`, `max_pd`: how many of each a context may hold. Default 4096.
    pub max_objects: u32,
    /// `max_mcast_grp` and `max_mcast_qp_attach`. Default 64.
    pub max_mcast: u32,
    /// `gid_tbl_len` of port 1: index 0 holds the port's GID, the others none. Default 1024
    /// (as rxe's RXE_PORT_GID_TBL_LEN).
    pub gid_tbl_len: u32,
    /// The `IBV_WC_EX_WITH_*` bits `ibv_create_cq_ex` accepts; others fail with EOPNOTSUPP.
    /// Default: all eleven of the man page.
    pub wc_flags: u64,
    /// The `IBV_CREATE_CQ_ATTR_*` bits `ibv_create_cq_ex` accepts. Default: SINGLE_THREADED and
    /// IGNORE_OVERRUN.
    pub cq_create_flags: u32,
    /// Whether `ibv_alloc_parent_domain` works (and so `IBV_CQ_INIT_ATTR_MASK_PD`). Default true.
    pub parent_domain: bool,
    /// Whether RAW_PACKET QPs can be created. Default true.
    pub raw_packet: bool,
    /// Fault injection: the `IBV_WC_EX_WITH_*` bits whose `ibv_cq_ex` read function the device
    /// leaves NULL even when a CQ asks for the flag, as a faulty provider might. Default 0.
    pub missing_readers: u64,
    /// How long after an RC request is carried out its acknowledgement arrives and the request
    /// completes. Default zero: it completes at once, inside the call that carried it out. Above
    /// zero the completion is written later, by the device's timer thread, as rxe's completer
    /// writes it when the ACK (or the read or atomic response) comes: a completion caused by
    /// the peer's answer (its receive of a reply, say) can then be polled before the send's own,
    /// as on rxe, and a program that takes the next completion of a CQ shared by both queues for
    /// its send's is caught. The request stays at the head of its send queue until then (later
    /// ones wait behind it: one request in flight). For [`DEFAULT_DEVICE`] it is read from
    /// `TYPED_VERBS_SW_ACK_DELAY_US` (microseconds) when the device list is first made.
    pub ack_delay: std::time::Duration,
    /// How many times faster than real time the transport's timers run: the local ACK timeout
    /// of an RC request that gets no answer (4.096 µs × 2^`timeout`, `retry_cnt` times) and
    /// the RNR timer (`min_rnr_timer`, `rnr_retry` times). Default 1. A test of a dead peer
    /// with a program's real attributes (`timeout` 14: 67 ms a try) registers a device with,
    /// say, 64 and sees RETRY_EXC_ERR in milliseconds; the outcome (statuses, order, states) is
    /// the same at any speed. 0 counts as 1.
    pub timer_speedup: u32,
}

impl Default for SwConfig {
    fn default() -> Self {
        SwConfig {
            max_cqe: 32767,
            max_qp_wr: 16384,
            max_sge: 32,
            max_srq_wr: 16384,
            max_srq_sge: 27,
            max_inline_data: 512,
            num_comp_vectors: 2,
            max_objects: 4096,
            max_mcast: 64,
            gid_tbl_len: 1024,
            wc_flags: wcf::ALL,
            cq_create_flags: crate::ffi::CREATE_CQ_ATTR_SINGLE_THREADED
                | crate::ffi::CREATE_CQ_ATTR_IGNORE_OVERRUN,
            parent_domain: true,
            raw_packet: true,
            missing_readers: 0,
            ack_delay: std::time::Duration::ZERO,
            timer_speedup: 1,
        }
    }
}

impl SwConfig {
    /// The features rxe (rdma-core 44, Linux 6.1) has: only the standard wc_flags, no CQ create
    /// flags it honours, no parent domains, no RAW_PACKET QPs; limits as rxe0 reports them.
    ///
    /// ```
    /// use typed_verbs::software::{self, SwConfig};
    /// software::register("sw-rxe-doc", SwConfig::like_rxe())?;
    /// let ctx = typed_verbs::Context::open("sw-rxe-doc")?;
    /// let pd = typed_verbs::Pd::new(&ctx)?;
    /// assert!(typed_verbs::ParentDomain::new(&ctx, &pd).unwrap_err().is_unsupported());
    /// # Ok::<(), typed_verbs::Error>(())
    /// ```
    pub fn like_rxe() -> Self {
        SwConfig {
            max_qp_wr: 1 << 20,
            max_srq_wr: 1 << 20,
            wc_flags: wcf::STANDARD,
            cq_create_flags: crate::ffi::CREATE_CQ_ATTR_SINGLE_THREADED,
            parent_domain: false,
            raw_packet: false,
            ..SwConfig::default()
        }
    }
}

/// A registered software device. The `ibv_device` lives inside, at a stable address.
pub(crate) struct SwDevice {
    pub(crate) name: String,
    pub(crate) config: SwConfig,
    ibv: Box<sys::ibv_device>,
}

// SAFETY: the `ibv_device` is written once at registration and only read afterwards.
unsafe impl Send for SwDevice {}
// SAFETY: as above: immutable after construction.
unsafe impl Sync for SwDevice {}

impl SwDevice {
    fn new(name: &str, config: SwConfig) -> Self {
        // SAFETY: ibv_device is plain C data; all-zero is a valid (empty) value.
        let mut ibv: Box<sys::ibv_device> = Box::new(unsafe { std::mem::zeroed() });
        ibv.node_type = sys::ibv_node_type::IBV_NODE_CA;
        ibv.transport_type = sys::ibv_transport_type::IBV_TRANSPORT_IB;
        for (dst, src) in ibv.name.iter_mut().zip(name.bytes().take(63)) {
            *dst = src as std::os::raw::c_char;
        }
        ibv.dev_name = ibv.name;
        SwDevice {
            name: name.to_owned(),
            config,
            ibv,
        }
    }

    pub(crate) fn ibv_device(&self) -> *mut sys::ibv_device {
        &*self.ibv as *const sys::ibv_device as *mut sys::ibv_device
    }
}

fn devices_lock() -> &'static Mutex<Vec<Arc<SwDevice>>> {
    static DEVICES: OnceLock<Mutex<Vec<Arc<SwDevice>>>> = OnceLock::new();
    DEVICES.get_or_init(|| {
        let ack_delay = std::env::var("TYPED_VERBS_SW_ACK_DELAY_US")
            .ok()
            .and_then(|v| v.trim().parse().ok())
            .map_or(std::time::Duration::ZERO, std::time::Duration::from_micros);
        Mutex::new(vec![Arc::new(SwDevice::new(
            DEFAULT_DEVICE,
            SwConfig {
                ack_delay,
                ..SwConfig::default()
            },
        ))])
    })
}

/// The registered software devices, in registration order ([`DEFAULT_DEVICE`] first).
pub(crate) fn devices() -> Vec<Arc<SwDevice>> {
    devices_lock().lock().clone()
}

/// Adds a software device named `name` with `config` to the device list. It stays registered for
/// the life of the process, like a device that was plugged in.
///
/// Fails with EEXIST if a software device already has that name, and with EINVAL for an empty
/// name, a name of more than 63 bytes, a config with zero `num_comp_vectors`, `max_cqe` or
/// `gid_tbl_len`, or a
/// limit that `struct ibv_device_attr` cannot carry (its `int` fields: above `i32::MAX`).
pub(crate) fn register(name: &str, config: SwConfig) -> Result<(), Errno> {
    let bad = name.is_empty() || name.len() > 63 || name.contains('\0');
    let limits = [
        config.max_cqe,
        config.max_qp_wr,
        config.max_sge,
        config.max_srq_wr,
        config.max_srq_sge,
        config.max_inline_data,
        config.num_comp_vectors,
        config.max_objects,
        config.max_mcast,
        config.gid_tbl_len,
    ];
    let too_big = limits.iter().any(|&l| l > i32::MAX as u32);
    let zero = config.num_comp_vectors == 0 || config.max_cqe == 0 || config.gid_tbl_len == 0;
    if bad || too_big || zero {
        return Err(libc::EINVAL);
    }
    let mut devs = devices_lock().lock();
    if devs.iter().any(|d| d.name == name) {
        return Err(libc::EEXIST);
    }
    devs.push(Arc::new(SwDevice::new(name, config)));
    Ok(())
}

/// How many objects of each kind a software context holds now. Tests use it to show that no
/// error path leaks.
///
/// ```
/// let ctx = typed_verbs::Context::open("sw0")?;
/// let live = typed_verbs::software::live_objects(&ctx).expect("a software context");
/// assert_eq!((live.qps, live.cqs), (0, 0));
/// # Ok::<(), typed_verbs::Error>(())
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LiveObjects {
    /// Protection domains and parent domains.
    pub pds: u32,
    /// Completion channels.
    pub comp_channels: u32,
    /// CQs, legacy and extended.
    pub cqs: u32,
    /// Shared receive queues.
    pub srqs: u32,
    /// Queue pairs.
    pub qps: u32,
    /// Multicast attachments of QPs.
    pub mcast_attachments: u32,
    /// Memory regions.
    pub mrs: u32,
    /// Address handles.
    pub ahs: u32,
    /// rdma_cm event channels made for the context (`rdma_create_event_channel`).
    pub cm_channels: u32,
    /// rdma_cm ids on those channels, the new ids of connect requests included.
    pub cm_ids: u32,
}

#[derive(Default)]
pub(crate) struct Counters {
    pds: AtomicU32,
    comp_channels: AtomicU32,
    cqs: AtomicU32,
    srqs: AtomicU32,
    qps: AtomicU32,
    mcast: AtomicU32,
    mrs: AtomicU32,
    ahs: AtomicU32,
    cm_channels: AtomicU32,
    cm_ids: AtomicU32,
}

impl Counters {
    fn snapshot(&self) -> LiveObjects {
        LiveObjects {
            pds: self.pds.load(Ordering::Relaxed),
            comp_channels: self.comp_channels.load(Ordering::Relaxed),
            cqs: self.cqs.load(Ordering::Relaxed),
            srqs: self.srqs.load(Ordering::Relaxed),
            qps: self.qps.load(Ordering::Relaxed),
            mcast_attachments: self.mcast.load(Ordering::Relaxed),
            mrs: self.mrs.load(Ordering::Relaxed),
            ahs: self.ahs.load(Ordering::Relaxed),
            cm_channels: self.cm_channels.load(Ordering::Relaxed),
            cm_ids: self.cm_ids.load(Ordering::Relaxed),
        }
    }
}

/// A software context. `ibv` is first, so a `*mut ibv_context` of ours is a `*mut SwContext`.
#[repr(C)]
pub(crate) struct SwContext {
    ibv: sys::ibv_context,
    dev: Arc<SwDevice>,
    live: Counters,
    next_handle: AtomicU32,
    /// Registered memory by key (lkey = rkey, as rxe's MRs): where data movement looks.
    pub(crate) mrs: RwLock<std::collections::HashMap<u32, objects::MrEntry>>,
    /// The async events not yet read; its eventfd is `ibv.async_fd`. `None` if no eventfd could
    /// be made when the context was opened: then `async_fd` is -1 and reading fails with EBADF,
    /// as reading fd -1 would.
    async_events: Option<events::EventQueue<events::AsyncItem>>,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwContext, ibv), 0);

fn contexts() -> &'static RwLock<HashSet<usize>> {
    static CONTEXTS: OnceLock<RwLock<HashSet<usize>>> = OnceLock::new();
    CONTEXTS.get_or_init(Default::default)
}

/// Whether `ctx` is a context of the software device (the backend seam's one question).
pub(crate) fn owns_context(ctx: *mut sys::ibv_context) -> bool {
    contexts().read().contains(&(ctx as usize))
}

/// # Safety
/// `ctx` must be a live software context.
pub(crate) unsafe fn sw_context<'a>(ctx: *mut sys::ibv_context) -> &'a SwContext {
    // SAFETY: caller's contract; `ibv` is at offset 0 of the #[repr(C)] SwContext. Only the
    // Rust-side fields are read through this reference; the C part is accessed by raw pointer.
    unsafe { &*(ctx as *const SwContext) }
}

/// Opens a context on a software device.
pub(crate) fn open(dev: &Arc<SwDevice>) -> NonNull<sys::ibv_context> {
    // SAFETY: ibv_context is plain C data (pointers, ints, an opaque pthread mutex whose
    // all-zero value is PTHREAD_MUTEX_INITIALIZER on glibc); zero is a valid start.
    let mut ibv: sys::ibv_context = unsafe { std::mem::zeroed() };
    ibv.device = dev.ibv_device();
    ibv.cmd_fd = -1;
    let async_events = events::EventQueue::new().ok();
    ibv.async_fd = async_events.as_ref().map_or(-1, |q| q.raw_fd());
    ibv.num_comp_vectors = dev.config.num_comp_vectors as i32;
    ibv.ops.poll_cq = Some(cq::poll_cq);
    ibv.ops.req_notify_cq = Some(cq::req_notify_cq);
    ibv.ops.post_send = Some(data::post_send);
    ibv.ops.post_recv = Some(data::post_recv);
    ibv.ops.post_srq_recv = Some(data::post_srq_recv);
    let ctx = Box::new(SwContext {
        ibv,
        dev: dev.clone(),
        live: Counters::default(),
        next_handle: AtomicU32::new(1),
        mrs: RwLock::new(Default::default()),
        async_events,
    });
    let raw = Box::into_raw(ctx) as *mut sys::ibv_context;
    contexts().write().insert(raw as usize);
    // SAFETY: from Box::into_raw, never null.
    unsafe { NonNull::new_unchecked(raw) }
}

/// Raises the async event `event_type` about port `port` on a software context, as the kernel
/// reports a port's event: it waits until `ibv_get_async_event` reads it. Any value that names
/// no object may be raised, including one `enum ibv_event_type` does not have (a newer kernel's).
///
/// Fails with EINVAL for a type that names a CQ, QP, SRQ or WQ (it would need a live object) or
/// for port 0, and with EBADF for a context without an async event fd.
///
/// # Safety
/// `ctx` is a live software context.
pub(crate) unsafe fn raise_port_event(
    ctx: *mut sys::ibv_context,
    event_type: u32,
    port: u8,
) -> Result<(), Errno> {
    use crate::ffi::event_type::WQ_FATAL;
    if port == 0
        || event_type == WQ_FATAL
        || events::element_of(event_type) != events::Element::Other
    {
        return Err(libc::EINVAL);
    }
    // SAFETY: caller's contract.
    let c = unsafe { sw_context(ctx) };
    if c.async_events.is_none() {
        return Err(libc::EBADF);
    }
    c.raise(event_type, port.into());
    Ok(())
}

/// The objects a software context holds now; `None` for a context on a real device.
///
/// # Safety
/// `ctx` is a live context.
pub(crate) unsafe fn live_objects(ctx: *mut sys::ibv_context) -> Option<LiveObjects> {
    // SAFETY: a live context (caller's contract), checked to be ours first.
    owns_context(ctx).then(|| unsafe { sw_context(ctx) }.live.snapshot())
}

impl SwContext {
    fn config(&self) -> &SwConfig {
        &self.dev.config
    }
    fn handle(&self) -> u32 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// Raises the async event `ty` on `element` (an object of this context, or a port): it
    /// waits in the context's queue until `ibv_get_async_event` reads it.
    pub(crate) fn raise(&self, ty: u32, element: usize) {
        if let Some(q) = &self.async_events {
            q.push(events::AsyncItem { ty, element });
        }
    }

    /// Drops the unread async events of `element` (an object being destroyed), as the kernel
    /// does when it destroys an object.
    pub(crate) fn forget_async_events(&self, element: usize) {
        if let Some(q) = &self.async_events {
            q.remove(|e| {
                e.element == element && events::element_of(e.ty) != events::Element::Other
            });
        }
    }
}

/// The read/ack counts of the object an async event names, if it names one.
///
/// # Safety
/// The object is live.
unsafe fn event_counts<'a>(ty: u32, element: usize) -> Option<&'a events::EventCounts> {
    // SAFETY: caller's contract: the element is a live object of the kind its type names.
    unsafe {
        match events::element_of(ty) {
            events::Element::Cq => Some(cq::event_counts(element as *mut sys::ibv_cq)),
            events::Element::Qp => Some(objects::qp_event_counts(element as *mut sys::ibv_qp)),
            events::Element::Srq => Some(objects::srq_event_counts(element as *mut sys::ibv_srq)),
            events::Element::Other => None,
        }
    }
}

/// Takes one unit of a context's quota `counter`, or fails with ENOMEM when the device's
/// `max_objects` are all in use.
fn take(counter: &AtomicU32, max: u32) -> Result<(), Errno> {
    counter
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
            (n < max).then_some(n + 1)
        })
        .map(drop)
        .map_err(|_| libc::ENOMEM)
}

fn give(counter: &AtomicU32) {
    counter.fetch_sub(1, Ordering::AcqRel);
}

/// The port's active MTU (`enum ibv_mtu`): 1024 bytes, as rxe0's over a 1500-byte netdev. It
/// is also the largest UD message.
pub(crate) const ACTIVE_MTU: u32 = sys::ibv_mtu::IBV_MTU_1024;

/// Rounds a queue size up as rxe does (rxe_queue_init): the ring holds a power of two slots,
/// one kept empty. A size of 0 stays 0 (one slot, always empty): such a queue takes nothing.
pub(crate) fn rxe_round(n: u32) -> u32 {
    (n as u64 + 1).next_power_of_two() as u32 - 1
}

pub(crate) struct Software;
pub(crate) static SOFTWARE: Software = Software;

#[cfg(test)]
thread_local! {
    /// The `query_device` and `query_port` calls this thread made, for the crate's tests that
    /// the typed layer reads a context's limits once rather than per call.
    pub(crate) static QUERIES: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}

impl ControlPath for Software {
    unsafe fn close_device(&self, ctx: *mut sys::ibv_context) -> Result<(), Errno> {
        // SAFETY: live software context (caller's contract).
        let live = unsafe { sw_context(ctx) }.live.snapshot();
        if live != LiveObjects::default() {
            return Err(libc::EBUSY);
        }
        contexts().write().remove(&(ctx as usize));
        // SAFETY: allocated by `open` with Box::into_raw; removed from the registry first, so
        // nothing finds it any more.
        drop(unsafe { Box::from_raw(ctx as *mut SwContext) });
        Ok(())
    }

    unsafe fn query_device(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut sys::ibv_device_attr,
    ) -> Result<(), Errno> {
        #[cfg(test)]
        QUERIES.with(|q| q.set(q.get() + 1));
        // SAFETY: live context, `out` valid for writes.
        let c = unsafe { sw_context(ctx) }.config();
        // SAFETY: ibv_device_attr is plain C data.
        let mut a: sys::ibv_device_attr = unsafe { std::mem::zeroed() };
        for (dst, src) in a.fw_ver.iter_mut().zip(env!("CARGO_PKG_VERSION").bytes()) {
            *dst = src as std::os::raw::c_char;
        }
        a.max_mr_size = u64::MAX;
        a.page_size_cap = 0xffff_f000;
        a.max_qp = c.max_objects as i32;
        a.max_qp_wr = c.max_qp_wr as i32;
        a.max_sge = c.max_sge as i32;
        a.max_sge_rd = c.max_sge as i32;
        a.max_cq = c.max_objects as i32;
        a.max_cqe = c.max_cqe as i32;
        a.max_mr = c.max_objects as i32;
        a.max_pd = c.max_objects as i32;
        a.max_qp_rd_atom = objects::MAX_QP_RD_ATOM.into();
        a.max_qp_init_rd_atom = objects::MAX_QP_RD_ATOM.into();
        a.max_res_rd_atom = 128;
        a.atomic_cap = sys::ibv_atomic_cap::IBV_ATOMIC_HCA;
        a.max_mcast_grp = c.max_mcast as i32;
        a.max_mcast_qp_attach = c.max_mcast as i32;
        a.max_total_mcast_qp_attach = c.max_mcast as i32;
        a.max_ah = c.max_objects as i32;
        a.max_srq = c.max_objects as i32;
        a.max_srq_wr = c.max_srq_wr as i32;
        a.max_srq_sge = c.max_srq_sge as i32;
        a.max_pkeys = 1;
        a.local_ca_ack_delay = 15;
        a.phys_port_cnt = 1;
        // SAFETY: `out` valid for writes (caller's contract).
        unsafe { out.write(a) };
        Ok(())
    }

    unsafe fn query_port(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        out: *mut sys::ibv_port_attr,
    ) -> Result<(), Errno> {
        #[cfg(test)]
        QUERIES.with(|q| q.set(q.get() + 1));
        // SAFETY: live context (caller's contract).
        let gids = unsafe { sw_context(ctx) }.config().gid_tbl_len;
        if port != 1 {
            return Err(libc::EINVAL);
        }
        // SAFETY: ibv_port_attr is plain C data.
        let mut p: sys::ibv_port_attr = unsafe { std::mem::zeroed() };
        p.state = sys::ibv_port_state::IBV_PORT_ACTIVE;
        p.max_mtu = sys::ibv_mtu::IBV_MTU_4096;
        p.active_mtu = ACTIVE_MTU;
        p.gid_tbl_len = gids as i32; // at most i32::MAX (register)
        p.max_msg_sz = 1 << 31;
        p.pkey_tbl_len = 1;
        p.phys_state = 5; // LinkUp
        p.link_layer = 2; // IBV_LINK_LAYER_ETHERNET (RoCE, as rxe)
                          // SAFETY: `out` valid for writes.
        unsafe { out.write(p) };
        Ok(())
    }

    unsafe fn alloc_pd(&self, ctx: *mut sys::ibv_context) -> Result<NonNull<sys::ibv_pd>, Errno> {
        // SAFETY: live context.
        unsafe { objects::alloc_pd(ctx, std::ptr::null_mut()) }
    }

    unsafe fn alloc_parent_domain(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_parent_domain_init_attr,
    ) -> Result<NonNull<sys::ibv_pd>, Errno> {
        // SAFETY: live context, attr valid for reads.
        let (c, a) = unsafe { (sw_context(ctx), &*attr) };
        if !c.config().parent_domain || a.comp_mask != 0 || !a.td.is_null() {
            return Err(libc::EOPNOTSUPP);
        }
        if a.pd.is_null() || objects::is_parent_domain(a.pd) {
            return Err(libc::EINVAL);
        }
        // SAFETY: live context; a.pd is a plain PD of it.
        unsafe { objects::alloc_pd(ctx, a.pd) }
    }

    unsafe fn dealloc_pd(&self, pd: *mut sys::ibv_pd) -> Result<(), Errno> {
        // SAFETY: live PD.
        unsafe { objects::dealloc_pd(pd) }
    }

    unsafe fn reg_mr(
        &self,
        pd: *mut sys::ibv_pd,
        addr: *mut c_void,
        len: usize,
        iova: u64,
        access: i32,
    ) -> Result<NonNull<sys::ibv_mr>, Errno> {
        // SAFETY: live PD.
        unsafe { objects::reg_mr(pd, addr, len, iova, access) }
    }

    unsafe fn dereg_mr(&self, mr: *mut sys::ibv_mr) -> Result<(), Errno> {
        // SAFETY: live MR.
        unsafe { objects::dereg_mr(mr) }
    }

    unsafe fn create_comp_channel(
        &self,
        ctx: *mut sys::ibv_context,
    ) -> Result<NonNull<sys::ibv_comp_channel>, Errno> {
        // SAFETY: live context.
        unsafe { objects::create_comp_channel(ctx) }
    }

    unsafe fn destroy_comp_channel(&self, ch: *mut sys::ibv_comp_channel) -> Result<(), Errno> {
        // SAFETY: live channel.
        unsafe { objects::destroy_comp_channel(ch) }
    }

    unsafe fn create_cq(
        &self,
        ctx: *mut sys::ibv_context,
        cqe: i32,
        cq_context: *mut c_void,
        channel: *mut sys::ibv_comp_channel,
        comp_vector: i32,
    ) -> Result<NonNull<sys::ibv_cq>, Errno> {
        // A legacy CQ is an extended CQ with the standard fields, polled with ibv_poll_cq.
        if cqe < 1 || comp_vector < 0 {
            return Err(libc::EINVAL);
        }
        let mut attr = sys::ibv_cq_init_attr_ex {
            cqe: cqe as u32,
            cq_context,
            channel,
            comp_vector: comp_vector as u32,
            wc_flags: 0,
            comp_mask: 0,
            flags: 0,
            parent_domain: std::ptr::null_mut(),
        };
        // SAFETY: live context; attr valid.
        unsafe { cq::create(ctx, &mut attr, true) }.map(|p| p.cast())
    }

    unsafe fn create_cq_ex(
        &self,
        ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_cq_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_cq_ex>, Errno> {
        // SAFETY: live context; attr valid.
        unsafe { cq::create(ctx, attr, false) }
    }

    unsafe fn destroy_cq(&self, cq: *mut sys::ibv_cq) -> Result<(), Errno> {
        // The destroy waits for the acks of the CQ's async events: the typed layer acks the
        // ones it holds before it calls this (crate::raw::destroying::destroy_cq).
        // SAFETY: live CQ.
        unsafe { cq::destroy(cq) }
    }

    unsafe fn get_cq_event(
        &self,
        ch: *mut sys::ibv_comp_channel,
    ) -> Result<(NonNull<sys::ibv_cq>, *mut c_void), Errno> {
        // SAFETY: live channel.
        unsafe { objects::get_cq_event(ch) }
    }

    unsafe fn ack_cq_events(&self, cq: *mut sys::ibv_cq, n: u32) {
        // SAFETY: live CQ.
        unsafe { cq::event_counts(cq) }.ack_comp(n)
    }

    unsafe fn get_async_event(
        &self,
        ctx: *mut sys::ibv_context,
        out: *mut crate::ffi::RawAsyncEvent,
    ) -> Result<(), Errno> {
        // SAFETY: live context.
        let c = unsafe { sw_context(ctx) };
        let q = c.async_events.as_ref().ok_or(libc::EBADF)?;
        // An object's queued events are dropped, under the queue's lock, before it is
        // destroyed; so the element of a queued event is live when it is read, and counting it
        // as read makes its destroy wait for the ack.
        let e = q.pop(|e| {
            // SAFETY: as just said.
            if let Some(n) = unsafe { event_counts(e.ty, e.element) } {
                n.async_read()
            }
        })?;
        // Zeroed first and each member written in place, so the union's bytes are all
        // initialised whichever member the type names.
        let mut ev = crate::ffi::RawAsyncEvent::zeroed();
        ev.event_type = e.ty;
        match events::element_of(e.ty) {
            events::Element::Cq => ev.element.cq = e.element as *mut sys::ibv_cq,
            events::Element::Qp => ev.element.qp = e.element as *mut sys::ibv_qp,
            events::Element::Srq => ev.element.srq = e.element as *mut sys::ibv_srq,
            events::Element::Other => ev.element.port_num = e.element as i32,
        }
        // SAFETY: `out` valid for writes (caller's contract).
        unsafe { out.write(ev) };
        Ok(())
    }

    unsafe fn ack_async_event(&self, ev: *mut crate::ffi::RawAsyncEvent) {
        // SAFETY: an event get_async_event returned, not yet acked: its object is live (its
        // destroy waits for this ack), and the union member read is the one written for the
        // event's type.
        unsafe {
            let ty = (*ev).event_type;
            let element = match events::element_of(ty) {
                events::Element::Cq => (*ev).element.cq as usize,
                events::Element::Qp => (*ev).element.qp as usize,
                events::Element::Srq => (*ev).element.srq as usize,
                events::Element::Other => return,
            };
            if let Some(n) = event_counts(ty, element) {
                n.ack_async()
            }
        }
    }

    unsafe fn create_srq(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_srq_init_attr,
    ) -> Result<NonNull<sys::ibv_srq>, Errno> {
        // SAFETY: live PD, attr valid.
        unsafe { objects::create_srq(pd, attr) }
    }

    unsafe fn modify_srq(
        &self,
        srq: *mut sys::ibv_srq,
        attr: *mut sys::ibv_srq_attr,
        mask: i32,
    ) -> Result<(), Errno> {
        // SAFETY: live SRQ, attr valid.
        unsafe { objects::modify_srq(srq, attr, mask) }
    }

    unsafe fn query_srq(
        &self,
        srq: *mut sys::ibv_srq,
        out: *mut sys::ibv_srq_attr,
    ) -> Result<(), Errno> {
        // SAFETY: live SRQ, out valid.
        unsafe { objects::query_srq(srq, out) }
    }

    unsafe fn destroy_srq(&self, srq: *mut sys::ibv_srq) -> Result<(), Errno> {
        // As destroy_cq: the typed layer acks the SRQ's async events it holds first.
        // SAFETY: live SRQ.
        unsafe { objects::destroy_srq(srq) }
    }

    unsafe fn create_qp(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_qp_init_attr,
    ) -> Result<NonNull<sys::ibv_qp>, Errno> {
        // SAFETY: live PD, attr valid.
        unsafe { objects::create_qp(pd, attr) }
    }

    unsafe fn create_qp_ex(
        &self,
        _ctx: *mut sys::ibv_context,
        attr: *mut sys::ibv_qp_init_attr_ex,
    ) -> Result<NonNull<sys::ibv_qp>, Errno> {
        use sys::ibv_qp_init_attr_mask as m;
        // SAFETY: caller's contract.
        let a = unsafe { &mut *attr };
        if a.comp_mask == m::IBV_QP_INIT_ATTR_PD.0 {
            // As verbs.h: the legacy create, whose attributes are the prefix of `attr`.
            // SAFETY: caller's contract; ibv_qp_init_attr is the prefix of ibv_qp_init_attr_ex.
            return unsafe { objects::create_qp(a.pd, attr.cast()) };
        }
        // What rxe's create_qp_ex takes (RXE_QP_COMP_MASK_SUP of rdma-core 44): the PD, creation
        // flags (none supported) and the send operations; anything else EOPNOTSUPP, as its
        // check_qp_init_attr answers.
        let known = m::IBV_QP_INIT_ATTR_PD.0
            | m::IBV_QP_INIT_ATTR_CREATE_FLAGS.0
            | m::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
        if a.comp_mask & !known != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        if a.comp_mask & m::IBV_QP_INIT_ATTR_CREATE_FLAGS.0 != 0 && a.create_flags != 0 {
            return Err(libc::EOPNOTSUPP);
        }
        if a.comp_mask & m::IBV_QP_INIT_ATTR_PD.0 == 0 || a.pd.is_null() {
            return Err(libc::EINVAL);
        }
        let send_ops = if a.comp_mask & m::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0 != 0 {
            // SAFETY: caller's contract: a live PD of this device, whose context is live.
            let raw_packet = unsafe { sw_context((*a.pd).context) }.config().raw_packet;
            let sup = objects::supported_send_ops(a.qp_type, raw_packet);
            // Stricter than rxe, which takes an empty set: a QP with no operation to build.
            if a.send_ops_flags == 0 || a.send_ops_flags & !sup != 0 {
                return Err(libc::EOPNOTSUPP);
            }
            Some(a.send_ops_flags)
        } else {
            None
        };
        // SAFETY: caller's contract; ibv_qp_init_attr is the prefix of ibv_qp_init_attr_ex.
        unsafe { objects::create_qp_with(a.pd, attr.cast(), send_ops) }
    }
    unsafe fn qp_to_qp_ex(&self, qp: *mut sys::ibv_qp) -> *mut sys::ibv_qp_ex {
        // SAFETY: caller's contract: a live QP of this device.
        unsafe { objects::qp_to_qp_ex(qp) }
    }
    unsafe fn query_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
        init: *mut sys::ibv_qp_init_attr,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, out-pointers valid.
        unsafe { objects::query_qp(qp, attr, mask, init) }
    }

    unsafe fn modify_qp(
        &self,
        qp: *mut sys::ibv_qp,
        attr: *mut sys::ibv_qp_attr,
        mask: i32,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, attr readable.
        unsafe { objects::modify_qp(qp, attr, mask) }
    }

    unsafe fn query_gid(
        &self,
        ctx: *mut sys::ibv_context,
        port: u8,
        index: i32,
        out: *mut sys::ibv_gid,
    ) -> Result<(), Errno> {
        // SAFETY: live context (caller's contract).
        let gids = unsafe { sw_context(ctx) }.config().gid_tbl_len;
        if port != 1 {
            return Err(libc::EINVAL);
        }
        // rdma-core's ibv_query_gid: "Preserve API behavior for empty GID": the kernel's
        // ENODATA for an entry that holds no GID is a zero GID; past the table, EINVAL.
        let raw = match gid_entry(index, gids) {
            Ok(gid) => gid,
            Err(libc::ENODATA) => [0; 16],
            Err(e) => return Err(e),
        };
        // SAFETY: `out` valid for writes.
        unsafe { out.write(sys::ibv_gid { raw }) };
        Ok(())
    }

    unsafe fn destroy_qp(&self, qp: *mut sys::ibv_qp) -> Result<(), Errno> {
        // As destroy_cq: the typed layer acks the QP's async events it holds first.
        // SAFETY: live QP.
        unsafe { objects::destroy_qp(qp) }
    }

    unsafe fn create_ah(
        &self,
        pd: *mut sys::ibv_pd,
        attr: *mut sys::ibv_ah_attr,
    ) -> Result<NonNull<sys::ibv_ah>, Errno> {
        // SAFETY: live PD, attr readable.
        unsafe { objects::create_ah(pd, attr) }
    }

    unsafe fn destroy_ah(&self, ah: *mut sys::ibv_ah) -> Result<(), Errno> {
        // SAFETY: live AH.
        unsafe { objects::destroy_ah(ah) }
    }

    unsafe fn attach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, gid readable.
        unsafe { objects::attach_mcast(qp, gid, lid) }
    }

    unsafe fn detach_mcast(
        &self,
        qp: *mut sys::ibv_qp,
        gid: *const sys::ibv_gid,
        lid: u16,
    ) -> Result<(), Errno> {
        // SAFETY: live QP, gid readable.
        unsafe { objects::detach_mcast(qp, gid, lid) }
    }
}

/// The GID at `index` of port 1, whose table has `len` entries of which only index 0 holds a
/// GID, as the kernel's rdma_get_gid_attr finds it: EINVAL past the table ("if (index < 0 ||
/// index >= table->sz) return ERR_PTR(-EINVAL)"), ENODATA for an entry that holds no GID.
pub(crate) fn gid_entry(index: i32, len: u32) -> Result<[u8; 16], Errno> {
    match u32::try_from(index) {
        Ok(0) => Ok(port_gid()),
        Ok(i) if i < len => Err(libc::ENODATA),
        _ => Err(libc::EINVAL),
    }
}

/// The GID at index 0 of port 1 (the only one): a link-local RoCE GID, as rxe's index 0
/// (fe80::/64 with an EUI-64 of its own).
pub(crate) fn port_gid() -> [u8; 16] {
    let mut raw = [0u8; 16];
    raw[0] = 0xfe;
    raw[1] = 0x80;
    raw[8..].copy_from_slice(&[0x02, 0x00, 0x5e, 0xff, 0xfe, 0x00, 0x00, 0x01]);
    raw
}

/// The timers of a timer thread (the CM's TIMEWAIT timers, the RNR timers): (when, whose,
/// which arming), a min-heap by time.
type Due<K> = Mutex<std::collections::BinaryHeap<std::cmp::Reverse<(std::time::Instant, K, u64)>>>;

/// A timer thread's wait: sleeps on `wake` until the earliest timer in `due` is due, takes it
/// out and returns whose it is and which arming. `due` is locked only inside (released while
/// it sleeps, and on return), so the caller then takes its own locks alone.
fn next_due<K: Ord + Copy>(due: &Due<K>, wake: &crate::sync::Condvar) -> (K, u64) {
    let mut due = due.lock();
    loop {
        match due.peek() {
            None => wake.wait(&mut due),
            Some(&std::cmp::Reverse((at, k, n))) => {
                if std::time::Instant::now() >= at {
                    due.pop();
                    return (k, n);
                }
                wake.wait_until(&mut due, at);
            }
        }
    }
}

/// The software device's connection manager (rdma_cm within the process: the `cm` module).
#[allow(dead_code)]
pub(crate) fn cm() -> Option<&'static dyn super::CmPath> {
    Some(&cm::SOFTWARE_CM)
}

/// Whether `ch` is an event channel of the software device's connection manager.
pub(crate) fn owns_cm_channel(ch: *mut sys::rdma_event_channel) -> bool {
    cm::owns_channel(ch)
}
