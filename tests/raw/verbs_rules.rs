//! The seeds' rules at the raw verbs level, below the typed layer: on a real device these are
//! libibverbs' own calls (`typed_verbs::raw`), so they show that the rules the types enforce are
//! the device's rules. The same checks run on the software device, whose provider must answer as
//! the real one does.

use crate::common;

use common::raw::{cq, pd, qp, qp_cap, qp_init_attr, srq, Cleanup};
use common::{open, skip};
use std::ptr;
use typed_verbs::cq_ex::flags;
use typed_verbs::ffi::sys;
use typed_verbs::raw;

fn qp_attr(
    qp_type: sys::ibv_qp_type::Type,
    cq: *mut sys::ibv_cq,
    srq: *mut sys::ibv_srq,
) -> sys::ibv_qp_init_attr {
    qp_init_attr(qp_type, cq, cq, srq, qp_cap(10, 10, 1, 1, 0))
}

#[test]
fn create_cq_actual_cqe_at_least_requested_and_limits() {
    let ctx = open();
    let a = ctx.attr();
    let n = ctx.num_comp_vectors() as i32;
    for want in [1, 2, 63, 64, 100, a.max_cqe as i32] {
        // SAFETY: a live context.
        let cq = unsafe {
            raw::ibv_create_cq(ctx.as_raw(), want, ptr::null_mut(), ptr::null_mut(), n - 1)
        }
        .unwrap_or_else(|e| panic!("ibv_create_cq cqe {want}: errno {e}"));
        // SAFETY: a live CQ; "Check the cqe attribute in the returned CQ for the actual size".
        let got = unsafe { (*cq.as_ptr()).cqe };
        assert!(got >= want, "cqe {got} < requested {want}");
        // SAFETY: destroyed once.
        unsafe { raw::ibv_destroy_cq(cq.as_ptr()) }.expect("ibv_destroy_cq");
    }
    // "it must be at least zero and less than context->num_comp_vectors"
    // SAFETY: a live context; the failure leaves nothing to destroy.
    let e = unsafe { raw::ibv_create_cq(ctx.as_raw(), 8, ptr::null_mut(), ptr::null_mut(), n) }
        .expect_err("comp_vector");
    assert_eq!(e, libc::EINVAL, "comp_vector == num_comp_vectors");
    // SAFETY: as above.
    let e = unsafe {
        raw::ibv_create_cq(
            ctx.as_raw(),
            a.max_cqe as i32 + 1,
            ptr::null_mut(),
            ptr::null_mut(),
            0,
        )
    }
    .expect_err("cqe over max_cqe");
    assert_eq!(e, libc::EINVAL, "cqe > max_cqe");
}

#[test]
fn create_cq_ex_each_standard_flag_alone_and_all() {
    let ctx = open();
    let standard = common::raw::STANDARD_WC_FLAGS;
    for wc_flags in standard.into_iter().chain([flags::STANDARD]) {
        let mut attr = sys::ibv_cq_init_attr_ex {
            cqe: 64,
            cq_context: ptr::null_mut(),
            channel: ptr::null_mut(),
            comp_vector: 0,
            wc_flags,
            comp_mask: 0,
            flags: 0,
            parent_domain: ptr::null_mut(),
        };
        // SAFETY: a live context; attr valid.
        let cq = unsafe { raw::ibv_create_cq_ex(ctx.as_raw(), &mut attr) }
            .unwrap_or_else(|e| panic!("ibv_create_cq_ex wc_flags {wc_flags:#x}: errno {e}"));
        // SAFETY: a live CQ.
        assert!(unsafe { (*cq.as_ptr()).cqe } >= 64);
        // SAFETY: destroyed once; "CQ should be destroyed with ibv_destroy_cq".
        unsafe { raw::ibv_destroy_cq(sys::ibv_cq_ex_to_cq(cq.as_ptr())) }.expect("ibv_destroy_cq");
    }
}

