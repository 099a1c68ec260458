//! Data movement at the raw verbs level, on the device the tests run on: RC, UC and UD queue
//! pairs on one device (loopback), posting through the context's `ops` (`ibv_post_send`,
//! `ibv_post_recv`, `ibv_post_srq_recv`, `ibv_poll_cq` are the data-path inline functions, the
//! same code on every backend) and the control verbs of `typed_verbs::raw`.
//!
//! Each test states what the device does, as rxe does it: the same test passes on the software
//! device and on a real rxe device. A real device completes work asynchronously, so every poll
//! is bounded: it waits until the expected completions arrive or [`WAIT`] passes.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{open, open_registered, software_only, LeakCheck};
use std::ptr;
use std::time::{Duration, Instant};
use sys::ibv_qp_state::*;
use sys::ibv_qp_type::*;
use sys::ibv_wc_opcode::*;
use sys::ibv_wc_status::*;
use sys::ibv_wr_opcode::*;
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::software::SwConfig;
use typed_verbs::Context;

/// How long a poll waits for completions that must come.
pub(super) const WAIT: Duration = Duration::from_secs(2);
/// How long a poll waits to show that no completion comes.
pub(super) const QUIET: Duration = Duration::from_millis(300);

use common::raw::{
    ah_attr, qp_attr, qp_cap, qp_init_attr, query_qp, Cleanup, INLINE, LOCAL_WRITE, REMOTE_ATOMIC,
    REMOTE_READ, REMOTE_WRITE, SIGNALED, WC_GRH, WC_WITH_IMM,
};
const REMOTE_ALL: i32 = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

// enum ibv_qp_attr_mask, as rdma-sys has it
use typed_verbs::ffi::qp_attr_mask::{
    ACCESS_FLAGS as M_ACCESS_FLAGS, AV as M_AV, DEST_QPN as M_DEST_QPN,
    MAX_DEST_RD_ATOMIC as M_MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC as M_MAX_QP_RD_ATOMIC,
    MIN_RNR_TIMER as M_MIN_RNR_TIMER, PATH_MTU as M_PATH_MTU, PKEY_INDEX as M_PKEY_INDEX,
    PORT as M_PORT, QKEY as M_QKEY, RETRY_CNT as M_RETRY_CNT, RNR_RETRY as M_RNR_RETRY,
    RQ_PSN as M_RQ_PSN, SQ_PSN as M_SQ_PSN, STATE as M_STATE, TIMEOUT as M_TIMEOUT,
};

pub(super) const QKEY: u32 = 0x1111_2222;
pub(super) const PSN: u32 = 0x1234;

/// A registered buffer (8-byte aligned, zeroed).
#[derive(Clone, Copy)]
pub(super) struct Buf {
    pub(super) ptr: *mut u8,
    pub(super) len: usize,
    pub(super) lkey: u32,
    pub(super) rkey: u32,
}

impl Buf {
    pub(super) fn addr(&self, off: usize) -> u64 {
        self.ptr as u64 + off as u64
    }
    pub(super) fn sge(&self, off: usize, len: u32) -> sys::ibv_sge {
        assert!(off + len as usize <= self.len);
        sys::ibv_sge {
            addr: self.addr(off),
            length: len,
            lkey: self.lkey,
        }
    }
    pub(super) fn write(&self, off: usize, data: &[u8]) {
        assert!(off + data.len() <= self.len);
        // SAFETY: inside the buffer, which lives until the cleanup; no work request is using it.
        unsafe { ptr::copy_nonoverlapping(data.as_ptr(), self.ptr.add(off), data.len()) }
    }
    pub(super) fn read(&self, off: usize, len: usize) -> Vec<u8> {
        assert!(off + len <= self.len);
        let mut v = vec![0u8; len];
        // SAFETY: as in `write`.
        unsafe { ptr::copy_nonoverlapping(self.ptr.add(off), v.as_mut_ptr(), len) };
        v
    }
    pub(super) fn u64_at(&self, off: usize) -> u64 {
        u64::from_ne_bytes(self.read(off, 8).try_into().unwrap())
    }
}

/// A QP with its number, type and actual capabilities.
#[derive(Clone, Copy)]
pub(super) struct Qp {
    pub(super) raw: *mut sys::ibv_qp,
    pub(super) num: u32,
    pub(super) qpt: sys::ibv_qp_type::Type,
    pub(super) cap: sys::ibv_qp_cap,
    pub(super) send_cq: *mut sys::ibv_cq,
    pub(super) recv_cq: *mut sys::ibv_cq,
}

/// What `Env::qp` creates.
#[derive(Clone, Copy)]
pub(super) struct Spec {
    pub(super) qpt: sys::ibv_qp_type::Type,
    pub(super) srq: *mut sys::ibv_srq,
    pub(super) send_wr: u32,
    pub(super) recv_wr: u32,
    pub(super) send_sge: u32,
    pub(super) recv_sge: u32,
    pub(super) inline: u32,
}

impl Spec {
    pub(super) fn new(qpt: sys::ibv_qp_type::Type) -> Self {
        Spec {
            qpt,
            srq: ptr::null_mut(),
            send_wr: 16,
            recv_wr: 16,
            send_sge: 2,
            recv_sge: 2,
            inline: 0,
        }
    }
}

/// One test's objects on one context. `c` is declared first, so it runs before the context
/// closes.
pub(super) struct Env {
    pub(super) c: Cleanup,
    pub(super) ctx: Context,
    pub(super) gid: sys::ibv_gid,
    pub(super) pd: *mut sys::ibv_pd,
}

impl Env {
    pub(super) fn new() -> Env {
        Env::on(open())
    }

    pub(super) fn on(ctx: Context) -> Env {
        let mut gid = sys::ibv_gid { raw: [0; 16] };
        // SAFETY: a live context; `gid` valid for writes.
        unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, 0, &mut gid) }.expect("ibv_query_gid");
        let mut c = Cleanup::new();
        let pd = common::raw::pd(&ctx, &mut c);
        Env { c, ctx, gid, pd }
    }

    pub(super) fn push(&mut self, f: impl FnOnce() + 'static) {
        self.c.push(f);
    }

    pub(super) fn cq(&mut self) -> *mut sys::ibv_cq {
        common::raw::cq(&self.ctx, 64, ptr::null_mut(), &mut self.c)
    }

    /// A zeroed, 8-byte aligned buffer of `len` bytes registered with `access`.
    pub(super) fn buf(&mut self, len: usize, access: i32) -> Buf {
        let mem: Box<[u64]> = vec![0u64; len.div_ceil(8)].into_boxed_slice();
        let ptr = Box::into_raw(mem);
        // SAFETY: freed once, after the MR is deregistered (cleanups run in reverse order).
        self.push(move || drop(unsafe { Box::from_raw(ptr) }));
        let p = ptr as *mut u8;
        // SAFETY: a live PD; the buffer stays allocated until after ibv_dereg_mr.
        let mr = unsafe { raw::ibv_reg_mr(self.pd, p.cast(), len, access) }
            .unwrap_or_else(|e| panic!("ibv_reg_mr access {access:#x}: errno {e}"))
            .as_ptr();
        // SAFETY: deregistered once.
        self.push(move || unsafe { raw::ibv_dereg_mr(mr) }.expect("ibv_dereg_mr"));
        // SAFETY: a live MR.
        let (lkey, rkey) = unsafe { ((*mr).lkey, (*mr).rkey) };
        Buf {
            ptr: p,
            len,
            lkey,
            rkey,
        }
    }

    pub(super) fn srq(&mut self, max_wr: u32) -> *mut sys::ibv_srq {
        common::raw::srq(self.pd, max_wr, &mut self.c)
    }

    /// A QP with its own CQ (send and receive).
    pub(super) fn qp(&mut self, spec: Spec) -> Qp {
        let cq = self.cq();
        self.qp_on(spec, cq, cq)
    }

    pub(super) fn qp_on(
        &mut self,
        spec: Spec,
        send_cq: *mut sys::ibv_cq,
        recv_cq: *mut sys::ibv_cq,
    ) -> Qp {
        let cap = qp_cap(
            spec.send_wr,
            spec.recv_wr,
            spec.send_sge,
            spec.recv_sge,
            spec.inline,
        );
        let mut attr = qp_init_attr(spec.qpt, send_cq, recv_cq, spec.srq, cap);
        let qp = common::raw::qp(self.pd, &mut attr, &mut self.c).expect("ibv_create_qp");
        Qp {
            raw: qp,
            // SAFETY: a live QP.
            num: unsafe { (*qp).qp_num },
            qpt: spec.qpt,
            cap: attr.cap,
            send_cq,
            recv_cq,
        }
    }

    pub(super) fn ah_attr(&self) -> sys::ibv_ah_attr {
        ah_attr(self.gid, 0)
    }

    pub(super) fn ah(&mut self) -> *mut sys::ibv_ah {
        let mut attr = self.ah_attr();
        // SAFETY: a live PD; attr valid.
        let ah = unsafe { raw::ibv_create_ah(self.pd, &mut attr) }
            .expect("ibv_create_ah")
            .as_ptr();
        // SAFETY: destroyed once, before the PD.
        self.push(move || unsafe { raw::ibv_destroy_ah(ah) }.expect("ibv_destroy_ah"));
        ah
    }

    /// Two QPs of `spec`, each on its own CQ, connected to each other (RC, UC) or ready (UD).
    pub(super) fn pair(&mut self, spec: Spec, access: i32, rnr_retry: u8) -> (Qp, Qp) {
        let a = self.qp(spec);
        let b = self.qp(spec);
        self.connect(&a, &b, access, rnr_retry);
        self.connect(&b, &a, access, rnr_retry);
        (a, b)
    }

    /// Brings `q` to RTS with `peer` as its destination (RC, UC).
    pub(super) fn connect(&self, q: &Qp, peer: &Qp, access: i32, rnr_retry: u8) {
        init(q, access);
        rtr(q, peer.num, self.gid);
        rts(q, rnr_retry);
    }
}

