//! Queue pairs: create, query, the state machine of ibv_modify_qp, destroy, multicast.

use super::*;

/// A value that starts a cache line (64 bytes) of its own.
#[repr(align(64))]
pub(in crate::backend::software) struct CacheLine<T>(pub(in crate::backend::software) T);
impl<T> std::ops::Deref for CacheLine<T> {
    type Target = T;
    fn deref(&self) -> &T {
        &self.0
    }
}

/// `VERBS_QP_EX` of libibverbs' `struct verbs_qp` (driver.h, `enum verbs_qp_mask`: `VERBS_QP_XRCD` is
/// `1 << 0`): the QP has a `struct ibv_qp_ex`.
pub(in crate::backend::software) const VERBS_QP_EX: u32 = 1 << 1;

/// A queue pair. It starts as libibverbs' `struct verbs_qp` does (driver.h: a union of
/// `ibv_qp` and `ibv_qp_ex`, then `uint32_t comp_mask` and `struct verbs_xrcd *xrcd`), so that
/// libibverbs' own `ibv_qp_to_qp_ex` would answer as `qp_to_qp_ex` does.
#[repr(C)]
pub(in crate::backend::software) struct SwQp {
    /// The extended QP, whose `qp_base` (at offset 0) is the `ibv_qp`. Its operations are set
    /// only for a QP created with `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`.
    pub(in crate::backend::software) ibv: sys::ibv_qp_ex,
    /// `verbs_qp.comp_mask`: [`VERBS_QP_EX`] for an extended QP. Never written after creation.
    pub(in crate::backend::software) vqp_comp_mask: u32,
    /// `verbs_qp.xrcd`: always NULL (no XRC).
    vqp_xrcd: *mut std::os::raw::c_void,
    ctx: *mut SwContext,
    /// The actual capabilities (the rings' sizes).
    pub(in crate::backend::software) cap: sys::ibv_qp_cap,
    pub(in crate::backend::software) sq_sig_all: c_int,
    mcast: Mutex<Vec<([u8; 16], u16)>>,
    /// The attributes set by ibv_modify_qp (state included), under one lock. The state is the
    /// kernel's: the data path moves it to ERR after an error completion.
    pub(in crate::backend::software) attr: Mutex<sys::ibv_qp_attr>,
    /// The port the last successful modify with `IBV_QP_PORT` gave the QP, 0 before any: the
    /// kernel's `qp->port`, which a move to RESET keeps. Written under `attr`'s lock.
    port: AtomicU8,
    /// Whether the QP's responder takes requests: rxe's `resp.state` is READY from a move to
    /// RTR until one to RESET, INIT or ERR. The QP's state says the same except for a QP
    /// moved out of RESET, INIT or ERR by a modify whose `IBV_QP_CUR_STATE` names another
    /// state: rxe then moves only what the new state sets (RTS: the requester), and a QP forced
    /// from ERR to RTS sends while its responder drops every request. Written under `attr`'s
    /// lock.
    resp_ready: AtomicBool,
    /// The send and receive queues (see `data`), on their own cache line: the data path locks
    /// them several times per request, and the RC loopback rate changed by 8% with the size of
    /// the fields before them.
    pub(in crate::backend::software) queues: CacheLine<Mutex<Queues>>,
    /// Async events of this QP read and acked.
    events: EventCounts,
    /// The extended QP's batch (used only with [`VERBS_QP_EX`]).
    pub(in crate::backend::software) qpx: data::QpEx,
}
static_assertions::const_assert_eq!(std::mem::offset_of!(SwQp, ibv), 0);
static_assertions::const_assert_eq!(std::mem::offset_of!(sys::ibv_qp_ex, qp_base), 0);
// verbs_qp's layout, measured by build.rs from a copy of driver.h's definition.
static_assertions::const_assert_eq!(
    std::mem::offset_of!(SwQp, vqp_comp_mask),
    crate::ffi::c::OFFSETOF_verbs_qp_comp_mask
);
static_assertions::const_assert_eq!(
    std::mem::offset_of!(SwQp, vqp_xrcd),
    crate::ffi::c::OFFSETOF_verbs_qp_xrcd
);

impl SwQp {
    /// Whether the responder takes requests (see `resp_ready`); the state is checked apart.
    pub(in crate::backend::software) fn resp_ready(&self) -> bool {
        self.resp_ready.load(Ordering::Relaxed)
    }
}