/// The test device, a cleanup, and a PD and a CQ of 16 (no channel) that the cleanup destroys,
/// for `f`.
fn with_pd_and_cq(
    f: impl FnOnce(&typed_verbs::Context, &mut Cleanup, *mut sys::ibv_pd, *mut sys::ibv_cq),
) {
    let ctx = open();
    let mut c = Cleanup::new();
    let pd = pd(&ctx, &mut c);
    let cq = cq(&ctx, 16, ptr::null_mut(), &mut c);
    f(&ctx, &mut c, pd, cq)
}

/// An RC QP on `cq` (and `srq`, unless null) that the cleanup destroys.
fn rc_qp(pd: *mut sys::ibv_pd, cq: *mut sys::ibv_cq, srq: *mut sys::ibv_srq, c: &mut Cleanup) {
    let mut attr = qp_attr(sys::ibv_qp_type::IBV_QPT_RC, cq, srq);
    qp(pd, &mut attr, c).unwrap_or_else(|e| panic!("ibv_create_qp (SRQ: {srq:?}): errno {e}"));
}

#[test]
fn destroy_cq_used_by_a_qp_fails_with_ebusy() {
    with_pd_and_cq(|_, c, pd, cq| {
        rc_qp(pd, cq, ptr::null_mut(), c);
        // "ibv_destroy_cq() fails if any queue pair is still associated with this CQ."
        // SAFETY: a live CQ; the failed destroy leaves it live.
        assert_eq!(unsafe { raw::ibv_destroy_cq(cq) }, Err(libc::EBUSY));
    });
}

#[test]
fn destroy_comp_channel_with_a_cq_fails_with_ebusy() {
    let ctx = open();
    let mut c = Cleanup::new();
    // SAFETY: a live context.
    let ch = unsafe { raw::ibv_create_comp_channel(ctx.as_raw()) }
        .expect("ibv_create_comp_channel")
        .as_ptr();
    // SAFETY: destroyed once, after the CQ.
    c.push(move || unsafe { raw::ibv_destroy_comp_channel(ch) }.expect("ibv_destroy_comp_channel"));
    cq(&ctx, 8, ch, &mut c);
    // "ibv_destroy_comp_channel() fails if any CQs are still associated with the completion
    // event channel being destroyed."
    // SAFETY: a live channel; the failed destroy leaves it live.
    let busy = unsafe { raw::ibv_destroy_comp_channel(ch) };
    assert_eq!(busy, Err(libc::EBUSY));
}

#[test]
fn destroy_srq_used_by_a_qp_fails_with_ebusy() {
    with_pd_and_cq(|_, c, pd, cq| {
        let srq = srq(pd, 16, c);
        rc_qp(pd, cq, srq, c);
        // "ibv_destroy_srq() fails if any queue pair is still associated with this SRQ."
        // SAFETY: a live SRQ; the failed destroy leaves it live.
        assert_eq!(unsafe { raw::ibv_destroy_srq(srq) }, Err(libc::EBUSY));
    });
}

#[test]
fn qps_with_and_without_srq_have_caps_at_least_requested() {
    use sys::ibv_qp_type::*;
    let ctx = open();
    let mut c = Cleanup::new();
    let pd = pd(&ctx, &mut c);
    let cq = cq(&ctx, 64, ptr::null_mut(), &mut c);
    let srq = srq(pd, 32, &mut c);
    for (qp_type, name) in [(IBV_QPT_RC, "RC"), (IBV_QPT_UC, "UC"), (IBV_QPT_UD, "UD")] {
        for with_srq in [false, true] {
            let mut attr = qp_attr(qp_type, cq, if with_srq { srq } else { ptr::null_mut() });
            let asked = typed_verbs::QpCap::from(attr.cap);
            match qp(pd, &mut attr, &mut c) {
                Ok(qp) => {
                    let got = typed_verbs::QpCap::from(attr.cap);
                    // "the values will be greater than or equal to the values requested"
                    assert!(got.max_send_wr >= asked.max_send_wr, "{name} {got:?}");
                    assert!(got.max_send_sge >= asked.max_send_sge, "{name} {got:?}");
                    assert!(got.max_recv_wr >= asked.max_recv_wr, "{name} {got:?}");
                    assert!(got.max_recv_sge >= asked.max_recv_sge, "{name} {got:?}");
                    assert!(
                        got.max_inline_data >= asked.max_inline_data,
                        "{name} {got:?}"
                    );
                    // SAFETY: a live QP; "Check the QP number (qp_num) in the returned QP".
                    assert_ne!(unsafe { (*qp).qp_num }, 0);
                    if with_srq && qp_type == IBV_QPT_UC {
                        // ibv_create_qp(3) says this fails; rxe (Linux 6.1) creates it, and the
                        // software device answers as rxe. The typed layer forbids it on all.
                        note(&format!(
                            "{} created a UC QP with an SRQ",
                            ctx.device_name()
                        ));
                    }
                }
                Err(e) if with_srq && qp_type == IBV_QPT_UC => {
                    note(&format!(
                        "{} refused a UC QP with an SRQ (errno {e})",
                        ctx.device_name()
                    ));
                    assert!(
                        !ctx.is_software(),
                        "the software device answers as rxe: it accepts UC with an SRQ"
                    );
                }
                Err(e) => panic!("{name} QP (srq: {with_srq}) failed: errno {e}"),
            }
        }
    }
}

