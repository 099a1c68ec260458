//! Where the software device once answered differently from rxe0, at the raw verbs level
//! (`typed_verbs::raw`: libibverbs itself on a real device): each test asserts what the kernel's
//! rdma_rxe and core verbs answer, on whichever device the tests run. The typed layer may refuse
//! the same request before the call (`ErrorKind::OutOfRange`); tests/typed/bad_input.rs shows that.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

mod common;

use common::raw::{ah_attr, qp_attr, qp_cap, qp_init_attr, query_qp, Cleanup};
use common::{note, open};
use std::ptr;
use typed_verbs::ffi::sys;
use typed_verbs::raw;
use typed_verbs::{Context, Srq};

// enum ibv_qp_attr_mask, as rdma-sys has it
use typed_verbs::ffi::qp_attr_mask::{
    ACCESS_FLAGS, ALT_PATH, AV, DEST_QPN, MAX_DEST_RD_ATOMIC, MAX_QP_RD_ATOMIC, MIN_RNR_TIMER,
    PATH_MTU, PKEY_INDEX, PORT, QKEY, RETRY_CNT, RNR_RETRY, RQ_PSN, SQ_PSN, STATE, TIMEOUT,
};

/// A PD, a CQ and a QP of `qp_type` on them, in RESET.
fn raw_qp(ctx: &Context, qp_type: sys::ibv_qp_type::Type, c: &mut Cleanup) -> *mut sys::ibv_qp {
    let pd = common::raw::pd(ctx, c);
    let cq = common::raw::cq(ctx, 8, ptr::null_mut(), c);
    let cap = qp_cap(4, 4, 1, 1, 0);
    let mut attr = qp_init_attr(qp_type, cq, cq, ptr::null_mut(), cap);
    common::raw::qp(pd, &mut attr, c).expect("ibv_create_qp")
}

fn modify(qp: *mut sys::ibv_qp, a: &mut sys::ibv_qp_attr, mask: i32) -> Result<(), i32> {
    // SAFETY: a live QP; `a` valid for the call.
    unsafe { raw::ibv_modify_qp(qp, a, mask | STATE) }
}

/// Moves `qp` to `state` with the attributes `set` fills in (`mask` names them).
fn move_to(
    qp: *mut sys::ibv_qp,
    state: sys::ibv_qp_state::Type,
    mask: i32,
    set: impl FnOnce(&mut sys::ibv_qp_attr),
) -> Result<(), i32> {
    let mut a = qp_attr();
    a.qp_state = state;
    set(&mut a);
    modify(qp, &mut a, mask)
}

fn to_init(qp: *mut sys::ibv_qp, pkey_index: u16) -> Result<(), i32> {
    let mask = PORT | PKEY_INDEX | ACCESS_FLAGS;
    move_to(qp, sys::ibv_qp_state::IBV_QPS_INIT, mask, |a| {
        a.port_num = 1;
        a.pkey_index = pkey_index;
        a.qp_access_flags = 1;
    })
}

/// INIT → RTR of an RC QP to itself through the port's GID at `sgid_index`.
fn to_rtr(
    ctx: &Context,
    qp: *mut sys::ibv_qp,
    sgid_index: u8,
    max_dest_rd_atomic: u8,
) -> Result<(), i32> {
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid 1 0");
    let mask = AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER;
    move_to(qp, sys::ibv_qp_state::IBV_QPS_RTR, mask, |a| {
        a.ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, sgid_index);
        a.path_mtu = sys::ibv_mtu::IBV_MTU_1024;
        // SAFETY: a live QP.
        a.dest_qp_num = unsafe { (*qp).qp_num };
        a.rq_psn = 1;
        a.max_dest_rd_atomic = max_dest_rd_atomic;
        a.min_rnr_timer = 12;
    })
}

fn to_rts(qp: *mut sys::ibv_qp, timeout: u8) -> Result<(), i32> {
    let mask = SQ_PSN | TIMEOUT | RETRY_CNT | RNR_RETRY | MAX_QP_RD_ATOMIC;
    move_to(qp, sys::ibv_qp_state::IBV_QPS_RTS, mask, |a| {
        a.sq_psn = 1;
        a.timeout = timeout;
        a.retry_cnt = 7;
        a.rnr_retry = 7;
        a.max_rd_atomic = 1;
    })
}