fn modify(q: &Qp, attr: &mut sys::ibv_qp_attr, mask: i32) -> Result<(), i32> {
    // SAFETY: a live QP; attr valid.
    unsafe { raw::ibv_modify_qp(q.raw, attr, mask) }
}

pub(super) fn init(q: &Qp, access: i32) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 0;
    let mask = if q.qpt == IBV_QPT_UD {
        a.qkey = QKEY;
        M_STATE | M_PKEY_INDEX | M_PORT | M_QKEY
    } else {
        a.qp_access_flags = access as u32;
        M_STATE | M_PKEY_INDEX | M_PORT | M_ACCESS_FLAGS
    };
    modify(q, &mut a, mask).expect("modify_qp to INIT");
}

pub(super) fn rtr(q: &Qp, dest: u32, gid: sys::ibv_gid) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_RTR;
    let mut mask = M_STATE;
    if q.qpt != IBV_QPT_UD {
        a.path_mtu = sys::ibv_mtu::IBV_MTU_1024;
        a.dest_qp_num = dest;
        a.rq_psn = PSN;
        a.ah_attr = ah_attr(gid, 0);
        mask |= M_AV | M_PATH_MTU | M_DEST_QPN | M_RQ_PSN;
    }
    if q.qpt == IBV_QPT_RC {
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 1;
        mask |= M_MAX_DEST_RD_ATOMIC | M_MIN_RNR_TIMER;
    }
    modify(q, &mut a, mask).expect("modify_qp to RTR");
}

pub(super) fn rts(q: &Qp, rnr_retry: u8) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_RTS;
    a.sq_psn = PSN;
    let mut mask = M_STATE | M_SQ_PSN;
    if q.qpt == IBV_QPT_RC {
        a.timeout = 14;
        a.retry_cnt = 7;
        a.rnr_retry = rnr_retry;
        a.max_rd_atomic = 1;
        mask |= M_TIMEOUT | M_RETRY_CNT | M_RNR_RETRY | M_MAX_QP_RD_ATOMIC;
    }
    modify(q, &mut a, mask).expect("modify_qp to RTS");
}

pub(super) fn to_error(q: &Qp) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_ERR;
    modify(q, &mut a, M_STATE).expect("modify_qp to ERR");
}

/// `ibv_query_qp`: the provider's current attributes (state and actual capabilities).
pub(super) fn query(q: &Qp) -> sys::ibv_qp_attr {
    // SAFETY: a live QP.
    unsafe { query_qp(q.raw, M_STATE) }
}

pub(super) fn state(q: &Qp) -> u32 {
    query(q).qp_state
}

/// A send work request that owns its SGE array (on the heap, so moving the request keeps
/// `sg_list` valid).
pub(super) struct SendWr {
    pub(super) wr: sys::ibv_send_wr,
    _sges: Vec<sys::ibv_sge>,
}

pub(super) fn send_wr(wr_id: u64, opcode: u32, flags: u32, sges: &[sys::ibv_sge]) -> SendWr {
    let mut sges = sges.to_vec();
    // SAFETY: ibv_send_wr is plain C data; all-zero is a valid (empty) request.
    let mut wr: sys::ibv_send_wr = unsafe { std::mem::zeroed() };
    wr.wr_id = wr_id;
    wr.opcode = opcode;
    wr.send_flags = flags;
    wr.sg_list = sges.as_mut_ptr();
    wr.num_sge = sges.len() as i32;
    SendWr { wr, _sges: sges }
}

impl SendWr {
    pub(super) fn imm(mut self, imm_be: u32) -> Self {
        self.wr.imm_data_invalidated_rkey_union.imm_data = imm_be;
        self
    }
    pub(super) fn rdma(mut self, remote_addr: u64, rkey: u32) -> Self {
        self.wr.wr.rdma = sys::rdma_t { remote_addr, rkey };
        self
    }
    pub(super) fn atomic(
        mut self,
        remote_addr: u64,
        rkey: u32,
        compare_add: u64,
        swap: u64,
    ) -> Self {
        self.wr.wr.atomic = sys::atomic_t {
            remote_addr,
            compare_add,
            swap,
            rkey,
        };
        self
    }
    pub(super) fn ud(mut self, ah: *mut sys::ibv_ah, qpn: u32, qkey: u32) -> Self {
        self.wr.wr.ud = sys::ud_t {
            ah,
            remote_qpn: qpn,
            remote_qkey: qkey,
        };
        self
    }
}

/// A work request that links to the next of a list.
trait Linked {
    type Raw;
    fn raw(&mut self) -> *mut Self::Raw;
    fn link(&mut self, next: *mut Self::Raw);
}

impl Linked for SendWr {
    type Raw = sys::ibv_send_wr;
    fn raw(&mut self) -> *mut sys::ibv_send_wr {
        &mut self.wr
    }
    fn link(&mut self, next: *mut sys::ibv_send_wr) {
        self.wr.next = next;
    }
}

/// Links `wrs` into one list, in order; returns its head.
fn chain<W: Linked>(wrs: &mut [W]) -> *mut W::Raw {
    for i in (0..wrs.len() - 1).rev() {
        let next = wrs[i + 1].raw();
        wrs[i].link(next);
    }
    wrs[0].raw()
}

/// `ibv_post_send`: the return value and `bad_wr`.
pub(super) fn post_send_list(q: &Qp, wr: *mut sys::ibv_send_wr) -> (i32, *mut sys::ibv_send_wr) {
    let mut bad = ptr::dangling_mut::<sys::ibv_send_wr>(); // shows whether the provider wrote it
                                                           // SAFETY: a live QP; the list and its SGE arrays are valid for the call.
    let rc = unsafe { sys::ibv_post_send(q.raw, wr, &mut bad) };
    (rc, bad)
}

#[track_caller]
pub(super) fn post_send(q: &Qp, mut wr: SendWr) {
    let (rc, _) = post_send_list(q, wr.raw());
    assert_eq!(rc, 0, "ibv_post_send");
}

/// A receive work request that owns its SGE array.
struct RecvWr {
    wr: sys::ibv_recv_wr,
    _sges: Vec<sys::ibv_sge>,
}

fn recv_wr(wr_id: u64, sges: &[sys::ibv_sge]) -> RecvWr {
    let mut sges = sges.to_vec();
    let wr = sys::ibv_recv_wr {
        wr_id,
        next: ptr::null_mut(),
        sg_list: sges.as_mut_ptr(),
        num_sge: sges.len() as i32,
    };
    RecvWr { wr, _sges: sges }
}

impl Linked for RecvWr {
    type Raw = sys::ibv_recv_wr;
    fn raw(&mut self) -> *mut sys::ibv_recv_wr {
        &mut self.wr
    }
    fn link(&mut self, next: *mut sys::ibv_recv_wr) {
        self.wr.next = next;
    }
}

fn post_recv_list(q: &Qp, wr: *mut sys::ibv_recv_wr) -> (i32, *mut sys::ibv_recv_wr) {
    let mut bad = ptr::dangling_mut::<sys::ibv_recv_wr>();
    // SAFETY: a live QP; the list and its SGE arrays are valid for the call.
    let rc = unsafe { sys::ibv_post_recv(q.raw, wr, &mut bad) };
    (rc, bad)
}

#[track_caller]
pub(super) fn post_recv(q: &Qp, wr_id: u64, sges: &[sys::ibv_sge]) {
    let (rc, _) = post_recv_list(q, recv_wr(wr_id, sges).raw());
    assert_eq!(rc, 0, "ibv_post_recv");
}

fn post_srq_recv_list(
    srq: *mut sys::ibv_srq,
    wr: *mut sys::ibv_recv_wr,
) -> (i32, *mut sys::ibv_recv_wr) {
    let mut bad = ptr::dangling_mut::<sys::ibv_recv_wr>();
    // SAFETY: a live SRQ; the list and its SGE arrays are valid for the call.
    let rc = unsafe { sys::ibv_post_srq_recv(srq, wr, &mut bad) };
    (rc, bad)
}

/// A work completion, copied out of `ibv_wc`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct Wc {
    pub(super) wr_id: u64,
    pub(super) status: u32,
    pub(super) opcode: u32,
    pub(super) byte_len: u32,
    pub(super) imm: u32,
    pub(super) qp_num: u32,
    pub(super) src_qp: u32,
    pub(super) wc_flags: u32,
    pub(super) pkey_index: u16,
    pub(super) slid: u16,
    pub(super) sl: u8,
    pub(super) dlid_path_bits: u8,
}

