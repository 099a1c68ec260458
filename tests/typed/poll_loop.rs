//! The poll loops `completion_record!` generates: bounded batches, every completion once and in
//! order, failures on the error side, the batch ended when the handler panics, and the same
//! answers as the hand-written loop over the `Batch` API.
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::open;
use std::panic::{catch_unwind, AssertUnwindSafe};
use typed_verbs::{
    completion_record, software, wc_flags, Cq, CqEx, InjectedCompletion, WcOpcode, WcStatus,
};

completion_record! {
    struct Recv { wr_id, opcode, byte_len, imm_data, qp_num, src_qp }
    struct Failed { wr_id, status, vendor_err }
    max_batch = 16;
}

type Flags = wc_flags!(BYTE_LEN | IMM | QP_NUM | SRC_QP);

fn completion(i: u64) -> InjectedCompletion {
    if i % 7 == 3 {
        InjectedCompletion::error(i, WcStatus::REM_ACCESS_ERR, i as u32 * 3)
    } else {
        let c = InjectedCompletion::success(
            i,
            if i % 2 == 0 {
                WcOpcode::RECV
            } else {
                WcOpcode::SEND
            },
        )
        .byte_len(i as u32 * 10)
        .qp_num(0x100 + i as u32)
        .src_qp(0x200 + i as u32);
        if i % 3 == 0 {
            c
        } else {
            c.imm_data(0xab00 + i as u32)
        }
    }
}

fn expected(i: u64) -> Result<Recv, Failed> {
    if i % 7 == 3 {
        Err(Failed {
            wr_id: i,
            status: WcStatus::REM_ACCESS_ERR,
            vendor_err: i as u32 * 3,
        })
    } else {
        Ok(Recv {
            wr_id: i,
            opcode: if i % 2 == 0 {
                WcOpcode::RECV
            } else {
                WcOpcode::SEND
            },
            byte_len: i as u32 * 10,
            imm_data: (i % 3 != 0).then_some(0xab00 + i as u32),
            qp_num: 0x100 + i as u32,
            src_qp: 0x200 + i as u32,
        })
    }
}

/// Injects `completion(0)` to `completion(n - 1)` into `cq`, in order.
fn inject_up_to(cq: &impl typed_verbs::AnyCq, n: u64) {
    for i in 0..n {
        software::inject(cq, completion(i)).unwrap();
    }
}

#[test]
fn generated_loop_takes_every_completion_in_order_in_bounded_batches() {
    common::on_software(
        "generated_loop_takes_every_completion_in_order_in_bounded_batches",
        "completion injection",
        |ctx| {
            let mut cq = CqEx::<Flags>::builder(ctx).cqe(1000).build().unwrap();
            inject_up_to(&cq, 1000);
            let mut got = Vec::new();
            let mut batches = Vec::new();
            loop {
                let n = Recv::poll(&mut cq, |r| got.push(r.map(|v| v.to_record()))).unwrap();
                if n == 0 {
                    break;
                }
                batches.push(n);
            }
            assert!(batches.iter().all(|&n| n <= Recv::MAX_BATCH));
            assert_eq!(batches.len(), 1000usize.div_ceil(Recv::MAX_BATCH));
            assert_eq!(got, (0..1000).map(expected).collect::<Vec<_>>());
        },
    );
}

#[test]
fn generated_loop_matches_the_batch_api() {
    common::on_software(
        "generated_loop_matches_the_batch_api",
        "completion injection",
        |ctx| {
            let mut cq = CqEx::<Flags>::builder(ctx).cqe(64).build().unwrap();
            let mut by_hand = Vec::new();
            inject_up_to(&cq, 40);
            cq.poll_batch(|batch| {
                let mut next = Some(batch);
                while let Some(batch) = next {
                    by_hand.push(match batch.completion().result() {
                        Ok(c) => Ok(Recv {
                            wr_id: c.wr_id(),
                            opcode: c.opcode(),
                            byte_len: c.byte_len(),
                            imm_data: c.imm_data(),
                            qp_num: c.qp_num(),
                            src_qp: c.src_qp(),
                        }),
                        Err(c) => Err(Failed {
                            wr_id: c.wr_id(),
                            status: c.status(),
                            vendor_err: c.vendor_err(),
                        }),
                    });
                    next = batch.advance().unwrap();
                }
            })
            .unwrap()
            .expect("the injected completions");
            inject_up_to(&cq, 40);
            let mut generated = Vec::new();
            while Recv::poll(&mut cq, |r| generated.push(r.map(|v| v.to_record()))).unwrap() > 0 {}
            assert_eq!(generated, by_hand);
        },
    );
}

#[test]
fn a_panicking_handler_still_ends_the_batch() {
    common::on_software(
        "a_panicking_handler_still_ends_the_batch",
        "completion injection",
        |ctx| {
            // A Shared CQ: ibv_start_poll takes the provider's lock, so a batch left open would deadlock
            // the next poll.
            let mut cq = CqEx::<Flags>::builder(ctx).cqe(8).build().unwrap();
            inject_up_to(&cq, 3);
            let r = catch_unwind(AssertUnwindSafe(|| {
                Recv::poll(&mut cq, |r| {
                    panic!(
                        "deliberate panic in the handler at {:?}",
                        r.map(|r| r.wr_id())
                    )
                })
            }));
            assert!(r.is_err());
            let mut rest = Vec::new();
            while Recv::poll(&mut cq, |r| {
                rest.push(r.map(|r| r.wr_id()).unwrap_or(u64::MAX))
            })
            .unwrap()
                > 0
            {}
            assert_eq!(
                rest,
                [1, 2],
                "the completion the handler panicked on was consumed"
            );
        },
    );
}

#[test]
fn generated_legacy_loop_polls_into_a_stack_array() {
    common::on_software(
        "generated_legacy_loop_polls_into_a_stack_array",
        "completion injection",
        |ctx| {
            let cq = Cq::builder(ctx).cqe(64).build().unwrap();
            inject_up_to(&cq, 40);
            let mut got = Vec::new();
            let mut calls = 0;
            while Recv::poll_legacy(&cq, |r| got.push(r)).unwrap() > 0 {
                calls += 1;
            }
            assert_eq!(calls, 40usize.div_ceil(Recv::MAX_BATCH));
            assert_eq!(got, (0..40).map(expected).collect::<Vec<_>>());
        },
    );
}

#[test]
fn generated_loop_on_an_empty_cq_takes_nothing() {
    // Runs on every device: no injection needed.
    let ctx = open();
    let mut cq = CqEx::<Flags>::builder(&ctx).cqe(8).build().unwrap();
    assert_eq!(
        Recv::poll(&mut cq, |_| panic!("no completion expected")).unwrap(),
        0
    );
    let legacy = Cq::builder(&ctx).cqe(8).build().unwrap();
    assert_eq!(
        Recv::poll_legacy(&legacy, |_| panic!("no completion expected")).unwrap(),
        0
    );
}
