//! Moving data through the typed API: work requests legal for the QP type, posted from the states
//! that allow them, on an RC and a UC pair in loopback on the test device, completions checked
//! field by field and the bytes checked in the receiving buffers.

use crate::common;

use common::{loopback_av, open};
use std::time::{Duration, Instant};
use typed_verbs::mr::access::Rights;
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::{
    access, Access, AccessFlags, ConnectedInit, Context, Cq, ErrorKind, Mr, Mtu, OwnRq, PageBuf,
    Pd, Qp, Rc, RecvSide, SendWr, Sge, Shared, SqPsn, Srq, Uc, UcRtr, Ud, Verb, WcOpcode, WcStatus,
    WorkCompletion,
};

/// A completion, copied out of the array `ibv_poll_cq` filled.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Done {
    wr_id: u64,
    status: WcStatus,
    opcode: Option<WcOpcode>,
    byte_len: u32,
    imm: Option<u32>,
    qp_num: u32,
}

/// Polls `cq` until `n` completions arrived (a real device completes asynchronously); at most 2 s.
fn wait(cq: &Cq<'_>, n: usize) -> Vec<Done> {
    wait_for(cq, n, Duration::from_secs(2), Duration::ZERO)
}

/// [`wait`] for completions another thread of the process writes (the software device's timer
/// thread): at most `limit`, sleeping `pause` between polls, so that under valgrind, which runs
/// one thread at a time, the writer gets to run.
fn wait_for(cq: &Cq<'_>, n: usize, limit: Duration, pause: Duration) -> Vec<Done> {
    let got = common::poll_n(cq, n, limit, pause, |w| {
        let ok = w.success();
        Done {
            wr_id: w.wr_id(),
            status: w.status(),
            opcode: ok.map(|s| s.opcode()),
            byte_len: ok.map_or(0, |s| s.byte_len()),
            imm: ok.and_then(|s| s.imm_data()),
            qp_num: ok.map_or(0, |s| s.qp_num()),
        }
    });
    assert_eq!(got.len(), n, "completions within {limit:?}: {got:?}");
    got
}

/// A region over `len` zeroed bytes with `access`.
fn zeroed_mr<'p, A: Rights>(pd: &'p Pd<'_>, len: usize, access: A) -> Mr<'p, Vec<u8>, A> {
    Mr::new(pd, vec![0u8; len], access).unwrap()
}

/// The wr_id, status and byte_len of each completion of `got`.
fn statuses_and_lengths(got: &[Done]) -> Vec<(u64, WcStatus, u32)> {
    got.iter()
        .map(|d| (d.wr_id, d.status, d.byte_len))
        .collect()
}

const ALL_REMOTE: access!(REMOTE_WRITE | REMOTE_READ | REMOTE_ATOMIC) = Access::REMOTE_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_ATOMIC);

type RcQp<'a, const SGE: usize = 1, R = OwnRq<SGE>> = Qp<'a, Rc, R, Shared, (), Rts, SGE>;

/// An RC pair in loopback, both QPs on `cq` (legacy or extended, not SINGLE_THREADED), in RTS.
fn rc_pair<'a, Q>(ctx: &Context, pd: &'a Pd<'_>, cq: &'a Q) -> (RcQp<'a>, RcQp<'a>)
where
    Q: typed_verbs::AnyCq<Threading = Shared>,
{
    rc_pair_sge::<Q, 1>(ctx, pd, cq)
}

/// [`rc_pair`] with `SGE` send and receive SGEs in the QPs' type.
fn rc_pair_sge<'a, Q, const SGE: usize>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    cq: &'a Q,
) -> (RcQp<'a, SGE>, RcQp<'a, SGE>)
where
    Q: typed_verbs::AnyCq<Threading = Shared>,
    Sge<'static>: typed_verbs::wr::TypedSgeCap<SGE>,
{
    let build = || {
        Qp::<Rc>::builder(pd, cq, cq)
            .send_sge_cap::<SGE>()
            .recv_sge_cap::<SGE>()
            .max_send_wr(16)
            .max_recv_wr(16)
            .max_inline_data(64)
            .build()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let (an, bn) = (a.qp_num(), b.qp_num());
    (rc_up(ctx, a, bn), rc_up(ctx, b, an))
}

/// What most tests here start from: on the test device, a PD, a CQ of 64 and an RC pair on it
/// ([`rc_pair`]), made in that order, for `f`.
fn with_rc_pair(f: impl for<'p> FnOnce(&'p Context, &'p Pd<'p>, &'p Cq<'p>, RcQp<'p>, RcQp<'p>)) {
    with_rc_pair_sge::<1>(f)
}

/// [`with_rc_pair`] with `SGE` send and receive SGEs in the QPs' type ([`rc_pair_sge`]).
fn with_rc_pair_sge<const SGE: usize>(
    f: impl for<'p> FnOnce(&'p Context, &'p Pd<'p>, &'p Cq<'p>, RcQp<'p, SGE>, RcQp<'p, SGE>),
) where
    Sge<'static>: typed_verbs::wr::TypedSgeCap<SGE>,
{
    common::with_pd_cq(Some(64), |ctx, pd, cq| {
        let (a, b) = rc_pair_sge::<_, SGE>(ctx, pd, cq);
        f(ctx, pd, cq, a, b)
    });
}