/// The read/ack counts of a software QP's async events.
///
/// # Safety
/// `qp` live software QP.
pub(in crate::backend::software) unsafe fn qp_event_counts<'a>(
    qp: *mut sys::ibv_qp,
) -> &'a EventCounts {
    // SAFETY: caller's contract.
    unsafe { &(*(qp as *mut SwQp)).events }
}

/// # Safety
/// `pd` live software PD; `attr` valid for reads and writes; its CQs and SRQ live objects of
/// the same context or null.
pub(in crate::backend::software) unsafe fn create_qp(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
) -> Result<NonNull<sys::ibv_qp>, Errno> {
    // SAFETY: the caller's contract.
    unsafe { create_qp_with(pd, attr, None) }
}

/// `create_qp`, and for `Some(send_ops_flags)` (checked by the caller against the QP type) an
/// extended QP with the builders of those operations.
///
/// # Safety
/// As `create_qp`.
pub(in crate::backend::software) unsafe fn create_qp_with(
    pd: *mut sys::ibv_pd,
    attr: *mut sys::ibv_qp_init_attr,
    send_ops: Option<u64>,
) -> Result<NonNull<sys::ibv_qp>, Errno> {
    use sys::ibv_qp_type::*;
    // SAFETY: caller's contract.
    let ((ctx, c), a) = unsafe { (pd_context(pd), &mut *attr) };
    let cfg = c.config();
    match a.qp_type {
        IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_UD => {}
        IBV_QPT_RAW_PACKET if cfg.raw_packet => {}
        _ => return Err(libc::EOPNOTSUPP),
    }
    if is_parent_domain(pd) {
        return Err(libc::EINVAL);
    }
    if a.send_cq.is_null() || a.recv_cq.is_null() {
        return Err(libc::EINVAL);
    }
    // SAFETY: non-null CQs and SRQ are live objects (caller's contract).
    let foreign = unsafe {
        (*a.send_cq).context != ctx
            || (*a.recv_cq).context != ctx
            || (!a.srq.is_null() && (*a.srq).context != ctx)
    };
    if foreign {
        return Err(libc::EINVAL);
    }
    // ibv_create_qp(3): "will fail if it is asked to create QP of a type other than
    // IBV_QPT_RC or IBV_QPT_UD associated with an SRQ". rxe (Linux 6.1) creates a UC QP with an
    // SRQ all the same, and the software device answers as rxe does; the typed layer keeps the
    // man page's rule (only RC and UD take an SRQ), which holds on every device.
    if !a.srq.is_null() && !matches!(a.qp_type, IBV_QPT_RC | IBV_QPT_UC | IBV_QPT_UD) {
        return Err(libc::EINVAL);
    }
    let cap = &mut a.cap;
    let with_srq = !a.srq.is_null();
    if cap.max_send_wr > cfg.max_qp_wr
        || cap.max_send_sge > cfg.max_sge
        || cap.max_inline_data > cfg.max_inline_data
        || (!with_srq && (cap.max_recv_wr > cfg.max_qp_wr || cap.max_recv_sge > cfg.max_sge))
    {
        return Err(libc::EINVAL);
    }
    if a.qp_type == IBV_QPT_RC {
        // RC QPs get RNR NAKs, whose retries the timer thread makes: started here, where a
        // thread that cannot start is an error (EAGAIN), not inside a post.
        super::super::data::start_rnr_timer()?;
    }
    take(&c.live.qps, cfg.max_objects)?;
    // Actual values, as rxe computes them: rings rounded up to a power of two less one; a send
    // WQE holds max(sge * 16, inline) bytes, which sets both the SGE count and the inline size.
    let (asked_send_wr, asked_recv_wr) = (cap.max_send_wr, cap.max_recv_wr);
    let sge_bytes = std::mem::size_of::<sys::ibv_sge>() as u32;
    // Saturating: a device registered with a huge `max_sge` must not overflow (a panic here
    // would be a failed create of the control path, not a WQE size).
    let wqe = cap
        .max_send_sge
        .saturating_mul(sge_bytes)
        .max(cap.max_inline_data);
    cap.max_send_sge = wqe / sge_bytes;
    cap.max_inline_data = wqe;
    let mut ring = *cap;
    ring.max_send_wr = rxe_round(asked_send_wr);
    if with_srq {
        // ibv_create_qp(3): "max_recv_wr and max_recv_sge are ignored ... with an SRQ": the QP
        // has no receive queue (ibv_query_qp reports 0), while ibv_create_qp, as rxe's, hands
        // back the two values as they were asked.
        ring.max_recv_wr = 0;
        ring.max_recv_sge = 0;
    } else {
        // rxe's receive queue holds max_recv_sge SGEs as asked, 0 included (then a receive
        // with an SGE is refused).
        ring.max_recv_wr = rxe_round(asked_recv_wr);
    }
    // The rings are what ibv_query_qp reports; ibv_create_qp, as rxe's, reports the work request
    // counts as asked (and the SGE and inline sizes as computed).
    cap.max_send_wr = asked_send_wr;
    // SAFETY: live objects of this context (checked above).
    unsafe {
        pd_use(pd, 1);
        super::super::cq::cq_use(a.send_cq, 1);
        super::super::cq::cq_use(a.recv_cq, 1);
        if with_srq {
            adjust(&(*(a.srq as *mut SwSrq)).usecnt, 1);
        }
    }
    static NEXT_QPN: AtomicU32 = AtomicU32::new(17);
    // SAFETY: ibv_qp is plain C data (zeroed pthread objects are their static initializers).
    let mut ibv: sys::ibv_qp = unsafe { std::mem::zeroed() };
    ibv.context = ctx;
    ibv.qp_context = a.qp_context;
    ibv.pd = pd;
    ibv.send_cq = a.send_cq;
    ibv.recv_cq = a.recv_cq;
    ibv.srq = a.srq;
    ibv.handle = c.handle();
    ibv.qp_num = NEXT_QPN.fetch_add(1, Ordering::Relaxed) & 0x00ff_ffff;
    ibv.state = sys::ibv_qp_state::IBV_QPS_RESET;
    ibv.qp_type = a.qp_type;
    // SAFETY: ibv_qp_ex is plain C data: a zeroed one has every operation NULL.
    let mut ex: sys::ibv_qp_ex = unsafe { std::mem::zeroed() };
    ex.qp_base = ibv;
    if let Some(ops) = send_ops {
        install_send_ops(&mut ex, ops);
    }
    let qp = Box::new(SwQp {
        ibv: ex,
        vqp_comp_mask: if send_ops.is_some() { VERBS_QP_EX } else { 0 },
        vqp_xrcd: std::ptr::null_mut(),
        ctx: ctx as *mut SwContext,
        cap: ring,
        sq_sig_all: a.sq_sig_all,
        mcast: Mutex::new(Vec::new()),
        // SAFETY: plain C data; state RESET is 0.
        attr: Mutex::new(unsafe { std::mem::zeroed() }),
        port: AtomicU8::new(0),
        resp_ready: AtomicBool::new(false),
        queues: CacheLine(Mutex::new(Queues::default())),
        events: EventCounts::default(),
        qpx: data::QpEx::new(),
    });
    let raw = Box::into_raw(qp);
    // From now on other QPs can find it by number.
    data::lock().register(raw);
    // SAFETY: Box::into_raw is never null; `ibv` at offset 0.
    Ok(unsafe { NonNull::new_unchecked(raw as *mut sys::ibv_qp) })
}

