//! Loopback peers: address vectors to the device's own GIDs, and QP pairs brought up on one device.

use typed_verbs::qp_state::{ErrorState, Init, Reset, Rts};
use typed_verbs::{
    AccessFlags, AddressVector, ConnectedInit, Context, Cq, CqEx, Gid, GlobalRoute, Mtu, OwnRq, Pd,
    Poller, Qp, Rc, RcRtr, RcRts, RecvSide, Sge, Shared, Standard,
};

/// The address vector of a loopback peer on port 1: a route to `gid` (RoCE devices, rxe among
/// them, need one) from the local GID at `sgid_index`, hop limit 1.
pub fn av_to(gid: Gid, sgid_index: u8) -> AddressVector {
    AddressVector {
        dlid: 0,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: 1,
        grh: Some(GlobalRoute {
            dgid: gid,
            flow_label: 0,
            sgid_index,
            hop_limit: 1,
            traffic_class: 0,
        }),
    }
}

/// [`av_to`] the context's own GID at index 0 of port 1: a QP's peer on the same device.
pub fn loopback_av(ctx: &Context) -> AddressVector {
    av_to(ctx.query_gid(1, 0).expect("the port's GID 0"), 0)
}

/// How [`rc_up`] brings an RC QP up in loopback: what the peer may do to it, its RDMA
/// read/atomic depth (as responder and as requester), its RNR timer and its RNR retries. The
/// rest is the same for every test: port 1, P_Key index 0, MTU 1024, PSNs 0, timeout 14 and 7
/// transport retries.
#[derive(Clone, Copy, Debug)]
pub struct RcLink {
    pub access: AccessFlags,
    pub rd_atomic: u8,
    pub min_rnr_timer: u8,
    pub rnr_retry: u8,
}

/// An RC QP in RTS on a shared-threading CQ, with its receive side `R` and `SGE` SGEs.
pub type RcUp<'a, R = OwnRq, const SGE: usize = 1> = Qp<'a, Rc, R, Shared, (), Rts, SGE>;

/// Brings an RC QP (own receive queue or SRQ) from RESET to RTS with QP `dest` on the same
/// port as its peer ([`loopback_av`]), as `link` says.
#[track_caller]
pub fn rc_up<'a, R: RecvSide, const SGE: usize>(
    ctx: &Context,
    qp: Qp<'a, Rc, R, Shared, (), Reset, SGE>,
    dest: u32,
    link: RcLink,
) -> RcUp<'a, R, SGE> {
    let init = ConnectedInit {
        port_num: 1,
        pkey_index: 0,
        access: link.access,
    };
    let rtr = RcRtr {
        av: loopback_av(ctx),
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: dest,
        rq_psn: 0,
        max_dest_rd_atomic: link.rd_atomic,
        min_rnr_timer: link.min_rnr_timer,
    };
    let rts = RcRts {
        sq_psn: 0,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: link.rnr_retry,
        max_rd_atomic: link.rd_atomic,
    };
    qp.to_init(init)
        .unwrap()
        .to_rtr(rtr)
        .unwrap()
        .to_rts(rts)
        .unwrap()
}

/// RESET → INIT of a connected QP on port 1, P_Key index 0, open to remote writes.
pub const REMOTE_WRITE_INIT: ConnectedInit = ConnectedInit {
    port_num: 1,
    pkey_index: 0,
    access: AccessFlags::REMOTE_WRITE,
};

/// INIT → RTR of an RC QP towards QP `dest` through `av`: MTU 1024, receive PSN `psn`, one
/// RDMA read or atomic in flight as responder, RNR timer 12.
pub fn rc_rtr_to(av: AddressVector, dest: u32, psn: u32) -> RcRtr {
    RcRtr {
        av,
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: dest,
        rq_psn: psn,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
    }
}

/// RTR → RTS of an RC QP: send PSN `psn`, timeout 14, 7 transport and RNR retries, one RDMA
/// read or atomic in flight as requester.
pub const fn rc_rts_from(psn: u32) -> RcRts {
    RcRts {
        sq_psn: psn,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    }
}

