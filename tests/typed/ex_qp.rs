//! Extended QPs (src/qp/ex.rs, src/wr/batch.rs): every op of a batch moves its data on RC, UC
//! and UD; a batch ends on every path (`Err`, panic, a request dropped or forgotten before its
//! data) and the QP posts again; what is checked before the calls is refused with the request
//! named, and the batch goes on without it. Runs on sw0 and, in the VM lane, on rxe0.

use crate::common;
use std::time::Duration;
use typed_verbs::qp::ex::OpsFor;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    send_ops, Access, AccessFlags, AddressHandle, Cq, ErrorKind, Ex, Mr, OwnRq, Pd, Qp, Rc, SendWr,
    Shared, SqPsn, Uc, Ud, UdDest, UdInit, Verb, WcOpcode, WcStatus,
};

type All = send_ops!(
    SEND | SEND_WITH_IMM
        | RDMA_WRITE
        | RDMA_WRITE_WITH_IMM
        | RDMA_READ
        | ATOMIC_CMP_AND_SWP
        | ATOMIC_FETCH_AND_ADD
);

type ExRc<'a, O> = Qp<'a, Ex<Rc, O>, OwnRq, Shared, (), Rts, 2>;

/// Every remote right, and LOCAL_WRITE.
fn all_rights() -> AccessFlags {
    AccessFlags::LOCAL_WRITE
        | AccessFlags::REMOTE_WRITE
        | AccessFlags::REMOTE_READ
        | AccessFlags::REMOTE_ATOMIC
}

/// Two extended RC QPs with the ops `O`, connected to each other (16 sends and receives, 64
/// bytes inline, 2 send SGEs in the type, 4 actual).
fn ex_rc_pair<'a, O: OpsFor<Rc>>(pd: &'a Pd<'_>, cq: &'a Cq<'_>) -> (ExRc<'a, O>, ExRc<'a, O>) {
    let build = || {
        Qp::<Rc>::builder(pd, cq, cq)
            .max_send_wr(16)
            .max_recv_wr(16)
            .max_inline_data(64)
            .max_send_sge(4)
            .send_sge_cap::<2>()
            .send_ops::<O>()
            .build()
            .unwrap()
    };
    let (a, b) = (build(), build());
    let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
    let a = a.connect(&ea, &eb, all_rights()).unwrap();
    let b = b.connect(&eb, &ea, all_rights()).unwrap();
    (a, b)
}

type ExUd<'a, O> = Qp<'a, Ex<Ud, O>, OwnRq, Shared, (), Rts>;

/// An extended UD QP with the ops `O` in RTS, accepting Q_Key 0x11 (8 sends and receives, 32
/// bytes inline).
fn ex_ud<'a, O: OpsFor<Ud>>(pd: &'a Pd<'_>, cq: &'a Cq<'_>) -> ExUd<'a, O> {
    let init = UdInit {
        port_num: 1,
        pkey_index: 0,
        qkey: 0x11,
    };
    Qp::<Ud>::builder(pd, cq, cq)
        .max_send_wr(8)
        .max_recv_wr(8)
        .max_inline_data(32)
        .send_ops::<O>()
        .build()
        .unwrap()
        .to_init(init)
        .unwrap()
        .to_rtr(())
        .unwrap()
        .to_rts(SqPsn { sq_psn: 0 })
        .unwrap()
}

/// What the tests read of a completion.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Done {
    wr_id: u64,
    status: WcStatus,
    opcode: Option<WcOpcode>,
    byte_len: u32,
    imm: Option<u32>,
}

