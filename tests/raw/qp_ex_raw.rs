//! The extended QP at the raw verbs level (`raw::ibv_create_qp_ex`, `raw::ibv_qp_to_qp_ex` and
//! the `struct ibv_qp_ex` operations of ibv_wr_post(3)), on the device the tests run on.
//!
//! What rxe does is asserted on both devices; the software device's extra strictness (it fails
//! at `wr_complete` a batch that rxe would corrupt or mis-send) only on the software device.
// Uses data_raw's helpers, which need the software device's feature.
#![cfg(feature = "software-device")]

use super::data_raw::*;
use crate::common;

use common::raw::{
    qp_cap, INLINE, LOCAL_WRITE, REMOTE_ATOMIC, REMOTE_READ, REMOTE_WRITE, SIGNALED, WC_WITH_IMM,
};
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;
use sys::ibv_qp_create_send_ops_flags as ops;
use sys::ibv_qp_init_attr_mask as attr_mask;
use sys::ibv_qp_type::*;
use sys::ibv_wc_opcode::*;
use sys::ibv_wr_opcode::*;
use typed_verbs::ffi::sys;
use typed_verbs::raw;

const REMOTE_ALL: i32 = REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC;

fn bits(v: &[ops]) -> u64 {
    v.iter().fold(0, |a, b| a | u64::from(b.0))
}

/// The send operations rxe and the software device both support, by QP type.
fn rc_ops() -> u64 {
    bits(&[
        ops::IBV_QP_EX_WITH_RDMA_WRITE,
        ops::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
        ops::IBV_QP_EX_WITH_SEND,
        ops::IBV_QP_EX_WITH_SEND_WITH_IMM,
        ops::IBV_QP_EX_WITH_RDMA_READ,
        ops::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP,
        ops::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD,
    ])
}
fn uc_ops() -> u64 {
    bits(&[
        ops::IBV_QP_EX_WITH_RDMA_WRITE,
        ops::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM,
        ops::IBV_QP_EX_WITH_SEND,
        ops::IBV_QP_EX_WITH_SEND_WITH_IMM,
    ])
}
fn ud_ops() -> u64 {
    bits(&[ops::IBV_QP_EX_WITH_SEND, ops::IBV_QP_EX_WITH_SEND_WITH_IMM])
}

const PD_AND_OPS: u32 =
    attr_mask::IBV_QP_INIT_ATTR_PD.0 | attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;

/// The extended creation attributes of a QP of `spec` on `cq`.
fn init_ex(
    e: &Env,
    spec: Spec,
    cq: *mut sys::ibv_cq,
    mask: u32,
    send_ops: u64,
) -> sys::ibv_qp_init_attr_ex {
    // SAFETY: plain C data; all-zero is a valid value.
    let mut a: sys::ibv_qp_init_attr_ex = unsafe { std::mem::zeroed() };
    a.send_cq = cq;
    a.recv_cq = cq;
    a.qp_type = spec.qpt;
    a.cap = qp_cap(
        spec.send_wr,
        spec.recv_wr,
        spec.send_sge,
        spec.recv_sge,
        spec.inline,
    );
    a.comp_mask = mask;
    a.pd = e.pd;
    a.send_ops_flags = send_ops;
    a
}

/// `raw::ibv_create_qp_ex`; a QP it creates is destroyed by the cleanup.
fn create(e: &mut Env, attr: &mut sys::ibv_qp_init_attr_ex) -> Result<*mut sys::ibv_qp, i32> {
    // SAFETY: a live context; the PD and CQ in attr are live objects of it.
    let qp = unsafe { raw::ibv_create_qp_ex(e.ctx.as_raw(), attr) }?.as_ptr();
    // SAFETY: destroyed once, before the CQ and PD.
    e.push(move || unsafe { raw::ibv_destroy_qp(qp) }.expect("ibv_destroy_qp"));
    Ok(qp)
}

/// An extended QP of `spec` with the operations `send_ops`, on its own CQ.
fn qp_ex(e: &mut Env, spec: Spec, send_ops: u64) -> (Qp, Qx) {
    let cq = e.cq();
    let mut attr = init_ex(e, spec, cq, PD_AND_OPS, send_ops);
    let qp = create(e, &mut attr).expect("ibv_create_qp_ex");
    // SAFETY: a live QP.
    let qpx = unsafe { raw::ibv_qp_to_qp_ex(qp) }.expect("an extended QP");
    let q = Qp {
        raw: qp,
        // SAFETY: a live QP.
        num: unsafe { (*qp).qp_num },
        qpt: spec.qpt,
        cap: attr.cap,
        send_cq: cq,
        recv_cq: cq,
    };
    (q, Qx(qpx.as_ptr()))
}

/// A connected RC (or UC) pair: `a` extended with `send_ops`, `b` a legacy QP.
fn ex_pair(e: &mut Env, spec: Spec, send_ops: u64, access: i32) -> (Qp, Qx, Qp) {
    let (a, ax) = qp_ex(e, spec, send_ops);
    let b = e.qp(spec);
    e.connect(&a, &b, access, 7);
    e.connect(&b, &a, access, 7);
    (a, ax, b)
}

