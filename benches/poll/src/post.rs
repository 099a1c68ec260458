//! The post_send benchmark: the typed `Qp::post_send` of each opcode against C building the same
//! `struct ibv_send_wr` and calling verbs.h's inline `ibv_post_send` (`c/post_send.c`), on an RC
//! QP pair in loopback on the software device. Each variant posts one request per call of a
//! `#[no_mangle]` function, so callgrind can count inside it alone.

use crate::rc_up;
use std::os::raw::c_int;
use typed_verbs::ffi::sys;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    access, Access, AtomicResult, AtomicTarget, Context, Cq, Mr, OwnRq, PageBuf, Pd, Qp, Rc,
    RemoteAddr, SendWr, Sge, Shared, WorkCompletion,
};

/// The rights of the remote region (and of the QPs): remote write, read and atomics.
pub type AllRemote = access!(REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC);
/// The value of [`AllRemote`].
pub const ALL_REMOTE: AllRemote = Access::REMOTE_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

/// A QP in RTS.
pub type RcQp<'a> = Qp<'a, Rc, OwnRq, Shared, (), Rts>;

/// An RC pair in loopback, with one region each side.
pub struct Pair<'a> {
    /// The sending QP.
    pub a: RcQp<'a>,
    /// The receiving QP.
    pub b: RcQp<'a>,
    /// The CQ of both.
    pub cq: &'a Cq<'a>,
}

/// Brings up an RC pair on `cq` in `pd`.
pub fn rc_pair<'a>(ctx: &Context, pd: &'a Pd<'_>, cq: &'a Cq<'a>) -> Pair<'a> {
    let build = || {
        Qp::<Rc>::builder(pd, cq, cq)
            .max_send_wr(64)
            .max_recv_wr(64)
            .build()
            .expect("ibv_create_qp")
    };
    let (a, b) = (build(), build());
    let (an, bn) = (a.qp_num(), b.qp_num());
    let a = rc_up(ctx, a, bn, ALL_REMOTE.into());
    let b = rc_up(ctx, b, an, ALL_REMOTE.into());
    Pair { a, b, cq }
}

/// Takes every completion from `cq`; how many.
pub fn drain(cq: &Cq<'_>) -> usize {
    let mut wc: [WorkCompletion; 16] = std::array::from_fn(|_| WorkCompletion::new());
    let mut n = 0;
    loop {
        let got = cq.poll(&mut wc).expect("ibv_poll_cq");
        for w in got {
            assert!(w.success().is_some(), "failed completion {w:?}");
        }
        n += got.len();
        if got.is_empty() {
            return n;
        }
    }
}

type RawQp = *mut sys::ibv_qp;
type RawSge = *mut sys::ibv_sge;

extern "C" {
    fn c_post_send(qp: RawQp, sge: RawSge, wr_id: u64) -> c_int;
    fn c_post_send_imm(qp: RawQp, sge: RawSge, wr_id: u64, imm: u32) -> c_int;
    fn c_post_write(qp: RawQp, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_post_read(qp: RawQp, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
    fn c_post_fetch_add(qp: RawQp, sge: RawSge, wr_id: u64, raddr: u64, rkey: u32) -> c_int;
}

macro_rules! typed {
    ($($name:ident($qp:ident, $sge:ident, $i:ident, $r:ident) => $wr:expr;)*) => {$(
        /// A typed post (see the module docs).
        #[no_mangle]
        #[inline(never)]
        pub fn $name($qp: &RcQp<'_>, $sge: &[Sge; 1], $i: u64, $r: RemoteAddr<AllRemote>) -> typed_verbs::Result<()> {
            let _ = $r;
            $qp.post_send(&$wr)
        }
    )*};
}

typed! {
    typed_post_send(qp, sge, i, r) => SendWr::send(i, sge).signaled();
    typed_post_send_imm(qp, sge, i, r) => SendWr::send_with_imm(i, sge, i as u32).signaled();
    typed_post_write(qp, sge, i, r) => SendWr::rdma_write(i, sge, r).signaled();
    typed_post_read(qp, sge, i, r) => SendWr::rdma_read(i, sge, r).signaled();
}

/// A typed fetch-and-add; its target was proven aligned when it was made (outside).
#[no_mangle]
#[inline(never)]
pub fn typed_post_fetch_add(
    qp: &RcQp<'_>,
    result: &AtomicResult<'_>,
    i: u64,
    target: AtomicTarget,
) -> typed_verbs::Result<()> {
    qp.post_send(&SendWr::fetch_add(i, result, target, 1).signaled())
}

/// The opcodes measured: (name, typed function's symbol, C function's symbol, needs a receive).
pub const OPCODES: [(&str, &str, &str, bool); 5] = [
    ("send", "typed_post_send", "c_post_send", true),
    ("send_imm", "typed_post_send_imm", "c_post_send_imm", true),
    ("rdma_write", "typed_post_write", "c_post_write", false),
    ("rdma_read", "typed_post_read", "c_post_read", false),
    (
        "fetch_add",
        "typed_post_fetch_add",
        "c_post_fetch_add",
        false,
    ),
];

/// Posts `n` requests of `opcode` with the typed API (`typed`) or C, each followed (outside the
/// measured function) by the receive it needs and the draining of the CQ.
pub fn run(
    pair: &Pair<'_>,
    local: &Mr<'_>,
    remote: &Mr<'_, PageBuf, AllRemote>,
    recv: &Mr<'_>,
    opcode: &str,
    typed: bool,
    n: u64,
) {
    let entry = OPCODES
        .iter()
        .find(|o| o.0 == opcode)
        .expect("an opcode of OPCODES");
    let sge = [local
        .sge(0..if opcode == "fetch_add" { 8 } else { 64 })
        .unwrap()];
    let r = remote.remote().at(0, 64).unwrap();
    let mut raw_sge = sys::ibv_sge {
        addr: sge[0].addr(),
        length: sge[0].length(),
        lkey: sge[0].lkey(),
    };
    for i in 0..n {
        if entry.3 {
            pair.b.post_recv(i, &[recv.sge(0..64).unwrap()]).unwrap();
        }
        if typed {
            let target = remote.remote().atomic_at(0).unwrap();
            let result = local.atomic_result(0).unwrap();
            match opcode {
                "send" => typed_post_send(&pair.a, &sge, i, r),
                "send_imm" => typed_post_send_imm(&pair.a, &sge, i, r),
                "rdma_write" => typed_post_write(&pair.a, &sge, i, r),
                "rdma_read" => typed_post_read(&pair.a, &sge, i, r),
                _ => typed_post_fetch_add(&pair.a, &result, i, target),
            }
            .expect("typed post_send");
        } else {
            let qp = pair.a.as_raw();
            // SAFETY: a live QP in RTS; the SGE names a live region; the C function builds the
            // request on its stack and posts it.
            let rc = unsafe {
                match opcode {
                    "send" => c_post_send(qp, &mut raw_sge, i),
                    "send_imm" => c_post_send_imm(qp, &mut raw_sge, i, i as u32),
                    "rdma_write" => c_post_write(qp, &mut raw_sge, i, r.addr(), r.rkey()),
                    "rdma_read" => c_post_read(qp, &mut raw_sge, i, r.addr(), r.rkey()),
                    _ => c_post_fetch_add(qp, &mut raw_sge, i, r.addr(), r.rkey()),
                }
            };
            assert_eq!(rc, 0, "C post_send");
        }
        drain(pair.cq);
    }
}