/// Exactly `n` completions of `cq` (at most 5 s for them, then 100 ms more in which no other
/// may come).
fn completions(cq: &Cq<'_>, n: usize) -> Vec<Done> {
    let each = |w: &typed_verbs::WorkCompletion| {
        let ok = w.success();
        Done {
            wr_id: w.wr_id(),
            status: w.status(),
            opcode: ok.map(|s| s.opcode()),
            byte_len: ok.map_or(0, |s| s.byte_len()),
            imm: ok.and_then(|s| s.imm_data()),
        }
    };
    let mut got = common::poll_n(cq, n, Duration::from_secs(5), Duration::ZERO, each);
    assert_eq!(got.len(), n, "{n} completions: {got:?}");
    let more = common::poll_n(cq, 1, Duration::from_millis(100), Duration::ZERO, each);
    assert!(more.is_empty(), "no completion after the {n}: {more:?}");
    got.sort_by_key(|d| d.wr_id);
    got
}

#[test]
fn every_op_of_an_rc_batch_moves_its_data() {
    common::with_pd_cq(Some(64), |_ctx, pd, cq| {
        let (mut a, b) = ex_rc_pair::<All>(pd, cq);
        let rights = Access::LOCAL_WRITE
            | Access::REMOTE_WRITE
            | Access::REMOTE_READ
            | Access::REMOTE_ATOMIC;
        let (local, remote) = (
            Mr::new(pd, vec![0u8; 4096], rights).unwrap(),
            Mr::new(pd, vec![0u8; 4096], rights).unwrap(),
        );
        local.write(0, b"send-sge").unwrap();
        local.write(8, b"list-one").unwrap();
        local.write(16, b"list-two").unwrap();
        remote.write(2048, b"to be read").unwrap();
        remote.write(3072, &40u64.to_ne_bytes()).unwrap();
        for i in 0..4 {
            let at = 64 * i as usize;
            b.post_recv(100 + i, &[remote.sge(at..at + 64).unwrap()])
                .unwrap();
        }
        let target = remote.remote();
        a.post_batch(|batch| {
            batch.send(1).signaled().sge(local.sge(0..8).unwrap())?;
            batch
                .send_with_imm(2, 0xfeed)
                .signaled()
                .sges(&[local.sge(8..16).unwrap(), local.sge(16..24).unwrap()])?;
            batch
                .rdma_write(3, target.at(1024, 8).unwrap())
                .signaled()
                .inline(b"inlined!")?;
            batch
                .rdma_write_with_imm(4, target.at(1032, 8).unwrap(), 7)
                .signaled()
                .solicited()
                .sge(local.sge(0..8).unwrap())?;
            batch
                .rdma_read(5, target.at(2048, 10).unwrap())
                .signaled()
                .fenced()
                .sge(local.sge(512..522).unwrap())?;
            batch
                .compare_swap(6, target.atomic_at(3072).unwrap(), 40, 41)
                .signaled()
                .result(&local.atomic_result(1024).unwrap())?;
            batch
                .fetch_add(7, target.atomic_at(3072).unwrap(), 2)
                .signaled()
                .result(&local.atomic_result(1032).unwrap())?;
            batch.send(8).signaled().inline(b"last")
        })
        .unwrap();
        let got = completions(cq, 8 + 4);
        let sender: Vec<_> = got.iter().filter(|d| d.wr_id < 100).copied().collect();
        let ok = |wr_id, opcode, byte_len| Done {
            wr_id,
            status: WcStatus::SUCCESS,
            opcode: Some(opcode),
            byte_len,
            imm: None,
        };
        // rxe and sw0 report the request's length for sends and writes, 8 for atomics.
        assert_eq!(
            sender
                .iter()
                .map(|d| (d.wr_id, d.status, d.opcode))
                .collect::<Vec<_>>(),
            [
                ok(1, WcOpcode::SEND, 8),
                ok(2, WcOpcode::SEND, 16),
                ok(3, WcOpcode::RDMA_WRITE, 8),
                ok(4, WcOpcode::RDMA_WRITE, 8),
                ok(5, WcOpcode::RDMA_READ, 10),
                ok(6, WcOpcode::COMP_SWAP, 8),
                ok(7, WcOpcode::FETCH_ADD, 8),
                ok(8, WcOpcode::SEND, 4),
            ]
            .map(|d| (d.wr_id, d.status, d.opcode))
        );
        let receiver: Vec<_> = got.iter().filter(|d| d.wr_id >= 100).collect();
        assert_eq!(
            receiver
                .iter()
                .map(|d| (d.status, d.byte_len, d.imm))
                .collect::<Vec<_>>(),
            [
                (WcStatus::SUCCESS, 8, None),
                (WcStatus::SUCCESS, 16, Some(0xfeed)),
                (WcStatus::SUCCESS, 8, Some(7)),
                (WcStatus::SUCCESS, 4, None),
            ],
            "the receives, in order: the send, the send with immediate (two SGEs), the write \
             with immediate, the inline send"
        );
        let mut buf = [0u8; 24];
        remote.read(0, &mut buf[..8]).unwrap();
        assert_eq!(&buf[..8], b"send-sge");
        remote.read(64, &mut buf[..16]).unwrap();
        assert_eq!(&buf[..16], b"list-onelist-two");
        remote.read(192, &mut buf[..4]).unwrap();
        assert_eq!(&buf[..4], b"last");
        remote.read(1024, &mut buf[..16]).unwrap();
        assert_eq!(&buf[..16], b"inlined!send-sge");
        local.read(512, &mut buf[..10]).unwrap();
        assert_eq!(&buf[..10], b"to be read");
        let word = |mr: &Mr<'_, Vec<u8>, _>, at| {
            let mut w = [0u8; 8];
            mr.read(at, &mut w).unwrap();
            u64::from_ne_bytes(w)
        };
        assert_eq!(
            (word(&local, 1024), word(&local, 1032), word(&remote, 3072)),
            (40, 41, 43),
            "the compare-and-swap saw 40 and wrote 41, the fetch-and-add saw 41 and added 2"
        );
    });
}