/// The test device, a PD and a CQ (of `cqe` entries, or the builder's default), made in that
/// order, for `f`.
pub fn with_pd_cq(cqe: Option<u32>, f: impl for<'c> FnOnce(&'c Context, &'c Pd<'c>, &'c Cq<'c>)) {
    let ctx = super::open();
    let pd = Pd::new(&ctx).unwrap();
    let cq = match cqe {
        Some(n) => Cq::builder(&ctx).cqe(n).build(),
        None => Cq::builder(&ctx).build(),
    }
    .unwrap();
    f(&ctx, &pd, &cq)
}

/// The test device, its GID 0 of port 1, a PD and a CQ of `cqe`, made in that order, for `f`.
pub fn with_gid_pd_cq(cqe: u32, f: impl for<'c> FnOnce(&'c Context, Gid, &'c Pd<'c>, &'c Cq<'c>)) {
    let ctx = super::open();
    let gid = ctx.query_gid(1, 0).expect("ibv_query_gid port 1 index 0");
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(cqe).build().unwrap();
    f(&ctx, gid, &pd, &cq)
}

/// A PD and two CQs A and B of `cqe` entries on `ctx`, each split into its shared half and its
/// poller (made in that order), for `f`.
pub fn two_split_cqs<R>(
    ctx: &Context,
    cqe: u32,
    f: impl for<'c> FnOnce(
        &'c Pd<'c>,
        (&'c CqEx<'c, Standard>, Poller<'c, Standard>),
        (&'c CqEx<'c, Standard>, Poller<'c, Standard>),
    ) -> R,
) -> R {
    let pd = Pd::new(ctx).unwrap();
    let mut a = CqEx::<Standard>::builder(ctx).cqe(cqe).build().unwrap();
    let mut b = CqEx::<Standard>::builder(ctx).cqe(cqe).build().unwrap();
    let (sa, pa) = a.split();
    let (sb, pb) = b.split();
    f(&pd, (sa, pa), (sb, pb))
}

/// RESET → INIT of a connected QP on port 1, P_Key index 0, open to no remote access.
pub const NO_REMOTE_INIT: ConnectedInit = ConnectedInit {
    port_num: 1,
    pkey_index: 0,
    access: AccessFlags::LOCAL_WRITE,
};

/// A QP in INIT with one receive posted, moved to ERR: the receive is flushed, so `cq` gets one
/// completion (`IBV_WC_WR_FLUSH_ERR`) on every device, without traffic.
pub fn flushed_qp<'a, C: Send + Sync>(
    pd: &'a Pd<'_>,
    cq: &'a CqEx<'_, Standard>,
    user: C,
    wr_id: u64,
) -> Qp<'a, Rc, OwnRq, Shared, C, ErrorState> {
    let qp: Qp<'a, Rc, OwnRq, Shared, C, Init> = Qp::<Rc>::builder(pd, cq, cq)
        .context(user)
        .build()
        .unwrap()
        .to_init(REMOTE_WRITE_INIT)
        .unwrap_or_else(|e| panic!("{e}"));
    qp.post_recv(wr_id, &[] as &[Sge; 0]).unwrap();
    qp.to_error().unwrap_or_else(|e| panic!("{e}"))
}

/// A QP with `n` receives (wr_ids `0..n`) posted in INIT, moved to ERR: `cq` gets their `n`
/// flushes, which keep it non-empty for a while.
pub fn feeder_qp<'a>(
    pd: &'a Pd<'_>,
    cq: &'a CqEx<'_, Standard>,
    n: u32,
) -> Qp<'a, Rc, OwnRq, Shared, (), ErrorState> {
    let q = Qp::<Rc>::builder(pd, cq, cq)
        .max_recv_wr(n)
        .build()
        .unwrap()
        .to_init(REMOTE_WRITE_INIT)
        .unwrap_or_else(|e| panic!("{e}"));
    for i in 0..u64::from(n) {
        q.post_recv(i, &[] as &[Sge; 0]).unwrap();
    }
    q.to_error().unwrap_or_else(|e| panic!("{e}"))
}