/// Brings an RC QP (own receive queue or SRQ) to RTS with `dest` as its peer: open to every
/// remote access, 4 RDMA reads or atomics in flight each way.
fn rc_up<'a, R: RecvSide, const SGE: usize>(
    ctx: &Context,
    qp: Qp<'a, Rc, R, Shared, (), Reset, SGE>,
    dest: u32,
) -> RcQp<'a, SGE, R> {
    let link = common::RcLink {
        access: ALL_REMOTE.into(),
        rd_atomic: 4,
        min_rnr_timer: 12,
        rnr_retry: 7,
    };
    common::rc_up(ctx, qp, dest, link)
}

#[test]
fn rc_send_with_imm_lands_in_the_posted_receive() {
    with_rc_pair(|_, pd, cq, a, b| {
        let smr = zeroed_mr(pd, 256, Access::LOCAL_WRITE);
        let dmr = zeroed_mr(pd, 256, Access::LOCAL_WRITE);
        smr.write(0, b"typed verbs over the wire").unwrap();
        b.post_recv(7, &[dmr.sge(0..256).unwrap()]).unwrap();
        a.post_send(&SendWr::send_with_imm(1, &[smr.sge(0..25).unwrap()], 0xfeed).signaled())
            .unwrap();
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        // The send side: immediate data belongs to the receive completion (rxe also flags its send
        // completions WITH_IMM, with a zero immediate; that is not checked here).
        assert_eq!(
            (got[0].wr_id, got[0].status, got[0].opcode, got[0].qp_num),
            (1, WcStatus::SUCCESS, Some(WcOpcode::SEND), a.qp_num())
        );
        assert_eq!(
            got[1],
            Done {
                wr_id: 7,
                status: WcStatus::SUCCESS,
                opcode: Some(WcOpcode::RECV),
                byte_len: 25,
                imm: Some(0xfeed),
                qp_num: b.qp_num()
            }
        );
        let mut out = [0u8; 25];
        dmr.read(0, &mut out).unwrap();
        assert_eq!(&out, b"typed verbs over the wire");
    });
}

#[test]
fn rc_rdma_write_read_and_atomics() {
    with_rc_pair(|_, pd, cq, a, b| {
        let lmr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        let rmr = zeroed_mr(pd, 64, ALL_REMOTE);
        let peer = rmr.remote();
        lmr.write(0, b"written remotely").unwrap();
        a.post_send(
            &SendWr::rdma_write(1, &[lmr.sge(0..16).unwrap()], peer.at(8, 16).unwrap()).signaled(),
        )
        .unwrap();
        wait(cq, 1);
        let mut out = [0u8; 16];
        rmr.read(8, &mut out).unwrap();
        assert_eq!(&out, b"written remotely");

        rmr.write(32, b"read me").unwrap();
        a.post_send(
            &SendWr::rdma_read(2, &[lmr.sge(40..47).unwrap()], peer.at(32, 7).unwrap()).signaled(),
        )
        .unwrap();
        let d = wait(cq, 1)[0];
        assert_eq!(
            (d.status, d.opcode, d.byte_len),
            (WcStatus::SUCCESS, Some(WcOpcode::RDMA_READ), 7)
        );
        let mut out = [0u8; 7];
        lmr.read(40, &mut out).unwrap();
        assert_eq!(&out, b"read me");

        rmr.write(48, &41u64.to_ne_bytes()).unwrap();
        let word = lmr.atomic_result(0).unwrap();
        a.post_send(&SendWr::fetch_add(3, &word, peer.atomic_at(48).unwrap(), 1).signaled())
            .unwrap();
        assert_eq!(wait(cq, 1)[0].opcode, Some(WcOpcode::FETCH_ADD));
        let mut old = [0u8; 8];
        lmr.read(0, &mut old).unwrap();
        assert_eq!(u64::from_ne_bytes(old), 41);
        a.post_send(&SendWr::compare_swap(4, &word, peer.atomic_at(48).unwrap(), 42, 7).signaled())
            .unwrap();
        assert_eq!(wait(cq, 1)[0].opcode, Some(WcOpcode::COMP_SWAP));
        rmr.read(48, &mut old).unwrap();
        assert_eq!(
            u64::from_ne_bytes(old),
            7,
            "42 was there after the add, so the swap happened"
        );
        drop(b);
    });
}

#[test]
fn inline_and_chained_sends() {
    with_rc_pair(|_, pd, cq, a, b| {
        let dmr = zeroed_mr(pd, 128, Access::LOCAL_WRITE);
        for i in 0..3 {
            b.post_recv(
                10 + i,
                &[dmr.sge(i as usize * 32..i as usize * 32 + 32).unwrap()],
            )
            .unwrap();
        }
        let one = b"one".to_vec();
        a.post_send_chain(&[
            SendWr::send_inline(1, &one).signaled(),
            SendWr::send_inline(2, b"two").signaled(),
            SendWr::send_inline(3, b"three").signaled(),
        ])
        .unwrap();
        drop(one); // inline data may be reused once posted
        let got = wait(cq, 6);
        let recvs: Vec<_> = got
            .iter()
            .filter(|d| d.opcode == Some(WcOpcode::RECV))
            .map(|d| (d.wr_id, d.byte_len))
            .collect();
        assert_eq!(recvs, [(10, 3), (11, 3), (12, 5)], "in order");
        let mut out = [0u8; 5];
        dmr.read(64, &mut out).unwrap();
        assert_eq!(&out, b"three");
    });
}

