// Setup the ui cases share, so that a case shows only what it is about: the line that must fail
// (or pass) and the types involved. A case takes it with `mod common;`: `fail/common/mod.rs`
// and `pass/common/mod.rs` include this file (trybuild builds each case from where it stands,
// and compiles only the `*.rs` files directly in `fail/` and `pass/` as cases). Each case uses
// some of it: the rest is not dead code to warn about in the expected output.
//
// The device, and the PD of `region`, are the program's, made once and never dropped; the PD
// and CQ of `pd_and_cq` are the case's own. A case that is about owning, dropping or destroying
// any of them makes its own.

use std::sync::OnceLock;

use typed_verbs::access::Rights;
use typed_verbs::qp::ex::OpsFor;
use typed_verbs::{
    AccessFlags, AddressVector, ConnectedInit, Context, Cq, Ex, GlobalRoute, Mr, Mtu, OwnRq, PageBuf,
    Pd, Qp, Rc, RcRtr, RcRts, Rts, Shared, WorkCompletion,
};

/// The software device, opened on first use.
pub fn sw0() -> &'static Context {
    static CTX: OnceLock<Context> = OnceLock::new();
    CTX.get_or_init(|| Context::open("sw0").expect("opening sw0"))
}

/// A PD on `sw0` and a CQ of 8 entries, for a QP's sends and receives.
pub fn pd_and_cq() -> typed_verbs::Result<(Pd<'static>, Cq<'static>)> {
    Ok((Pd::new(sw0())?, Cq::builder(sw0()).cqe(8).build()?))
}

/// A PD on `sw0`, made on first use.
pub fn pd() -> &'static Pd<'static> {
    static PD: OnceLock<Pd<'static>> = OnceLock::new();
    PD.get_or_init(|| Pd::new(sw0()).expect("allocating a PD"))
}

/// A 4 KiB region on `pd` with `access` (whose type is the region's rights).
pub fn region<A: Rights>(access: A) -> typed_verbs::Result<Mr<'static, PageBuf, A>> {
    Mr::new(pd(), PageBuf::new(4096)?, access)
}

/// RESET -> INIT of an RC or UC QP on port 1, with LOCAL_WRITE for the remote side.
pub const INIT: ConnectedInit = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };

/// The address of port 1 of `sw0` itself: a QP connected with it talks to a QP on the same
/// device (or to itself).
pub fn loopback() -> typed_verbs::Result<AddressVector> {
    let gid = sw0().query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    Ok(AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh })
}

/// INIT -> RTR of an RC QP, to `dest_qp_num` at `av`.
pub fn rc_rtr(av: AddressVector, dest_qp_num: u32) -> RcRtr {
    RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num, rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 }
}

/// RTR -> RTS of an RC QP.
pub const RC_RTS: RcRts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };

/// An RC QP in RESET taken to RTS, connected to itself through `loopback` (with `INIT`), so
/// that what it sends arrives at its own receive queue.
pub fn connect_to_itself<'a>(qp: Qp<'a, Rc>) -> typed_verbs::Result<Qp<'a, Rc, OwnRq, Shared, (), Rts>> {
    let rtr = rc_rtr(loopback()?, qp.qp_num());
    qp.to_init(INIT)?.to_rtr(rtr)?.to_rts(RC_RTS)
}

/// Polls `cq` until `n` completions have come, and checks that each of them succeeded.
pub fn expect_successes(cq: &Cq<'_>, n: usize) -> typed_verbs::Result<()> {
    let mut wc: Vec<WorkCompletion> = (0..n).map(|_| WorkCompletion::default()).collect();
    let mut done = 0;
    while done < n {
        done += cq.poll(&mut wc[done..])?.len();
    }
    assert!(wc.iter().all(|c| c.success().is_some()), "{wc:?}");
    Ok(())
}

/// An extended RC QP created for the send ops `O` (16 send requests, 64 bytes inline, 2 send
/// SGEs in its type), connected to itself in RTS, with every remote right.
pub fn ex_rc<'a, O: OpsFor<Rc>>(
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_>,
) -> typed_verbs::Result<Qp<'a, Ex<Rc, O>, OwnRq, Shared, (), Rts, 2>> {
    let qp = Qp::<Rc>::builder(pd, cq, cq)
        .max_send_wr(16)
        .max_recv_wr(16)
        .max_inline_data(64)
        .send_sge_cap::<2>()
        .send_ops::<O>()
        .build()?;
    let me = qp.endpoint(1, 0)?;
    let all = AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ | AccessFlags::REMOTE_ATOMIC;
    qp.connect(&me, &me, all)
}