/// Installs the builders of the operations `ops` names (`enum ibv_qp_create_send_ops_flags`),
/// and the setters and batch operations every extended QP has, as rxe's `set_qp_send_ops`:
/// the other builders, `wr_set_xrc_srqn` and `wr_send_tso` stay NULL.
fn install_send_ops(ex: &mut sys::ibv_qp_ex, ops: u64) {
    use data::qp_ex_ops::*;
    use sys::ibv_qp_create_send_ops_flags as f;
    let has = |bit: f| ops & u64::from(bit.0) != 0;
    if has(f::IBV_QP_EX_WITH_RDMA_WRITE) {
        ex.wr_rdma_write = Some(wr_rdma_write);
    }
    if has(f::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM) {
        ex.wr_rdma_write_imm = Some(wr_rdma_write_imm);
    }
    if has(f::IBV_QP_EX_WITH_SEND) {
        ex.wr_send = Some(wr_send);
    }
    if has(f::IBV_QP_EX_WITH_SEND_WITH_IMM) {
        ex.wr_send_imm = Some(wr_send_imm);
    }
    if has(f::IBV_QP_EX_WITH_RDMA_READ) {
        ex.wr_rdma_read = Some(wr_rdma_read);
    }
    if has(f::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP) {
        ex.wr_atomic_cmp_swp = Some(wr_atomic_cmp_swp);
    }
    if has(f::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD) {
        ex.wr_atomic_fetch_add = Some(wr_atomic_fetch_add);
    }
    ex.wr_set_ud_addr = Some(wr_set_ud_addr);
    ex.wr_set_inline_data = Some(wr_set_inline_data);
    ex.wr_set_inline_data_list = Some(wr_set_inline_data_list);
    ex.wr_set_sge = Some(wr_set_sge);
    ex.wr_set_sge_list = Some(wr_set_sge_list);
    ex.wr_start = Some(wr_start);
    ex.wr_complete = Some(wr_complete);
    ex.wr_abort = Some(wr_abort);
}