fn query(qp: *mut sys::ibv_qp) -> sys::ibv_qp_attr {
    // SAFETY: a live QP.
    unsafe { query_qp(qp, 0x7f_ffff) }
}

/// What a source GID index of port 1 gives in an address vector, by the kernel's
/// rdma_get_gid_attr: EINVAL past the GID table (`index >= table->sz`), ENODATA for an entry
/// that holds no GID, success for one that holds a GID. rxe0's table has 1024 entries, of which
/// it fills 0 and 1 (its fe80:: and its IPv4-mapped address); sw0's likewise, filling 0.
fn sgid_answer(ctx: &Context, index: u8) -> Result<(), i32> {
    let len = ctx.query_port(1).expect("ibv_query_port").gid_tbl_len;
    if u32::from(index) >= len {
        return Err(libc::EINVAL);
    }
    let mut g = sys::ibv_gid { raw: [0; 16] };
    // SAFETY: a live context; `g` valid for writes.
    unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, index.into(), &mut g) }.expect("ibv_query_gid");
    // SAFETY: 16 plain bytes.
    if unsafe { g.raw } == [0; 16] {
        Err(libc::ENODATA)
    } else {
        Ok(())
    }
}

/// What index 200 of port 1's GID table gives in an address vector ([`sgid_answer`]), which
/// must not be a GID on any device the tests run on: ENODATA on the software device (its table
/// is rxe's length, filled at 0).
fn empty_sgid_200(ctx: &Context) -> Result<(), i32> {
    let want = sgid_answer(ctx, 200);
    assert_ne!(
        want,
        Ok(()),
        "GID index 200 of port 1 holds a GID on this device"
    );
    if ctx.is_software() {
        assert_eq!(want, Err(libc::ENODATA), "sw0's GID table is rxe's length");
    }
    want
}

/// An RC QP ([`raw_qp`]) moved to INIT (P_Key index 0).
fn rc_in_init(ctx: &Context, c: &mut Cleanup) -> *mut sys::ibv_qp {
    let qp = raw_qp(ctx, sys::ibv_qp_type::IBV_QPT_RC, c);
    to_init(qp, 0).expect("RESET -> INIT");
    qp
}

#[test]
fn create_srq_with_max_wr_0_is_einval() {
    // rxe_srq_chk_init: `if (attr->max_wr <= 0) ... goto err1` (-EINVAL).
    let ctx = open();
    let mut c = Cleanup::new();
    let pd = common::raw::pd(&ctx, &mut c);
    let mut attr = sys::ibv_srq_init_attr {
        srq_context: ptr::null_mut(),
        attr: sys::ibv_srq_attr {
            max_wr: 0,
            max_sge: 1,
            srq_limit: 0,
        },
    };
    // SAFETY: a live PD; attr valid.
    let r = unsafe { raw::ibv_create_srq(pd, &mut attr) };
    if let Ok(srq) = r {
        // SAFETY: created just above, destroyed once.
        unsafe { raw::ibv_destroy_srq(srq.as_ptr()) }.expect("ibv_destroy_srq");
    }
    assert_eq!(r.map(drop), Err(libc::EINVAL));
}

#[test]
fn to_init_with_pkey_index_500_is_accepted() {
    // rxe_qp_chk_attr checks no P_Key index, and the core checks P_Keys (ib_security_modify_qp)
    // only on devices with an InfiniBand port: RoCE takes any index.
    let ctx = open();
    let mut c = Cleanup::new();
    let qp = raw_qp(&ctx, sys::ibv_qp_type::IBV_QPT_RC, &mut c);
    assert_eq!(to_init(qp, 500), Ok(()));
    assert_eq!(query(qp).pkey_index, 500);
    // UD too.
    let ud = raw_qp(&ctx, sys::ibv_qp_type::IBV_QPT_UD, &mut c);
    let mut a = qp_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
    a.port_num = 1;
    a.pkey_index = 500;
    a.qkey = 0x11;
    assert_eq!(modify(ud, &mut a, PORT | PKEY_INDEX | QKEY), Ok(()));
}