/// An extended QP's operations, called as verbs.h's inline `ibv_wr_*` do (the pointer checked
/// for NULL here: a test fails rather than calls NULL).
#[derive(Clone, Copy)]
struct Qx(*mut sys::ibv_qp_ex);
// SAFETY: the QP is usable from any thread (the extended QP's operations lock per QP); the tests
// keep it alive while another thread uses it.
unsafe impl Send for Qx {}

macro_rules! call {
    ($q:expr, $op:ident $(, $arg:expr)*) => {{
        let q = $q.0;
        // SAFETY: a live extended QP (the test's cleanup destroys it after use); the arguments
        // are what the operation takes (buffers readable for the call).
        unsafe { ((*q).$op.expect(stringify!($op)))(q $(, $arg)*) }
    }};
}

impl Qx {
    fn start(&self) {
        call!(self, wr_start)
    }
    fn complete(&self) -> i32 {
        call!(self, wr_complete)
    }
    fn abort(&self) {
        call!(self, wr_abort)
    }
    /// Sets `wr_id` and `wr_flags` for the next builder.
    fn id(&self, wr_id: u64, flags: u32) {
        // SAFETY: a live extended QP; the caller's fields, written between calls.
        unsafe {
            (*self.0).wr_id = wr_id;
            (*self.0).wr_flags = flags;
        }
    }
    fn send(&self, wr_id: u64, flags: u32) {
        self.id(wr_id, flags);
        call!(self, wr_send)
    }
    fn send_imm(&self, wr_id: u64, flags: u32, imm: u32) {
        self.id(wr_id, flags);
        call!(self, wr_send_imm, imm)
    }
    fn write(&self, wr_id: u64, flags: u32, rkey: u32, addr: u64) {
        self.id(wr_id, flags);
        call!(self, wr_rdma_write, rkey, addr)
    }
    fn write_imm(&self, wr_id: u64, flags: u32, rkey: u32, addr: u64, imm: u32) {
        self.id(wr_id, flags);
        call!(self, wr_rdma_write_imm, rkey, addr, imm)
    }
    fn read(&self, wr_id: u64, flags: u32, rkey: u32, addr: u64) {
        self.id(wr_id, flags);
        call!(self, wr_rdma_read, rkey, addr)
    }
    fn cas(&self, wr_id: u64, flags: u32, rkey: u32, addr: u64, compare: u64, swap: u64) {
        self.id(wr_id, flags);
        call!(self, wr_atomic_cmp_swp, rkey, addr, compare, swap)
    }
    fn faa(&self, wr_id: u64, flags: u32, rkey: u32, addr: u64, add: u64) {
        self.id(wr_id, flags);
        call!(self, wr_atomic_fetch_add, rkey, addr, add)
    }
    fn sge(&self, s: sys::ibv_sge) {
        call!(self, wr_set_sge, s.lkey, s.addr, s.length)
    }
    fn sge_list(&self, s: &[sys::ibv_sge]) {
        call!(self, wr_set_sge_list, s.len(), s.as_ptr())
    }
    fn inline(&self, data: &[u8]) {
        call!(
            self,
            wr_set_inline_data,
            data.as_ptr() as *mut _,
            data.len()
        )
    }
    fn inline_list(&self, bufs: &[&[u8]]) {
        let list: Vec<sys::ibv_data_buf> = bufs
            .iter()
            .map(|b| sys::ibv_data_buf {
                addr: b.as_ptr() as *mut _,
                length: b.len(),
            })
            .collect();
        call!(self, wr_set_inline_data_list, list.len(), list.as_ptr())
    }
    fn ud(&self, ah: *mut sys::ibv_ah, qpn: u32, qkey: u32) {
        call!(self, wr_set_ud_addr, ah, qpn, qkey)
    }
}

fn with_imm(w: Wc) -> Wc {
    Wc {
        wc_flags: WC_WITH_IMM,
        ..w
    }
}