/// The send operations the device supports on a QP of type `qpt` (rxe's
/// `RXE_SUP_*_QP_SEND_OPS_FLAGS` without memory windows and invalidation, which the device
/// lacks), and SEND on a RAW_PACKET QP when the device has them.
pub(in crate::backend::software) fn supported_send_ops(qpt: u32, raw_packet: bool) -> u64 {
    use sys::ibv_qp_create_send_ops_flags as f;
    use sys::ibv_qp_type::*;
    let bits = |v: &[f]| v.iter().fold(0u64, |a, b| a | u64::from(b.0));
    let (send, imm) = (f::IBV_QP_EX_WITH_SEND, f::IBV_QP_EX_WITH_SEND_WITH_IMM);
    let (write, write_imm) = (
        f::IBV_QP_EX_WITH_RDMA_WRITE,
        f::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
    );
    match qpt {
        IBV_QPT_RC => bits(&[
            write,
            write_imm,
            send,
            imm,
            f::IBV_QP_EX_WITH_RDMA_READ,
            f::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
            f::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
        ]),
        IBV_QPT_UC => bits(&[write, write_imm, send, imm]),
        IBV_QPT_UD => bits(&[send, imm]),
        IBV_QPT_RAW_PACKET if raw_packet => bits(&[send]),
        _ => 0,
    }
}

/// `ibv_qp_to_qp_ex`: the QP's `ibv_qp_ex` if it was created extended, else NULL.
///
/// # Safety
/// `qp` live software QP.
pub(in crate::backend::software) unsafe fn qp_to_qp_ex(
    qp: *mut sys::ibv_qp,
) -> *mut sys::ibv_qp_ex {
    let sw = qp as *mut SwQp;
    // SAFETY: the caller's contract; the field is never written after creation.
    if unsafe { std::ptr::addr_of!((*sw).vqp_comp_mask).read() } & VERBS_QP_EX != 0 {
        qp.cast()
    } else {
        std::ptr::null_mut()
    }
}

/// # Safety
/// `qp` live software QP; out-pointers valid for writes.
pub(in crate::backend::software) unsafe fn query_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    _mask: i32,
    init: *mut sys::ibv_qp_init_attr,
) -> Result<(), Errno> {
    let sw = qp as *mut SwQp;
    // SAFETY: caller's contract. Every attribute is filled whatever the mask, as rxe does.
    unsafe {
        // ibv_qp_attr is plain C data (rdma-sys does not derive Copy for it): a bitwise copy.
        let draining = (*sw).sq_in_progress();
        let mut a = std::ptr::read(&*(*sw).attr.lock());
        a.cur_qp_state = a.qp_state;
        // As rxe's: set while a QP moved to SQD still has a request in progress.
        a.sq_draining = (a.qp_state == sys::ibv_qp_state::IBV_QPS_SQD && draining) as u8;
        a.cap = (*sw).cap;
        attr.write(a);
        init.write(sys::ibv_qp_init_attr {
            qp_context: (*sw).ibv.qp_base.qp_context,
            send_cq: (*sw).ibv.qp_base.send_cq,
            recv_cq: (*sw).ibv.qp_base.recv_cq,
            srq: (*sw).ibv.qp_base.srq,
            cap: (*sw).cap,
            qp_type: (*sw).ibv.qp_base.qp_type,
            sq_sig_all: (*sw).sq_sig_all,
        });
    }
    Ok(())
}

/// `max_qp_rd_atom` and `max_qp_init_rd_atom` the device reports (rxe's RXE_MAX_QP_RD_ATOM and
/// RXE_MAX_QP_INIT_RD_ATOM).
pub(in crate::backend::software) const MAX_QP_RD_ATOM: u8 = 128;