#[test]
fn to_rtr_with_an_empty_sgid_index_is_enodata() {
    // _ib_modify_qp → rdma_fill_sgid_attr → rdma_get_gid_attr: an index inside the table
    // that holds no GID is -ENODATA, before the driver sees the request.
    let ctx = open();
    let want = empty_sgid_200(&ctx);
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    assert_eq!(to_rtr(&ctx, qp, 200, 1), want);
    assert_eq!(
        query(qp).qp_state,
        sys::ibv_qp_state::IBV_QPS_INIT,
        "unchanged"
    );
    assert_eq!(
        to_rtr(&ctx, qp, 0, 1),
        Ok(()),
        "index 0 holds the port's GID"
    );
}

#[test]
fn to_rtr_with_max_dest_rd_atomic_255_is_accepted() {
    // rxe_qp_chk_attr checks max_rd_atomic against max_qp_rd_atom but not max_dest_rd_atomic;
    // rxe_qp_from_attr rounds it up to a power of two.
    let ctx = open();
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    assert_eq!(to_rtr(&ctx, qp, 0, 255), Ok(()));
    let other = rc_in_init(&ctx, &mut c);
    assert_eq!(to_rtr(&ctx, other, 0, 3), Ok(()));
    assert_eq!(query(other).max_dest_rd_atomic, 4, "3 rounded up");
    // 255 rounds up to 256, which the u8 of `struct ib_qp_attr` keeps as 0 (seen on rxe0).
    assert_eq!(query(qp).max_dest_rd_atomic, 0, "255 rounded up, in a u8");
}

#[test]
fn to_rts_with_timeout_32_is_einval() {
    // rxe_qp_chk_attr: `if (attr->timeout > 31) ... goto err1` (-EINVAL).
    let ctx = open();
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    to_rtr(&ctx, qp, 0, 1).expect("INIT -> RTR");
    assert_eq!(to_rts(qp, 32), Err(libc::EINVAL));
    assert_eq!(query(qp).qp_state, sys::ibv_qp_state::IBV_QPS_RTR);
    assert_eq!(to_rts(qp, 31), Ok(()));
}

#[test]
fn address_handle_with_an_empty_sgid_index_is_enodata() {
    // ib_uverbs_create_ah → rdma_create_user_ah → rdma_fill_sgid_attr: -ENODATA, as for a QP.
    let ctx = open();
    let want = empty_sgid_200(&ctx);
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid 1 0");
    let mut c = Cleanup::new();
    let pd = common::raw::pd(&ctx, &mut c);
    for (sgid_index, want) in [(200, want), (0, Ok(()))] {
        let mut a = ah_attr(sys::ibv_gid { raw: gid.0 }, sgid_index);
        // SAFETY: a live PD; `a` valid.
        let r = unsafe { raw::ibv_create_ah(pd, &mut a) };
        if let Ok(ah) = r {
            // SAFETY: created just above, destroyed once.
            unsafe { raw::ibv_destroy_ah(ah.as_ptr()) }.expect("ibv_destroy_ah");
        }
        assert_eq!(r.map(drop), want, "sgid_index {sgid_index}");
    }
}

#[test]
fn query_gid_of_an_empty_index_is_a_zero_gid() {
    // rdma-core's ibv_query_gid: "Preserve API behavior for empty GID" (ENODATA from the
    // kernel becomes a zero GID); an index past the table is EINVAL (rdma_get_gid_attr).
    let ctx = open();
    let len = ctx.query_port(1).expect("ibv_query_port").gid_tbl_len;
    note(
        "query_gid_of_an_empty_index_is_a_zero_gid",
        format!("gid_tbl_len {len}"),
    );
    if ctx.is_software() {
        assert_eq!(len, 1024, "rxe's RXE_PORT_GID_TBL_LEN");
    }
    let mut g = sys::ibv_gid { raw: [1; 16] };
    if len > 200 {
        // SAFETY: a live context; `g` valid for writes.
        assert_eq!(
            unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, 200, &mut g) },
            Ok(())
        );
        // SAFETY: 16 plain bytes.
        assert_eq!(unsafe { g.raw }, [0; 16]);
    }
    let past = i32::try_from(len).expect("gid_tbl_len fits an int");
    // SAFETY: as above.
    assert_eq!(
        unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, past, &mut g) },
        Err(libc::EINVAL)
    );
}

