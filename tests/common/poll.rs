//! Polling with deadlines and the expectations tests share on what comes back.

use std::sync::mpsc;
use std::time::{Duration, Instant};
use typed_verbs::{Cq, ErrorKind, Poller, Result, Standard, WcOpcode, WorkCompletion};

/// The completion opcodes, requests' and receives', that completions injected on the software
/// device cycle through.
pub const WC_OPCODES: [WcOpcode; 10] = [
    WcOpcode::SEND,
    WcOpcode::RDMA_WRITE,
    WcOpcode::RDMA_READ,
    WcOpcode::COMP_SWAP,
    WcOpcode::FETCH_ADD,
    WcOpcode::BIND_MW,
    WcOpcode::LOCAL_INV,
    WcOpcode::TSO,
    WcOpcode::RECV,
    WcOpcode::RECV_RDMA_WITH_IMM,
];

/// Asserts that `r` is an `OutOfRange` error of `verb` for `what`, with the given value and
/// bounds, and that it maps to EINVAL as a C program would see it.
#[track_caller]
pub fn assert_out_of_range<T>(
    r: Result<T>,
    verb: typed_verbs::Verb,
    what: &str,
    value: u64,
    min: u64,
    max: u64,
) {
    let e = match r {
        Ok(_) => panic!("{verb} with {what} = {value} succeeded; expected OutOfRange"),
        Err(e) => e,
    };
    assert_eq!(e.verb, verb, "{e}");
    match e.kind {
        ErrorKind::OutOfRange {
            what: w,
            value: v,
            min: lo,
            max: hi,
        } => {
            assert_eq!((w, v, lo, hi), (what, value, min, max), "{e}");
        }
        ref k => panic!("expected OutOfRange for {what}, got {k:?} ({e})"),
    }
    assert_eq!(e.errno(), libc::EINVAL);
    assert!(!e.is_unsupported());
}

/// Polls `cq` until `n` completions came or `limit` passed, sleeping `pause` between polls (a
/// real device completes asynchronously; under valgrind, which runs one thread at a time, the
/// pause lets the writer of the completions run). Each completion goes through `each`, whose
/// answers are returned in order: the caller asserts how many it needed (this may give fewer,
/// or more when a poll brings several).
pub fn poll_n<C, T>(
    cq: &Cq<'_, C>,
    n: usize,
    limit: Duration,
    pause: Duration,
    mut each: impl FnMut(&WorkCompletion) -> T,
) -> Vec<T> {
    let mut got = Vec::new();
    let start = Instant::now();
    let mut wc: [WorkCompletion; 8] = std::array::from_fn(|_| WorkCompletion::new());
    while got.len() < n && start.elapsed() < limit {
        if !pause.is_zero() {
            std::thread::sleep(pause);
        }
        got.extend(cq.poll(&mut wc).unwrap().iter().map(&mut each));
    }
    got
}

/// Polls `cq` until `n` completions came, each successful (a failed one panics with its
/// status), within `limit` (or panics saying `what`).
#[track_caller]
pub fn expect_successes<C>(cq: &Cq<'_, C>, n: usize, limit: Duration, what: &str) {
    let got = poll_n(cq, n, limit, Duration::ZERO, |w| {
        assert!(w.success().is_some(), "{what}: {:?}", w.status());
    });
    assert!(got.len() >= n, "{what}: {n} completions within {limit:?}");
}

/// Opens a batch on `poller` (retrying up to 2 s while the CQ is empty) and runs `f` in it.
pub fn in_batch<R>(poller: &mut Poller<'_, Standard>, f: impl FnOnce() -> R) -> R {
    let start = Instant::now();
    let mut f = Some(f);
    loop {
        if let Some(r) = poller
            .poll_batch(|_b| (f.take().expect("runs once"))())
            .unwrap()
        {
            return r;
        }
        assert!(
            start.elapsed() < Duration::from_secs(2),
            "a completion arrives"
        );
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// Runs `f` on a thread of its own and waits for it at most `limit`: a hang fails the test
/// instead of stalling the run.
pub fn within<T: Send + 'static>(limit: Duration, f: impl FnOnce() -> T + Send + 'static) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)));
    });
    match rx.recv_timeout(limit) {
        Ok(Ok(v)) => v,
        Ok(Err(panic)) => std::panic::resume_unwind(panic),
        Err(_) => panic!("did not finish within {limit:?} (a hang)"),
    }
}

/// Asserts that `e` is the device's errno `errno` (`ErrorKind::Os`) from `verb`.
#[track_caller]
pub fn assert_os_error(e: &typed_verbs::Error, verb: typed_verbs::Verb, errno: i32) {
    assert_eq!((e.verb, &e.kind), (verb, &ErrorKind::Os(errno)), "{e}");
}

/// Asserts that `e` is `verb` refusing an object of another context (`ErrorKind::WrongContext`
/// naming `what`), which a C program sees as EINVAL.
#[track_caller]
pub fn assert_wrong_context(e: &typed_verbs::Error, verb: typed_verbs::Verb, what: &'static str) {
    assert_eq!(e.verb, verb, "{e}");
    assert_eq!(e.kind, ErrorKind::WrongContext(what), "{e}");
    assert_eq!(e.errno(), libc::EINVAL, "{e}");
}