#[test]
fn fixed_sge_lists_up_to_the_type_caps_gather_and_scatter_in_order() {
    with_rc_pair_sge::<4>(|_, pd, cq, a, b| {
        assert!(a.caps().max_send_sge >= 4, "{:?}", a.caps());
        let src = *b"0123456789abcdef";
        let smr = Mr::new(pd, src.to_vec(), Access::LOCAL_WRITE).unwrap();
        let dmr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        let piece = |r: std::ops::Range<usize>| smr.sge(r).unwrap();
        // Four SGEs, the type's cap, out of buffer order; then two: every length up to the cap
        // fits.
        let four = [piece(12..16), piece(0..4), piece(8..12), piece(4..8)];
        let two = [piece(10..12), piece(2..4)];
        // The receives scatter over fixed lists too: four SGEs of 4, 4, 4 and 20 bytes, then one.
        let into = [
            dmr.sge(4..8).unwrap(),
            dmr.sge(0..4).unwrap(),
            dmr.sge(12..16).unwrap(),
            dmr.sge(8..12).unwrap(),
        ];
        b.post_recv(1, &into).unwrap();
        b.post_recv(2, &[dmr.sge(32..64).unwrap()]).unwrap();
        a.post_send_chain(&[
            SendWr::send(3, &four).signaled(),
            SendWr::send_with_imm(4, &two, 9).signaled(),
        ])
        .unwrap();
        let mut got = wait(cq, 4);
        got.sort_by_key(|d| d.wr_id);
        let recvs: Vec<_> = got[..2].iter().map(|d| (d.wr_id, d.byte_len)).collect();
        assert_eq!(recvs, [(1, 16), (2, 4)]);
        let mut out = [0u8; 16];
        dmr.read(0, &mut out).unwrap();
        // Gathered "cdef" "0123" "89ab" "4567", scattered to 4..8, 0..4, 12..16, 8..12.
        assert_eq!(
            &out, b"0123cdef456789ab",
            "gathered and scattered in list order"
        );
        let mut out = [0u8; 4];
        dmr.read(32, &mut out).unwrap();
        assert_eq!(&out, b"ab23");
    });
}

#[test]
fn srq_scatters_over_a_fixed_list_at_its_type_cap() {
    common::with_pd_cq(Some(64), |ctx, pd, cq| {
        let srq = Srq::builder(pd).max_wr(8).sge_cap::<3>().build().unwrap();
        assert!(srq.attr().max_sge >= 3, "{:?}", srq.attr());
        let a = Qp::<Rc>::builder(pd, cq, cq).build().unwrap();
        let b = Qp::<Rc>::builder_with_srq(pd, cq, cq, &srq)
            .build()
            .unwrap();
        let (an, bn) = (a.qp_num(), b.qp_num());
        let (a, b) = (rc_up(ctx, a, bn), rc_up(ctx, b, an));
        let src = *b"abcdefghij";
        let smr = Mr::new(pd, src.to_vec(), Access::LOCAL_WRITE).unwrap();
        let dmr = zeroed_mr(pd, 16, Access::LOCAL_WRITE);
        let three = [
            dmr.sge(12..16).unwrap(),
            dmr.sge(0..3).unwrap(),
            dmr.sge(6..9).unwrap(),
        ];
        srq.post_recv(1, &three).unwrap();
        a.post_send(&SendWr::send(2, &[smr.sge(0..10).unwrap()]).signaled())
            .unwrap();
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!(
            (got[0].wr_id, got[0].status, got[0].byte_len, got[0].qp_num),
            (1, WcStatus::SUCCESS, 10, bn)
        );
        let mut out = [0u8; 16];
        dmr.read(0, &mut out).unwrap();
        assert_eq!(&out, b"efg\0\0\0hij\0\0\0abcd");
        drop((a, b));
    });
}

#[test]
fn checks_before_the_call() {
    with_rc_pair(|_, pd, _, a, _b| {
        let mr = zeroed_mr(pd, 4096, ALL_REMOTE);
        let max_inline = a.caps().max_inline_data as usize;
        let big = vec![0u8; max_inline + 1];
        let e = a
            .post_send(&SendWr::send_inline(1, &big))
            .expect_err("over max_inline_data");
        assert_eq!(e.verb, Verb::PostSend);
        assert!(matches!(
            e.kind,
            ErrorKind::OutOfRange {
                what: "inline length",
                ..
            }
        ));
        let sges: Vec<_> = (0..a.caps().max_send_sge as usize + 1)
            .map(|i| mr.sge(i * 8..i * 8 + 8).unwrap())
            .collect();
        // A slice is not bounded by the type: the QP's actual cap decides, before the call.
        let e = a
            .post_send(&SendWr::send(2, &sges[..]))
            .expect_err("over max_send_sge");
        assert!(matches!(
            e.kind,
            ErrorKind::OutOfRange {
                what: "num_sge",
                ..
            }
        ));
        // An atomic's target is aligned by construction: an unaligned word has no AtomicTarget.
        assert!(mr.remote().atomic_at(3).is_none(), "unaligned");
        assert!(mr.remote().atomic_at(4096).is_none(), "outside the region");
        assert!(mr.remote().atomic_at(8).is_some());
    });
}

