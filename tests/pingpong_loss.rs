//! The pingpong examples' loop (examples/common/pingpong.rs, shared by `ud_pingpong`,
//! `uc_pingpong`, `rc_pingpong` and `srq_pingpong`) bounds its waits: a UD message that is lost
//! (here: sent to a QP with no receive posted, which the device drops as a wire drops a frame)
//! ends the loop within `--timeout` with an error that reports the loss, instead of a wait that
//! never ends. Runs on the test device (sw0 by default, rxe0 in the VM lane).

#[path = "../examples/common/pingpong.rs"]
mod pingpong;

mod common;

use pingpong::{Opts, Out, UdSide, DEFAULT_TIMEOUT, GRH_LEN, RECV_WRID, UD_PROGRAM, UD_QKEY};
use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    Access, AddressHandle, Context, Cq, Mr, OwnRq, PageBuf, Pd, Qp, Shared, SqPsn, Ud, UdInit,
};

const SIZE: usize = 64;

/// A UD QP in RTS on `cq`, with no receive posted.
fn ud_qp<'a>(pd: &'a Pd<'a>, cq: &'a Cq<'a>, o: &Opts) -> Qp<'a, Ud, OwnRq, Shared, (), Rts> {
    Qp::<Ud>::builder(pd, cq, cq)
        .max_send_wr(1)
        .max_recv_wr(o.rx_depth)
        .max_send_sge(1)
        .max_recv_sge(1)
        .build()
        .expect("create a UD QP")
        .to_init(UdInit {
            port_num: o.ib_port,
            pkey_index: 0,
            qkey: UD_QKEY,
        })
        .expect("INIT")
        .to_rtr(())
        .expect("RTR")
        .to_rts(SqPsn { sq_psn: 0 })
        .expect("RTS")
}

/// Fails the test binary if `what` has not finished after `secs` (an unbounded wait would
/// otherwise hang the test run).
fn watchdog(what: &'static str, secs: u64) -> Arc<AtomicBool> {
    let done = Arc::new(AtomicBool::new(false));
    let d = done.clone();
    std::thread::spawn(move || {
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(secs) {
            if d.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        // Past libtest's capture, which the exit would throw away.
        let line = format!("{what}: still waiting after {secs} s: the wait is not bounded\n");
        let _ = std::io::stderr().lock().write_all(line.as_bytes());
        std::process::exit(101);
    });
    done
}

/// Runs the client's loop of `ud_pingpong` with `args` against a peer that drops every message;
/// what it returned and how long it took.
fn lossy_ud_run(args: &[&str]) -> (Result<(), String>, Duration, Opts) {
    let ctx: Context = common::open();
    let argv = std::iter::once("ud_pingpong")
        .chain(args.iter().copied())
        .map(String::from);
    let mut o = pingpong::parse_args(&UD_PROGRAM, argv).expect("the options parse");
    // --self's choice of GID index 0 on an Ethernet port (rxe0 needs a GRH).
    o.self_test = true;
    let out = Out::PLAIN;
    let pd = Pd::new(&ctx).expect("PD");
    let buf = PageBuf::new(SIZE + GRH_LEN).expect("buffer");
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE).expect("MR");
    let (recv, send) = pingpong::ud_sges(&mr, SIZE);
    let channel = pingpong::channel(&ctx, &o).expect("channel");
    let cq = pingpong::create_cq(&ctx, o.rx_depth + 1, channel.as_ref()).expect("CQ");
    let peer_cq = pingpong::create_cq(&ctx, 4, None).expect("peer CQ");
    let qp = ud_qp(&pd, &cq, &o);
    let peer = ud_qp(&pd, &peer_cq, &o); // never posts a receive: every message to it is dropped
    let posted = pingpong::post_recvs(o.rx_depth, || qp.post_recv(RECV_WRID, &[recv]).is_ok());
    assert_eq!(posted, o.rx_depth);
    pingpong::arm(&cq, &o).expect("arm");
    let local = pingpong::local(&ctx, &o, &out).expect("local address");
    let dest = local.dest(peer.qp_num(), 0);
    let ah = AddressHandle::new(&pd, local.av(&o, &dest, 64)).expect("AH");
    let side = UdSide {
        qp,
        ah,
        remote_qpn: peer.qp_num(),
        recv,
        send,
    };
    let start = Instant::now();
    let r = pingpong::run_loop(&cq, channel.as_ref(), &side, &o, true, posted, &out);
    (r, start.elapsed(), o)
}

fn assert_lost(r: Result<(), String>, took: Duration, limit: Duration) {
    let e = r.expect_err("a ping-pong whose messages are all dropped cannot succeed");
    assert!(
        e.contains("after 0 of 5 receives and 1 of 5 sends")
            && e.contains("lost: 5 of 5 messages not received"),
        "the error reports the loss: {e}"
    );
    assert!(
        took >= limit && took < limit + Duration::from_secs(5),
        "gave up after {took:?}, the limit being {limit:?}"
    );
}

/// Without `--timeout` the wait is bounded by the default: a lost UD message ends the loop
/// after about `DEFAULT_TIMEOUT`, with the loss reported.
#[test]
fn a_lost_ud_message_ends_the_polling_loop_with_a_report() {
    let done = watchdog("the polling loop", 60);
    let (r, took, o) = lossy_ud_run(&["-n", "5", "-s", "64"]);
    done.store(true, Ordering::Release);
    assert_eq!(o.timeout, Some(DEFAULT_TIMEOUT));
    assert_lost(r, took, DEFAULT_TIMEOUT);
}

/// Sleeping on completion events (`-e`), the wait for the event is bounded as well.
#[test]
fn a_lost_ud_message_ends_the_event_loop_with_a_report() {
    let done = watchdog("the event loop", 60);
    let (r, took, _) = lossy_ud_run(&["-n", "5", "-s", "64", "-e", "--timeout=1"]);
    done.store(true, Ordering::Release);
    assert_lost(r, took, Duration::from_secs(1));
}

/// `--timeout=0` is rdma-core's behaviour (wait forever); other values are seconds.
#[test]
fn timeout_option() {
    let parse = |args: &[&str]| {
        let argv = std::iter::once("ud_pingpong")
            .chain(args.iter().copied())
            .map(String::from);
        pingpong::parse_args(&UD_PROGRAM, argv).map(|o| o.timeout)
    };
    assert_eq!(parse(&[]).ok(), Some(Some(DEFAULT_TIMEOUT)));
    assert_eq!(parse(&["--timeout=0"]).ok(), Some(None));
    assert_eq!(
        parse(&["--timeout", "2.5"]).ok(),
        Some(Some(Duration::from_millis(2500)))
    );
    assert!(parse(&["--timeout=-1"]).is_err());
    assert!(parse(&["--timeout=soon"]).is_err());
}