/// The kernel's QP state table (drivers/infiniband/core/verbs.c, `qp_state_table`) for the QP
/// types the seeds name: `Some((required, optional))` for a valid transition.
fn transition(cur: u32, next: u32, qpt: u32) -> Option<(i32, i32)> {
    use sys::ibv_qp_state::*;
    use sys::ibv_qp_type::*;
    let by_type = |ud: i32, uc: i32, rc: i32, raw: i32| match qpt {
        IBV_QPT_UD => ud,
        IBV_QPT_UC => uc,
        IBV_QPT_RC => rc,
        _ => raw,
    };
    match (cur, next) {
        (IBV_QPS_RESET, IBV_QPS_RESET) => Some((0, 0)),
        (IBV_QPS_RESET, IBV_QPS_INIT) => Some((
            by_type(
                PKEY_INDEX | PORT | QKEY,
                PKEY_INDEX | PORT | ACCESS_FLAGS,
                PKEY_INDEX | PORT | ACCESS_FLAGS,
                PORT,
            ),
            0,
        )),
        (IBV_QPS_INIT, IBV_QPS_INIT) => Some((
            0,
            by_type(
                PKEY_INDEX | PORT | QKEY,
                PKEY_INDEX | PORT | ACCESS_FLAGS,
                PKEY_INDEX | PORT | ACCESS_FLAGS,
                0,
            ),
        )),
        (IBV_QPS_INIT, IBV_QPS_RTR) => Some((
            by_type(
                0,
                AV | PATH_MTU | DEST_QPN | RQ_PSN,
                AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
                0,
            ),
            by_type(
                PKEY_INDEX | QKEY,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
                ALT_PATH | ACCESS_FLAGS | PKEY_INDEX,
                0,
            ),
        )),
        (IBV_QPS_RTR, IBV_QPS_RTS) => Some((
            by_type(
                SQ_PSN,
                SQ_PSN,
                TIMEOUT | RETRY_CNT | RNR_RETRY | SQ_PSN | MAX_QP_RD_ATOMIC,
                0,
            ),
            by_type(
                CUR_STATE | QKEY,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
                0,
            ),
        )),
        (IBV_QPS_RTS, IBV_QPS_RTS) => Some((
            0,
            by_type(
                CUR_STATE | QKEY,
                CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE,
                CUR_STATE | ACCESS_FLAGS | ALT_PATH | PATH_MIG_STATE | MIN_RNR_TIMER,
                0,
            ),
        )),
        (IBV_QPS_RTS, IBV_QPS_SQD) => Some((0, EN_SQD_ASYNC_NOTIFY)),
        (IBV_QPS_SQD, IBV_QPS_RTS) => Some((
            0,
            by_type(
                CUR_STATE | QKEY,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | PATH_MIG_STATE,
                CUR_STATE | ALT_PATH | ACCESS_FLAGS | MIN_RNR_TIMER | PATH_MIG_STATE,
                0,
            ),
        )),
        (IBV_QPS_SQD, IBV_QPS_SQD) => Some((
            0,
            by_type(
                PKEY_INDEX | QKEY,
                AV | ALT_PATH | ACCESS_FLAGS | PKEY_INDEX | PATH_MIG_STATE,
                PORT | AV
                    | TIMEOUT
                    | RETRY_CNT
                    | RNR_RETRY
                    | MAX_QP_RD_ATOMIC
                    | MAX_DEST_RD_ATOMIC
                    | ALT_PATH
                    | ACCESS_FLAGS
                    | PKEY_INDEX
                    | MIN_RNR_TIMER
                    | PATH_MIG_STATE,
                0,
            ),
        )),
        // SQE is entered by the device only (rxe never does), and left for RTS.
        (IBV_QPS_SQE, IBV_QPS_RTS) => {
            Some((0, by_type(CUR_STATE | QKEY, CUR_STATE | ACCESS_FLAGS, 0, 0)))
        }
        (
            IBV_QPS_INIT | IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE | IBV_QPS_ERR,
            IBV_QPS_RESET | IBV_QPS_ERR,
        ) => Some((0, 0)),
        _ => None,
    }
}

/// # Safety
/// `qp` live software QP; `attr` readable.
pub(in crate::backend::software) unsafe fn modify_qp(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: i32,
) -> Result<(), Errno> {
    // The fabric lock: a state change and what it does to the queues (a flush into ERR, the
    // retry of requests that waited for this QP) happen at once for the data path.
    let fabric = data::lock();
    // SAFETY: caller's contract.
    let (cur, next) = unsafe { modify_attr(qp, attr, mask) }?;
    // SAFETY: as above.
    data::after_modify(&fabric, unsafe { &*(qp as *const SwQp) }, cur, next);
    drop(fabric);
    if next == sys::ibv_qp_state::IBV_QPS_RESET {
        // mlx5 cleans the QP's completions out of its CQs under their locks (`mlx5_modify_qp`
        // calls `mlx5_cq_clean` for the move to RESET): wait for their batches as it does.
        // SAFETY: caller's contract: a live QP's CQs are live.
        unsafe { super::super::cq::wait_for_batches((*qp).send_cq, (*qp).recv_cq) };
    }
    Ok(())
}