#[test]
fn a_uc_batch_sends_and_writes() {
    common::with_pd_cq(Some(16), |_ctx, pd, cq| {
        type Ops = send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_WRITE_WITH_IMM);
        let build = || {
            Qp::<Uc>::builder(pd, cq, cq)
                .max_send_wr(8)
                .max_recv_wr(8)
                .max_inline_data(32)
                .send_ops::<Ops>()
                .build()
                .unwrap()
        };
        let (a, b) = (build(), build());
        let (ea, eb) = (a.endpoint(1, 0).unwrap(), b.endpoint(1, 0).unwrap());
        let mut a = a.connect(&ea, &eb, AccessFlags::LOCAL_WRITE).unwrap();
        let b = b.connect(&eb, &ea, AccessFlags::REMOTE_WRITE).unwrap();
        let mr = Mr::new(
            pd,
            vec![0u8; 1024],
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
        b.post_recv(100, &[mr.sge(0..64).unwrap()]).unwrap();
        b.post_recv(101, &[mr.sge(64..128).unwrap()]).unwrap();
        a.post_batch(|batch| {
            batch.send(1).signaled().inline(b"uc send")?;
            batch
                .rdma_write(2, mr.remote().at(512, 8).unwrap())
                .signaled()
                .inline(b"uc write")?;
            batch
                .rdma_write_with_imm(3, mr.remote().at(520, 4).unwrap(), 11)
                .signaled()
                .inline(b"imm!")
        })
        .unwrap();
        let got = completions(cq, 3 + 2);
        assert!(got.iter().all(|d| d.status == WcStatus::SUCCESS), "{got:?}");
        assert_eq!(got[3].byte_len, 7);
        assert_eq!(got[4].imm, Some(11));
        let mut buf = [0u8; 12];
        mr.read(512, &mut buf).unwrap();
        assert_eq!(&buf, b"uc writeimm!");
        mr.read(0, &mut buf[..7]).unwrap();
        assert_eq!(&buf[..7], b"uc send");
    });
}