#[test]
fn uc_write_with_imm() {
    common::with_pd_cq(Some(64), |ctx, pd, cq| {
        let build = || Qp::<Uc>::builder(pd, cq, cq).build().unwrap();
        let (a, b) = (build(), build());
        let (an, bn) = (a.qp_num(), b.qp_num());
        let init = ConnectedInit {
            port_num: 1,
            pkey_index: 0,
            access: AccessFlags::REMOTE_WRITE,
        };
        let rtr = |dest| UcRtr {
            av: loopback_av(ctx),
            path_mtu: Mtu::Mtu1024,
            dest_qp_num: dest,
            rq_psn: 0,
        };
        // RESET to RTS towards `dest`, its RTR attributes made between the two moves.
        fn up<'q>(
            qp: Qp<'q, Uc>,
            init: ConnectedInit,
            rtr: impl Fn(u32) -> UcRtr,
            dest: u32,
        ) -> Qp<'q, Uc, OwnRq, Shared, (), Rts> {
            qp.to_init(init)
                .unwrap()
                .to_rtr(rtr(dest))
                .unwrap()
                .to_rts(SqPsn { sq_psn: 0 })
                .unwrap()
        }
        let (a, b) = (up(a, init, rtr, bn), up(b, init, rtr, an));
        let smr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        let dmr = zeroed_mr(pd, 64, Access::REMOTE_WRITE);
        smr.write(0, b"uc").unwrap();
        b.post_recv(5, &[]).unwrap(); // write-with-imm consumes a receive, without data
        a.post_send(
            &SendWr::rdma_write_with_imm(
                1,
                &[smr.sge(0..2).unwrap()],
                dmr.remote().at(0, 2).unwrap(),
                9,
            )
            .signaled(),
        )
        .unwrap();
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!(
            (got[0].wr_id, got[0].opcode),
            (1, Some(WcOpcode::RDMA_WRITE))
        );
        assert_eq!(
            (got[1].wr_id, got[1].opcode, got[1].imm),
            (5, Some(WcOpcode::RECV_RDMA_WITH_IMM), Some(9))
        );
        let mut out = [0u8; 2];
        dmr.read(0, &mut out).unwrap();
        assert_eq!(&out, b"uc");
    });
}

/// A UD QP brought from RESET to RTS (qkey 0x1111, port 1).
fn ud_up<'q>(qp: Qp<'q, Ud>) -> Qp<'q, Ud, OwnRq, Shared, (), Rts> {
    let init = typed_verbs::UdInit {
        port_num: 1,
        pkey_index: 0,
        qkey: 0x1111,
    };
    qp.to_init(init)
        .unwrap()
        .to_rtr(())
        .unwrap()
        .to_rts(SqPsn { sq_psn: 0 })
        .unwrap()
}

#[test]
fn ud_send_to_an_address_handle() {
    use typed_verbs::{AddressHandle, UdDest};
    common::with_pd_cq(Some(64), |ctx, pd, cq| {
        let up = || ud_up(Qp::<Ud>::builder(pd, cq, cq).build().unwrap());
        let (a, b) = (up(), up());
        let ah = AddressHandle::new(pd, loopback_av(ctx)).expect("ibv_create_ah");
        let smr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        let dmr = zeroed_mr(pd, 40 + 64, Access::LOCAL_WRITE);
        smr.write(0, b"datagram").unwrap();
        // A UD receive buffer starts with room for the 40-byte GRH.
        b.post_recv(3, &[dmr.sge(0..104).unwrap()]).unwrap();
        let dest = UdDest::new(&ah, b.qp_num(), 0x1111);
        a.post_send(&SendWr::send_to_with_imm(1, &[smr.sge(0..8).unwrap()], dest, 5).signaled())
            .unwrap();
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!((got[0].wr_id, got[0].opcode), (1, Some(WcOpcode::SEND)));
        assert_eq!(
            (got[1].wr_id, got[1].opcode, got[1].byte_len, got[1].imm),
            (3, Some(WcOpcode::RECV), 48, Some(5))
        );
        let mut out = [0u8; 8];
        dmr.read(40, &mut out).unwrap();
        assert_eq!(&out, b"datagram");
    });
}

typed_verbs::completion_record! {
    struct Arrival { wr_id, opcode, byte_len }
    max_batch = 64;
}

#[test]
fn extended_cq_batches_with_real_traffic_take_every_completion_once() {
    // Two rounds of ten sends drained from an extended CQ in batches bounded above what is there,
    // so every batch ends when ibv_next_poll finds the CQ empty: a provider that ends the batch
    // itself then (rxe before rdma-core 55) would, with the end_poll the man page requires,
    // corrupt the CQ, and the second round would see lost or made-up completions.
    use typed_verbs::{CqEx, Standard};
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(64).build().unwrap();
    let (shared, mut poller) = cq.split();
    let (a, b) = rc_pair(&ctx, &pd, shared);
    let smr = zeroed_mr(&pd, 64, Access::LOCAL_WRITE);
    let dmr = zeroed_mr(&pd, 64 * 10, Access::LOCAL_WRITE);
    for round in 0..2u64 {
        for i in 0..10u64 {
            b.post_recv(
                1000 + round * 100 + i,
                &[dmr.sge(i as usize * 64..i as usize * 64 + 64).unwrap()],
            )
            .unwrap();
        }
        for i in 0..10u64 {
            a.post_send(
                &SendWr::send(round * 100 + i, &[smr.sge(0..(i as usize + 1)).unwrap()]).signaled(),
            )
            .unwrap();
        }
        let mut seen = Vec::new();
        let start = Instant::now();
        while seen.len() < 20 && start.elapsed() < Duration::from_secs(2) {
            Arrival::poll(&mut poller, |r| {
                let r = r.expect("success").to_record();
                seen.push((r.wr_id, r.opcode, r.byte_len));
            })
            .unwrap();
        }
        seen.sort_by_key(|s| s.0);
        let mut want: Vec<_> = (0..10)
            .map(|i| (round * 100 + i, WcOpcode::SEND, i as u32 + 1))
            .collect();
        want.extend((0..10).map(|i| (1000 + round * 100 + i, WcOpcode::RECV, i as u32 + 1)));
        assert_eq!(seen, want, "round {round}");
    }
    // Nothing left, and nothing made up.
    assert_eq!(
        Arrival::poll(&mut poller, |r| panic!(
            "unexpected {:?}",
            r.map(|v| v.wr_id())
        ))
        .unwrap(),
        0
    );
}