#[test]
fn creation_per_qp_type_and_the_builders_installed() {
    let mut e = Env::new();
    let cq = e.cq();
    for (qpt, all) in [
        (IBV_QPT_RC, rc_ops()),
        (IBV_QPT_UC, uc_ops()),
        (IBV_QPT_UD, ud_ops()),
    ] {
        let only_send = bits(&[ops::IBV_QP_EX_WITH_SEND]);
        for want in [all, only_send] {
            let mut attr = init_ex(&e, Spec::new(qpt), cq, PD_AND_OPS, want);
            let qp = create(&mut e, &mut attr)
                .unwrap_or_else(|err| panic!("type {qpt} ops {want:#x}: errno {err}"));
            // SAFETY: a live QP.
            let x = unsafe { raw::ibv_qp_to_qp_ex(qp) }.expect("an extended QP");
            // SAFETY: a live QP.
            let x = unsafe { x.as_ref() };
            assert_eq!(
                x.qp_base.qp_num,
                // SAFETY: a live QP.
                unsafe { (*qp).qp_num },
                "qp_base is the QP"
            );
            // libibverbs' own ibv_qp_to_qp_ex reads `struct verbs_qp`'s comp_mask for
            // VERBS_QP_EX (1 << 1): the software device's QPs start as that struct does, so it
            // answers the same, here and for the legacy QP below.
            // SAFETY: a live QP, whose memory starts as a `struct verbs_qp` on both backends.
            let by_libibverbs = unsafe { typed_verbs::ffi::sys::ibv_qp_to_qp_ex(qp) };
            assert_eq!(
                by_libibverbs, x as *const _ as *mut _,
                "libibverbs' ibv_qp_to_qp_ex"
            );
            let has = |bit: ops| want & u64::from(bit.0) != 0;
            let builders = [
                (
                    x.wr_rdma_write.is_some(),
                    has(ops::IBV_QP_EX_WITH_RDMA_WRITE),
                    "rdma_write",
                ),
                (
                    x.wr_rdma_write_imm.is_some(),
                    has(ops::IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM),
                    "rdma_write_imm",
                ),
                (x.wr_send.is_some(), has(ops::IBV_QP_EX_WITH_SEND), "send"),
                (
                    x.wr_send_imm.is_some(),
                    has(ops::IBV_QP_EX_WITH_SEND_WITH_IMM),
                    "send_imm",
                ),
                (
                    x.wr_rdma_read.is_some(),
                    has(ops::IBV_QP_EX_WITH_RDMA_READ),
                    "rdma_read",
                ),
                (
                    x.wr_atomic_cmp_swp.is_some(),
                    has(ops::IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP),
                    "cmp_swp",
                ),
                (
                    x.wr_atomic_fetch_add.is_some(),
                    has(ops::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD),
                    "fetch_add",
                ),
                (x.wr_bind_mw.is_some(), false, "bind_mw"),
                (x.wr_local_inv.is_some(), false, "local_inv"),
                (x.wr_send_inv.is_some(), false, "send_inv"),
                (x.wr_send_tso.is_some(), false, "send_tso"),
                (x.wr_atomic_write.is_some(), false, "atomic_write"),
                (x.wr_set_xrc_srqn.is_some(), false, "set_xrc_srqn"),
            ];
            for (set, expected, name) in builders {
                assert_eq!(set, expected, "type {qpt} ops {want:#x}: {name}");
            }
            for (set, name) in [
                (x.wr_set_ud_addr.is_some(), "set_ud_addr"),
                (x.wr_set_inline_data.is_some(), "set_inline_data"),
                (x.wr_set_inline_data_list.is_some(), "set_inline_data_list"),
                (x.wr_set_sge.is_some(), "set_sge"),
                (x.wr_set_sge_list.is_some(), "set_sge_list"),
                (x.wr_start.is_some(), "start"),
                (x.wr_complete.is_some(), "complete"),
                (x.wr_abort.is_some(), "abort"),
            ] {
                assert!(set, "type {qpt}: {name}");
            }
        }
    }
}

#[test]
fn a_legacy_qp_has_no_qp_ex() {
    let mut e = Env::new();
    let legacy = e.qp(Spec::new(IBV_QPT_RC));
    // SAFETY: a live QP.
    assert!(
        unsafe { raw::ibv_qp_to_qp_ex(legacy.raw) }.is_none(),
        "ibv_create_qp"
    );
    // SAFETY: as above; libibverbs' function reads the QP's `struct verbs_qp`.
    assert!(
        unsafe { typed_verbs::ffi::sys::ibv_qp_to_qp_ex(legacy.raw) }.is_null(),
        "libibverbs' ibv_qp_to_qp_ex of a legacy QP"
    );
    // ibv_create_qp_ex with the PD alone is the legacy create (verbs.h).
    let cq = e.cq();
    let mut attr = init_ex(
        &e,
        Spec::new(IBV_QPT_UD),
        cq,
        attr_mask::IBV_QP_INIT_ATTR_PD.0,
        0,
    );
    let qp = create(&mut e, &mut attr).expect("ibv_create_qp_ex with the PD alone");
    // SAFETY: a live QP.
    assert!(
        unsafe { raw::ibv_qp_to_qp_ex(qp) }.is_none(),
        "comp_mask PD"
    );
}