/// The attribute part of `modify_qp`: checks and applies the change; gives the states before
/// and after.
///
/// # Safety
/// As `modify_qp`.
unsafe fn modify_attr(
    qp: *mut sys::ibv_qp,
    attr: *mut sys::ibv_qp_attr,
    mask: i32,
) -> Result<(u32, u32), Errno> {
    use sys::ibv_qp_state::*;
    let sw = qp as *mut SwQp;
    // SAFETY: caller's contract. Read before the attribute lock is taken (one per-object lock
    // at a time); the fabric lock the caller holds keeps the queue as it is.
    let sq_draining = unsafe { (*sw).sq_in_progress() };
    // SAFETY: caller's contract.
    let (a, qpt) = unsafe { (&*attr, (*sw).ibv.qp_base.qp_type) };
    // SAFETY: as above.
    let mut cur_attr = unsafe { (*sw).attr.lock() };
    // As rxe_qp_chk_attr: with CUR_STATE the caller's cur_qp_state is taken as the state the
    // QP is in (ib_uverbs_modify_qp refuses one beyond ERR).
    let cur = if mask & CUR_STATE != 0 {
        if a.cur_qp_state > IBV_QPS_ERR {
            return Err(libc::EINVAL);
        }
        a.cur_qp_state
    } else {
        cur_attr.qp_state
    };
    let next = if mask & STATE != 0 { a.qp_state } else { cur };
    // ib_uverbs' modify_qp checks the ports first (-EINVAL): `port_num`, the address vector's
    // port ("if (cmd->base.dest.port_num != qp->real_qp->port)" for a move to RTR), the
    // alternate path's two ports, and the states ("qp_state > IB_QPS_ERR").
    // SAFETY: the caller's contract.
    let qp_port = unsafe { &(*sw).port };
    let to_rtr = mask & STATE != 0 && a.qp_state == IBV_QPS_RTR;
    let bad_ports = (mask & PORT != 0 && a.port_num != 1)
        || (mask & AV != 0
            && (a.ah_attr.port_num != 1
                || (to_rtr && a.ah_attr.port_num != qp_port.load(Ordering::Relaxed))))
        || (mask & ALT_PATH != 0 && (a.alt_port_num != 1 || a.alt_ah_attr.port_num != 1))
        || (mask & CUR_STATE != 0 && a.cur_qp_state > IBV_QPS_ERR)
        || (mask & STATE != 0 && a.qp_state > IBV_QPS_ERR);
    if bad_ports {
        return Err(libc::EINVAL);
    }
    // Then the core's _ib_modify_qp resolves the source GIDs of the address vector and of the
    // alternate path (rdma_fill_sgid_attr) before anything else: an empty GID entry is
    // ENODATA whatever else is wrong (the ban of alternate paths on RoCE comes after).
    // SAFETY: a live QP's context is live.
    let gids = unsafe { &*(*sw).ctx }.config().gid_tbl_len;
    if mask & AV != 0 {
        check_av(&a.ah_attr, gids)?;
    }
    if mask & ALT_PATH != 0 {
        check_av(&a.alt_ah_attr, gids)?;
    }
    if mask & CUR_STATE != 0
        && !matches!(cur, IBV_QPS_RTR | IBV_QPS_RTS | IBV_QPS_SQD | IBV_QPS_SQE)
    {
        return Err(libc::EINVAL);
    }
    // rxe_qp_chk_attr: a QP whose send queue is still draining leaves SQD only for ERR.
    if cur == IBV_QPS_SQD && mask & STATE != 0 && next != IBV_QPS_ERR && sq_draining {
        return Err(libc::EINVAL);
    }
    // ib_modify_qp_is_ok: a valid transition, every required attribute, nothing unexpected.
    let (req, opt) = transition(cur, next, qpt).ok_or(libc::EINVAL)?;
    if mask & req != req || mask & !(req | opt | STATE) != 0 {
        return Err(libc::EINVAL);
    }
    // What rxe checks of the values (rxe_qp_chk_attr). Not the P_Key index: rxe checks none,
    // and the core checks P_Keys (ib_security_modify_qp) only on a device with an InfiniBand
    // port ("If this isn't an IB device don't create the security context",
    // ib_create_qp_security). Not max_dest_rd_atomic: rxe checks only max_rd_atomic
    // ("invalid max_rd_atomic %d > %d" against max_qp_rd_atom).
    let bad = (mask & PORT != 0 && a.port_num != 1)
        // "if (mtu > max_mtu)", the port's max_mtu: a path_mtu of 0 passes, as on rxe.
        || (mask & PATH_MTU != 0 && a.path_mtu > sys::ibv_mtu::IBV_MTU_4096)
        || (mask & MAX_QP_RD_ATOMIC != 0 && a.max_rd_atomic > MAX_QP_RD_ATOM)
        // "invalid QP timeout %d > 31"
        || (mask & TIMEOUT != 0 && a.timeout > 31)
        // An alternate path: the kernel's _ib_modify_qp refuses it on RoCE ("Today the core code
        // can only handle alternate paths and APM for IB. Ban them in roce mode"), before the
        // driver sees it; this device's port is RoCE, as rxe's.
        || mask & ALT_PATH != 0;
    if bad {
        return Err(libc::EINVAL);
    }
    let n = &mut *cur_attr;
    // Each attribute the mask names is taken; PSNs and QP numbers are 24 bits.
    macro_rules! take {
        ($($bit:ident => $field:ident $(& $m:literal)?,)*) => {$(
            if mask & $bit != 0 {
                n.$field = a.$field $(& $m)?;
            }
        )*};
    }
    take! {
        ACCESS_FLAGS => qp_access_flags,
        PKEY_INDEX => pkey_index,
        PORT => port_num,
        QKEY => qkey,
        AV => ah_attr,
        PATH_MTU => path_mtu,
        TIMEOUT => timeout,
        RETRY_CNT => retry_cnt,
        RNR_RETRY => rnr_retry,
        RQ_PSN => rq_psn & 0x00ff_ffff,
        SQ_PSN => sq_psn & 0x00ff_ffff,
        MAX_QP_RD_ATOMIC => max_rd_atomic,
        MAX_DEST_RD_ATOMIC => max_dest_rd_atomic,
        MIN_RNR_TIMER => min_rnr_timer,
        DEST_QPN => dest_qp_num & 0x00ff_ffff,
        PATH_MIG_STATE => path_mig_state,
        EN_SQD_ASYNC_NOTIFY => en_sqd_async_notify,
        ALT_PATH => alt_ah_attr,
        ALT_PATH => alt_pkey_index,
        ALT_PATH => alt_port_num,
        ALT_PATH => alt_timeout,
    }
    // rxe_qp_from_attr: "roundup_pow_of_two(attr->max_rd_atomic)" and the same of
    // max_dest_rd_atomic, kept in the u8 of `struct ib_qp_attr` that ibv_query_qp reports
    // (255 becomes 256, which reads back as 0).
    let round = |v: u8| {
        if v == 0 {
            0
        } else {
            (u32::from(v).next_power_of_two()) as u8
        }
    };
    if mask & MAX_QP_RD_ATOMIC != 0 {
        n.max_rd_atomic = round(a.max_rd_atomic);
    }
    if mask & MAX_DEST_RD_ATOMIC != 0 {
        n.max_dest_rd_atomic = round(a.max_dest_rd_atomic);
    }
    // A move to RESET keeps the attributes: rxe_qp_reset resets the QP's queues and tasks, not
    // `qp->attr`, which ibv_query_qp reports (in RESET, and after INIT for what INIT does not
    // set); a reconnect sets what it needs again.
    // rxe_qp_from_attr: RTR readies the responder; RESET, INIT and ERR stop it (rxe_qp_reset,
    // the INIT case, rxe_qp_error); RTS and SQD leave it as it is, so one forced (CUR_STATE)
    // out of RESET, INIT or ERR has none.
    // SAFETY: the caller's contract.
    let resp_ready = unsafe { &(*sw).resp_ready };
    match next {
        IBV_QPS_RTR => resp_ready.store(true, Ordering::Relaxed),
        IBV_QPS_RESET | IBV_QPS_INIT | IBV_QPS_ERR => resp_ready.store(false, Ordering::Relaxed),
        _ if matches!(n.qp_state, IBV_QPS_RESET | IBV_QPS_INIT | IBV_QPS_ERR) => {
            resp_ready.store(false, Ordering::Relaxed);
        }
        _ => {}
    }
    if mask & PORT != 0 {
        // _ib_modify_qp: "if (attr_mask & IB_QP_PORT) qp->port = attr->port_num;", after
        // the device took the change.
        qp_port.store(a.port_num, Ordering::Relaxed);
    }
    n.qp_state = next;
    // SAFETY: the QP's own state field, written under the attribute lock (as libibverbs
    // updates qp->state after a successful modify).
    unsafe { (*sw).ibv.qp_base.state = next };
    Ok((cur, next))
}