/// A forgotten owned region keeps its registration *and* its memory: a receive and an RDMA
/// write into it land in the leaked buffer, and memory allocated afterwards is untouched. (With
/// the old borrowed `Mr::new(&pd, &mut buf, ..)`, `mem::forget` ended the borrow while the
/// registration stayed: freeing the buffer and allocating again let the device overwrite a live
/// Vec.)
#[test]
fn a_forgotten_region_keeps_its_memory_for_the_device() {
    with_rc_pair(|_, pd, cq, a, b| {
        // Leaked (never dropped, as `mem::forget` would), so that its SGE may still be used: an
        // `Sge` cannot outlive the region it borrows.
        let target = Box::leak(Box::new(
            Mr::new(pd, PageBuf::new(4096).unwrap(), ALL_REMOTE).unwrap(),
        ));
        let (recv_sge, peer) = (target.sge(0..4096).unwrap(), target.remote());
        // Memory the allocator would place where the buffer was, had it been freed.
        let others: Vec<Vec<u8>> = (0..32).map(|_| vec![0x11u8; 4096]).collect();
        let src = Mr::new(pd, vec![0xabu8; 4096], Access::LOCAL_WRITE).unwrap();
        src.write(4095, &[0xcd]).unwrap();
        b.post_recv(1, &[recv_sge]).unwrap();
        a.post_send(&SendWr::send(2, &[src.sge(0..4096).unwrap()]).signaled())
            .unwrap();
        a.post_send(
            &SendWr::rdma_write(3, &[src.sge(0..16).unwrap()], peer.at(16, 16).unwrap()).signaled(),
        )
        .unwrap();
        let got = wait(cq, 3);
        assert!(got.iter().all(|d| d.status == WcStatus::SUCCESS), "{got:?}");
        assert!(
            others.iter().all(|o| o.iter().all(|&b| b == 0x11)),
            "the device wrote into memory that is not the region's"
        );
        // The leaked buffer holds what was sent: read it back through the device.
        let check = zeroed_mr(pd, 4096, Access::LOCAL_WRITE);
        a.post_send(
            &SendWr::rdma_read(4, &[check.sge(0..4096).unwrap()], peer.at(0, 4096).unwrap())
                .signaled(),
        )
        .unwrap();
        assert_eq!(wait(cq, 1)[0].status, WcStatus::SUCCESS);
        let back = check.destroy().unwrap();
        assert!(back[..4095].iter().all(|&b| b == 0xab) && back[4095] == 0xcd);
    });
}

/// Threads copying into and out of the same bytes of a region while the device writes them
/// (receives, RDMA writes, atomics). Every access is a byte-wise atomic copy, so this is free of
/// data races (the sanitizer lane runs it under a race detector); the values seen are some mix
/// of bytes, and the region's length and keys never change. Short and deterministic in what it
/// asserts.
#[test]
fn threads_and_the_device_share_a_region_without_data_races() {
    common::with_pd_cq(Some(256), |ctx, pd, cq| {
        let (a, b) = rc_pair(ctx, pd, cq);
        let shared = Mr::new(pd, PageBuf::new(64).unwrap(), ALL_REMOTE).unwrap();
        let src = Mr::new(pd, vec![0x5au8; 64], Access::LOCAL_WRITE).unwrap();
        let result = zeroed_mr(pd, 8, Access::LOCAL_WRITE);
        let peer = shared.remote();
        const ROUNDS: u64 = 50;
        std::thread::scope(|s| {
            for t in 0..2u8 {
                let shared = &shared;
                s.spawn(move || {
                    let mut out = [0u8; 64];
                    for i in 0..ROUNDS as u8 {
                        shared.write(0, &[t ^ i; 64]).unwrap();
                        shared.read(0, &mut out).unwrap();
                    }
                });
            }
            for i in 0..ROUNDS {
                b.post_recv(i, &[shared.sge(0..64).unwrap()]).unwrap();
                a.post_send(&SendWr::send(i, &[src.sge(0..64).unwrap()]))
                    .unwrap();
                a.post_send(&SendWr::rdma_write(
                    i,
                    &[src.sge(0..32).unwrap()],
                    peer.at(32, 32).unwrap(),
                ))
                .unwrap();
                a.post_send(
                    &SendWr::fetch_add(
                        i,
                        &result.atomic_result(0).unwrap(),
                        peer.atomic_at(8).unwrap(),
                        1,
                    )
                    .signaled(),
                )
                .unwrap();
                // The receive and the atomic complete; the unsignaled ones run before them.
                assert!(wait(cq, 2).iter().all(|d| d.status == WcStatus::SUCCESS));
            }
        });
        assert_eq!((shared.len(), shared.remote()), (64, peer));
    });
}

/// Polls `cq` once more after a pause: nothing else completed.
fn assert_quiet(cq: &Cq<'_>) {
    std::thread::sleep(Duration::from_millis(50));
    let mut wc: [WorkCompletion; 8] = std::array::from_fn(|_| WorkCompletion::new());
    let more: Vec<u64> = cq
        .poll(&mut wc)
        .unwrap()
        .iter()
        .map(|w| w.wr_id())
        .collect();
    assert!(more.is_empty(), "unexpected completions: {more:?}");
}