#[test]
fn unsupported_send_ops_and_attributes_are_eopnotsupp() {
    let mut e = Env::new();
    let cq = e.cq();
    let sw = e.ctx.is_software();
    let mut try_create = |qpt, mask, send_ops| {
        let mut attr = init_ex(&e, Spec::new(qpt), cq, mask, send_ops);
        create(&mut e, &mut attr).map(|_| ())
    };
    let refused = [
        (IBV_QPT_UD, bits(&[ops::IBV_QP_EX_WITH_RDMA_WRITE])),
        (
            IBV_QPT_UD,
            bits(&[ops::IBV_QP_EX_WITH_SEND, ops::IBV_QP_EX_WITH_RDMA_READ]),
        ),
        (IBV_QPT_UC, bits(&[ops::IBV_QP_EX_WITH_RDMA_READ])),
        (
            IBV_QPT_UC,
            bits(&[ops::IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD]),
        ),
        (IBV_QPT_RC, bits(&[ops::IBV_QP_EX_WITH_TSO])),
        (IBV_QPT_UD, bits(&[ops::IBV_QP_EX_WITH_TSO])),
    ];
    for (qpt, send_ops) in refused {
        assert_eq!(
            try_create(qpt, PD_AND_OPS, send_ops),
            Err(libc::EOPNOTSUPP),
            "type {qpt} ops {send_ops:#x}"
        );
    }
    // A comp_mask bit rxe does not take.
    let tso_header = PD_AND_OPS | attr_mask::IBV_QP_INIT_ATTR_MAX_TSO_HEADER.0;
    assert_eq!(
        try_create(IBV_QPT_RC, tso_header, rc_ops()),
        Err(libc::EOPNOTSUPP),
        "MAX_TSO_HEADER"
    );
    if !sw {
        return;
    }
    // The software device has no memory windows, invalidation or atomic write (rxe has), takes
    // no empty set, and needs the PD bit.
    for bit in [
        ops::IBV_QP_EX_WITH_BIND_MW,
        ops::IBV_QP_EX_WITH_LOCAL_INV,
        ops::IBV_QP_EX_WITH_SEND_WITH_INV,
        ops::IBV_QP_EX_WITH_ATOMIC_WRITE,
    ] {
        assert_eq!(
            try_create(IBV_QPT_RC, PD_AND_OPS, bits(&[bit])),
            Err(libc::EOPNOTSUPP),
            "RC {:#x}",
            bit.0
        );
    }
    assert_eq!(
        try_create(IBV_QPT_RC, PD_AND_OPS, 0),
        Err(libc::EOPNOTSUPP),
        "no operation"
    );
    let no_pd = attr_mask::IBV_QP_INIT_ATTR_SEND_OPS_FLAGS.0;
    assert_eq!(
        try_create(IBV_QPT_RC, no_pd, rc_ops()),
        Err(libc::EINVAL),
        "no PD bit"
    );
    // Creation flags: none supported.
    let flags = PD_AND_OPS | attr_mask::IBV_QP_INIT_ATTR_CREATE_FLAGS.0;
    assert_eq!(
        try_create(IBV_QPT_RC, flags, rc_ops()),
        Ok(()),
        "CREATE_FLAGS with none"
    );
}

#[test]
fn a_batch_of_every_rc_operation() {
    let mut e = Env::new();
    let spec = Spec {
        inline: 32,
        ..Spec::new(IBV_QPT_RC)
    };
    let (a, ax, b) = ex_pair(&mut e, spec, rc_ops(), REMOTE_ALL);
    let src = e.buf(256, LOCAL_WRITE);
    let dst = e.buf(512, LOCAL_WRITE | REMOTE_ALL);
    src.write(0, &pattern(256, 5));
    dst.write(256, &pattern(128, 9));
    dst.write(400, &100u64.to_ne_bytes());
    dst.write(408, &40u64.to_ne_bytes());
    post_recv(&b, 11, &[dst.sge(0, 64)]);
    post_recv(&b, 12, &[dst.sge(64, 64)]);
    post_recv(&b, 13, &[]);
    let imm1 = 0x0102_0304u32.to_be();
    let imm2 = 0xa0b0_c0d0u32.to_be();
    let inline = pattern(20, 77);
    ax.start();
    // send: one SGE
    ax.send(1, SIGNALED);
    ax.sge(src.sge(0, 30));
    // send with immediate: two SGEs of equal length
    ax.send_imm(2, SIGNALED, imm1);
    ax.sge_list(&[src.sge(32, 16), src.sge(64, 16)]);
    // write: inline, the buffer reused at once
    let mut reused = inline.clone();
    ax.write(3, SIGNALED | INLINE, dst.rkey, dst.addr(128));
    ax.inline(&reused);
    reused.fill(0xee);
    // write with immediate: one SGE
    ax.write_imm(4, SIGNALED, dst.rkey, dst.addr(160), imm2);
    ax.sge(src.sge(100, 24));
    // read: into local memory
    ax.read(5, SIGNALED, dst.rkey, dst.addr(256 + 8));
    ax.sge(src.sge(200, 40));
    // atomics
    ax.cas(6, SIGNALED, dst.rkey, dst.addr(400), 100, 7);
    ax.sge(src.sge(240, 8));
    ax.faa(7, SIGNALED, dst.rkey, dst.addr(408), 2);
    ax.sge(src.sge(248, 8));
    assert_eq!(ax.complete(), 0, "wr_complete");

    let sent = expect(a.send_cq, 7);
    assert_eq!(sent[0], Wc::ok(1, IBV_WC_SEND, 30, a.num));
    assert_eq!(sent[1], with_imm(Wc::ok(2, IBV_WC_SEND, 32, a.num)));
    assert_eq!(sent[2], Wc::ok(3, IBV_WC_RDMA_WRITE, 20, a.num));
    assert_eq!(sent[3], with_imm(Wc::ok(4, IBV_WC_RDMA_WRITE, 24, a.num)));
    assert_eq!(sent[4], Wc::ok(5, IBV_WC_RDMA_READ, 40, a.num));
    assert_eq!(sent[5], Wc::ok(6, IBV_WC_COMP_SWAP, 8, a.num));
    assert_eq!(sent[6], Wc::ok(7, IBV_WC_FETCH_ADD, 8, a.num));
    let got = expect(b.recv_cq, 3);
    assert_eq!(got[0], Wc::recv(11, 30, b.num));
    assert_eq!(got[1], Wc::recv(12, 32, b.num).imm(imm1));
    let want = Wc {
        opcode: IBV_WC_RECV_RDMA_WITH_IMM,
        ..Wc::recv(13, 24, b.num).imm(imm2)
    };
    assert_eq!(got[2], want);
    let p = pattern(256, 5);
    assert_eq!(dst.read(0, 30), &p[..30]);
    assert_eq!(dst.read(64, 32), [&p[32..48], &p[64..80]].concat());
    assert_eq!(
        dst.read(128, 20),
        inline,
        "the inline data as it was at the setter"
    );
    assert_eq!(dst.read(160, 24), &p[100..124]);
    assert_eq!(src.read(200, 40), &pattern(128, 9)[8..48], "read");
    assert_eq!(src.u64_at(240), 100, "compare and swap: the original value");
    assert_eq!(dst.u64_at(400), 7, "swapped");
    assert_eq!(src.u64_at(248), 40, "fetch and add: the original value");
    assert_eq!(dst.u64_at(408), 42, "added");
    // The legacy path still posts on the same QP, after the batch.
    post_recv(&b, 14, &[dst.sge(0, 8)]);
    post_send(&a, send_wr(8, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]));
    sent_ok(&a, 8, IBV_WC_SEND, 8);
}