/// Prints an observation of the device's behaviour next to the test output.
fn note(what: &str) {
    common::note(
        "qps_with_and_without_srq_have_caps_at_least_requested",
        what,
    );
}

#[test]
fn raw_packet_qp_with_srq_fails() {
    with_pd_and_cq(|_, c, pd, cq| {
        let srq = srq(pd, 16, c);
        let mut attr = qp_attr(sys::ibv_qp_type::IBV_QPT_RAW_PACKET, cq, srq);
        let e = qp(pd, &mut attr, c).expect_err("a RAW_PACKET QP with an SRQ");
        // rxe refuses RAW_PACKET QPs altogether; a device that has them refuses the SRQ.
        assert_ne!(e, 0);
    });
}

#[test]
fn ud_qp_in_a_multicast_group_cannot_be_destroyed_until_detached() {
    with_pd_and_cq(|ctx, _, pd, cq| {
        let mut attr = qp_attr(sys::ibv_qp_type::IBV_QPT_UD, cq, ptr::null_mut());
        // Not registered with the cleanup: this test destroys it itself.
        // SAFETY: a live PD; the CQ is live.
        let qp = unsafe { raw::ibv_create_qp(pd, &mut attr) }
            .expect("ibv_create_qp")
            .as_ptr();
        let mut raw_gid = [0u8; 16];
        raw_gid[0] = 0xff;
        raw_gid[1] = 0x0e;
        raw_gid[15] = 0x42;
        let gid = sys::ibv_gid { raw: raw_gid };
        // SAFETY: a live UD QP; gid readable.
        match unsafe { raw::ibv_attach_mcast(qp, &gid, 0xc001) } {
            Ok(()) => {
                // "ibv_destroy_qp() fails if the QP is attached to a multicast group."
                // SAFETY: a live QP; the failed destroy leaves it live.
                assert_eq!(unsafe { raw::ibv_destroy_qp(qp) }, Err(libc::EBUSY));
                // SAFETY: attached above.
                unsafe { raw::ibv_detach_mcast(qp, &gid, 0xc001) }.expect("ibv_detach_mcast");
            }
            Err(e) => skip(
                "ud_qp_in_a_multicast_group_cannot_be_destroyed_until_detached",
                format!("{} refused ibv_attach_mcast (errno {e})", ctx.device_name()),
            ),
        }
        // SAFETY: detached (or never attached), destroyed once.
        unsafe { raw::ibv_destroy_qp(qp) }.expect("ibv_destroy_qp after detaching");
    });
}

#[test]
fn the_typed_layer_checks_match_the_raw_answers() {
    // Through the typed API the same requests fail before the call; the typed error carries the
    // errno the device gives for them at the raw level (checked above).
    let ctx = open();
    let n = ctx.num_comp_vectors();
    let e = typed_verbs::Cq::builder(&ctx)
        .cqe(8)
        .comp_vector(n)
        .build()
        .expect_err("comp_vector");
    assert_eq!(e.errno(), libc::EINVAL);
    let e = typed_verbs::Cq::builder(&ctx)
        .cqe(ctx.attr().max_cqe + 1)
        .build()
        .expect_err("cqe");
    assert_eq!(e.errno(), libc::EINVAL);
}