#[test]
fn a_ud_batch_sends_to_its_address() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        type Ops = send_ops!(SEND | SEND_WITH_IMM);
        let (mut a, b) = (ex_ud::<Ops>(pd, cq), ex_ud::<Ops>(pd, cq));
        let ah = AddressHandle::new(pd, common::loopback_av(ctx)).unwrap();
        let mr = Mr::new(pd, vec![0u8; 1024], Access::LOCAL_WRITE).unwrap();
        mr.write(800, b"datagram by sge").unwrap();
        b.post_recv(100, &[mr.sge(0..128).unwrap()]).unwrap();
        b.post_recv(101, &[mr.sge(128..256).unwrap()]).unwrap();
        let to = UdDest::new(&ah, b.qp_num(), 0x11);
        a.post_batch(|batch| {
            batch.send_to(1, to).signaled().inline(b"datagram")?;
            batch
                .send_to_with_imm(2, to, 5)
                .signaled()
                .sge(mr.sge(800..815).unwrap())
        })
        .unwrap();
        let got = completions(cq, 2 + 2);
        assert!(got.iter().all(|d| d.status == WcStatus::SUCCESS), "{got:?}");
        // A UD receive starts with the 40-byte GRH.
        assert_eq!((got[2].byte_len, got[3].byte_len), (40 + 8, 40 + 15));
        assert_eq!(got[3].imm, Some(5));
        let mut buf = [0u8; 15];
        mr.read(40, &mut buf[..8]).unwrap();
        assert_eq!(&buf[..8], b"datagram");
        mr.read(128 + 40, &mut buf).unwrap();
        assert_eq!(&buf, b"datagram by sge");
    });
}

/// Whether `cq` gets a completion within 200 ms.
fn quiet(cq: &Cq<'_>) -> bool {
    common::poll_n(cq, 1, Duration::from_millis(200), Duration::ZERO, |w| {
        w.wr_id()
    })
    .is_empty()
}

#[test]
fn an_err_from_the_closure_aborts_the_batch_and_the_qp_posts_again() {
    common::with_pd_cq(Some(16), |_ctx, pd, cq| {
        let (mut a, b) = ex_rc_pair::<send_ops!(SEND)>(pd, cq);
        let mr = Mr::new(pd, vec![0u8; 256], Access::LOCAL_WRITE).unwrap();
        b.post_recv(100, &[mr.sge(0..64).unwrap()]).unwrap();
        let refused = typed_verbs::Error {
            verb: Verb::WrPost,
            kind: ErrorKind::WrongPd("test"),
        };
        let e = a
            .post_batch(|batch| -> typed_verbs::Result<()> {
                batch.send(1).signaled().inline(b"never")?;
                batch.send(2).signaled().inline(b"never")?;
                Err(refused.clone())
            })
            .unwrap_err();
        assert_eq!(e, refused);
        assert!(quiet(cq), "an aborted batch posts nothing");
        // The send queue's lock was released, and the aborted requests left no trace.
        a.post_batch(|batch| batch.send(3).signaled().inline(b"after"))
            .unwrap();
        let got = completions(cq, 2);
        assert_eq!((got[0].wr_id, got[1].wr_id), (3, 100));
        let mut buf = [0u8; 5];
        mr.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"after");
    });
}

#[test]
fn a_panic_in_the_closure_aborts_the_batch_and_the_qp_posts_again() {
    common::with_pd_cq(Some(16), |_ctx, pd, cq| {
        let (mut a, b) = ex_rc_pair::<send_ops!(SEND)>(pd, cq);
        let mr = Mr::new(pd, vec![0u8; 256], Access::LOCAL_WRITE).unwrap();
        b.post_recv(100, &[mr.sge(0..64).unwrap()]).unwrap();
        let unwound = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            a.post_batch(|batch| -> typed_verbs::Result<()> {
                batch.send(1).signaled().inline(b"never")?;
                panic!("in the batch");
            })
        }));
        assert!(unwound.is_err());
        assert!(quiet(cq), "an unwound batch posts nothing");
        a.post_send(&SendWr::send_inline(2, b"legacy").signaled())
            .unwrap();
        let got = completions(cq, 2);
        assert_eq!((got[0].wr_id, got[1].wr_id), (2, 100));
    });
}