#[test]
fn ud_send_with_its_address() {
    let mut e = Env::new();
    let spec = Spec {
        inline: 32,
        ..Spec::new(IBV_QPT_UD)
    };
    let (a, ax) = qp_ex(&mut e, spec, ud_ops());
    let b = e.qp(spec);
    for q in [&a, &b] {
        init(q, 0);
        rtr(q, 0, e.gid);
        rts(q, 0);
    }
    let ah = e.ah();
    let src = e.buf(128, LOCAL_WRITE);
    let dst = e.buf(256, LOCAL_WRITE);
    src.write(0, &pattern(128, 3));
    post_recv(&b, 21, &[dst.sge(0, 40 + 64)]);
    post_recv(&b, 22, &[dst.sge(128, 40 + 64)]);
    let imm = 0x5566_7788u32.to_be();
    let data = pattern(16, 99);
    ax.start();
    ax.send(1, SIGNALED);
    ax.ud(ah, b.num, QKEY);
    ax.sge(src.sge(0, 48));
    ax.send_imm(2, SIGNALED | INLINE, imm);
    // The setters in the other order: the data first, then the address.
    ax.inline(&data);
    ax.ud(ah, b.num, QKEY);
    assert_eq!(ax.complete(), 0);
    let sent = expect(a.send_cq, 2);
    assert_eq!(sent[0], Wc::ok(1, IBV_WC_SEND, 48, a.num));
    assert_eq!(sent[1], with_imm(Wc::ok(2, IBV_WC_SEND, 16, a.num)));
    let got = expect(b.recv_cq, 2);
    assert_eq!(
        got[0],
        Wc {
            src_qp: a.num,
            ..Wc::recv(21, 40 + 48, b.num)
        }
    );
    assert_eq!(
        got[1],
        Wc {
            src_qp: a.num,
            ..Wc::recv(22, 40 + 16, b.num).imm(imm)
        }
    );
    assert_eq!(dst.read(40, 48), src.read(0, 48));
    assert_eq!(dst.read(128 + 40, 16), data);
}

#[test]
fn abort_posts_nothing() {
    let mut e = Env::new();
    let (a, ax, b) = ex_pair(&mut e, Spec::new(IBV_QPT_RC), rc_ops(), REMOTE_ALL);
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(64, LOCAL_WRITE | REMOTE_ALL);
    src.write(0, &pattern(64, 1));
    post_recv(&b, 11, &[dst.sge(0, 64)]);
    ax.start();
    ax.send(1, SIGNALED);
    ax.sge(src.sge(0, 8));
    ax.write(2, SIGNALED, dst.rkey, dst.addr(32));
    ax.sge(src.sge(0, 16));
    ax.abort();
    quiet(a.send_cq);
    quiet(b.recv_cq);
    assert_eq!(dst.read(0, 64), vec![0; 64], "nothing written");
    // The next batch posts only its own request.
    ax.start();
    ax.send(3, SIGNALED);
    ax.sge(src.sge(8, 8));
    assert_eq!(ax.complete(), 0);
    sent_ok(&a, 3, IBV_WC_SEND, 8);
    assert_eq!(expect(b.recv_cq, 1)[0], Wc::recv(11, 8, b.num));
    assert_eq!(dst.read(0, 8), src.read(8, 8));
}