#[test]
fn srq_limit_is_checked_against_the_ring_not_the_request() {
    // rxe_srq_chk_attr: `attr->srq_limit > srq->rq.queue->buf->index_mask` is EINVAL, and the
    // ring (rxe_queue_init) holds roundup_pow_of_two(max_wr + 1) - 1 entries: 15 for 10 asked.
    let ctx = open();
    let pd = typed_verbs::Pd::new(&ctx).unwrap();
    let srq = Srq::builder(&pd).max_wr(10).build().unwrap();
    let ring = srq.query().unwrap().max_wr;
    assert_eq!(ring, 15);
    srq.arm_limit(12)
        .expect("above the request, inside the ring");
    srq.arm_limit(ring).expect("the ring's size");
    let e = srq.arm_limit(ring + 1).unwrap_err();
    assert_eq!(e.errno(), libc::EINVAL);
}

#[test]
fn a_gid_index_past_the_table_is_einval() {
    // rdma_get_gid_attr: "if (index < 0 || index >= table->sz) return ERR_PTR(-EINVAL)". rxe0's
    // table (1024) is longer than a u8 index reaches; a software device with a short one shows
    // the other answer of the same function.
    let ctx = common::open_short_gid_table("sw-agree-gids");
    assert_eq!(ctx.query_port(1).unwrap().gid_tbl_len, 8);
    assert_eq!(sgid_answer(&ctx, 8), Err(libc::EINVAL));
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    assert_eq!(to_rtr(&ctx, qp, 8, 1), Err(libc::EINVAL));
    assert_eq!(to_rtr(&ctx, qp, 7, 1), Err(libc::ENODATA));
    let mut g = sys::ibv_gid { raw: [0; 16] };
    // SAFETY: a live context; `g` valid for writes.
    assert_eq!(
        unsafe { raw::ibv_query_gid(ctx.as_raw(), 1, 8, &mut g) },
        Err(libc::EINVAL)
    );
}

#[test]
fn an_alternate_path_with_an_empty_sgid_index_is_enodata() {
    // _ib_modify_qp resolves the alternate path's source GID (rdma_fill_sgid_attr: -ENODATA
    // for an entry that holds no GID) before it bans alternate paths on RoCE (-EINVAL).
    let ctx = open();
    let want = sgid_answer(&ctx, 200);
    assert_ne!(want, Ok(()), "GID index 200 of port 1 holds a GID");
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    to_rtr(&ctx, qp, 0, 1).expect("INIT -> RTR");
    to_rts(qp, 14).expect("RTR -> RTS");
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid 1 0");
    let alt = |sgid_index| {
        let mut a = qp_attr();
        a.qp_state = sys::ibv_qp_state::IBV_QPS_RTS;
        a.alt_ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, sgid_index);
        a.alt_port_num = 1;
        a.alt_timeout = 14;
        modify(qp, &mut a, ALT_PATH)
    };
    assert_eq!(alt(200), want);
    if ctx.query_port(1).expect("ibv_query_port").link_layer == 2 {
        assert_eq!(alt(0), Err(libc::EINVAL), "no alternate path on RoCE");
    }
    assert_eq!(query(qp).qp_state, sys::ibv_qp_state::IBV_QPS_RTS);
}

