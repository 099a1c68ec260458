//! The extended post path benchmark: the typed `Qp::post_batch` (ibv_wr_post(3) through
//! `PostBatch`) against C making the same `ibv_wr_*` calls (`c/post_ex.c`), on an RC QP pair in
//! loopback on the software device, the sender an extended QP created for
//! `send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_READ | ATOMIC_FETCH_AND_ADD)`.
//!
//! Each variant posts one session (`ibv_wr_start`, [`SESSIONS`] requests of one op, each signaled,
//! `ibv_wr_complete`) per call of a `#[no_mangle]` function, so callgrind can count inside it
//! alone; the receives the sends need and the draining of the CQ happen between the calls,
//! outside them, as in [`crate::post`].

use crate::post::{drain, AllRemote, RcQp, ALL_REMOTE};
use std::os::raw::c_int;
use typed_verbs::ffi::sys;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    send_ops, AccessFlags, AtomicResult, AtomicTarget, Context, Cq, Ex, Mr, OwnRq, PageBuf, Pd, Qp,
    Rc, RemoteAddr, Sge, Shared,
};

/// The sender's send ops.
pub type ExOps = send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_READ | ATOMIC_FETCH_AND_ADD);
/// The sending QP: extended, in RTS.
pub type ExQp<'a> = Qp<'a, Ex<Rc, ExOps>, OwnRq, Shared, (), Rts>;

/// The session sizes measured: requests per `ibv_wr_start` .. `ibv_wr_complete`.
pub const SESSIONS: [u64; 2] = [1, 16];

/// An RC pair in loopback: an extended sender and a plain receiver, on one CQ.
pub struct ExPair<'a> {
    /// The sending QP.
    pub a: ExQp<'a>,
    /// The receiving QP.
    pub b: RcQp<'a>,
    /// The CQ of both.
    pub cq: &'a Cq<'a>,
}

/// Brings up an [`ExPair`] on `cq` in `pd`; the error of creating the extended QP when the
/// device has none (`ErrorKind::SendOpsUnsupported`).
pub fn ex_pair<'a>(pd: &'a Pd<'_>, cq: &'a Cq<'a>) -> typed_verbs::Result<ExPair<'a>> {
    let a = Qp::<Rc>::builder(pd, cq, cq)
        .max_send_wr(64)
        .max_recv_wr(64)
        .send_ops::<ExOps>()
        .build()?;
    let b = Qp::<Rc>::builder(pd, cq, cq)
        .max_send_wr(64)
        .max_recv_wr(64)
        .build()?;
    let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
    let access: AccessFlags = ALL_REMOTE.into();
    let a = a.connect(&ea, &eb, access)?;
    let b = b.connect(&eb, &ea, access)?;
    Ok(ExPair { a, b, cq })
}

/// The sender's `struct ibv_qp_ex`, for the C side, taken once before the measured calls: the QP
/// itself, whose `struct ibv_qp` is the `qp_base` at the start of its `struct ibv_qp_ex` (what
/// libibverbs' `ibv_qp_to_qp_ex` returns for every provider: rdma-core's `struct verbs_qp` is a
/// union of the two; the software device lays its QPs out the same way). Checked against
/// `ibv_qp_to_qp_ex` when that finds the QP extended, and against the function pointers the C
/// side calls.
pub fn raw_qpx(qp: &ExQp<'_>) -> *mut sys::ibv_qp_ex {
    let qpx = qp.as_raw().cast::<sys::ibv_qp_ex>();
    // SAFETY: a live QP, laid out as a `struct verbs_qp`; the function reads its comp_mask.
    let by_libibverbs = unsafe { sys::ibv_qp_to_qp_ex(qp.as_raw()) };
    if by_libibverbs.is_null() {
        eprintln!(
            "post_ex: libibverbs' ibv_qp_to_qp_ex finds no extended QP (the device's \
             verbs_qp.comp_mask lacks VERBS_QP_EX, 1 << 1); using the QP's own ibv_qp_ex"
        );
    } else {
        assert_eq!(by_libibverbs, qpx, "ibv_qp_to_qp_ex");
    }
    // SAFETY: a live extended QP, its ibv_qp_ex at its start (above); only its function
    // pointers are read.
    let q = unsafe { &*qpx };
    assert!(
        q.wr_start.is_some()
            && q.wr_complete.is_some()
            && q.wr_set_sge.is_some()
            && q.wr_send.is_some()
            && q.wr_send_imm.is_some()
            && q.wr_rdma_write.is_some()
            && q.wr_rdma_read.is_some()
            && q.wr_atomic_fetch_add.is_some(),
        "the extended QP lacks an operation the C side calls"
    );
    qpx
}