#[test]
fn a_request_dropped_or_forgotten_before_its_data_leaves_no_trace() {
    common::with_pd_cq(Some(16), |_ctx, pd, cq| {
        let (mut a, b) = ex_rc_pair::<send_ops!(SEND | RDMA_WRITE)>(pd, cq);
        let mr = Mr::new(
            pd,
            vec![0u8; 256],
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
        b.post_recv(100, &[mr.sge(0..64).unwrap()]).unwrap();
        a.post_batch(|batch| {
            // A `Wr` has no Drop: forgetting it is dropping it, which is the point.
            #[allow(clippy::forget_non_drop)]
            std::mem::forget(batch.send(1).signaled());
            let dropped = batch.rdma_write(2, mr.remote().at(128, 4).unwrap());
            drop(dropped);
            batch.send(3).signaled().inline(b"only me")
        })
        .unwrap();
        let got = completions(cq, 2);
        assert_eq!((got[0].wr_id, got[0].byte_len), (3, 7));
        assert_eq!((got[1].wr_id, got[1].byte_len), (100, 7));
        let mut buf = [0u8; 7];
        mr.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"only me");
        mr.read(128, &mut buf[..4]).unwrap();
        assert_eq!(&buf[..4], [0; 4], "the dropped write was never posted");
    });
}

#[test]
fn bad_requests_are_refused_before_their_calls_and_the_batch_goes_on() {
    common::with_pd_cq(Some(32), |_ctx, pd, cq| {
        let (mut a, b) = ex_rc_pair::<send_ops!(SEND)>(pd, cq);
        let caps = a.caps();
        let mr = Mr::new(pd, vec![0u8; 8192], Access::LOCAL_WRITE).unwrap();
        b.post_recv(100, &[mr.sge(0..4096).unwrap()]).unwrap();
        let too_long = vec![7u8; caps.max_inline_data as usize + 1];
        let too_many: Vec<_> = (0..=caps.max_send_sge as usize)
            .map(|i| mr.sge(4096 + i..4097 + i).unwrap())
            .collect();
        let errors = a
            .post_batch(|batch| {
                let inline = batch.send(1).signaled().inline(&too_long).unwrap_err();
                let sges = batch.send(2).signaled().sges(&too_many[..]).unwrap_err();
                batch.send(3).signaled().inline(b"fine")?;
                Ok((inline, sges))
            })
            .unwrap();
        common::assert_out_of_range(
            Err::<(), _>(errors.0),
            Verb::WrPost,
            "inline length",
            u64::from(caps.max_inline_data) + 1,
            0,
            u64::from(caps.max_inline_data),
        );
        common::assert_out_of_range(
            Err::<(), _>(errors.1),
            Verb::WrPost,
            "num_sge",
            u64::from(caps.max_send_sge) + 1,
            0,
            u64::from(caps.max_send_sge),
        );
        let got = completions(cq, 2);
        assert_eq!((got[0].wr_id, got[1].byte_len), (3, 4));
    });
}