#[test]
fn an_empty_chain_posts_nothing() {
    with_rc_pair(|_, pd, cq, a, b| {
        let dmr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        b.post_recv(10, &[dmr.sge(0..64).unwrap()]).unwrap();
        // No request: the provider is not called (it would read a request that does not exist).
        a.post_send_chain::<0>(&[]).expect("an empty chain is Ok");
        assert_quiet(cq);
        // The QP is untouched: the next request is the first one the peer receives.
        a.post_send(&SendWr::send_inline(1, b"after").signaled())
            .unwrap();
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!(
            statuses_and_lengths(&got),
            [(1, WcStatus::SUCCESS, 5), (10, WcStatus::SUCCESS, 5)]
        );
        assert_quiet(cq);
    });
}

#[test]
fn a_chain_refused_by_a_check_posts_the_requests_before_it() {
    with_rc_pair(|_, pd, cq, a, b| {
        let dmr = zeroed_mr(pd, 64, Access::LOCAL_WRITE);
        for i in 0..3 {
            b.post_recv(10 + i, &[dmr.sge(0..64).unwrap()]).unwrap();
        }
        let big = vec![0u8; a.caps().max_inline_data as usize + 1];
        let e = a
            .post_send_chain(&[
                SendWr::send_inline(1, b"one").signaled(),
                SendWr::send_inline(2, &big).signaled(),
                SendWr::send_inline(3, b"three").signaled(),
            ])
            .expect_err("request 1 is over max_inline_data");
        assert_eq!(e.index, 1, "{e}");
        assert_eq!(e.error.verb, Verb::PostSend);
        assert!(
            matches!(
                e.error.kind,
                ErrorKind::OutOfRange {
                    what: "inline length",
                    ..
                }
            ),
            "{e}"
        );
        // PostError: "the ones before it were posted", and only those.
        let mut got = wait(cq, 2);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!(
            got.iter()
                .map(|d| (d.wr_id, d.byte_len))
                .collect::<Vec<_>>(),
            [(1, 3), (10, 3)]
        );
        assert_quiet(cq);
    });
}

#[test]
fn ud_send_takes_only_an_address_handle_of_its_qps_pd() {
    use typed_verbs::{AddressHandle, UdDest};
    let ctx = open();
    // A second open of the same device is another context.
    let other = Context::open(ctx.device_name()).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(64).build().unwrap();
    let up = || {
        ud_up(
            Qp::<Ud>::builder(&pd, &cq, &cq)
                .max_send_wr(4)
                .max_recv_wr(4)
                .build()
                .unwrap(),
        )
    };
    let (a, b) = (up(), up());
    let ah = AddressHandle::new(&pd, loopback_av(&ctx)).unwrap();
    let other_pd = Pd::new(&other).unwrap();
    let other_ctx_ah = AddressHandle::new(&other_pd, loopback_av(&other)).unwrap();
    let pd2 = Pd::new(&ctx).unwrap();
    let other_pd_ah = AddressHandle::new(&pd2, loopback_av(&ctx)).unwrap();
    let smr = zeroed_mr(&pd, 64, Access::LOCAL_WRITE);
    let dmr = zeroed_mr(&pd, 4 * 64, Access::LOCAL_WRITE);
    for i in 0..4 {
        b.post_recv(
            10 + i,
            &[dmr.sge(i as usize * 64..i as usize * 64 + 64).unwrap()],
        )
        .unwrap();
    }
    let sgl = [smr.sge(0..8).unwrap()];
    let to = |ah| UdDest::new(ah, b.qp_num(), 0x1111);

    let e = a
        .post_send(&SendWr::send_to(1, &sgl, to(&other_ctx_ah)).signaled())
        .expect_err("an AH of another context");
    common::assert_wrong_context(&e, Verb::PostSend, "ah");
    let e = a
        .post_send(&SendWr::send_to_inline(2, b"x", to(&other_pd_ah)).signaled())
        .expect_err("an AH of another PD");
    assert_eq!(e.kind, ErrorKind::WrongPd("ah"), "{e}");
    // In a chain: the request before the foreign AH is posted, the rest is not.
    let e = a
        .post_send_chain(&[
            SendWr::send_to(3, &sgl, to(&ah)).signaled(),
            SendWr::send_to_with_imm(4, &sgl, to(&other_ctx_ah), 9).signaled(),
            SendWr::send_to(5, &sgl, to(&ah)).signaled(),
        ])
        .expect_err("an AH of another context in a chain");
    assert_eq!(
        (e.index, e.error.kind.clone()),
        (1, ErrorKind::WrongContext("ah"))
    );
    // Nothing reached the device but request 3: one send, one receive (GRH + 8 bytes).
    let mut got = wait(&cq, 2);
    got.sort_by_key(|d| d.wr_id);
    assert_eq!(
        statuses_and_lengths(&got),
        [(3, WcStatus::SUCCESS, 8), (10, WcStatus::SUCCESS, 48)]
    );
    assert_quiet(&cq);
}

#[test]
fn empty_sge_lists_send_and_receive_zero_bytes() {
    with_rc_pair(|_, _, cq, a, b| {
        let none: &[Sge] = &[];
        b.post_recv(10, none).unwrap();
        b.post_recv(11, &[]).unwrap();
        a.post_send(&SendWr::send(1, none).signaled()).unwrap();
        // `&[]` alone leaves open which SGEs it would hold (of a region with LOCAL_WRITE or not).
        a.post_send(&SendWr::send(2, &[] as &[Sge; 0]).signaled())
            .unwrap();
        let mut got = wait(cq, 4);
        got.sort_by_key(|d| d.wr_id);
        assert_eq!(
            statuses_and_lengths(&got),
            [
                (1, WcStatus::SUCCESS, 0),
                (2, WcStatus::SUCCESS, 0),
                (10, WcStatus::SUCCESS, 0),
                (11, WcStatus::SUCCESS, 0)
            ]
        );
    });
}