type RawQpx = *mut sys::ibv_qp_ex;
type RawSge = *const sys::ibv_sge;

extern "C" {
    fn c_ex_send_1(qpx: RawQpx, sge: RawSge, wr_id: u64) -> c_int;
    fn c_ex_send_16(qpx: RawQpx, sge: RawSge, wr_id: u64) -> c_int;
    fn c_ex_send_imm_1(qpx: RawQpx, sge: RawSge, wr_id: u64) -> c_int;
    fn c_ex_send_imm_16(qpx: RawQpx, sge: RawSge, wr_id: u64) -> c_int;
    fn c_ex_write_1(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_ex_write_16(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_ex_read_1(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_ex_read_16(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_ex_fetch_add_1(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_ex_fetch_add_16(qpx: RawQpx, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
}

/// One typed session per function: `$k` requests, wr_id `first`, `first + 1`, ..., each made
/// by `$req` on the batch `$b` with wr_id `$i`.
macro_rules! typed_ex {
    ($($name:ident<$k:literal>($($arg:ident: $ty:ty),*) |$b:ident, $i:ident| $req:expr;)*) => {$(
        /// A typed session (see the module docs).
        #[no_mangle]
        #[inline(never)]
        pub fn $name(qp: &mut ExQp<'_>, first: u64, $($arg: $ty),*) -> c_int {
            let posted = qp.post_batch(|$b| {
                for j in 0..$k {
                    let $i = first + j; // as the C loop: `first + i`, i in 0..K
                    $req?;
                }
                Ok(())
            });
            // As the C function: 0, or the errno a C program would see.
            match posted {
                Ok(()) => 0,
                Err(e) => e.errno(),
            }
        }
    )*};
}

// The SGE is given by reference, as C passes `const struct ibv_sge *`: the setter reads it in
// place (by value it would be copied when the data method is called).
#[allow(clippy::needless_borrows_for_generic_args)]
mod sessions {
    use super::*;
    typed_ex! {
        typed_ex_send_1<1>(sge: Sge<'_>) |b, i| b.send(i).signaled().sge(&sge);
        typed_ex_send_16<16>(sge: Sge<'_>) |b, i| b.send(i).signaled().sge(&sge);
        typed_ex_send_imm_1<1>(sge: Sge<'_>) |b, i| b.send_with_imm(i, i as u32).signaled().sge(&sge);
        typed_ex_send_imm_16<16>(sge: Sge<'_>) |b, i| b.send_with_imm(i, i as u32).signaled().sge(&sge);
        typed_ex_write_1<1>(sge: Sge<'_>, r: RemoteAddr<AllRemote>) |b, i| b.rdma_write(i, r).signaled().sge(&sge);
        typed_ex_write_16<16>(sge: Sge<'_>, r: RemoteAddr<AllRemote>) |b, i| b.rdma_write(i, r).signaled().sge(&sge);
        typed_ex_read_1<1>(sge: Sge<'_>, r: RemoteAddr<AllRemote>) |b, i| b.rdma_read(i, r).signaled().sge(&sge);
        typed_ex_read_16<16>(sge: Sge<'_>, r: RemoteAddr<AllRemote>) |b, i| b.rdma_read(i, r).signaled().sge(&sge);
        typed_ex_fetch_add_1<1>(result: &AtomicResult<'_>, target: AtomicTarget) |b, i| b.fetch_add(i, target, 1).signaled().result(result);
        typed_ex_fetch_add_16<16>(result: &AtomicResult<'_>, target: AtomicTarget) |b, i| b.fetch_add(i, target, 1).signaled().result(result);
    }
}
pub use sessions::*;

/// The ops measured: (name, needs a receive per request).
pub const OPS: [(&str, bool); 5] = [
    ("send", true),
    ("send_imm", true),
    ("rdma_write", false),
    ("rdma_read", false),
    ("fetch_add", false),
];

/// The symbol of the function of `op`, `typed` or C, posting sessions of `k`.
pub fn symbol(op: &str, typed: bool, k: u64) -> String {
    let op = match op {
        "rdma_write" => "write",
        "rdma_read" => "read",
        other => other,
    };
    format!("{}_ex_{op}_{k}", if typed { "typed" } else { "c" })
}

/// Posts `n` requests of `op` (a multiple of `k`) in sessions of `k` with the typed API
/// (`typed`) or C; before each session (outside the measured function) the receives it needs,
/// after it the draining of the CQ.
#[allow(clippy::too_many_arguments)]
pub fn run(
    pair: &mut ExPair<'_>,
    local: &Mr<'_>,
    remote: &Mr<'_, PageBuf, AllRemote>,
    recv: &Mr<'_>,
    op: &str,
    typed: bool,
    k: u64,
    n: u64,
) {
    let entry = OPS.iter().find(|o| o.0 == op).expect("an op of OPS");
    assert!(SESSIONS.contains(&k), "a session size of SESSIONS");
    assert!(n % k == 0, "whole sessions");
    let sge = local
        .sge(0..if op == "fetch_add" { 8 } else { 64 })
        .unwrap();
    let r = remote.remote().at(0, 64).unwrap();
    let target = remote.remote().atomic_at(0).unwrap();
    let result = local.atomic_result(0).unwrap();
    let raw_sge = sys::ibv_sge {
        addr: sge.addr(),
        length: sge.length(),
        lkey: sge.lkey(),
    };
    let qpx = raw_qpx(&pair.a);
    let mut first = 0;
    while first < n {
        if entry.1 {
            for i in first..first + k {
                pair.b.post_recv(i, &[recv.sge(0..64).unwrap()]).unwrap();
            }
        }
        if typed {
            let a = &mut pair.a;
            let rc = match (op, k) {
                ("send", 1) => typed_ex_send_1(a, first, sge),
                ("send", _) => typed_ex_send_16(a, first, sge),
                ("send_imm", 1) => typed_ex_send_imm_1(a, first, sge),
                ("send_imm", _) => typed_ex_send_imm_16(a, first, sge),
                ("rdma_write", 1) => typed_ex_write_1(a, first, sge, r),
                ("rdma_write", _) => typed_ex_write_16(a, first, sge, r),
                ("rdma_read", 1) => typed_ex_read_1(a, first, sge, r),
                ("rdma_read", _) => typed_ex_read_16(a, first, sge, r),
                (_, 1) => typed_ex_fetch_add_1(a, first, &result, target),
                _ => typed_ex_fetch_add_16(a, first, &result, target),
            };
            assert_eq!(rc, 0, "typed post_batch");
        } else {
            let (ra, rk) = (r.addr(), r.rkey());
            let (ta, tk) = (target.addr().addr(), target.addr().rkey());
            // SAFETY: a live extended QP in RTS with the builders these functions call (checked
            // by `raw_qpx`), not in a batch; the SGE names a live region. The C function opens
            // and completes its own session.
            let rc = unsafe {
                match (op, k) {
                    ("send", 1) => c_ex_send_1(qpx, &raw_sge, first),
                    ("send", _) => c_ex_send_16(qpx, &raw_sge, first),
                    ("send_imm", 1) => c_ex_send_imm_1(qpx, &raw_sge, first),
                    ("send_imm", _) => c_ex_send_imm_16(qpx, &raw_sge, first),
                    ("rdma_write", 1) => c_ex_write_1(qpx, &raw_sge, first, ra, rk),
                    ("rdma_write", _) => c_ex_write_16(qpx, &raw_sge, first, ra, rk),
                    ("rdma_read", 1) => c_ex_read_1(qpx, &raw_sge, first, ra, rk),
                    ("rdma_read", _) => c_ex_read_16(qpx, &raw_sge, first, ra, rk),
                    (_, 1) => c_ex_fetch_add_1(qpx, &raw_sge, first, ta, tk),
                    _ => c_ex_fetch_add_16(qpx, &raw_sge, first, ta, tk),
                }
            };
            assert_eq!(rc, 0, "C ibv_wr_complete");
        }
        let done = drain(pair.cq) as u64;
        let want = if entry.1 { 2 * k } else { k };
        assert_eq!(done, want, "completions of one session");
        first += k;
    }
}

/// Opens what [`run`] needs on `ctx` and runs it; `Err` when the device has no extended QP.
pub fn main_run(ctx: &Context, op: &str, typed: bool, k: u64, n: u64) -> typed_verbs::Result<()> {
    let pd = Pd::new(ctx)?;
    let cq = Cq::builder(ctx).cqe(256).build()?;
    let mut pair = ex_pair(&pd, &cq)?;
    let buf = || PageBuf::new(64).unwrap();
    let local = Mr::new(&pd, buf(), typed_verbs::Access::LOCAL_WRITE)?;
    let remote = Mr::new(&pd, buf(), ALL_REMOTE)?;
    let recv = Mr::new(&pd, buf(), typed_verbs::Access::LOCAL_WRITE)?;
    run(&mut pair, &local, &remote, &recv, op, typed, k, n);
    Ok(())
}