#[test]
fn a_batch_larger_than_the_send_queue_fails_whole_at_complete() {
    common::with_pd_cq(Some(32), |_ctx, pd, cq| {
        let (mut a, _b) = ex_rc_pair::<send_ops!(RDMA_WRITE)>(pd, cq);
        let mr = Mr::new(
            pd,
            vec![0u8; 4096],
            Access::LOCAL_WRITE | Access::REMOTE_WRITE,
        )
        .unwrap();
        let at = mr.remote().at(0, 8).unwrap();
        // Far more than any ring of a QP asked for 16 holds (rxe and sw0 round to 31).
        let e = a
            .post_batch(|batch| {
                for i in 0..1024u64 {
                    batch
                        .rdma_write(i, at)
                        .signaled()
                        .inline(&i.to_ne_bytes())?;
                }
                Ok(())
            })
            .unwrap_err();
        assert_eq!(e.verb, Verb::WrComplete, "{e}");
        assert!(
            matches!(
                e.kind,
                ErrorKind::Os(libc::ENOSPC) | ErrorKind::Os(libc::ENOMEM)
            ),
            "the provider's own check of the send queue: {e}"
        );
        assert!(quiet(cq), "nothing of the refused batch was posted");
        let mut buf = [0u8; 8];
        mr.read(0, &mut buf).unwrap();
        assert_eq!(buf, [0; 8]);
        // The QP posts again, a batch that fits.
        a.post_batch(|batch| batch.rdma_write(7, at).signaled().inline(b"fits now"))
            .unwrap();
        assert_eq!(completions(cq, 1)[0].wr_id, 7);
        mr.read(0, &mut buf).unwrap();
        assert_eq!(&buf, b"fits now");
    });
}

/// An address handle destroyed after its request's data method, before the batch completes:
/// rxe keeps the AH's index and its kernel looks the AH up when it sends, so the request fails
/// (LOC_QP_OP_ERR) and the QP moves to ERR; the software device does the same, and never reads
/// the destroyed AH (memcheck, in the sanitizer lane). The AH is the caller's to keep alive until
/// the request's completion (docs/guarantees.md, "The caller's duties").
#[test]
fn an_address_handle_destroyed_before_its_request_ran_fails_it() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let mut qp = ex_ud::<send_ops!(SEND)>(pd, cq);
        let mr = Mr::new(pd, vec![0u8; 256], Access::LOCAL_WRITE).unwrap();
        qp.post_recv(100, &[mr.sge(0..128).unwrap()]).unwrap();
        let qpn = qp.qp_num();
        qp.post_batch(|batch| {
            let ah = AddressHandle::new(pd, common::loopback_av(ctx))?;
            batch
                .send_to(1, UdDest::new(&ah, qpn, 0x11))
                .signaled()
                .inline(b"ah gone")?;
            drop(ah); // ibv_destroy_ah, before ibv_wr_complete
            Ok(())
        })
        .unwrap();
        let got = completions(cq, 2);
        assert_eq!(
            got.iter().map(|d| (d.wr_id, d.status)).collect::<Vec<_>>(),
            [(1, WcStatus::LOC_QP_OP_ERR), (100, WcStatus::WR_FLUSH_ERR)],
            "the send fails, and the QP's receive is flushed as it moves to ERR"
        );
        let mut buf = [0u8; 7];
        mr.read(40, &mut buf).unwrap();
        assert_eq!(buf, [0; 7], "nothing arrived");
    });
}

#[test]
fn a_ud_address_of_another_pd_is_refused() {
    common::with_pd_cq(Some(16), |ctx, pd, cq| {
        let mut qp = ex_ud::<send_ops!(SEND)>(pd, cq);
        let other = Pd::new(ctx).unwrap();
        let ah = AddressHandle::new(&other, common::loopback_av(ctx)).unwrap();
        let to = UdDest::new(&ah, qp.qp_num(), 0x11);
        let e = qp
            .post_batch(|batch| batch.send_to(1, to).signaled().inline(b"x"))
            .unwrap_err();
        assert_eq!((e.verb, e.kind), (Verb::WrPost, ErrorKind::WrongPd("ah")));
        assert!(quiet(cq), "nothing posted");
    });
}