// --- The software device's late acknowledgements (`SwConfig::ack_delay`): on rxe an RC
// request completes when its ACK comes, so the peer's answer to a send can complete before the
// send itself; a device with an ACK delay shows that on any machine. Each test registers its
// own device (software only: the model is the subject).

/// A software device whose RC requests are acknowledged `ack_delay` after they are carried out.
#[cfg(feature = "software-device")]
fn late_ack_device(name: &str, ack_delay: Duration) -> Context {
    common::open_registered(
        name,
        typed_verbs::software::SwConfig {
            ack_delay,
            ..Default::default()
        },
    )
}

/// [`wait_for`] the completions of late ACKs: at most 10 s, sleeping 1 ms between polls.
#[cfg(feature = "software-device")]
fn wait_late(cq: &Cq<'_>, n: usize) -> Vec<Done> {
    wait_for(cq, n, Duration::from_secs(10), Duration::from_millis(1))
}

/// An RC pair in loopback in RTS, each QP with a CQ of its own for both its queues.
#[cfg(feature = "software-device")]
fn rc_pair_apart<'a>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    a_cq: &'a Cq<'_>,
    b_cq: &'a Cq<'_>,
) -> (RcQp<'a>, RcQp<'a>) {
    let a = Qp::<Rc>::builder(pd, a_cq, a_cq).build().unwrap();
    let b = Qp::<Rc>::builder(pd, b_cq, b_cq).build().unwrap();
    let (an, bn) = (a.qp_num(), b.qp_num());
    (rc_up(ctx, a, bn), rc_up(ctx, b, an))
}

/// On a device of its own whose ACKs come `ack_delay` late: a PD, a CQ of 8 for each QP of an
/// RC pair ([`rc_pair_apart`]), and a 64-byte region, for `f`.
#[cfg(feature = "software-device")]
fn with_late_pair_apart(
    name: &str,
    ack_delay: Duration,
    f: impl for<'p> FnOnce(&'p Cq<'p>, &'p Cq<'p>, RcQp<'p>, RcQp<'p>, Mr<'p, Vec<u8>>),
) {
    let ctx = late_ack_device(name, ack_delay);
    let pd = Pd::new(&ctx).unwrap();
    let (a_cq, b_cq) = (
        Cq::builder(&ctx).cqe(8).build().unwrap(),
        Cq::builder(&ctx).cqe(8).build().unwrap(),
    );
    let (a, b) = rc_pair_apart(&ctx, &pd, &a_cq, &b_cq);
    let mr = zeroed_mr(&pd, 64, Access::LOCAL_WRITE);
    f(&a_cq, &b_cq, a, b, mr)
}

/// Long enough that the few calls a test makes before the ACK are done first, under valgrind too.
#[cfg(feature = "software-device")]
const LATE_ACK: Duration = Duration::from_millis(1000);

#[cfg(feature = "software-device")]
#[test]
fn with_late_acks_the_peers_answer_completes_before_the_send_it_answers() {
    with_late_pair_apart("sw-late-ack-order", LATE_ACK, |a_cq, b_cq, a, b, mr| {
        a.post_recv(10, &[mr.sge(0..16).unwrap()]).unwrap();
        b.post_recv(20, &[mr.sge(16..32).unwrap()]).unwrap();
        let start = Instant::now();
        a.post_send(&SendWr::send(1, &[mr.sge(32..40).unwrap()]).signaled())
            .unwrap();
        // Carried out at once (the peer has the message), completed only when the ACK comes.
        let got = wait_late(b_cq, 1);
        assert_eq!((got[0].wr_id, got[0].opcode), (20, Some(WcOpcode::RECV)));
        b.post_send(&SendWr::send(2, &[mr.sge(40..44).unwrap()]).signaled())
            .unwrap();
        let got = wait_late(a_cq, 2);
        assert_eq!(
            got.iter().map(|d| (d.wr_id, d.opcode)).collect::<Vec<_>>(),
            [(10, Some(WcOpcode::RECV)), (1, Some(WcOpcode::SEND))],
            "the answer's receive first, then the send it answers"
        );
        assert!(
            start.elapsed() >= LATE_ACK,
            "the send completed before its ACK was due"
        );
        let got = wait_late(b_cq, 1);
        assert_eq!((got[0].wr_id, got[0].opcode), (2, Some(WcOpcode::SEND)));
    });
}