#[test]
fn a_full_send_queue_fails_the_whole_batch_with_enospc() {
    let mut e = Env::new();
    let spec = Spec {
        send_wr: 4,
        ..Spec::new(IBV_QPT_RC)
    };
    let (a, ax, b) = ex_pair(&mut e, spec, rc_ops(), REMOTE_ALL);
    let src = e.buf(64, LOCAL_WRITE);
    let depth = u64::from(query(&a).cap.max_send_wr);
    assert!(depth >= 4, "{depth}");
    // More requests than the ring holds, in one batch: ENOSPC, and none of them runs.
    ax.start();
    for i in 0..=depth {
        ax.send(100 + i, SIGNALED);
        ax.sge(src.sge(0, 8));
    }
    assert_eq!(ax.complete(), libc::ENOSPC, "{} requests", depth + 1);
    quiet(a.send_cq);
    quiet(b.recv_cq);
    // The requests already queued count: with the peer out of receives (rnr_retry 7), sends
    // wait; a batch that would overfill the queue fails, and then one that fits goes.
    for i in 0..depth - 1 {
        post_send(&a, send_wr(10 + i, IBV_WR_SEND, SIGNALED, &[src.sge(0, 8)]));
    }
    ax.start();
    for i in 0..2 {
        ax.send(200 + i, SIGNALED);
        ax.sge(src.sge(0, 8));
    }
    assert_eq!(ax.complete(), libc::ENOSPC, "two more");
    ax.start();
    ax.send(300, SIGNALED);
    ax.sge(src.sge(0, 8));
    assert_eq!(ax.complete(), 0, "one more");
    let dst = e.buf(8 * (depth as usize + 4), LOCAL_WRITE);
    for i in 0..depth {
        post_recv(&b, 50 + i, &[dst.sge(8 * i as usize, 8)]);
    }
    let ids: Vec<u64> = poll_for(a.send_cq, depth as usize, WAIT)
        .iter()
        .map(|w| w.wr_id)
        .collect();
    let mut want: Vec<u64> = (0..depth - 1).map(|i| 10 + i).collect();
    want.push(300);
    assert_eq!(
        ids, want,
        "only the legacy requests and the batch that fitted"
    );
    quiet(a.send_cq);
}

#[test]
fn inline_and_sge_limits_are_enospc() {
    let mut e = Env::new();
    let spec = Spec {
        inline: 16,
        send_sge: 2,
        ..Spec::new(IBV_QPT_RC)
    };
    let (a, ax, _b) = ex_pair(&mut e, spec, rc_ops(), REMOTE_ALL);
    let src = e.buf(64, LOCAL_WRITE);
    let dst = e.buf(512, LOCAL_WRITE | REMOTE_ALL);
    let cap = query(&a).cap;
    // One inline buffer longer than max_inline_data.
    let big = vec![1u8; cap.max_inline_data as usize + 1];
    ax.start();
    ax.write(1, SIGNALED | INLINE, dst.rkey, dst.addr(0));
    ax.inline(&big);
    assert_eq!(
        ax.complete(),
        libc::ENOSPC,
        "inline over {}",
        cap.max_inline_data
    );
    // More SGEs than max_send_sge.
    let sges: Vec<_> = (0..=cap.max_send_sge as usize)
        .map(|i| src.sge(i, 1))
        .collect();
    ax.start();
    ax.write(2, SIGNALED, dst.rkey, dst.addr(0));
    ax.sge_list(&sges);
    assert_eq!(ax.complete(), libc::ENOSPC, "{} SGEs", sges.len());
    quiet(a.send_cq);
    assert_eq!(dst.read(0, 64), vec![0; 64]);
}

// --- What only the software device checks (rxe would corrupt or mis-send). ---

/// A software-device RC pair for the strictness tests: `a` extended with every RC operation.
fn strict_env(test: &str) -> Option<(Env, Qp, Qx, Qp, Buf, Buf)> {
    let mut e = Env::new();
    if !common::software_only(&e.ctx, test, "the extended QP's strictness") {
        return None;
    }
    let spec = Spec {
        inline: 32,
        ..Spec::new(IBV_QPT_RC)
    };
    let (a, ax, b) = ex_pair(&mut e, spec, rc_ops(), REMOTE_ALL);
    let src = e.buf(128, LOCAL_WRITE);
    let dst = e.buf(128, LOCAL_WRITE | REMOTE_ALL);
    src.write(0, &pattern(128, 1));
    Some((e, a, ax, b, src, dst))
}

/// Runs `batch` between wr_start and wr_complete; asserts that wr_complete fails with `errno`
/// and nothing was posted, then that a good batch still goes (and only it).
#[track_caller]
fn refused(a: &Qp, ax: Qx, src: &Buf, dst: &Buf, errno: i32, what: &str, batch: impl FnOnce()) {
    ax.start();
    batch();
    assert_eq!(ax.complete(), errno, "{what}");
    quiet(a.send_cq);
    ax.start();
    ax.write(999, SIGNALED, dst.rkey, dst.addr(120));
    ax.sge(src.sge(0, 8));
    assert_eq!(ax.complete(), 0, "a good batch after: {what}");
    sent_ok(a, 999, IBV_WC_RDMA_WRITE, 8);
}

#[test]
fn strict_setters_need_their_builder_and_come_once() {
    let Some((_e, a, ax, _b, src, dst)) =
        strict_env("strict_setters_need_their_builder_and_come_once")
    else {
        return;
    };
    let w = |id| ax.write(id, SIGNALED, dst.rkey, dst.addr(0));
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "a setter before any builder",
        || {
            ax.sge(src.sge(0, 8));
            w(1);
            ax.sge(src.sge(0, 8));
        },
    );
    refused(&a, ax, &src, &dst, libc::EINVAL, "two data setters", || {
        w(1);
        ax.sge(src.sge(0, 8));
        ax.sge_list(&[src.sge(0, 8)]);
    });
    refused(&a, ax, &src, &dst, libc::EINVAL, "no data setter", || {
        w(1);
        w(2);
        ax.sge(src.sge(0, 8));
    });
    refused(&a, ax, &src, &dst, libc::EINVAL, "ud_addr on RC", || {
        w(1);
        ax.sge(src.sge(0, 8));
        ax.ud(ptr::null_mut(), 1, 1);
    });
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "an atomic of 4 bytes",
        || {
            ax.faa(1, SIGNALED, dst.rkey, dst.addr(64), 1);
            ax.sge(src.sge(0, 4));
        },
    );
    assert_eq!(
        dst.read(0, 64),
        vec![0; 64],
        "nothing written by the refused batches"
    );
}