impl Wc {
    /// A successful completion with the fields rxe fills for it; the rest zero.
    pub(super) fn ok(wr_id: u64, opcode: u32, byte_len: u32, qp_num: u32) -> Wc {
        Wc {
            wr_id,
            status: IBV_WC_SUCCESS,
            opcode,
            byte_len,
            imm: 0,
            qp_num,
            src_qp: 0,
            wc_flags: 0,
            pkey_index: 0,
            slid: 0,
            sl: 0,
            dlid_path_bits: 0,
        }
    }
    /// A receive completion: rxe sets IBV_WC_GRH on every successful receive.
    pub(super) fn recv(wr_id: u64, byte_len: u32, qp_num: u32) -> Wc {
        Wc {
            wc_flags: WC_GRH,
            ..Wc::ok(wr_id, IBV_WC_RECV, byte_len, qp_num)
        }
    }
    pub(super) fn imm(mut self, imm_be: u32) -> Wc {
        self.imm = imm_be;
        self.wc_flags |= WC_WITH_IMM;
        self
    }
    /// What a failed completion defines (ibv_poll_cq(3): wr_id, status, qp_num, vendor_err).
    pub(super) fn failed(&self) -> (u64, u32, u32) {
        (self.wr_id, self.status, self.qp_num)
    }
}

fn from_sys(w: &sys::ibv_wc) -> Wc {
    Wc {
        wr_id: w.wr_id,
        status: w.status,
        opcode: w.opcode,
        byte_len: w.byte_len,
        // SAFETY: a plain u32 either way.
        imm: unsafe { w.imm_data_invalidated_rkey_union.imm_data },
        qp_num: w.qp_num,
        src_qp: w.src_qp,
        wc_flags: w.wc_flags,
        pkey_index: w.pkey_index,
        slid: w.slid,
        sl: w.sl,
        dlid_path_bits: w.dlid_path_bits,
    }
}

/// Polls `cq` until `n` completions arrived or `within` passed; returns what arrived (more
/// than `n` if more were there).
pub(super) fn poll_for(cq: *mut sys::ibv_cq, n: usize, within: Duration) -> Vec<Wc> {
    let deadline = Instant::now() + within;
    let mut out = Vec::new();
    loop {
        // SAFETY: ibv_wc is plain C data.
        let mut wc: [sys::ibv_wc; 8] = unsafe { std::mem::zeroed() };
        // SAFETY: a live CQ; `wc` holds 8 entries.
        let got = unsafe { sys::ibv_poll_cq(cq, 8, wc.as_mut_ptr()) };
        assert!(got >= 0, "ibv_poll_cq: {got}");
        out.extend(wc[..got as usize].iter().map(from_sys));
        if got == 0 && (out.len() >= n || Instant::now() >= deadline) {
            return out;
        }
        if got == 0 {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
}

/// Asserts that `q`'s next send completion is the successful `opcode` of `wr_id`, `len` bytes.
#[track_caller]
pub(super) fn sent_ok(q: &Qp, wr_id: u64, opcode: u32, len: u32) {
    assert_eq!(expect(q.send_cq, 1)[0], Wc::ok(wr_id, opcode, len, q.num));
}

/// Exactly `n` completions from `cq` (waiting at most [`WAIT`] for them).
#[track_caller]
pub(super) fn expect(cq: *mut sys::ibv_cq, n: usize) -> Vec<Wc> {
    let got = poll_for(cq, n, WAIT);
    assert_eq!(got.len(), n, "completions: {got:#x?}");
    got
}

/// No completion arrives in `cq` within [`QUIET`].
#[track_caller]
pub(super) fn quiet(cq: *mut sys::ibv_cq) {
    let got = poll_for(cq, usize::MAX, QUIET);
    assert!(got.is_empty(), "unexpected completions: {got:#x?}");
}

/// Waits (at most [`WAIT`]) until `f` holds.
#[track_caller]
pub(super) fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + WAIT;
    while !f() {
        assert!(Instant::now() < deadline, "{what} did not happen");
        std::thread::sleep(Duration::from_millis(1));
    }
}

pub(super) fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(7).wrapping_add(seed))
        .collect()
}

#[test]
fn rc_send_and_send_with_imm() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
    let src = e.buf(256, LOCAL_WRITE);
    let dst = e.buf(256, LOCAL_WRITE);
    src.write(0, &pattern(100, 1));
    post_recv(&b, 11, &[dst.sge(0, 64), dst.sge(64, 64)]);
    post_recv(&b, 12, &[dst.sge(128, 128)]);
    post_recv(&b, 13, &[dst.sge(0, 8)]);
    // 100 bytes from two SGEs, scattered over two receive SGEs.
    let sges = [src.sge(0, 60), src.sge(60, 40)];
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &sges));
    let imm = 0x1234_5678u32.to_be();
    let wr = send_wr(2, IBV_WR_SEND_WITH_IMM, SIGNALED, &[src.sge(0, 20)]);
    post_send(&a, wr.imm(imm));
    // An empty message still consumes a receive.
    post_send(&a, send_wr(3, IBV_WR_SEND, SIGNALED, &[]));
    let sent = expect(a.send_cq, 3);
    assert_eq!(sent[0], Wc::ok(1, IBV_WC_SEND, 100, a.num));
    // rxe marks the sender's completion of a *_WITH_IMM request WITH_IMM (imm_data left 0).
    let send_imm = Wc {
        wc_flags: WC_WITH_IMM,
        ..Wc::ok(2, IBV_WC_SEND, 20, a.num)
    };
    assert_eq!(sent[1], send_imm);
    assert_eq!(sent[2], Wc::ok(3, IBV_WC_SEND, 0, a.num));
    let got = expect(b.recv_cq, 3);
    assert_eq!(got[0], Wc::recv(11, 100, b.num));
    assert_eq!(got[1], Wc::recv(12, 20, b.num).imm(imm));
    assert_eq!(got[2], Wc::recv(13, 0, b.num));
    assert_eq!(dst.read(0, 100), pattern(100, 1));
    assert_eq!(dst.read(128, 20), pattern(20, 1));
    assert_eq!(dst.read(100, 28), vec![0; 28], "nothing past the message");
}

#[test]
fn rc_rdma_write_and_write_with_imm() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_WRITE, 7);
    let src = e.buf(256, LOCAL_WRITE);
    let dst = e.buf(256, LOCAL_WRITE | REMOTE_WRITE);
    src.write(0, &pattern(256, 3));
    let wr = send_wr(1, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 100)]);
    post_send(&a, wr.rdma(dst.addr(8), dst.rkey));
    sent_ok(&a, 1, IBV_WC_RDMA_WRITE, 100);
    assert_eq!(dst.read(8, 100), pattern(100, 3));
    assert_eq!(dst.read(0, 8), vec![0; 8]);
    assert_eq!(dst.read(108, 8), vec![0; 8]);
    // A plain RDMA write consumes no receive and completes nothing at the responder.
    quiet(b.recv_cq);
    // A zero-length write checks no key.
    let wr = send_wr(2, IBV_WR_RDMA_WRITE, SIGNALED, &[]);
    post_send(&a, wr.rdma(0, dst.rkey ^ 0x0010_0000));
    sent_ok(&a, 2, IBV_WC_RDMA_WRITE, 0);

    // RDMA write with immediate: consumes a receive (its SGEs unused); byte_len is the length
    // written.
    post_recv(&b, 21, &[]);
    let imm = 0xcafe_f00du32.to_be();
    let wr = send_wr(3, IBV_WR_RDMA_WRITE_WITH_IMM, SIGNALED, &[src.sge(100, 16)]);
    post_send(&a, wr.rdma(dst.addr(200), dst.rkey).imm(imm));
    let done = Wc {
        wc_flags: WC_WITH_IMM,
        ..Wc::ok(3, IBV_WC_RDMA_WRITE, 16, a.num)
    };
    assert_eq!(expect(a.send_cq, 1)[0], done);
    let got = expect(b.recv_cq, 1)[0];
    let want = Wc {
        opcode: IBV_WC_RECV_RDMA_WITH_IMM,
        ..Wc::recv(21, 16, b.num).imm(imm)
    };
    assert_eq!(got, want);
    assert_eq!(dst.read(200, 16), src.read(100, 16));
}

#[test]
fn rc_rdma_read() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_READ, 7);
    let local = e.buf(128, LOCAL_WRITE);
    let remote = e.buf(128, LOCAL_WRITE | REMOTE_READ);
    remote.write(0, &pattern(128, 9));
    let sges = [local.sge(0, 40), local.sge(64, 24)];
    let wr = send_wr(7, IBV_WR_RDMA_READ, SIGNALED, &sges);
    post_send(&a, wr.rdma(remote.addr(16), remote.rkey));
    sent_ok(&a, 7, IBV_WC_RDMA_READ, 64);
    let want = pattern(128, 9);
    assert_eq!(local.read(0, 40), &want[16..56]);
    assert_eq!(local.read(64, 24), &want[56..80]);
    assert_eq!(local.read(40, 24), vec![0; 24]);
    quiet(b.recv_cq);
}