#[cfg(feature = "software-device")]
#[test]
fn with_late_acks_an_unacknowledged_request_keeps_its_send_queue_slot() {
    let ctx = late_ack_device("sw-late-ack-slot", LATE_ACK);
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let build = || {
        Qp::<Rc>::builder(&pd, &cq, &cq)
            .max_send_wr(1)
            .build()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let (an, bn) = (a.qp_num(), b.qp_num());
    let (a, _b) = (rc_up(&ctx, a, bn), rc_up(&ctx, b, an));
    with_self_write(&pd, |write| {
        // An unsignaled request too occupies its slot until it is acknowledged.
        a.post_send(&write(1)).unwrap();
        let e = a.post_send(&write(2).signaled()).unwrap_err();
        assert_eq!((e.verb, e.errno()), (Verb::PostSend, libc::ENOMEM), "{e}");
        std::thread::sleep(LATE_ACK + Duration::from_millis(200));
        a.post_send(&write(3).signaled()).unwrap();
        let got = wait_late(&cq, 1);
        assert_eq!((got[0].wr_id, got[0].status), (3, WcStatus::SUCCESS));
    });
}

#[cfg(feature = "software-device")]
#[test]
fn with_late_acks_a_request_not_yet_acknowledged_is_flushed_by_err_and_dropped_by_destroy() {
    let ctx = late_ack_device("sw-late-ack-flush", LATE_ACK);
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let leaks = common::LeakCheck::new(&ctx, "late_ack_flush");
    {
        let (a, b) = rc_pair(&ctx, &pd, &cq);
        with_self_write(&pd, |write| {
            a.post_send(&write(1).signaled()).unwrap();
            b.post_send(&write(2).signaled()).unwrap();
            let a = a.to_error().unwrap();
            let got = wait_late(&cq, 1);
            assert_eq!((got[0].wr_id, got[0].status), (1, WcStatus::WR_FLUSH_ERR));
            // b is destroyed with its request unacknowledged: the ACK that comes later finds no QP.
            drop(b);
            std::thread::sleep(LATE_ACK + Duration::from_millis(200));
            let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
            assert_eq!(
                cq.poll(&mut wc).unwrap().len(),
                0,
                "nothing after the flush and the destroy"
            );
            drop(a);
        });
    }
    leaks.assert_unchanged("the QPs and their late ACKs");
}

/// A region of 64 bytes open to every access, and `write(id)`: an RDMA write of its bytes 0..8
/// to its bytes 8..16 (a QP writing to itself or to its peer), for `f`.
#[cfg(feature = "software-device")]
fn with_self_write<R>(
    pd: &Pd<'_>,
    f: impl for<'w> FnOnce(&'w dyn Fn(u64) -> SendWr<'w, Rc>) -> R,
) -> R {
    let mr = zeroed_mr(pd, 64, Access::LOCAL_WRITE | ALL_REMOTE);
    let sgl = [mr.sge(0..8).unwrap()];
    let write = |id| SendWr::rdma_write(id, &sgl, mr.remote().at(8, 8).unwrap());
    f(&write)
}

/// Moves `qp` to `state` (only `qp_state` in the mask) behind the typed layer's back: the
/// typed layer has no SQD.
///
/// # Safety
/// `qp` is a live QP; the caller only drops its typed handle afterwards, or moves it back to
/// the state the handle says.
#[cfg(feature = "software-device")]
unsafe fn raw_state(qp: *mut typed_verbs::ffi::sys::ibv_qp, state: u32) -> Result<(), i32> {
    // SAFETY: plain C data.
    let mut attr: typed_verbs::ffi::sys::ibv_qp_attr = unsafe { std::mem::zeroed() };
    attr.qp_state = state;
    // SAFETY: the caller's contract; mask IBV_QP_STATE.
    unsafe { typed_verbs::raw::ibv_modify_qp(qp, &mut attr, 1) }
}

#[cfg(feature = "software-device")]
#[test]
fn with_late_acks_requests_posted_before_a_move_to_sqd_still_run_and_then_rts_is_allowed() {
    use typed_verbs::ffi::sys::ibv_qp_state::{IBV_QPS_RTS, IBV_QPS_SQD};
    let ctx = late_ack_device("sw-late-ack-sqd-rest", LATE_ACK);
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
    let (a, _b) = rc_pair(&ctx, &pd, &cq);
    with_self_write(&pd, |write| {
        a.post_send(&write(1).signaled()).unwrap();
        a.post_send(&write(2).signaled()).unwrap();
        // SAFETY: a live QP, RTS -> SQD -> RTS: back in the state its handle says.
        unsafe { raw_state(a.as_raw(), IBV_QPS_SQD) }.expect("RTS -> SQD");
        // Both were posted in RTS (rxe's requester has both in processing): both complete while
        // the QP drains, in order, each with its ACK.
        let got = wait_late(&cq, 2);
        assert_eq!(
            got.iter().map(|d| (d.wr_id, d.status)).collect::<Vec<_>>(),
            [(1, WcStatus::SUCCESS), (2, WcStatus::SUCCESS)]
        );
        // SAFETY: as above.
        unsafe { raw_state(a.as_raw(), IBV_QPS_RTS) }.expect("SQD -> RTS once drained");
        a.post_send(&write(3).signaled()).unwrap();
        let got = wait_late(&cq, 1);
        assert_eq!((got[0].wr_id, got[0].status), (3, WcStatus::SUCCESS));
    });
}

#[cfg(feature = "software-device")]
#[test]
fn an_ack_delay_beyond_the_clocks_range_is_an_ack_that_never_comes() {
    with_late_pair_apart(
        "sw-late-ack-never",
        Duration::MAX,
        |a_cq, b_cq, a, b, mr| {
            b.post_recv(10, &[mr.sge(0..16).unwrap()]).unwrap();
            a.post_send(&SendWr::send(1, &[mr.sge(32..40).unwrap()]).signaled())
                .expect("the post works; only the ACK never comes");
            let got = wait_late(b_cq, 1);
            assert_eq!((got[0].wr_id, got[0].status), (10, WcStatus::SUCCESS));
            std::thread::sleep(Duration::from_millis(300));
            let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
            assert_eq!(
                a_cq.poll(&mut wc).unwrap().len(),
                0,
                "no ACK, no completion"
            );
            // The request holds its slot until a flush takes it.
            let _a = a.to_error().unwrap();
            let got = wait_late(a_cq, 1);
            assert_eq!((got[0].wr_id, got[0].status), (1, WcStatus::WR_FLUSH_ERR));
        },
    );
}