#[test]
fn strict_inline_needs_the_flag_and_a_send_or_write() {
    let Some((_e, a, ax, _b, src, dst)) =
        strict_env("strict_inline_needs_the_flag_and_a_send_or_write")
    else {
        return;
    };
    let data = [7u8; 8];
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "inline without IBV_SEND_INLINE",
        || {
            ax.write(1, SIGNALED, dst.rkey, dst.addr(0));
            ax.inline(&data);
        },
    );
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "an SGE with IBV_SEND_INLINE",
        || {
            ax.write(1, SIGNALED | INLINE, dst.rkey, dst.addr(0));
            ax.sge(src.sge(0, 8));
        },
    );
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "inline on an RDMA read",
        || {
            ax.read(1, SIGNALED | INLINE, dst.rkey, dst.addr(0));
            ax.inline(&data);
        },
    );
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "inline on an atomic",
        || {
            ax.cas(1, SIGNALED | INLINE, dst.rkey, dst.addr(64), 0, 1);
            ax.inline(&data);
        },
    );
    // IBV_SEND_IP_CSUM (no checksum offload) and a bit ibv_send_flags lacks.
    for flag in [sys::ibv_send_flags::IBV_SEND_IP_CSUM.0, 1 << 12] {
        refused(&a, ax, &src, &dst, libc::EINVAL, "a wr_flags bit", || {
            ax.write(1, SIGNALED | flag, dst.rkey, dst.addr(0));
            ax.sge(src.sge(0, 8));
        });
    }
    assert_eq!(dst.read(0, 64), vec![0; 64]);
    // The inline list is summed: two buffers each within max_inline_data, over it together.
    let cap = query(&a).cap.max_inline_data as usize;
    let half = vec![3u8; cap / 2 + 1];
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::ENOSPC,
        "an inline list over the limit",
        || {
            ax.write(1, SIGNALED | INLINE, dst.rkey, dst.addr(0));
            ax.inline_list(&[&half, &half]);
        },
    );
    // A correct list sends its buffers one after the other; SGEs of different lengths too.
    ax.start();
    ax.write(2, SIGNALED | INLINE, dst.rkey, dst.addr(0));
    ax.inline_list(&[&b"abc"[..], &b""[..], &b"defgh"[..]]);
    ax.write(3, SIGNALED, dst.rkey, dst.addr(16));
    ax.sge_list(&[src.sge(0, 3), src.sge(10, 5)]);
    assert_eq!(ax.complete(), 0);
    let sent = expect(a.send_cq, 2);
    assert_eq!(sent[0], Wc::ok(2, IBV_WC_RDMA_WRITE, 8, a.num));
    assert_eq!(sent[1], Wc::ok(3, IBV_WC_RDMA_WRITE, 8, a.num));
    assert_eq!(dst.read(0, 8), b"abcdefgh");
    assert_eq!(dst.read(16, 8), [src.read(0, 3), src.read(10, 5)].concat());
}

#[test]
fn strict_ud_needs_its_address() {
    let mut e = Env::new();
    if !common::software_only(
        &e.ctx,
        "strict_ud_needs_its_address",
        "the extended QP's strictness",
    ) {
        return;
    }
    let (a, ax) = qp_ex(&mut e, Spec::new(IBV_QPT_UD), ud_ops());
    init(&a, 0);
    rtr(&a, 0, e.gid);
    rts(&a, 0);
    let src = e.buf(64, LOCAL_WRITE);
    let ah = e.ah();
    for (what, with_addr) in [("no address", 0), ("two addresses", 2)] {
        ax.start();
        ax.send(1, SIGNALED);
        ax.sge(src.sge(0, 8));
        for _ in 0..with_addr {
            ax.ud(ah, a.num, QKEY);
        }
        assert_eq!(ax.complete(), libc::EINVAL, "{what}");
    }
    ax.start();
    ax.send(2, SIGNALED);
    ax.ud(ptr::null_mut(), a.num, QKEY);
    ax.sge(src.sge(0, 8));
    assert_eq!(ax.complete(), libc::EINVAL, "a NULL AH");
    quiet(a.send_cq);
    ax.start();
    ax.send(3, SIGNALED);
    ax.ud(ah, a.num, QKEY);
    ax.sge(src.sge(0, 8));
    assert_eq!(ax.complete(), 0);
    sent_ok(&a, 3, IBV_WC_SEND, 8);
}