#[test]
fn rc_atomics_compare_swap_and_fetch_add() {
    let mut e = Env::new();
    let (a, _b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ATOMIC, 7);
    let local = e.buf(32, LOCAL_WRITE);
    let remote = e.buf(32, LOCAL_WRITE | REMOTE_ATOMIC);
    remote.write(8, &100u64.to_ne_bytes());
    let cas = |wr_id, compare, swap| {
        send_wr(
            wr_id,
            IBV_WR_ATOMIC_CMP_AND_SWP,
            SIGNALED,
            &[local.sge(0, 8)],
        )
        .atomic(remote.addr(8), remote.rkey, compare, swap)
    };
    // Equal: swapped; the original value comes back.
    post_send(&a, cas(1, 100, 7));
    sent_ok(&a, 1, IBV_WC_COMP_SWAP, 8);
    assert_eq!(local.u64_at(0), 100);
    assert_eq!(remote.u64_at(8), 7);
    // Not equal: unchanged; the original value comes back.
    post_send(&a, cas(2, 100, 9));
    sent_ok(&a, 2, IBV_WC_COMP_SWAP, 8);
    assert_eq!(local.u64_at(0), 7);
    assert_eq!(remote.u64_at(8), 7);
    // Fetch and add.
    let wr = send_wr(
        3,
        IBV_WR_ATOMIC_FETCH_AND_ADD,
        SIGNALED,
        &[local.sge(16, 8)],
    );
    post_send(&a, wr.atomic(remote.addr(8), remote.rkey, 5, 0));
    sent_ok(&a, 3, IBV_WC_FETCH_ADD, 8);
    assert_eq!(local.u64_at(16), 7);
    assert_eq!(remote.u64_at(8), 12);

    // An atomic needs an 8-byte aligned remote address and 8 bytes of local buffer: refused at
    // the post, the request reported as bad.
    let wr = send_wr(4, IBV_WR_ATOMIC_FETCH_AND_ADD, SIGNALED, &[local.sge(0, 8)]);
    let mut wr = wr.atomic(remote.addr(4), remote.rkey, 1, 0);
    let (rc, bad) = post_send_list(&a, wr.raw());
    assert_eq!((rc, bad), (libc::EINVAL, wr.raw()), "misaligned atomic");
    let wr = send_wr(5, IBV_WR_ATOMIC_FETCH_AND_ADD, SIGNALED, &[local.sge(0, 4)]);
    let mut wr = wr.atomic(remote.addr(8), remote.rkey, 1, 0);
    let (rc, bad) = post_send_list(&a, wr.raw());
    assert_eq!((rc, bad), (libc::EINVAL, wr.raw()), "4-byte atomic");
    quiet(a.send_cq);
    assert_eq!(remote.u64_at(8), 12);
}

#[test]
fn uc_send_and_rdma_write() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_UC), REMOTE_WRITE, 0);
    let src = e.buf(128, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE | REMOTE_WRITE);
    src.write(0, &pattern(128, 5));
    // No receive posted: the message is dropped; the sender completes successfully.
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 10)]));
    sent_ok(&a, 1, IBV_WC_SEND, 10);
    quiet(b.recv_cq);
    // With a receive: delivered (and the dropped message left nothing behind).
    post_recv(&b, 31, &[dst.sge(0, 64)]);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(10, 30)]));
    sent_ok(&a, 2, IBV_WC_SEND, 30);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(31, 30, b.num));
    assert_eq!(dst.read(0, 30), src.read(10, 30));
    // RDMA write.
    let wr = send_wr(3, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 50)]);
    post_send(&a, wr.rdma(dst.addr(64), dst.rkey));
    sent_ok(&a, 3, IBV_WC_RDMA_WRITE, 50);
    eventually("UC RDMA write", || dst.read(64, 50) == src.read(0, 50));
    quiet(b.recv_cq);
}

#[test]
fn ud_send_has_grh_src_qp_and_byte_len() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_UD), 0, 0);
    let ah = e.ah();
    let mtu = 128u32 << e.ctx.query_port(1).unwrap().active_mtu; // enum ibv_mtu: 1 is 256
    let src = e.buf(4096, LOCAL_WRITE);
    let dst = e.buf(4096, LOCAL_WRITE);
    src.write(0, &pattern(4096, 11));
    post_recv(&b, 41, &[dst.sge(0, 40 + 2048)]);
    let wr = send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 64)]);
    post_send(&a, wr.ud(ah, b.num, QKEY));
    sent_ok(&a, 1, IBV_WC_SEND, 64);
    let got = expect(b.recv_cq, 1)[0];
    let want = Wc {
        src_qp: a.num,
        ..Wc::recv(41, 40 + 64, b.num)
    };
    assert_eq!(got, want);
    assert_eq!(dst.read(40, 64), src.read(0, 64));
    // The first 40 bytes are the GRH: for a RoCE v2 IPv6 GID, the packet's IPv6 header
    // (traffic class and flow label 0, payload length UDP 8 + BTH 12 + DETH 8 + 64 + ICRC 4,
    // next header UDP, hop limit 64, source and destination GIDs).
    let grh = dst.read(0, 40);
    // SAFETY: a GID is 16 bytes either way.
    let gid = unsafe { e.gid.raw };
    assert_eq!(grh[..8], [0x60, 0, 0, 0, 0, 96, 17, 64], "{grh:02x?}");
    assert_eq!(grh[8..24], gid, "source GID");
    assert_eq!(grh[24..40], gid, "destination GID");

    // A wrong qkey: dropped; the sender completes successfully.
    post_recv(&b, 42, &[dst.sge(0, 40 + 2048)]);
    let wr = send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]);
    post_send(&a, wr.ud(ah, b.num, QKEY + 1));
    sent_ok(&a, 2, IBV_WC_SEND, 8);
    quiet(b.recv_cq);
    // More than the path MTU: not sent, and not an error (C10-93.1.1).
    let wr = send_wr(3, IBV_WR_SEND, SIGNALED, &[src.sge(0, mtu + 1)]);
    post_send(&a, wr.ud(ah, b.num, QKEY));
    sent_ok(&a, 3, IBV_WC_SEND, mtu + 1);
    quiet(b.recv_cq);
    // To a QP number nobody has: dropped.
    let wr = send_wr(4, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]);
    post_send(&a, wr.ud(ah, 0xab_cdef, QKEY));
    sent_ok(&a, 4, IBV_WC_SEND, 8);
    // Exactly the MTU, with immediate data: delivered to the receive still posted.
    let imm = 0x0102_0304u32.to_be();
    let wr = send_wr(5, IBV_WR_SEND_WITH_IMM, SIGNALED, &[src.sge(0, mtu)]);
    post_send(&a, wr.ud(ah, b.num, QKEY).imm(imm));
    let sent = Wc {
        wc_flags: WC_WITH_IMM,
        ..Wc::ok(5, IBV_WC_SEND, mtu, a.num)
    };
    assert_eq!(expect(a.send_cq, 1)[0], sent);
    let want = Wc {
        src_qp: a.num,
        ..Wc::recv(42, 40 + mtu, b.num).imm(imm)
    };
    assert_eq!(expect(b.recv_cq, 1)[0], want);
    assert_eq!(dst.read(40, mtu as usize), src.read(0, mtu as usize));
    assert_eq!(state(&a), IBV_QPS_RTS);
}

#[test]
fn srq_receives_for_an_rc_qp() {
    let mut e = Env::new();
    let srq = e.srq(7);
    let a = e.qp(Spec::new(IBV_QPT_RC));
    let b = e.qp(Spec {
        srq,
        ..Spec::new(IBV_QPT_RC)
    });
    e.connect(&a, &b, 0, 7);
    e.connect(&b, &a, 0, 7);
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(7 * 16, LOCAL_WRITE);
    src.write(0, &pattern(64, 13));
    // The ring holds 7: the 8th is refused with ENOMEM and reported as bad.
    let mut wrs: Vec<_> = (0..8)
        .map(|i| recv_wr(100 + i as u64, &[dst.sge(i.min(6) * 16, 16)]))
        .collect();
    let head = chain(&mut wrs);
    let (rc, bad) = post_srq_recv_list(srq, head);
    assert_eq!(
        (rc, bad),
        (libc::ENOMEM, wrs[7].raw()),
        "the 8th of a 7-deep SRQ"
    );
    // A QP with an SRQ has no receive queue of its own (rxe leaves bad_wr NULL).
    let mut wr = recv_wr(1, &[]);
    let (rc, bad) = post_recv_list(&b, wr.raw());
    assert_eq!(
        (rc, bad),
        (libc::EINVAL, ptr::null_mut()),
        "post_recv, QP with SRQ"
    );

    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(16, 5)]));
    let sent = expect(a.send_cq, 2);
    assert_eq!(sent[0], Wc::ok(1, IBV_WC_SEND, 16, a.num));
    assert_eq!(sent[1], Wc::ok(2, IBV_WC_SEND, 5, a.num));
    let got = expect(b.recv_cq, 2);
    assert_eq!(got[0], Wc::recv(100, 16, b.num));
    assert_eq!(got[1], Wc::recv(101, 5, b.num));
    assert_eq!(dst.read(0, 16), src.read(0, 16));
    assert_eq!(dst.read(16, 5), src.read(16, 5));
}