/// # Safety
/// `qp` live software QP.
pub(in crate::backend::software) unsafe fn destroy_qp(qp: *mut sys::ibv_qp) -> Result<(), Errno> {
    let sw = qp as *mut SwQp;
    // SAFETY: caller's contract.
    if !unsafe { (*sw).mcast.lock().is_empty() } {
        // ibv_create_qp(3): "ibv_destroy_qp() fails if the QP is attached to a multicast group".
        return Err(libc::EBUSY);
    }
    // mlx5 takes the QP's CQ locks to clean its completions out (`mlx5_destroy_qp` ->
    // `mlx5_lock_cqs`): wait for their batches as it does, before any lock of the device.
    // SAFETY: caller's contract: a live QP's CQs are live.
    unsafe {
        super::super::cq::wait_for_batches((*sw).ibv.qp_base.send_cq, (*sw).ibv.qp_base.recv_cq)
    };
    // The QP's async events (SQ_DRAINED, raised by a move to SQD or by the ACK that ends a
    // drain): the unread ones go, and the destroy waits until the ones read are acked (as
    // libibverbs'). modify_qp and the timer thread raise them under the fabric lock (the timer
    // only for a QP it finds registered), so once they are dropped with that lock held no new
    // one can come;
    // the wait itself is done without it, so that whoever holds an event is not stopped from
    // acking it.
    let mut fabric = loop {
        // SAFETY: caller's contract.
        let (c, counts) = unsafe { (&*(*sw).ctx, &(*sw).events) };
        c.forget_async_events(sw as usize);
        counts.wait_balanced();
        let fabric = data::lock();
        c.forget_async_events(sw as usize);
        if counts.balanced() {
            break fabric;
        }
    };
    // SAFETY: caller's contract.
    unsafe {
        // Out of the registry (under the fabric lock) before it is freed: no transfer can
        // reach it any more. Requests it had queued go with it, without completions.
        fabric.unregister((*sw).ibv.qp_base.qp_num);
        let q = &(*sw).ibv.qp_base;
        pd_use(q.pd, -1);
        super::super::cq::cq_use(q.send_cq, -1);
        super::super::cq::cq_use(q.recv_cq, -1);
        if !q.srq.is_null() {
            adjust(&(*(q.srq as *mut SwSrq)).usecnt, -1);
        }
        give(&(*(*sw).ctx).live.qps);
        drop(Box::from_raw(sw));
    }
    Ok(())
}