#[test]
fn strict_calls_outside_a_batch() {
    let Some((_e, a, ax, _b, src, dst)) = strict_env("strict_calls_outside_a_batch") else {
        return;
    };
    // wr_complete with no batch open.
    assert_eq!(ax.complete(), libc::EINVAL, "no batch");
    // A builder and a setter outside a batch touch nothing, and fail the next wr_complete.
    ax.write(1, SIGNALED, dst.rkey, dst.addr(0));
    ax.sge(src.sge(0, 8));
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "after calls outside a batch",
        || {
            ax.write(2, SIGNALED, dst.rkey, dst.addr(0));
            ax.sge(src.sge(0, 8));
        },
    );
    // A nested wr_start fails the batch it is in.
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "a nested wr_start",
        || {
            ax.write(3, SIGNALED, dst.rkey, dst.addr(0));
            ax.sge(src.sge(0, 8));
            ax.start();
        },
    );
    // After wr_complete, a call is outside again.
    ax.start();
    ax.write(4, SIGNALED, dst.rkey, dst.addr(0));
    ax.sge(src.sge(0, 8));
    assert_eq!(ax.complete(), 0);
    sent_ok(&a, 4, IBV_WC_RDMA_WRITE, 8);
    ax.abort();
    refused(
        &a,
        ax,
        &src,
        &dst,
        libc::EINVAL,
        "after an abort outside a batch",
        || {
            ax.write(5, SIGNALED, dst.rkey, dst.addr(0));
            ax.sge(src.sge(0, 8));
        },
    );
}

#[test]
fn strict_post_send_inside_the_batch_of_its_thread_is_edeadlk() {
    let Some((_e, a, ax, _b, src, dst)) =
        strict_env("strict_post_send_inside_the_batch_of_its_thread_is_edeadlk")
    else {
        return;
    };
    ax.start();
    ax.write(1, SIGNALED, dst.rkey, dst.addr(0));
    ax.sge(src.sge(0, 8));
    let mut wr =
        send_wr(2, IBV_WR_RDMA_WRITE, SIGNALED, &[src.sge(0, 8)]).rdma(dst.addr(8), dst.rkey);
    let (rc, bad) = post_send_list(&a, &mut wr.wr);
    assert_eq!(
        (rc, bad),
        (libc::EDEADLK, &mut wr.wr as *mut _),
        "ibv_post_send inside the batch"
    );
    assert_eq!(ax.complete(), 0, "the batch itself still goes");
    sent_ok(&a, 1, IBV_WC_RDMA_WRITE, 8);
    quiet(a.send_cq);
}

#[test]
fn strict_another_thread_waits_for_the_batch() {
    let Some((_e, a, ax, _b, src, dst)) = strict_env("strict_another_thread_waits_for_the_batch")
    else {
        return;
    };
    ax.start();
    ax.write(1, SIGNALED, dst.rkey, dst.addr(0));
    ax.sge(src.sge(0, 8));
    let posted = Arc::new(AtomicBool::new(false));
    let (p, q, s, d) = (posted.clone(), a, src, dst);
    struct Carry<T>(T);
    // SAFETY: the QP and buffers outlive the thread (joined below); the verbs used from it are
    // thread-safe.
    unsafe impl<T> Send for Carry<T> {}
    let moved = Carry((q, ax, s, d));
    let t = std::thread::spawn(move || {
        let m = moved;
        let (q, ax, s, d) = m.0;
        // A second batch and a legacy post from this thread both wait for the first batch.
        ax.start();
        ax.write(2, SIGNALED, d.rkey, d.addr(8));
        ax.sge(s.sge(0, 8));
        assert_eq!(ax.complete(), 0);
        post_send(
            &q,
            send_wr(3, IBV_WR_RDMA_WRITE, SIGNALED, &[s.sge(0, 8)]).rdma(d.addr(16), d.rkey),
        );
        p.store(true, Ordering::SeqCst);
    });
    std::thread::sleep(Duration::from_millis(200));
    assert!(!posted.load(Ordering::SeqCst), "the other thread waited");
    quiet(a.send_cq);
    assert_eq!(ax.complete(), 0);
    t.join().expect("the other thread");
    let ids: Vec<u64> = expect(a.send_cq, 3).iter().map(|w| w.wr_id).collect();
    assert_eq!(ids, [1, 2, 3], "the batch first");
}

#[test]
fn an_extended_qp_is_destroyed_by_the_raw_destroy() {
    let mut e = Env::new();
    let cq = e.cq();
    let mut attr = init_ex(&e, Spec::new(IBV_QPT_RC), cq, PD_AND_OPS, rc_ops());
    // SAFETY: a live context; attr's PD and CQ are live objects of it.
    let qp = unsafe { raw::ibv_create_qp_ex(e.ctx.as_raw(), &mut attr) }
        .expect("ibv_create_qp_ex")
        .as_ptr();
    // SAFETY: a live QP.
    let ax = Qx(unsafe { raw::ibv_qp_to_qp_ex(qp) }
        .expect("extended")
        .as_ptr());
    // A batch opened and aborted leaves nothing that keeps the QP.
    ax.start();
    ax.send(1, SIGNALED);
    ax.abort();
    // SAFETY: a live QP, destroyed once and not used after.
    unsafe { raw::ibv_destroy_qp(qp) }.expect("ibv_destroy_qp");
    quiet(cq);
}