#[test]
fn malformed_receives_too_small_or_not_writable() {
    let mut e = Env::new();
    let src = e.buf(128, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE);
    let read_only = e.buf(64, 0);
    // RC, a receive too small and one without LOCAL_WRITE: the receive completes with
    // LOC_QP_OP_ERR, the sender with REM_OP_ERR, and both QPs are in ERR.
    for (i, sge) in [dst.sge(0, 16), read_only.sge(0, 64)]
        .into_iter()
        .enumerate()
    {
        let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
        post_recv(&b, 51, &[sge]);
        post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 32)]));
        let sent = expect(a.send_cq, 1)[0];
        assert_eq!(sent.failed(), (1, IBV_WC_REM_OP_ERR, a.num), "case {i}");
        assert_eq!(
            sent,
            Wc {
                status: IBV_WC_REM_OP_ERR,
                ..Wc::ok(1, 0, 0, a.num)
            }
        );
        let got = expect(b.recv_cq, 1)[0];
        assert_eq!(got.failed(), (51, IBV_WC_LOC_QP_OP_ERR, b.num), "case {i}");
        eventually("both RC QPs in ERR", || {
            state(&a) == IBV_QPS_ERR && state(&b) == IBV_QPS_ERR
        });
    }

    // UC: the sender completes successfully; the receive fails and the receiver is in ERR.
    let (a, b) = e.pair(Spec::new(IBV_QPT_UC), 0, 0);
    post_recv(&b, 61, &[dst.sge(0, 16)]);
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 64)]));
    sent_ok(&a, 1, IBV_WC_SEND, 64);
    let got = expect(b.recv_cq, 1)[0];
    assert_eq!(got.failed(), (61, IBV_WC_LOC_QP_OP_ERR, b.num));
    eventually("UC receiver in ERR", || state(&b) == IBV_QPS_ERR);
    assert_eq!(state(&a), IBV_QPS_RTS);

    // UD: the 40-byte GRH counts; 60 bytes cannot take it and 64 more.
    let (a, b) = e.pair(Spec::new(IBV_QPT_UD), 0, 0);
    let ah = e.ah();
    post_recv(&b, 71, &[dst.sge(0, 60)]);
    let wr = send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 64)]);
    post_send(&a, wr.ud(ah, b.num, QKEY));
    sent_ok(&a, 1, IBV_WC_SEND, 64);
    let got = expect(b.recv_cq, 1)[0];
    assert_eq!(got.failed(), (71, IBV_WC_LOC_QP_OP_ERR, b.num));
    eventually("UD receiver in ERR", || state(&b) == IBV_QPS_ERR);
}

#[test]
fn remote_access_errors() {
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let no_remote = e.buf(64, LOCAL_WRITE);
    let writable = e.buf(64, LOCAL_WRITE | REMOTE_WRITE);
    let dst = e.buf(64, LOCAL_WRITE);

    // An MR without REMOTE_WRITE: the sender's completion is a remote access error, later
    // requests are flushed, and the responder (RC) moved to ERR, flushing its receive.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
    post_recv(&b, 71, &[dst.sge(0, 64)]);
    let wr = send_wr(1, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 8)]);
    post_send(&a, wr.rdma(no_remote.addr(0), no_remote.rkey));
    let got = expect(a.send_cq, 1)[0];
    // A failed completion carries wr_id, status and qp_num; rxe leaves the rest 0.
    let failed = Wc {
        status: IBV_WC_REM_ACCESS_ERR,
        ..Wc::ok(1, 0, 0, a.num)
    };
    assert_eq!(got, failed);
    eventually("sender in ERR", || state(&a) == IBV_QPS_ERR);
    post_send(&a, send_wr(2, IBV_WR_SEND, 0, &[src.sge(0, 8)]));
    let flushed = expect(a.send_cq, 1)[0];
    assert_eq!(flushed.failed(), (2, IBV_WC_WR_FLUSH_ERR, a.num));
    let got = expect(b.recv_cq, 1)[0];
    assert_eq!(got.failed(), (71, IBV_WC_WR_FLUSH_ERR, b.num));
    assert_eq!(state(&b), IBV_QPS_ERR);
    assert_eq!(no_remote.read(0, 8), vec![0; 8]);

    // A key that names no region; a read past the region's end.
    for (i, (addr, rkey, len)) in [
        (writable.addr(0), writable.rkey ^ 0x0010_0000, 8),
        (writable.addr(32), writable.rkey, 64),
    ]
    .into_iter()
    .enumerate()
    {
        let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
        let wr = send_wr(
            10 + i as u64,
            IBV_WR_RDMA_READ,
            SIGNALED,
            &[src.sge(0, len)],
        );
        post_send(&a, wr.rdma(addr, rkey));
        let got = expect(a.send_cq, 1)[0];
        assert_eq!(got.failed(), (10 + i as u64, IBV_WC_REM_ACCESS_ERR, a.num));
        eventually("responder in ERR", || state(&b) == IBV_QPS_ERR);
    }

    // The responder QP lacks REMOTE_WRITE in its access flags: an invalid request.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_READ, 7);
    let wr = send_wr(20, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 8)]);
    post_send(&a, wr.rdma(writable.addr(0), writable.rkey));
    let got = expect(a.send_cq, 1)[0];
    assert_eq!(got.failed(), (20, IBV_WC_REM_INV_REQ_ERR, a.num));
    eventually("responder in ERR", || state(&b) == IBV_QPS_ERR);
    assert_eq!(writable.read(0, 8), vec![0; 8]);
}

#[test]
fn local_sge_errors() {
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let read_only = e.buf(64, 0);
    let remote = e.buf(64, LOCAL_WRITE | REMOTE_READ | REMOTE_ATOMIC);
    let dst = e.buf(64, LOCAL_WRITE);
    // SAFETY: a live context.
    let pd2 = unsafe { raw::ibv_alloc_pd(e.ctx.as_raw()) }
        .expect("ibv_alloc_pd")
        .as_ptr();
    // SAFETY: destroyed once, after the MR below.
    e.push(move || unsafe { raw::ibv_dealloc_pd(pd2) }.expect("ibv_dealloc_pd"));
    let pd1 = e.pd;
    e.pd = pd2;
    let other_pd = e.buf(64, LOCAL_WRITE);
    e.pd = pd1;

    // A send whose SGE names no region, or a region of another PD: LOC_QP_OP_ERR; one that runs
    // past its region: LOC_PROT_ERR. Nothing leaves: the receive stays posted.
    let mut bad_key = src.sge(0, 8);
    bad_key.lkey ^= 0x0010_0000;
    let mut past_end = src.sge(32, 32);
    past_end.length = 40;
    let cases = [
        (bad_key, IBV_WC_LOC_QP_OP_ERR),
        (other_pd.sge(0, 8), IBV_WC_LOC_QP_OP_ERR),
        (past_end, IBV_WC_LOC_PROT_ERR),
    ];
    for (i, (sge, status)) in cases.into_iter().enumerate() {
        let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
        post_recv(&b, 81, &[dst.sge(0, 64)]);
        post_send(&a, send_wr(i as u64, IBV_WR_SEND, SIGNALED, &[sge]));
        let got = expect(a.send_cq, 1)[0];
        assert_eq!(got.failed(), (i as u64, status, a.num), "case {i}");
        quiet(b.recv_cq);
        assert_eq!(state(&a), IBV_QPS_ERR);
        assert_eq!(state(&b), IBV_QPS_RTS);
    }
    // An RDMA read, and an atomic, into a region without LOCAL_WRITE: LOC_PROT_ERR. The atomic
    // was carried out at the responder all the same.
    let (a, _b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
    let wr = send_wr(10, IBV_WR_RDMA_READ, SIGNALED, &[read_only.sge(0, 8)]);
    post_send(&a, wr.rdma(remote.addr(0), remote.rkey));
    let got = expect(a.send_cq, 1)[0];
    assert_eq!(got.failed(), (10, IBV_WC_LOC_PROT_ERR, a.num));
    let (a, _b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
    let wr = send_wr(
        11,
        IBV_WR_ATOMIC_FETCH_AND_ADD,
        SIGNALED,
        &[read_only.sge(0, 8)],
    );
    post_send(&a, wr.atomic(remote.addr(8), remote.rkey, 1, 0));
    let got = expect(a.send_cq, 1)[0];
    assert_eq!(got.failed(), (11, IBV_WC_LOC_PROT_ERR, a.num));
    assert_eq!(remote.u64_at(8), 1);
    assert_eq!(read_only.u64_at(0), 0);
}

#[test]
fn rnr_retry_zero_fails_and_rnr_retry_seven_waits_for_a_receive() {
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE | REMOTE_WRITE);
    src.write(0, &pattern(64, 17));
    // rnr_retry 0: the first RNR NAK ends the request (a SEND, and a write with immediate).
    for op in [IBV_WR_SEND, IBV_WR_RDMA_WRITE_WITH_IMM] {
        let (a, b) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_WRITE, 0);
        let wr = send_wr(1, op, SIGNALED, &[src.sge(0, 8)]);
        post_send(&a, wr.rdma(dst.addr(0), dst.rkey).imm(7));
        let got = expect(a.send_cq, 1)[0];
        assert_eq!(
            got.failed(),
            (1, IBV_WC_RNR_RETRY_EXC_ERR, a.num),
            "opcode {op}"
        );
        quiet(b.recv_cq);
        eventually("sender in ERR", || state(&a) == IBV_QPS_ERR);
        assert_eq!(state(&b), IBV_QPS_RTS);
    }
    assert_eq!(dst.read(0, 8), vec![0; 8]);

    // rnr_retry 7 (retry forever): the request waits until a receive is posted.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(0, 24)]));
    post_send(&a, send_wr(3, IBV_WR_SEND, SIGNALED, &[src.sge(24, 8)]));
    quiet(a.send_cq);
    post_recv(&b, 91, &[dst.sge(0, 64)]);
    sent_ok(&a, 2, IBV_WC_SEND, 24);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(91, 24, b.num));
    assert_eq!(dst.read(0, 24), src.read(0, 24));
    // The second waits behind it, for the next receive.
    quiet(a.send_cq);
    post_recv(&b, 92, &[dst.sge(32, 32)]);
    sent_ok(&a, 3, IBV_WC_SEND, 8);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(92, 8, b.num));
    assert_eq!(dst.read(32, 8), src.read(24, 8));
    assert_eq!(state(&a), IBV_QPS_RTS);

    // A request waiting for a receive keeps waiting when the responder moves to ERR.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
    post_send(&a, send_wr(4, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]));
    quiet(a.send_cq);
    to_error(&b);
    quiet(a.send_cq);
    assert_eq!(state(&a), IBV_QPS_RTS);
}

