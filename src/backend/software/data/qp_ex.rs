//! The extended QP's send operations (`struct ibv_qp_ex`, ibv_wr_post(3)): a batch opened by
//! `wr_start`, requests staged by the builders and their setters, and `wr_complete`, which
//! hands the whole batch to the legacy post path at once.
//!
//! # Rules
//!
//! * `wr_start` opens the QP's batch: a critical section per QP, as rxe's `sq.lock` makes it.
//!   A `wr_start` or an `ibv_post_send` from another thread waits until the batch ends; from
//!   the thread that holds it, a nested `wr_start` fails the batch (EINVAL at `wr_complete`)
//!   and `ibv_post_send` returns EDEADLK (rxe spins forever on its own lock).
//! * A builder reads `qpx->wr_id` and `qpx->wr_flags` and stages a request; a setter attaches to
//!   the last one. Inline data is copied, and SGE values read, by the setter.
//! * `wr_complete` checks the batch, and posts every request or none: it returns the first
//!   failure any call of the batch recorded, or one of its own checks', and then nothing is
//!   queued. Once checked, the requests are queued and run as `ibv_post_send` queues and runs
//!   them (the same statuses and completions); below RTS they stay queued and it returns EINVAL,
//!   as the legacy path's (and rxe's) doorbell does.
//! * `wr_abort` discards the batch.
//! * An operation called with no batch open by the calling thread (before `wr_start`, after
//!   `wr_complete`, or from another thread than the one holding the batch) touches nothing but
//!   a flag, which makes the QP's next `wr_complete` fail with EINVAL; a `wr_complete` with no
//!   batch open returns EINVAL.
//!
//! # Checks
//!
//! As rxe: ENOSPC for more requests than the send queue has room for (counting the requests
//! queued and not completed), an inline buffer longer than `max_inline_data`, or more SGEs than
//! `max_send_sge`. Stricter than rxe, where rxe would corrupt or mis-send (EINVAL): a setter
//! before any builder of the batch; a second data setter on one request; a request without its
//! data setter; a UD request without `wr_set_ud_addr`, or that setter on another QP type (or
//! with no AH); an inline setter without `IBV_SEND_INLINE` in `wr_flags`, an SGE setter with it,
//! inline data on an RDMA read or an atomic; `wr_flags` bits other than FENCE, SIGNALED,
//! SOLICITED and INLINE (IP_CSUM included: the device has no checksum offload). Then the legacy
//! path's own checks of each request (atomic length and alignment, the message size): EINVAL.

use super::*;
use std::thread::ThreadId;

// enum ibv_send_flags: what the builders take from `wr_flags`.
const SEND_FENCE: u32 = 1 << 0;
const WR_FLAGS: u32 = SEND_FENCE | SEND_SIGNALED | SEND_SOLICITED | SEND_INLINE;

/// A staged request: the builder's values and what its setters attached.
struct Staged {
    wr_id: u64,
    flags: u32,
    opcode: u32,
    imm: u32,
    remote_addr: u64,
    rkey: u32,
    compare_add: u64,
    swap: u64,
    /// The address: a copy of the AH made by `wr_set_ud_addr` (rxe keeps the AH's index, and
    /// its kernel looks the AH up when it sends: the copy is read for its `id`, and its address
    /// only while that AH lives), the remote QP number and Q_Key.
    ud: Option<(SwAh, u32, u32)>,
    /// A data setter was called.
    data: bool,
    sges: Vec<sys::ibv_sge>,
    inline: Option<Vec<u8>>,
}

/// The QP's batch, under [`QpEx::batch`].
#[derive(Default)]
struct Batch {
    /// The thread that opened the batch; none when no batch is open.
    owner: Option<ThreadId>,
    /// The first failure recorded by a call of the batch (an errno), 0 if none.
    failed: c_int,
    /// An operation was called with no batch open: the next `wr_complete` fails.
    stray: bool,
    staged: Vec<Staged>,
}