/// # Safety
/// `qp` live software QP; `gid` readable.
pub(in crate::backend::software) unsafe fn attach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    lid: u16,
) -> Result<(), Errno> {
    let sw = qp as *mut SwQp;
    // SAFETY: caller's contract.
    let (raw, c) = unsafe { ((*gid).raw, &*(*sw).ctx) };
    // SAFETY: as above.
    if unsafe { (*sw).ibv.qp_base.qp_type } != sys::ibv_qp_type::IBV_QPT_UD || raw[0] != 0xff {
        return Err(libc::EINVAL);
    }
    // SAFETY: as above.
    let mut groups = unsafe { (*sw).mcast.lock() };
    if groups.iter().any(|g| g.0 == raw) {
        return Ok(()); // attaching twice is not an error (as rxe)
    }
    if groups.len() as u32 >= c.config().max_mcast {
        return Err(libc::ENOMEM);
    }
    groups.push((raw, lid));
    c.live.mcast.fetch_add(1, Ordering::AcqRel);
    Ok(())
}

/// # Safety
/// `qp` live software QP; `gid` readable.
pub(in crate::backend::software) unsafe fn detach_mcast(
    qp: *mut sys::ibv_qp,
    gid: *const sys::ibv_gid,
    _lid: u16,
) -> Result<(), Errno> {
    let sw = qp as *mut SwQp;
    // SAFETY: caller's contract.
    let (raw, c) = unsafe { ((*gid).raw, &*(*sw).ctx) };
    // SAFETY: as above.
    let mut groups = unsafe { (*sw).mcast.lock() };
    let Some(i) = groups.iter().position(|g| g.0 == raw) else {
        return Err(libc::EINVAL);
    };
    groups.swap_remove(i);
    c.live.mcast.fetch_sub(1, Ordering::AcqRel);
    Ok(())
}