/// Sets the RNR timer `q` sends in its RNR NAKs (an RTS -> RTS modify, which the kernel allows
/// for `min_rnr_timer`). 1 is 0.01 ms, 31 is 491.52 ms (the IB spec's RNR timer table).
fn set_min_rnr_timer(q: &Qp, timer: u8) {
    let mut a = qp_attr();
    a.qp_state = IBV_QPS_RTS;
    a.min_rnr_timer = timer;
    modify(q, &mut a, M_STATE | M_MIN_RNR_TIMER).expect("modify_qp RTS -> RTS, min_rnr_timer");
}

#[test]
fn rnr_retry_one_to_six_fails_after_its_retries() {
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE);
    src.write(0, &pattern(64, 23));
    // rnr_retry n (1..=6): the request is retried n times, each after the responder's RNR timer
    // (0.01 ms here), then completes with RNR_RETRY_EXC_ERR; the sender moves to ERR and the
    // request behind it is flushed; the responder stays in RTS.
    for n in [1, 6] {
        let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, n);
        post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]));
        post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(8, 8)]));
        let got = expect(a.send_cq, 2);
        assert_eq!(
            got[0].failed(),
            (1, IBV_WC_RNR_RETRY_EXC_ERR, a.num),
            "rnr_retry {n}"
        );
        assert_eq!(
            got[1].failed(),
            (2, IBV_WC_WR_FLUSH_ERR, a.num),
            "rnr_retry {n}"
        );
        eventually("sender in ERR", || state(&a) == IBV_QPS_ERR);
        assert_eq!(state(&b), IBV_QPS_RTS);
        quiet(b.recv_cq);
    }

    // With the responder's timer at 491.52 ms, one retry takes that long: nothing within
    // QUIET (300 ms), then the error.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 1);
    set_min_rnr_timer(&b, 31);
    post_send(&a, send_wr(3, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]));
    quiet(a.send_cq);
    let got = expect(a.send_cq, 1)[0];
    assert_eq!(got.failed(), (3, IBV_WC_RNR_RETRY_EXC_ERR, a.num));

    // A receive posted while the retries last: the request lands, and the QP stays in RTS.
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 6);
    set_min_rnr_timer(&b, 31);
    post_send(&a, send_wr(4, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    quiet(a.send_cq);
    post_recv(&b, 93, &[dst.sge(0, 64)]);
    sent_ok(&a, 4, IBV_WC_SEND, 16);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(93, 16, b.num));
    assert_eq!(dst.read(0, 16), src.read(0, 16));
    assert_eq!(state(&a), IBV_QPS_RTS);
}

#[test]
fn rc_request_waits_for_a_peer_that_is_not_ready() {
    let mut e = Env::new();
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE);
    src.write(0, &pattern(64, 19));
    let a = e.qp(Spec::new(IBV_QPT_RC));
    let b = e.qp(Spec::new(IBV_QPT_RC));
    e.connect(&a, &b, 0, 7);
    init(&b, 0);
    post_recv(&b, 1, &[dst.sge(0, 64)]);
    // The peer is in INIT: the request is retransmitted, and no error comes.
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 16)]));
    quiet(a.send_cq);
    // Once the peer is in RTR, the request is delivered.
    rtr(&b, a.num, e.gid);
    sent_ok(&a, 1, IBV_WC_SEND, 16);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(1, 16, b.num));
    assert_eq!(dst.read(0, 16), src.read(0, 16));
}

#[test]
fn error_state_flushes_posted_and_later_work() {
    let mut e = Env::new();
    let (_a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
    let buf = e.buf(64, LOCAL_WRITE);
    for i in 0..3 {
        post_recv(&b, 200 + i, &[buf.sge(0, 64)]);
    }
    to_error(&b);
    let got = expect(b.recv_cq, 3);
    for (i, w) in got.iter().enumerate() {
        let flushed = Wc {
            status: IBV_WC_WR_FLUSH_ERR,
            ..Wc::ok(200 + i as u64, 0, 0, b.num)
        };
        assert_eq!(*w, flushed);
    }
    // A send posted in ERR is accepted and flushed, signaled or not.
    post_send(&b, send_wr(300, IBV_WR_SEND, 0, &[buf.sge(0, 8)]));
    let got = expect(b.send_cq, 1)[0];
    assert_eq!(got.failed(), (300, IBV_WC_WR_FLUSH_ERR, b.num));
    // A receive posted in ERR is accepted, and stays posted: rxe flushes receives when the QP
    // enters ERR, not later.
    post_recv(&b, 301, &[buf.sge(0, 64)]);
    quiet(b.recv_cq);
    // Back through RESET, the QP is usable again.
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_RESET;
    modify(&b, &mut attr, M_STATE).expect("modify_qp to RESET");
    quiet(b.recv_cq);
    quiet(b.send_cq);
}

#[test]
fn chained_work_requests() {
    let mut e = Env::new();
    let (a, b) = e.pair(Spec::new(IBV_QPT_RC), 0, 7);
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE);
    src.write(0, &pattern(64, 23));
    // Three receives in one list.
    let mut rwrs: Vec<_> = (0..3)
        .map(|i| recv_wr(400 + i as u64, &[dst.sge(i * 16, 16)]))
        .collect();
    let (rc, _) = post_recv_list(&b, chain(&mut rwrs));
    assert_eq!(rc, 0);
    // Three sends in one list, only the last signaled: one completion.
    let mut swrs: Vec<_> = (0..3)
        .map(|i| {
            let flags = if i == 2 { SIGNALED } else { 0 };
            send_wr(500 + i as u64, IBV_WR_SEND, flags, &[src.sge(i * 8, 8)])
        })
        .collect();
    let (rc, bad) = post_send_list(&a, chain(&mut swrs));
    assert_eq!((rc, bad), (0, ptr::null_mut()));
    sent_ok(&a, 502, IBV_WC_SEND, 8);
    let got = expect(b.recv_cq, 3);
    for (i, w) in got.iter().enumerate() {
        assert_eq!(*w, Wc::recv(400 + i as u64, 8, b.num));
        assert_eq!(dst.read(i * 16, 8), src.read(i * 8, 8));
    }
    // A list whose second request has too many SGEs: the first is posted (and runs), the second
    // is reported as bad, the third is not posted.
    post_recv(&b, 410, &[dst.sge(0, 64)]);
    let max = a.cap.max_send_sge as usize;
    let many: Vec<_> = (0..=max).map(|_| src.sge(0, 1)).collect();
    let mut swrs = vec![
        send_wr(600, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]),
        send_wr(601, IBV_WR_SEND, SIGNALED, &many),
        send_wr(602, IBV_WR_SEND, SIGNALED, &[src.sge(8, 8)]),
    ];
    let (rc, bad) = post_send_list(&a, chain(&mut swrs));
    assert_eq!((rc, bad), (libc::EINVAL, swrs[1].raw()));
    sent_ok(&a, 600, IBV_WC_SEND, 8);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(410, 8, b.num));
    quiet(a.send_cq);
    // The same for receives.
    let rmax = b.cap.max_recv_sge as usize;
    let rmany: Vec<_> = (0..=rmax).map(|_| dst.sge(0, 1)).collect();
    let mut rwrs = vec![recv_wr(700, &[dst.sge(0, 8)]), recv_wr(701, &rmany)];
    let (rc, bad) = post_recv_list(&b, chain(&mut rwrs));
    assert_eq!((rc, bad), (libc::EINVAL, rwrs[1].raw()));
}

#[test]
fn inline_send() {
    let mut e = Env::new();
    let spec = Spec {
        inline: 64,
        ..Spec::new(IBV_QPT_RC)
    };
    let (a, b) = e.pair(spec, 0, 7);
    assert!(a.cap.max_inline_data >= 64, "{}", a.cap.max_inline_data);
    let dst = e.buf(256, LOCAL_WRITE);
    post_recv(&b, 801, &[dst.sge(0, 256)]);
    // Unregistered memory, lkey 0: the data is copied at the post.
    let mut data = pattern(48, 29);
    let sges = [
        sys::ibv_sge {
            addr: data.as_ptr() as u64,
            length: 40,
            lkey: 0,
        },
        sys::ibv_sge {
            addr: data[40..].as_ptr() as u64,
            length: 8,
            lkey: 0,
        },
    ];
    post_send(&a, send_wr(1, IBV_WR_SEND, SIGNALED | INLINE, &sges));
    data.fill(0);
    sent_ok(&a, 1, IBV_WC_SEND, 48);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(801, 48, b.num));
    assert_eq!(dst.read(0, 48), pattern(48, 29));
    // More than max_inline_data: refused at the post.
    let big = vec![0u8; a.cap.max_inline_data as usize + 1];
    let sge = sys::ibv_sge {
        addr: big.as_ptr() as u64,
        length: big.len() as u32,
        lkey: 0,
    };
    let mut wr = send_wr(2, IBV_WR_SEND, SIGNALED | INLINE, &[sge]);
    let (rc, bad) = post_send_list(&a, wr.raw());
    assert_eq!((rc, bad), (libc::EINVAL, wr.raw()));
    quiet(a.send_cq);
}