#[test]
fn extended_qps_on_several_threads_post_at_once() {
    common::with_pd_cq(Some(256), |_ctx, pd, cq| {
        let pairs: Vec<_> = (0..3)
            .map(|_| ex_rc_pair::<send_ops!(SEND)>(pd, cq))
            .collect();
        let mr = Mr::new(pd, vec![0u8; 4096], Access::LOCAL_WRITE).unwrap();
        for (i, (_, b)) in pairs.iter().enumerate() {
            for j in 0..16u64 {
                let at = 1024 * i + 64 * j as usize;
                b.post_recv(1000 + j, &[mr.sge(at..at + 64).unwrap()])
                    .unwrap();
            }
        }
        let mut senders: Vec<_> = pairs.into_iter().map(|(a, b)| (a, Some(b))).collect();
        std::thread::scope(|s| {
            let handles: Vec<_> = senders
                .iter_mut()
                .enumerate()
                .map(|(i, (a, _))| {
                    s.spawn(move || {
                        for round in 0..4u64 {
                            a.post_batch(|batch| {
                                for k in 0..4u64 {
                                    let msg = [i as u8, round as u8, k as u8];
                                    batch.send(round * 4 + k).signaled().inline(&msg)?;
                                }
                                Ok(())
                            })
                            .unwrap();
                        }
                    })
                })
                .collect();
            for h in handles {
                h.join().unwrap();
            }
        });
        let got = common::poll_n(
            cq,
            3 * 16 * 2,
            Duration::from_secs(10),
            Duration::ZERO,
            |w| w.status(),
        );
        assert_eq!(got.len(), 3 * 16 * 2);
        assert!(got.iter().all(|s| *s == WcStatus::SUCCESS), "{got:?}");
        for i in 0..3usize {
            for j in 0..16usize {
                let mut m = [0u8; 3];
                mr.read(1024 * i + 64 * j, &mut m).unwrap();
                assert_eq!(
                    m,
                    [i as u8, (j / 4) as u8, (j % 4) as u8],
                    "pair {i}, message {j}"
                );
            }
        }
        drop(senders);
    });
}

/// A device without the extended QP for the asked ops refuses it at creation: a typed error
/// naming the device and the ops, and the legacy QP of the same type works there. The software
/// device made like rxe has no RAW_PACKET QPs, so no extended ones either.
#[cfg(feature = "software-device")]
#[test]
fn a_refused_extended_qp_names_the_device() {
    let test = "typed::ex_qp::a_refused_extended_qp_names_the_device";
    common::on_like_rxe(test, "sw-ex-refused", |ctx: &typed_verbs::Context| {
        let pd = Pd::new(ctx).unwrap();
        let cq = Cq::builder(ctx).cqe(4).build().unwrap();
        let e = Qp::<typed_verbs::RawPacket>::builder(&pd, &cq, &cq)
            .send_ops::<send_ops!(SEND)>()
            .build()
            .map(drop)
            .unwrap_err();
        assert_eq!(e.verb, Verb::CreateQpEx, "{e}");
        assert_eq!(
            e.kind,
            ErrorKind::SendOpsUnsupported {
                device: ctx.device_name().to_owned(),
                send_ops: typed_verbs::qp::ex::bits::SEND,
            }
        );
        assert!(e.is_unsupported());
        let text = e.to_string();
        assert!(
            text.contains("ibv_create_qp_ex") && text.contains("sw-ex-refused"),
            "{text}"
        );
        // An RC QP there is extended, as rxe's.
        Qp::<Rc>::builder(&pd, &cq, &cq)
            .send_ops::<send_ops!(SEND | RDMA_READ)>()
            .build()
            .unwrap();
    });
}

/// A send-op set of no op, named by hand (`send_ops!` refuses it), is refused before any call:
/// the QP would have no `qp_ex` for its batches.
#[test]
fn an_empty_send_op_set_is_refused_before_any_call() {
    common::with_pd_cq(Some(4), |_ctx, pd, cq| {
        type Nothing =
            typed_verbs::qp::ex::SendOpSet<false, false, false, false, false, false, false>;
        let r = Qp::<Rc>::builder(pd, cq, cq)
            .send_ops::<Nothing>()
            .build()
            .map(drop);
        common::assert_out_of_range(r, Verb::CreateQpEx, "send_ops_flags", 0, 1, u64::MAX);
    });
}