#[test]
fn a_bad_port_is_einval_before_an_empty_sgid_index() {
    // ib_uverbs' modify_qp checks the ports before _ib_modify_qp resolves the source GID: a
    // port the device lacks, or an address vector for RTR on a port other than the QP's
    // (which a QP never moved to INIT does not have), is -EINVAL whatever the GID entry.
    let ctx = open();
    let ports = ctx.attr().phys_port_cnt;
    let mut c = Cleanup::new();
    let qp = raw_qp(&ctx, sys::ibv_qp_type::IBV_QPT_RC, &mut c);
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid 1 0");
    // RESET -> RTR with an address vector: the QP has no port yet.
    let mut a = qp_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
    a.ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, 200);
    assert_eq!(modify(qp, &mut a, AV), Err(libc::EINVAL));
    to_init(qp, 0).expect("RESET -> INIT");
    // INIT -> INIT to a port past the device's, with an address vector.
    let mut a = qp_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
    a.port_num = ports + 1;
    a.ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, 200);
    assert_eq!(modify(qp, &mut a, PORT | AV), Err(libc::EINVAL));
    // An alternate path on a port past the device's, with a primary address vector.
    let mut a = qp_attr();
    a.qp_state = sys::ibv_qp_state::IBV_QPS_INIT;
    a.ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, 200);
    a.alt_ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, 0);
    a.alt_port_num = ports + 1;
    assert_eq!(modify(qp, &mut a, AV | ALT_PATH), Err(libc::EINVAL));
    // Once the QP has its port, the empty entry is what is refused.
    assert_eq!(to_rtr(&ctx, qp, 200, 1), sgid_answer(&ctx, 200));
}

#[test]
fn a_resize_with_a_limit_checks_the_old_limit_and_ring() {
    // rxe_srq_chk_attr checks the new max_wr against the limit armed now ("srq->limit &&
    // (attr->max_wr < srq->limit)") and the new limit against the ring before the resize
    // ("attr->srq_limit > srq->rq.queue->buf->index_mask"), then resizes and arms.
    let ctx = open();
    let pd = typed_verbs::Pd::new(&ctx).unwrap();
    let srq = Srq::builder(&pd).max_wr(10).build().unwrap();
    assert_eq!(srq.query().unwrap().max_wr, 15);
    let both =
        (sys::ibv_srq_attr_mask::IBV_SRQ_MAX_WR.0 | sys::ibv_srq_attr_mask::IBV_SRQ_LIMIT.0) as i32;
    let modify = |max_wr, srq_limit| {
        let mut a = sys::ibv_srq_attr {
            max_wr,
            max_sge: 0,
            srq_limit,
        };
        // SAFETY: a live SRQ; `a` valid for the call.
        unsafe { raw::ibv_modify_srq(srq.as_raw(), &mut a, both) }
    };
    // A limit past the ring of now, inside the ring asked for.
    assert_eq!(modify(20, 20), Err(libc::EINVAL));
    assert_eq!(srq.query().unwrap().max_wr, 15, "unchanged");
    // A limit inside the ring of now, past the ring asked for: no limit is armed now.
    assert_eq!(modify(4, 8), Ok(()));
    let a = srq.query().unwrap();
    assert_eq!((a.max_wr, a.srq_limit), (7, 8));
}

#[test]
fn a_path_mtu_is_refused_only_above_the_ports_max_mtu() {
    // rxe_qp_chk_attr: "if (mtu > max_mtu) ... goto err1" (-EINVAL), against the port's
    // max_mtu; nothing refuses a path_mtu of 0 (not an `enum ibv_mtu` value) on the way.
    let ctx = open();
    let max_mtu = ctx.query_port(1).expect("ibv_query_port").max_mtu;
    let mut c = Cleanup::new();
    let qp = rc_in_init(&ctx, &mut c);
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid 1 0");
    let rtr = |path_mtu| {
        let mut a = qp_attr();
        a.qp_state = sys::ibv_qp_state::IBV_QPS_RTR;
        a.ah_attr = ah_attr(sys::ibv_gid { raw: gid.0 }, 0);
        a.path_mtu = path_mtu;
        // SAFETY: a live QP.
        a.dest_qp_num = unsafe { (*qp).qp_num };
        a.rq_psn = 1;
        a.max_dest_rd_atomic = 1;
        a.min_rnr_timer = 12;
        modify(
            qp,
            &mut a,
            AV | PATH_MTU | DEST_QPN | RQ_PSN | MAX_DEST_RD_ATOMIC | MIN_RNR_TIMER,
        )
    };
    assert_eq!(rtr(max_mtu + 1), Err(libc::EINVAL));
    assert_eq!(query(qp).qp_state, sys::ibv_qp_state::IBV_QPS_INIT);
    assert_eq!(rtr(0), Ok(()));
}