#[test]
fn posting_rules_by_state_and_queue_depth() {
    let mut e = Env::new();
    let buf = e.buf(64, LOCAL_WRITE);
    let spec = Spec {
        send_wr: 4,
        recv_wr: 4,
        ..Spec::new(IBV_QPT_RC)
    };
    let q = e.qp(spec);
    let peer = e.qp(Spec::new(IBV_QPT_RC));
    // RESET: no receive can be posted (EINVAL; rxe leaves bad_wr NULL).
    let mut wr = recv_wr(1, &[buf.sge(0, 8)]);
    let (rc, bad) = post_recv_list(&q, wr.raw());
    assert_eq!(
        (rc, bad),
        (libc::EINVAL, ptr::null_mut()),
        "post_recv in RESET"
    );
    // INIT: receives can be posted, as many as the ring holds (what ibv_query_qp reports);
    // then ENOMEM.
    init(&q, 0);
    let depth = u64::from(query(&q).cap.max_recv_wr);
    assert!(depth >= 4, "{depth}");
    for i in 0..depth {
        post_recv(&q, 10 + i, &[buf.sge(0, 8)]);
    }
    let mut wr = recv_wr(99, &[buf.sge(0, 8)]);
    let (rc, bad) = post_recv_list(&q, wr.raw());
    assert_eq!((rc, bad), (libc::ENOMEM, wr.raw()), "receive queue full");
    // A send below RTS: the doorbell fails with EINVAL (bad_wr NULL), but the request stays
    // queued (rxe writes it into the ring first) and runs at the next post in RTS.
    let mut swr = send_wr(1, IBV_WR_SEND, SIGNALED, &[buf.sge(0, 8)]);
    let (rc, bad) = post_send_list(&q, swr.raw());
    assert_eq!(
        (rc, bad),
        (libc::EINVAL, ptr::null_mut()),
        "post_send in INIT"
    );
    quiet(q.send_cq);
    e.connect(&peer, &q, 0, 7);
    rtr(&q, peer.num, e.gid);
    rts(&q, 7);
    quiet(q.send_cq);
    post_recv(&peer, 1, &[buf.sge(0, 8)]);
    post_recv(&peer, 2, &[buf.sge(8, 8)]);
    post_send(&q, send_wr(2, IBV_WR_SEND, SIGNALED, &[buf.sge(0, 8)]));
    let sent = expect(q.send_cq, 2);
    assert_eq!(sent[0], Wc::ok(1, IBV_WC_SEND, 8, q.num));
    assert_eq!(sent[1], Wc::ok(2, IBV_WC_SEND, 8, q.num));
    assert_eq!(expect(peer.recv_cq, 2)[1], Wc::recv(2, 8, peer.num));
    // The send queue holds what ibv_query_qp reports, completed or not: with the peer out of
    // receives (rnr_retry 7), requests wait, and the next one is refused with ENOMEM.
    let sdepth = u64::from(query(&q).cap.max_send_wr);
    assert!(sdepth >= 4, "{sdepth}");
    for i in 0..sdepth {
        post_send(&q, send_wr(10 + i, IBV_WR_SEND, SIGNALED, &[buf.sge(0, 8)]));
    }
    let mut swr = send_wr(99, IBV_WR_SEND, SIGNALED, &[buf.sge(0, 8)]);
    let (rc, bad) = post_send_list(&q, swr.raw());
    assert_eq!((rc, bad), (libc::ENOMEM, swr.raw()), "send queue full");
    quiet(q.send_cq);
}

#[test]
fn wrong_opcode_for_the_qp_type() {
    let mut e = Env::new();
    let buf = e.buf(64, LOCAL_WRITE | REMOTE_ALL);
    // Accepted at the post; the request completes with LOC_QP_OP_ERR and the QP moves to ERR.
    let (uc, _) = e.pair(Spec::new(IBV_QPT_UC), REMOTE_ALL, 0);
    let read = send_wr(1, IBV_WR_RDMA_READ, SIGNALED, &[buf.sge(0, 8)]);
    let (ud, ud_peer) = e.pair(Spec::new(IBV_QPT_UD), 0, 0);
    let ah = e.ah();
    let write = send_wr(2, IBV_WR_RDMA_WRITE, SIGNALED, &[buf.sge(0, 8)]);
    let (rc, _) = e.pair(Spec::new(IBV_QPT_RC), REMOTE_ALL, 7);
    let unknown = send_wr(3, 13, SIGNALED, &[buf.sge(0, 8)]); // no such opcode
    let cases = [
        (uc, read.rdma(buf.addr(32), buf.rkey)),
        (ud, write.ud(ah, ud_peer.num, QKEY)),
        (rc, unknown.rdma(buf.addr(32), buf.rkey)),
    ];
    for (q, mut wr) in cases {
        let (ret, bad) = post_send_list(&q, wr.raw());
        assert_eq!((ret, bad), (0, ptr::null_mut()));
        let got = expect(q.send_cq, 1)[0];
        assert_eq!(got.failed(), (wr.wr.wr_id, IBV_WC_LOC_QP_OP_ERR, q.num));
        eventually("QP in ERR", || state(&q) == IBV_QPS_ERR);
    }
    assert_eq!(buf.read(32, 8), vec![0; 8]);
}

#[test]
fn address_handles() {
    let e = Env::new();
    let leaks = LeakCheck::new(&e.ctx, "address_handles");
    // RoCE: an AH needs a GRH.
    let mut attr = e.ah_attr();
    attr.is_global = 0;
    // SAFETY: a live PD; attr valid; a failure creates nothing.
    let r = unsafe { raw::ibv_create_ah(e.pd, &mut attr) };
    assert_eq!(r.map(|_| ()), Err(libc::EINVAL), "RoCE AH without a GRH");
    let mut attr = e.ah_attr();
    // SAFETY: as above.
    let ah = unsafe { raw::ibv_create_ah(e.pd, &mut attr) }
        .expect("ibv_create_ah")
        .as_ptr();
    // SAFETY: a live AH.
    assert_eq!(unsafe { (*ah).pd }, e.pd);
    // SAFETY: a live PD with an AH: the dealloc fails and leaves it live.
    assert_eq!(unsafe { raw::ibv_dealloc_pd(e.pd) }, Err(libc::EBUSY));
    // SAFETY: a live AH, destroyed once.
    unsafe { raw::ibv_destroy_ah(ah) }.expect("ibv_destroy_ah");
    leaks.assert_unchanged("ibv_destroy_ah");
}

#[test]
fn two_contexts_and_two_threads() {
    struct Side {
        qp: Qp,
        buf: Buf,
    }
    // SAFETY: the raw objects are used by one thread at a time; the contexts outlive the scope.
    unsafe impl Send for Side {}
    let mut e1 = Env::new();
    let mut e2 = Env::new();
    let a = e1.qp(Spec::new(IBV_QPT_RC));
    let b = e2.qp(Spec {
        recv_wr: 64,
        ..Spec::new(IBV_QPT_RC)
    });
    e1.connect(&a, &b, 0, 7);
    e2.connect(&b, &a, 0, 7);
    const N: usize = 40;
    let sa = Side {
        qp: a,
        buf: e1.buf(N * 8, LOCAL_WRITE),
    };
    let sb = Side {
        qp: b,
        buf: e2.buf(N * 8, LOCAL_WRITE),
    };
    std::thread::scope(|s| {
        let receiver = s.spawn(move || {
            let sb = sb;
            for i in 0..N {
                post_recv(&sb.qp, i as u64, &[sb.buf.sge(i * 8, 8)]);
            }
            let got = expect(sb.qp.recv_cq, N);
            for (i, w) in got.iter().enumerate() {
                assert_eq!(*w, Wc::recv(i as u64, 8, sb.qp.num));
                assert_eq!(sb.buf.u64_at(i * 8), i as u64 * 3);
            }
        });
        let sender = s.spawn(move || {
            let sa = sa;
            for i in 0..N {
                sa.buf.write(i * 8, &(i as u64 * 3).to_ne_bytes());
                let wr = send_wr(i as u64, IBV_WR_SEND, SIGNALED, &[sa.buf.sge(i * 8, 8)]);
                post_send(&sa.qp, wr);
                let w = expect(sa.qp.send_cq, 1)[0];
                assert_eq!(w, Wc::ok(i as u64, IBV_WC_SEND, 8, sa.qp.num));
            }
        });
        sender.join().unwrap();
        receiver.join().unwrap();
    });
}