/// An extended QP's batch state (part of every software QP; used only when it was created with
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`).
pub(in crate::backend::software) struct QpEx {
    batch: Mutex<Batch>,
    ended: Condvar,
}

impl QpEx {
    pub(in crate::backend::software) fn new() -> Self {
        QpEx {
            batch: Mutex::new(Batch::default()),
            ended: Condvar::new(),
        }
    }

    /// For `ibv_post_send` on an extended QP: waits until no other thread holds a batch; EDEADLK
    /// when the calling thread holds one (rxe would spin forever on its own `sq.lock`).
    pub(super) fn enter_legacy(&self) -> Result<(), c_int> {
        let me = std::thread::current().id();
        let mut b = self.batch.lock();
        loop {
            match b.owner {
                None => return Ok(()),
                Some(t) if t == me => return Err(libc::EDEADLK),
                Some(_) => self.ended.wait(&mut b),
            }
        }
    }

    /// Runs `f` on the batch if the calling thread holds it; otherwise records a stray call.
    fn with_batch(&self, f: impl FnOnce(&mut Batch)) {
        let me = std::thread::current().id();
        let mut b = self.batch.lock();
        if b.owner == Some(me) {
            f(&mut b);
        } else {
            b.stray = true;
        }
    }

    /// Ends the batch the calling thread holds: the others waiting for it go on.
    fn end(&self) {
        let mut b = self.batch.lock();
        b.owner = None;
        b.failed = 0;
        b.staged = Vec::new();
        drop(b);
        self.ended.notify_all();
    }
}

impl Batch {
    /// Records `e` unless a failure is recorded already (the first one is reported).
    fn fail(&mut self, e: c_int) {
        if self.failed == 0 {
            self.failed = e;
        }
    }
}

/// The software QP of an extended QP's `ibv_qp_ex` (at offset 0 of it).
fn sw(qpx: *mut sys::ibv_qp_ex) -> *mut SwQp {
    qpx.cast()
}

/// The QP's batch state. Only this field is borrowed: the caller writes `wr_id` and
/// `wr_flags` of the `ibv_qp_ex` between the calls.
///
/// # Safety
/// `qpx` is a live software QP's `ibv_qp_ex`.
unsafe fn state<'a>(qpx: *mut sys::ibv_qp_ex) -> &'a QpEx {
    // SAFETY: the caller's contract; the field is never written after creation.
    unsafe { &(*sw(qpx)).qpx }
}

/// Stages a request of `opcode`, with the `wr_id` and `wr_flags` the caller set.
///
/// # Safety
/// `qpx` is a live software QP's `ibv_qp_ex`.
unsafe fn build(qpx: *mut sys::ibv_qp_ex, opcode: u32, fill: impl FnOnce(&mut Staged)) {
    // SAFETY: the caller's contract. The caller wrote these fields before the call (the
    // builder's protocol); they are read by value, through the pointer.
    let (wr_id, flags, ring) = unsafe {
        (
            ptr::addr_of!((*qpx).wr_id).read(),
            ptr::addr_of!((*qpx).wr_flags).read(),
            ptr::addr_of!((*sw(qpx)).cap.max_send_wr).read(),
        )
    };
    // SAFETY: the caller's contract.
    unsafe { state(qpx) }.with_batch(|b| {
        if flags & !WR_FLAGS != 0 {
            b.fail(libc::EINVAL);
        }
        // rxe's check_qp_queue_full at each builder; the requests already queued are counted
        // at wr_complete. This bounds the batch's memory too.
        if b.staged.len() >= ring as usize {
            b.fail(libc::ENOSPC);
            return;
        }
        if b.staged.try_reserve(1).is_err() {
            b.fail(libc::ENOMEM);
            return;
        }
        let mut s = Staged {
            wr_id,
            flags,
            opcode,
            imm: 0,
            remote_addr: 0,
            rkey: 0,
            compare_add: 0,
            swap: 0,
            ud: None,
            data: false,
            sges: Vec::new(),
            inline: None,
        };
        fill(&mut s);
        b.staged.push(s);
    });
}

/// Runs `f` on the batch's last request, after the checks every data setter makes: a request
/// to attach to, no data attached yet, and `IBV_SEND_INLINE` set iff `inline`.
///
/// # Safety
/// `qpx` is a live software QP's `ibv_qp_ex`.
unsafe fn set_data(
    qpx: *mut sys::ibv_qp_ex,
    inline: bool,
    f: impl FnOnce(&mut Staged, sys::ibv_qp_cap) -> Result<(), c_int>,
) {
    // SAFETY: the caller's contract; `cap` is never written after creation.
    let cap = unsafe { ptr::addr_of!((*sw(qpx)).cap).read() };
    // SAFETY: the caller's contract.
    unsafe { state(qpx) }.with_batch(|b| {
        let Some(s) = b.staged.last_mut() else {
            // rxe would rewrite the previous, already posted, request.
            return b.fail(libc::EINVAL);
        };
        let data_op_ok = !inline
            || !matches!(
                s.opcode,
                IBV_WR_RDMA_READ | IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD
            );
        if s.data || (s.flags & SEND_INLINE != 0) != inline || !data_op_ok {
            return b.fail(libc::EINVAL);
        }
        s.data = true;
        if let Err(e) = f(s, cap) {
            b.fail(e);
        }
    });
}

c_entry! {
/// `ibv_qp_ex.wr_send`.
pub(in crate::backend::software) fn wr_send(qpx: *mut sys::ibv_qp_ex) = on_panic(()) {
    // SAFETY: libibverbs' contract: a live QP of this provider.
    unsafe { build(qpx, IBV_WR_SEND, |_| {}) }
}

/// `ibv_qp_ex.wr_send_imm`.
pub(in crate::backend::software) fn wr_send_imm(qpx: *mut sys::ibv_qp_ex, imm: u32) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe { build(qpx, IBV_WR_SEND_WITH_IMM, |s| s.imm = imm) }
}

/// `ibv_qp_ex.wr_rdma_write`.
pub(in crate::backend::software) fn wr_rdma_write(
    qpx: *mut sys::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        build(qpx, IBV_WR_RDMA_WRITE, |s| {
            s.rkey = rkey;
            s.remote_addr = remote_addr;
        })
    }
}

/// `ibv_qp_ex.wr_rdma_write_imm`.
pub(in crate::backend::software) fn wr_rdma_write_imm(
    qpx: *mut sys::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    imm: u32,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        build(qpx, IBV_WR_RDMA_WRITE_WITH_IMM, |s| {
            s.rkey = rkey;
            s.remote_addr = remote_addr;
            s.imm = imm;
        })
    }
}

/// `ibv_qp_ex.wr_rdma_read`.
pub(in crate::backend::software) fn wr_rdma_read(
    qpx: *mut sys::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        build(qpx, IBV_WR_RDMA_READ, |s| {
            s.rkey = rkey;
            s.remote_addr = remote_addr;
        })
    }
}

/// `ibv_qp_ex.wr_atomic_cmp_swp`.
pub(in crate::backend::software) fn wr_atomic_cmp_swp(
    qpx: *mut sys::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    compare: u64,
    swap: u64,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        build(qpx, IBV_WR_ATOMIC_CMP_AND_SWP, |s| {
            s.rkey = rkey;
            s.remote_addr = remote_addr;
            s.compare_add = compare;
            s.swap = swap;
        })
    }
}

/// `ibv_qp_ex.wr_atomic_fetch_add`.
pub(in crate::backend::software) fn wr_atomic_fetch_add(
    qpx: *mut sys::ibv_qp_ex,
    rkey: u32,
    remote_addr: u64,
    add: u64,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        build(qpx, IBV_WR_ATOMIC_FETCH_AND_ADD, |s| {
            s.rkey = rkey;
            s.remote_addr = remote_addr;
            s.compare_add = add;
        })
    }
}

/// `ibv_qp_ex.wr_set_ud_addr`.
pub(in crate::backend::software) fn wr_set_ud_addr(
    qpx: *mut sys::ibv_qp_ex,
    ah: *mut sys::ibv_ah,
    remote_qpn: u32,
    remote_qkey: u32,
) = on_panic(()) {
    // SAFETY: libibverbs' contract: a live QP of this provider; its type never changes.
    let (st, qpt) = unsafe { (state(qpx), ptr::addr_of!((*qpx).qp_base.qp_type).read()) };
    st.with_batch(|b| {
        let Some(s) = b.staged.last_mut() else {
            return b.fail(libc::EINVAL);
        };
        if qpt != IBV_QPT_UD || ah.is_null() || s.ud.is_some() {
            return b.fail(libc::EINVAL);
        }
        // SAFETY: libibverbs' contract: `ah` is a live AH of this provider during the call.
        let copy = unsafe { *(ah as *const SwAh) };
        s.ud = Some((copy, remote_qpn, remote_qkey));
    })
}

/// `ibv_qp_ex.wr_set_sge`.
pub(in crate::backend::software) fn wr_set_sge(
    qpx: *mut sys::ibv_qp_ex,
    lkey: u32,
    addr: u64,
    length: u32,
) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    unsafe {
        set_data(qpx, false, |s, cap| {
            if cap.max_send_sge < 1 {
                return Err(libc::ENOSPC);
            }
            s.sges.try_reserve_exact(1).map_err(|_| libc::ENOMEM)?;
            s.sges.push(sys::ibv_sge { addr, length, lkey });
            Ok(())
        })
    }
}

/// `ibv_qp_ex.wr_set_sge_list`: the SGEs are copied; the memory they name is read when the
/// request runs.
pub(in crate::backend::software) fn wr_set_sge_list(
    qpx: *mut sys::ibv_qp_ex,
    num_sge: usize,
    sg_list: *const sys::ibv_sge,
) = on_panic(()) {
    let copy = |s: &mut Staged, cap: sys::ibv_qp_cap| {
        if num_sge > cap.max_send_sge as usize {
            return Err(libc::ENOSPC);
        }
        // SAFETY: libibverbs' contract: `sg_list` holds `num_sge` readable entries.
        s.sges = unsafe { copy_sges(sg_list, num_sge) }?;
        Ok(())
    };
    // SAFETY: as in `wr_send`.
    unsafe { set_data(qpx, false, copy) }
}

/// `ibv_qp_ex.wr_set_inline_data`: copied now.
pub(in crate::backend::software) fn wr_set_inline_data(
    qpx: *mut sys::ibv_qp_ex,
    addr: *mut std::os::raw::c_void,
    length: usize,
) = on_panic(()) {
    let buf = sys::ibv_data_buf { addr, length };
    // SAFETY: as in `wr_send`; `buf` is one readable entry.
    unsafe { set_inline(qpx, 1, &buf) }
}

/// `ibv_qp_ex.wr_set_inline_data_list`: the buffers are copied now, one after the other; their
/// total is what `max_inline_data` bounds.
pub(in crate::backend::software) fn wr_set_inline_data_list(
    qpx: *mut sys::ibv_qp_ex,
    num_buf: usize,
    buf_list: *const sys::ibv_data_buf,
) = on_panic(()) {
    // SAFETY: as in `wr_send`; libibverbs' contract for the list.
    unsafe { set_inline(qpx, num_buf, buf_list) }
}

/// `ibv_qp_ex.wr_start`.
pub(in crate::backend::software) fn wr_start(qpx: *mut sys::ibv_qp_ex) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    let st = unsafe { state(qpx) };
    let me = std::thread::current().id();
    let mut b = st.batch.lock();
    loop {
        match b.owner {
            None => break,
            Some(t) if t == me => {
                // Nested: the batch it is in fails.
                b.fail(libc::EINVAL);
                return;
            }
            Some(_) => st.ended.wait(&mut b),
        }
    }
    b.owner = Some(me);
    b.failed = 0;
    b.staged.clear();
}

/// `ibv_qp_ex.wr_complete`.
pub(in crate::backend::software) fn wr_complete(qpx: *mut sys::ibv_qp_ex) -> c_int = on_panic(libc::EIO) {
    // SAFETY: as in `wr_send`.
    let st = unsafe { state(qpx) };
    let me = std::thread::current().id();
    let (failed, stray, staged) = {
        let mut b = st.batch.lock();
        if b.owner != Some(me) {
            b.stray = false;
            return libc::EINVAL;
        }
        // The batch stays held (other posters wait) until its requests are queued.
        (b.failed, std::mem::take(&mut b.stray), std::mem::take(&mut b.staged))
    };
    let rc = if failed != 0 {
        failed
    } else if stray {
        libc::EINVAL
    } else {
        // SAFETY: libibverbs' contract: a live QP; the AHs the batch names are live.
        unsafe { post_batch(sw(qpx), staged) }
    };
    st.end();
    rc
}

/// `ibv_qp_ex.wr_abort`.
pub(in crate::backend::software) fn wr_abort(qpx: *mut sys::ibv_qp_ex) = on_panic(()) {
    // SAFETY: as in `wr_send`.
    let st = unsafe { state(qpx) };
    let mut held = false;
    st.with_batch(|_| held = true);
    if held {
        st.end();
    }
}
}

/// The inline setters: checks, then copies the `n` buffers at `list`.
///
/// # Safety
/// `qpx` is a live software QP's `ibv_qp_ex`; `list` holds `n` readable entries, each naming
/// readable memory.
unsafe fn set_inline(qpx: *mut sys::ibv_qp_ex, n: usize, list: *const sys::ibv_data_buf) {
    let copy = |s: &mut Staged, cap: sys::ibv_qp_cap| {
        let bufs = if n == 0 {
            &[][..]
        } else {
            // SAFETY: the caller's contract.
            unsafe { std::slice::from_raw_parts(list, n) }
        };
        let total = bufs
            .iter()
            .try_fold(0usize, |t, b| t.checked_add(b.length))
            .ok_or(libc::ENOSPC)?;
        if total > cap.max_inline_data as usize {
            return Err(libc::ENOSPC);
        }
        let mut data = Vec::new();
        data.try_reserve_exact(total).map_err(|_| libc::ENOMEM)?;
        for b in bufs.iter().filter(|b| b.length > 0) {
            // SAFETY: the caller's contract: each buffer is readable.
            data.extend_from_slice(unsafe {
                std::slice::from_raw_parts(b.addr as *const u8, b.length)
            });
        }
        s.inline = Some(data);
        Ok(())
    };
    // SAFETY: the caller's contract.
    unsafe { set_data(qpx, true, copy) }
}

/// Checks what only the whole request shows (its data, its address), converts each staged
/// request into an `ibv_send_wr` and queues them all, or none.
///
/// # Safety
/// `qp` is a live software QP whose batch the caller holds; the staged AHs are live.
unsafe fn post_batch(qp: *mut SwQp, staged: Vec<Staged>) -> c_int {
    // SAFETY: the caller's contract; the type never changes.
    let qpt = unsafe { ptr::addr_of!((*qp).ibv.qp_base.qp_type).read() };
    for s in &staged {
        if !s.data || (qpt == IBV_QPT_UD) != s.ud.is_some() {
            return libc::EINVAL;
        }
    }
    let mut inline_sges = Vec::new();
    if inline_sges.try_reserve_exact(staged.len()).is_err() {
        return libc::ENOMEM;
    }
    for s in &staged {
        inline_sges.push(s.inline.as_ref().map(|d| sys::ibv_sge {
            addr: d.as_ptr() as u64,
            length: d.len() as u32,
            lkey: 0,
        }));
    }
    let mut wrs = Vec::new();
    if wrs.try_reserve_exact(staged.len()).is_err() {
        return libc::ENOMEM;
    }
    for (s, inl) in staged.iter().zip(&inline_sges) {
        // SAFETY: plain C data; all-zero is a valid value (null pointers, zero numbers).
        let mut w: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
        w.wr_id = s.wr_id;
        w.opcode = s.opcode;
        w.send_flags = s.flags;
        w.imm_data_invalidated_rkey_union.imm_data = s.imm;
        match inl {
            Some(sge) if sge.length > 0 => {
                w.sg_list = sge as *const sys::ibv_sge as *mut sys::ibv_sge;
                w.num_sge = 1;
            }
            Some(_) => {}
            None => {
                w.sg_list = s.sges.as_ptr() as *mut sys::ibv_sge;
                w.num_sge = s.sges.len() as c_int;
            }
        }
        match s.opcode {
            IBV_WR_ATOMIC_CMP_AND_SWP | IBV_WR_ATOMIC_FETCH_AND_ADD => {
                w.wr.atomic = sys::atomic_t {
                    remote_addr: s.remote_addr,
                    compare_add: s.compare_add,
                    swap: s.swap,
                    rkey: s.rkey,
                };
            }
            _ if qpt == IBV_QPT_UD => {
                // The AH's copy, in `staged`, which outlives the post.
                let (ah, remote_qpn, remote_qkey) = match &s.ud {
                    Some((copy, qpn, qkey)) => {
                        (copy as *const SwAh as *mut sys::ibv_ah, *qpn, *qkey)
                    }
                    None => (ptr::null_mut(), 0, 0),
                };
                w.wr.ud = sys::ud_t {
                    ah,
                    remote_qpn,
                    remote_qkey,
                };
            }
            _ => {
                w.wr.rdma = sys::rdma_t {
                    remote_addr: s.remote_addr,
                    rkey: s.rkey,
                };
            }
        }
        wrs.push(w);
    }
    // SAFETY: the caller's contract; each request's SGEs and inline data live in `staged` and
    // `inline_sges`, which outlive the call.
    unsafe { post_wrs(qp, &wrs) }
}