#[test]
fn software_devices_exchange_data_and_raw_packet_sends_are_refused() {
    let probe = open();
    if !software_only(
        &probe,
        "software_devices_exchange_data",
        "registering devices",
    ) {
        return;
    }
    drop(probe);
    // Two software devices of the process, a QP on each: one fabric.
    let mut e1 = Env::on(open_registered("sw-data-a", SwConfig::default()));
    let mut e2 = Env::on(open_registered("sw-data-b", SwConfig::like_rxe()));
    let a = e1.qp(Spec::new(IBV_QPT_RC));
    let b = e2.qp(Spec::new(IBV_QPT_RC));
    e1.connect(&a, &b, 0, 7);
    e2.connect(&b, &a, REMOTE_WRITE, 7);
    let src = e1.buf(64, LOCAL_WRITE);
    let dst = e2.buf(64, LOCAL_WRITE | REMOTE_WRITE);
    src.write(0, &pattern(64, 31));
    let wr = send_wr(1, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 32)]);
    post_send(&a, wr.rdma(dst.addr(0), dst.rkey));
    sent_ok(&a, 1, IBV_WC_RDMA_WRITE, 32);
    assert_eq!(dst.read(0, 32), src.read(0, 32));
    post_recv(&b, 2, &[dst.sge(32, 32)]);
    post_send(&a, send_wr(2, IBV_WR_SEND, SIGNALED, &[src.sge(32, 32)]));
    sent_ok(&a, 2, IBV_WC_SEND, 32);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(2, 32, b.num));
    assert_eq!(dst.read(32, 32), src.read(32, 32));

    // RAW_PACKET (the default software device has it; rxe does not): no Ethernet to send on.
    let raw_qp = e1.qp(Spec {
        send_sge: 1,
        ..Spec::new(IBV_QPT_RAW_PACKET)
    });
    let mut attr = qp_attr();
    attr.qp_state = IBV_QPS_INIT;
    attr.port_num = 1;
    modify(&raw_qp, &mut attr, M_STATE | M_PORT).expect("RAW_PACKET to INIT");
    for (st, mask) in [(IBV_QPS_RTR, M_STATE), (IBV_QPS_RTS, M_STATE)] {
        attr.qp_state = st;
        modify(&raw_qp, &mut attr, mask).expect("RAW_PACKET up");
    }
    let mut wr = send_wr(3, IBV_WR_SEND, SIGNALED, &[src.sge(0, 14)]);
    let (rc, bad) = post_send_list(&raw_qp, wr.raw());
    assert_eq!((rc, bad), (libc::EOPNOTSUPP, wr.raw()));
    quiet(raw_qp.send_cq);
}

// ---------------------------------------------------------------------------------------------
// No panic or allocation failure reaches C: each case runs in a child process (this test
// binary run again for that one test), since on a device that aborts it would take the whole
// test run down; the parent checks that the child ended normally and what it printed.
// ---------------------------------------------------------------------------------------------

/// The environment variable that makes a test run its child half.
const CHILD_ENV: &str = "TYPED_VERBS_TEST_CHILD";

/// Whether this process is the child of `test`.
fn is_child(test: &str) -> bool {
    std::env::var(CHILD_ENV).is_ok_and(|v| v == test)
}

/// Runs `test` alone in a child process; gives its stdout, after checking that it exited
/// normally (a panic crossing into C aborts it with SIGABRT).
fn run_child(test: &str) -> String {
    let out = common::run_alone(&common::test_path(module_path!(), test), false, |c| {
        c.env(CHILD_ENV, test);
    });
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "the child of {test} did not end normally ({}):\n{stdout}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

/// On the software device only (`needs` says why, in the SKIP line elsewhere): runs `test`'s
/// child and asserts that it printed `line` (`expected` says what that shows).
#[track_caller]
fn assert_child_prints(test: &str, needs: &str, line: &str, expected: &str) {
    let Some(ctx) = common::software_ctx(test, needs) else {
        return;
    };
    drop(ctx);
    let out = run_child(test);
    assert!(out.contains(line), "expected {expected}:\n{out}");
}

/// Limits this process's address space to what it maps now plus `headroom` bytes, so that a
/// larger allocation (or a thread's stack) fails as it would on a machine out of memory.
fn limit_address_space(headroom: u64) {
    let statm = std::fs::read_to_string("/proc/self/statm").expect("/proc/self/statm");
    let pages: u64 = statm.split_whitespace().next().unwrap().parse().unwrap();
    // SAFETY: sysconf has no preconditions.
    let page = unsafe { libc::sysconf(libc::_SC_PAGESIZE) } as u64;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: `lim` valid for writes.
    assert_eq!(unsafe { libc::getrlimit(libc::RLIMIT_AS, &mut lim) }, 0);
    lim.rlim_cur = (pages * page + headroom).min(lim.rlim_max);
    // SAFETY: `lim` valid for reads.
    assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_AS, &lim) }, 0);
}

#[test]
fn an_rnr_timer_that_cannot_start_fails_qp_creation_instead_of_aborting_a_post() {
    // The software device's RNR timer thread starts with the first RC QP; where the thread
    // cannot be made, that creation fails with EAGAIN. (It used to start at the first RNR NAK,
    // inside ibv_post_send, where the failure was a panic crossing into C: an abort.)
    let test = "an_rnr_timer_that_cannot_start_fails_qp_creation_instead_of_aborting_a_post";
    if is_child(test) {
        let mut env = Env::new();
        let (send_cq, recv_cq) = (env.cq(), env.cq());
        let src = env.buf(64, LOCAL_WRITE);
        // No room for a thread's stack from here on.
        limit_address_space(1 << 20);
        let cap = qp_cap(4, 4, 1, 1, 0);
        let mut attr = qp_init_attr(IBV_QPT_RC, send_cq, recv_cq, ptr::null_mut(), cap);
        // SAFETY: a live PD; the CQs are live objects of its context.
        match unsafe { raw::ibv_create_qp(env.pd, &mut attr) } {
            Err(e) => println!("CHILD create_qp errno {e}"),
            Ok(qp) => {
                let qp = qp.as_ptr();
                // SAFETY: destroyed once, before the CQs.
                env.push(move || unsafe { raw::ibv_destroy_qp(qp) }.expect("ibv_destroy_qp"));
                // A send to a QP with no receive posted: an RNR NAK, which needs the timer.
                let q = Qp {
                    raw: qp,
                    // SAFETY: a live QP.
                    num: unsafe { (*qp).qp_num },
                    qpt: IBV_QPT_RC,
                    cap: attr.cap,
                    send_cq,
                    recv_cq,
                };
                env.connect(&q, &q, 0, 3);
                let (rc, _) = post_send_list(
                    &q,
                    &mut send_wr(1, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]).wr,
                );
                println!("CHILD post_send rc {rc}");
            }
        }
        return;
    }
    assert_child_prints(
        test,
        "the software device's RNR timer thread",
        &format!("CHILD create_qp errno {}", libc::EAGAIN),
        "the RC QP's creation to fail with EAGAIN",
    );
}

#[test]
fn a_send_longer_than_max_msg_sz_is_refused_at_the_post() {
    // Three SGEs of 1 GiB each over one registered (never touched) 1 GiB region: 3 GiB, above
    // the port's max_msg_sz of 2^31. The post fails with EINVAL. (The device used to gather
    // the 3 GiB into one buffer while executing the request, and aborted where that allocation
    // failed; the child's address space is limited so that it would.)
    let test = "a_send_longer_than_max_msg_sz_is_refused_at_the_post";
    const GIB: usize = 1 << 30;
    if is_child(test) {
        let mut env = Env::new();
        let mut spec = Spec::new(IBV_QPT_RC);
        spec.send_sge = 4;
        let (a, _b) = env.pair(spec, REMOTE_ALL, 0);
        // SAFETY: a fresh anonymous mapping, never touched; unmapped after the MR goes.
        let mem = unsafe {
            libc::mmap(
                ptr::null_mut(),
                GIB,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        assert_ne!(mem, libc::MAP_FAILED);
        // SAFETY: unmapped once, after the MR is deregistered (cleanups run in reverse).
        env.push(move || unsafe {
            libc::munmap(mem, GIB);
        });
        // SAFETY: a live PD; the mapping stays until after ibv_dereg_mr.
        let mr = unsafe { raw::ibv_reg_mr(env.pd, mem, GIB, LOCAL_WRITE) }
            .expect("ibv_reg_mr")
            .as_ptr();
        // SAFETY: deregistered once.
        env.push(move || unsafe { raw::ibv_dereg_mr(mr) }.expect("ibv_dereg_mr"));
        let sge = sys::ibv_sge {
            addr: mem as u64,
            length: GIB as u32,
            // SAFETY: a live MR.
            lkey: unsafe { (*mr).lkey },
        };
        limit_address_space(256 << 20);
        let mut w = send_wr(1, IBV_WR_SEND, SIGNALED, &[sge, sge, sge]);
        let (rc, bad) = post_send_list(&a, &mut w.wr);
        println!(
            "CHILD post_send rc {rc} bad_wr {}",
            std::ptr::eq(bad, &w.wr)
        );
        return;
    }
    assert_child_prints(
        test,
        "the software device's max_msg_sz check at the post",
        &format!("CHILD post_send rc {} bad_wr true", libc::EINVAL),
        "the post to fail with EINVAL naming the request",
    );
}
