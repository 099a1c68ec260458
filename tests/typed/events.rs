//! Completion events through a completion channel, async events through the context's async fd,
//! and the SRQ limit, on the test device (sw0 by default, rxe0 in the real-kernel lane).
//!
//! Events come asynchronously on a real device, so every wait has a deadline: a blocking get
//! runs in a thread that the test joins with a time limit, and a get that must find nothing
//! first waits a while on the fd with poll(2).
// Runs on the software device or uses its hooks: nothing to build without it.
#![cfg(feature = "software-device")]

use crate::common;

use common::{destroyed, open, within};
use std::os::fd::{AsRawFd, RawFd};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use typed_verbs::event::{CqEvent, EventAcks};
use typed_verbs::qp::RecvSide;
use typed_verbs::qp_state::Rts;
use typed_verbs::slots::PlainSendQueue;
use typed_verbs::{
    raw, software, Access, AccessFlags, AsyncEvent, CompChannel, Context, Cq, Mr, PageBuf, Pd, Qp,
    Rc, RemoteAddr, SendWr, Shared, Srq, Verb, WcStatus, WorkCompletion,
};
use typed_verbs::{OwnRq, UsesSrq};

const LIMIT: Duration = Duration::from_secs(20);

/// poll(2) on `fd` for POLLIN, at most `ms` milliseconds: whether it became readable.
fn readable(fd: RawFd, ms: i32) -> bool {
    let mut p = libc::pollfd {
        fd,
        events: libc::POLLIN,
        revents: 0,
    };
    // SAFETY: one valid pollfd.
    let n = unsafe { libc::poll(&mut p, 1, ms) };
    assert!(n >= 0, "poll: {}", std::io::Error::last_os_error());
    n == 1 && p.revents & libc::POLLIN != 0
}

/// Polls `cq` until `n` completions arrived (2 s at most); gives their statuses and wr_ids.
fn completions<C>(cq: &Cq<'_, C>, n: usize) -> Vec<(u64, WcStatus)> {
    let got = common::poll_n(cq, n, Duration::from_secs(2), Duration::ZERO, |w| {
        (w.wr_id(), w.status())
    });
    assert_eq!(got.len(), n, "completions within 2 s: {got:?}");
    got
}

type Up<'a, R> = Qp<'a, Rc, R, Shared, (), Rts>;

/// RESET → RTS towards QP `dest` on the same port (loopback).
fn connect<'a, R: RecvSide>(
    ctx: &Context,
    qp: Qp<'a, Rc, R>,
    dest: u32,
    rnr_retry: u8,
) -> Up<'a, R> {
    let link = common::RcLink {
        access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ,
        rd_atomic: 1,
        min_rnr_timer: 1,
        rnr_retry,
    };
    common::rc_up(ctx, qp, dest, link)
}

/// A connected RC pair: `a` sends on `a_cq` (send and receive), `b` receives into `b_cq`.
fn rc_pair<'a>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    a_cq: &'a Cq<'_, impl Sized>,
    b_cq: &'a Cq<'_, impl Sized>,
) -> (Up<'a, typed_verbs::OwnRq>, Up<'a, typed_verbs::OwnRq>) {
    rc_pair_on(ctx, pd, (a_cq, a_cq), (b_cq, b_cq), 32)
}

/// A connected RC pair, each QP with `wr` send and receive WRs: `a` on the send and receive
/// CQs of `a_cqs`, `b` on those of `b_cqs`.
#[allow(clippy::type_complexity)]
fn rc_pair_on<'a, C1, C2, C3, C4>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    (a_send, a_recv): (&'a Cq<'_, C1>, &'a Cq<'_, C2>),
    (b_send, b_recv): (&'a Cq<'_, C3>, &'a Cq<'_, C4>),
    wr: u32,
) -> (Up<'a, typed_verbs::OwnRq>, Up<'a, typed_verbs::OwnRq>) {
    let a = Qp::<Rc>::builder(pd, a_send, a_recv)
        .max_send_wr(wr)
        .max_recv_wr(wr)
        .build()
        .unwrap();
    let b = Qp::<Rc>::builder(pd, b_send, b_recv)
        .max_send_wr(wr)
        .max_recv_wr(wr)
        .build()
        .unwrap();
    let (an, bn) = (a.qp_num(), b.qp_num());
    (connect(ctx, a, bn, 7), connect(ctx, b, an, 7))
}

/// A receive buffer and a 16-byte message, registered in `pd`.
struct Bufs<'p> {
    src: Mr<'p>,
    dst: Mr<'p>,
}

fn bufs<'p>(pd: &'p Pd<'_>, src: usize, dst: usize) -> Bufs<'p> {
    let buf = |len| PageBuf::new(len).unwrap();
    Bufs {
        src: Mr::new(pd, buf(src), Access::LOCAL_WRITE).unwrap(),
        dst: Mr::new(pd, buf(dst), Access::LOCAL_WRITE).unwrap(),
    }
}

impl Bufs<'_> {
    /// Posts a receive of 16 bytes of `dst` on `qp`.
    fn recv(&self, qp: &Up<'_, OwnRq>, wr_id: u64) {
        qp.post_recv(wr_id, &[self.dst.sge(0..16).unwrap()])
            .unwrap();
    }

    /// Sends the 16 bytes of `src` from `qp`, unsignaled.
    fn send<R: PlainSendQueue>(&self, qp: &Up<'_, R>, wr_id: u64) {
        qp.post_send(&SendWr::send(wr_id, &[self.src.sge(0..16).unwrap()]))
            .unwrap();
    }

    /// A receive (`recv_id`) on `b`, then the message (`send_id`, unsignaled) from `a`.
    fn message(&self, a: &Up<'_, OwnRq>, b: &Up<'_, OwnRq>, recv_id: u64, send_id: u64) {
        self.recv(b, recv_id);
        self.send(a, send_id);
    }

    /// A receive (`recv_id`) on `b`, then the message (`send_id`, signaled) from `a`.
    fn signaled_message(&self, a: &Up<'_, OwnRq>, b: &Up<'_, OwnRq>, recv_id: u64, send_id: u64) {
        self.recv(b, recv_id);
        a.post_send(&SendWr::send(send_id, &[self.src.sge(0..16).unwrap()]).signaled())
            .unwrap();
    }
}

/// Runs `f` within [`LIMIT`] with what most tests here start from: the device's context, a
/// completion channel and a PD, made in that order.
fn with_channel(f: impl for<'c> FnOnce(&'c Context, CompChannel<'c>, Pd<'c>) + Send + 'static) {
    within(LIMIT, || {
        let ctx = open();
        let ch = CompChannel::new(&ctx).unwrap();
        let pd = Pd::new(&ctx).unwrap();
        f(&ctx, ch, pd)
    })
}

/// A CQ of `cqe` entries whose events go to `ch`, with `user` as its user context.
fn channel_cq<'c, C: Send + Sync>(
    ctx: &'c Context,
    ch: &'c CompChannel<'c>,
    cqe: u32,
    user: C,
) -> Cq<'c, C> {
    Cq::builder(ctx)
        .cqe(cqe)
        .channel(ch)
        .context(user)
        .build()
        .unwrap()
}

/// Arms `cq` for its next completion, runs `post` (which makes one), and takes the event that
/// comes on `ch`, which must be `cq`'s.
fn armed_event<'ch>(
    ch: &'ch CompChannel<'_>,
    cq: &Cq<'_, impl Sized>,
    post: impl FnOnce(),
) -> CqEvent<'ch> {
    cq.req_notify(false).unwrap();
    post();
    let ev = ch.get_cq_event().unwrap();
    assert!(ev.is_for(cq));
    ev
}

/// A connected RC pair on `cq` ([`rc_pair`]), then the buffers of one 16-byte message.
fn pair_and_message<'a, 'p: 'a>(
    ctx: &Context,
    pd: &'p Pd<'_>,
    cq: &'a Cq<'_, impl Sized>,
) -> (Up<'a, OwnRq>, Up<'a, OwnRq>, Bufs<'p>) {
    let (a, b) = rc_pair(ctx, pd, cq, cq);
    (a, b, bufs(pd, 16, 16))
}

/// [`with_channel`], then a CQ of 16 entries on the channel and `small`, a CQ of one entry
/// without, a connected RC pair (8 WRs each) where `a` sends into `small`, and the buffers of
/// one 16-byte message: a second signaled send overruns `small` (CQ_ERR).
fn with_small_send_cq(
    f: impl for<'c> FnOnce(&'c Context, &CompChannel<'c>, [&Cq<'c, ()>; 2], Pair<'_>, &Bufs<'_>)
        + Send
        + 'static,
) {
    with_channel_cq(16, |ctx, ch, pd, cq| {
        let small = Cq::builder(ctx).cqe(1).build().unwrap();
        let (a, b) = rc_pair_on(ctx, &pd, (&small, &cq), (&cq, &cq), 8);
        let m = bufs(&pd, 16, 16);
        f(ctx, ch, [&cq, &small], (&a, &b), &m)
    })
}

/// A connected RC pair: the sender and the receiver.
type Pair<'q> = (&'q Up<'q, OwnRq>, &'q Up<'q, OwnRq>);

/// [`with_channel`], then a CQ of `cqe` entries on the channel.
fn with_channel_cq(
    cqe: u32,
    f: impl for<'c, 'h> FnOnce(&'c Context, &'h CompChannel<'c>, Pd<'c>, Cq<'h, ()>) + Send + 'static,
) {
    with_channel(move |ctx, ch, pd| {
        let cq = channel_cq(ctx, &ch, cqe, ());
        f(ctx, &ch, pd, cq)
    })
}

/// Runs `f` within [`LIMIT`] with the device's context and a PD.
fn with_pd(f: impl for<'c> FnOnce(&'c Context, Pd<'c>) + Send + 'static) {
    within(LIMIT, || {
        let ctx = open();
        let pd = Pd::new(&ctx).unwrap();
        f(&ctx, pd)
    })
}

/// A connected RC pair on `cq`: `a` with `send_wr` send WRs (and `recv_wr` receive WRs when
/// given), `b` receiving from `srq` (with `b_send_wr` send WRs when given).
fn srq_pair<'a>(
    ctx: &Context,
    pd: &'a Pd<'_>,
    cq: &'a Cq<'_, ()>,
    srq: &'a Srq<'_, impl Sized>,
    (send_wr, recv_wr): (u32, Option<u32>),
    b_send_wr: Option<u32>,
) -> (Up<'a, OwnRq>, Up<'a, UsesSrq>) {
    let mut a = Qp::<Rc>::builder(pd, cq, cq).max_send_wr(send_wr);
    if let Some(n) = recv_wr {
        a = a.max_recv_wr(n);
    }
    let a = a.build().unwrap();
    let mut b = Qp::<Rc>::builder_with_srq(pd, cq, cq, srq);
    if let Some(n) = b_send_wr {
        b = b.max_send_wr(n);
    }
    let b = b.build().unwrap();
    let (an, bn) = (a.qp_num(), b.qp_num());
    (connect(ctx, a, bn, 7), connect(ctx, b, an, 7))
}

/// A connected pair on `cq`, one message through it after `cq` is armed, and its receive's
/// completion polled: one event waits on `cq`'s channel once the pair is gone.
fn one_event_then_drop_the_pair(ctx: &Context, pd: &Pd<'_>, cq: &Cq<'_, ()>) {
    let (a, b) = rc_pair(ctx, pd, cq, cq);
    let m = bufs(pd, 16, 16);
    cq.req_notify(false).unwrap();
    m.message(&a, &b, 2, 1);
    completions(cq, 1);
}

#[test]
fn a_completion_on_an_armed_cq_puts_one_event_on_the_channel() {
    with_channel(|ctx, ch, pd| {
        let cq = channel_cq(ctx, &ch, 16, "the armed CQ");
        let other = Cq::builder(ctx).cqe(16).context("another").build().unwrap();
        let (a, b, m) = pair_and_message(ctx, &pd, &cq);
        m.recv(&b, 2);
        cq.req_notify(false).unwrap();
        a.post_send(&SendWr::send(1, &[m.src.sge(0..16).unwrap()]).signaled())
            .unwrap();

        let ev = ch.get_cq_event().expect("ibv_get_cq_event");
        assert!(ev.is_for(&cq));
        assert!(!ev.is_for(&other));
        assert_eq!(ev.user_context(&cq), Some(&"the armed CQ"));
        assert_eq!(ev.user_context(&other), None);
        assert_eq!(ev.as_raw_cq(), cq.as_raw());
        drop(ev); // ibv_ack_cq_events(cq, 1)
        let mut got = completions(&cq, 2);
        got.sort_by_key(|g| g.0);
        assert_eq!(got, [(1, WcStatus::SUCCESS), (2, WcStatus::SUCCESS)]);

        // One event per arming: the second completion came to a disarmed CQ.
        assert!(
            !readable(ch.as_raw_fd(), 200),
            "a second event without re-arming"
        );
        assert!(ch.try_get_cq_event().unwrap().is_none());

        // Armed again, the next completion gives the next event.
        m.recv(&b, 4);
        let _ev = armed_event(&ch, &cq, || m.send(&a, 3));
        assert_eq!(completions(&cq, 1), [(4, WcStatus::SUCCESS)]);
    });
}

#[test]
fn the_channel_fd_polls_readable_when_an_event_waits() {
    with_channel_cq(16, |ctx, ch, pd, cq| {
        let (a, b, m) = pair_and_message(ctx, &pd, &cq);

        // poll(2): nothing yet, then readable within the timeout once a completion came.
        cq.req_notify(false).unwrap();
        assert!(!readable(ch.as_raw_fd(), 0));
        m.message(&a, &b, 2, 1);
        assert!(readable(ch.as_raw_fd(), 5000), "no event within 5 s");
        let ev = ch.try_get_cq_event().unwrap().expect("the fd was readable");
        assert!(ev.is_for(&cq));
        assert!(!readable(ch.as_raw_fd(), 0), "read, so no longer readable");
        completions(&cq, 1);

        // epoll(7), level-triggered, on the same fd.
        // SAFETY: plain syscalls on fds this test owns; the results are checked.
        unsafe {
            let ep = libc::epoll_create1(libc::EPOLL_CLOEXEC);
            assert!(ep >= 0);
            let mut e = libc::epoll_event {
                events: libc::EPOLLIN as u32,
                u64: 7,
            };
            assert_eq!(
                libc::epoll_ctl(ep, libc::EPOLL_CTL_ADD, ch.as_raw_fd(), &mut e),
                0
            );
            let mut out = [libc::epoll_event { events: 0, u64: 0 }; 4];
            assert_eq!(libc::epoll_wait(ep, out.as_mut_ptr(), 4, 0), 0);
            cq.req_notify(false).unwrap();
            m.message(&a, &b, 4, 3);
            assert_eq!(libc::epoll_wait(ep, out.as_mut_ptr(), 4, 5000), 1);
            let (events, token) = (out[0].events, out[0].u64);
            assert_eq!(token, 7);
            assert_ne!(events & libc::EPOLLIN as u32, 0);
            libc::close(ep);
        }
        assert!(ch.try_get_cq_event().unwrap().unwrap().is_for(&cq));
        completions(&cq, 1);
    });
}

#[test]
fn readiness_is_awaited_without_handing_out_the_fds() {
    // The channel and the context give readiness (wait_readable, wait_async_readable) and the
    // fds' numbers, never a BorrowedFd that safe code could dup and read from.
    with_small_send_cq(|ctx, ch, [cq, small], (a, b), m| {
        let short = Some(Duration::from_millis(100));
        let long = Some(Duration::from_secs(5));

        // Nothing waits: both time out, having read nothing.
        cq.req_notify(false).unwrap();
        assert!(!ch.wait_readable(short).unwrap());
        assert!(!ctx.wait_async_readable(short).unwrap());
        assert!(!ch.wait_readable(Some(Duration::ZERO)).unwrap());

        // A completion on the armed CQ: the channel becomes readable, and stays so until the
        // event is taken (waiting consumed nothing).
        m.signaled_message(a, b, 1, 2);
        assert!(ch.wait_readable(long).unwrap(), "no event within 5 s");
        assert!(ch.wait_readable(None).unwrap());
        assert!(
            readable(ch.as_raw_fd(), 0),
            "the number polls as the channel"
        );
        let ev = ch.try_get_cq_event().unwrap().expect("the fd was readable");
        assert!(ev.is_for(cq));
        drop(ev);
        assert!(
            !ch.wait_readable(short).unwrap(),
            "taken, so no longer readable"
        );
        completions(cq, 1);

        // `small` still holds the first send's completion: `small.cqe()` more signaled sends
        // overrun it, a completion is lost, and the async fd becomes readable (CQ_ERR).
        for i in 0..small.cqe() as u64 {
            m.signaled_message(a, b, 10 + i, 20 + i);
        }
        completions(cq, small.cqe() as usize);
        assert!(
            ctx.wait_async_readable(long).unwrap(),
            "no async event within 5 s"
        );
        assert!(readable(ctx.async_fd().unwrap(), 0));
        let ev = ctx
            .try_get_async_event()
            .unwrap()
            .expect("the fd was readable");
        assert!(
            matches!(*ev, AsyncEvent::CqErr(c) if c.is(small)),
            "{:?}",
            *ev
        );
        drop(ev);
        assert!(!ctx.wait_async_readable(short).unwrap());
    });
}

#[test]
fn an_event_type_the_headers_lack_is_read_as_its_integer() {
    // `enum ibv_event_type` is read as an integer: a value a newer kernel may report (here 42
    // and u32::MAX, which the build's headers lack) comes back as AsyncEvent::Other(n), and a
    // known port event as its variant. The software device raises them as port events.
    let test = "an_event_type_the_headers_lack_is_read_as_its_integer";
    common::on_software(test, "an async event of any type on demand", |ctx| {
        let port_active = 9; // IBV_EVENT_PORT_ACTIVE
        for (ty, want) in [
            (42, AsyncEvent::Other(42)),
            (u32::MAX, AsyncEvent::Other(u32::MAX)),
            (port_active, AsyncEvent::PortActive(1)),
        ] {
            software::raise_port_event(ctx, ty, 1).unwrap();
            assert!(ctx
                .wait_async_readable(Some(Duration::from_secs(5)))
                .unwrap());
            let ev = ctx.try_get_async_event().unwrap().expect("raised");
            assert_eq!(*ev, want);
            assert_eq!(ev.event_type(), ty);
            drop(ev); // acked: the port's event names no object
        }
        assert!(ctx.try_get_async_event().unwrap().is_none());
        // A type that names an object (here IBV_EVENT_CQ_ERR and IBV_EVENT_WQ_FATAL) needs a live
        // one: refused, as is port 0.
        for (ty, port) in [(0, 1), (19, 1), (42, 0)] {
            let e = software::raise_port_event(ctx, ty, port).unwrap_err();
            assert_eq!((e.verb, e.errno()), (Verb::RaiseAsyncEvent, libc::EINVAL));
        }
        assert!(ctx.try_get_async_event().unwrap().is_none());
    });
}

#[test]
fn blocking_gets_wait_for_the_event_to_come() {
    // get_cq_event and get_async_event called before anything happened: they wait (in poll on
    // the O_NONBLOCK fd) until another thread makes the event.
    with_small_send_cq(|ctx, ch, [cq, small], (a, b), m| {
        cq.req_notify(false).unwrap();
        std::thread::scope(|scope| {
            let comp = scope.spawn(|| ch.get_cq_event().map(|ev| ev.is_for(cq)));
            let event = scope.spawn(|| ctx.get_async_event().map(|ev| *ev));
            std::thread::sleep(Duration::from_millis(200));
            assert!(
                !comp.is_finished() && !event.is_finished(),
                "returned without an event"
            );
            // Two signaled sends into a one-entry send CQ: a receive completion for `cq`'s
            // event, and a lost send completion for CQ_ERR.
            for i in 0..2 {
                m.signaled_message(a, b, 10 + i, i);
            }
            assert_eq!(comp.join().unwrap(), Ok(true));
            match event.join().unwrap() {
                Ok(AsyncEvent::CqErr(c)) => assert!(c.is(small)),
                other => panic!("expected CQ_ERR, got {other:?}"),
            }
        });
        completions(cq, 2);
        completions(small, 1);
    });
}

#[test]
fn injected_completions_arm_and_overrun_as_the_data_path_does() {
    // The software device's injection hook goes through the same CQ producer as its QPs: it
    // fires an armed CQ's event (solicited only for a `.solicited()` completion) and raises
    // CQ_ERR when the CQ is full.
    common::on_software(
        "injected_completions_arm_and_overrun_as_the_data_path_does",
        "software::inject",
        |ctx| {
            use typed_verbs::{software, InjectedCompletion, WcOpcode};
            let ch = CompChannel::new(ctx).unwrap();
            let cq = channel_cq(ctx, &ch, 2, 9u8);
            cq.req_notify(true).unwrap();
            software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV)).unwrap();
            assert!(ch.try_get_cq_event().unwrap().is_none());
            software::inject(
                &cq,
                InjectedCompletion::success(2, WcOpcode::RECV).solicited(),
            )
            .unwrap();
            let ev = ch
                .try_get_cq_event()
                .unwrap()
                .expect("a solicited completion fires");
            assert_eq!(ev.user_context(&cq), Some(&9));
            drop(ev);
            let n = cq.cqe() as u64;
            for i in 2..n {
                software::inject(&cq, InjectedCompletion::success(i, WcOpcode::RECV)).unwrap();
            }
            let e =
                software::inject(&cq, InjectedCompletion::success(n, WcOpcode::RECV)).unwrap_err();
            assert_eq!(e.kind, typed_verbs::ErrorKind::CqOverrun);
            let ev = ctx.try_get_async_event().unwrap().expect("CQ_ERR");
            assert!(matches!(*ev, AsyncEvent::CqErr(c) if c.is(&cq)));
            assert!(ctx.try_get_async_event().unwrap().is_none());
            // The CQ_ERR held while the CQ is destroyed: acked by the destroy, which returns.
            destroyed(cq.destroy());
            drop(ev);
            destroyed(ch.destroy());
        },
    );
}

#[test]
fn try_get_on_an_empty_channel_is_none() {
    let ctx = open();
    let ch = CompChannel::new(&ctx).unwrap();
    assert!(ch.try_get_cq_event().unwrap().is_none());
    // Armed, but no completion: still none, and the fd is not readable.
    let cq = channel_cq(&ctx, &ch, 4, ());
    cq.req_notify(false).unwrap();
    cq.req_notify(true).unwrap();
    assert!(!readable(ch.as_raw_fd(), 100));
    assert!(ch.try_get_cq_event().unwrap().is_none());
    // The fd is O_NONBLOCK, as rdma-core's users set it.
    // SAFETY: F_GETFL on the channel's open fd.
    let flags = unsafe { libc::fcntl(ch.as_raw_fd(), libc::F_GETFL) };
    assert_ne!(flags & libc::O_NONBLOCK, 0);
}

#[test]
fn solicited_only_arming_ignores_an_unsolicited_receive_and_fires_on_a_solicited_one() {
    with_channel(|ctx, ch, pd| {
        let send_cq = Cq::builder(ctx).cqe(16).build().unwrap();
        let recv_cq = channel_cq(ctx, &ch, 16, ());
        let (a, b) = rc_pair(ctx, &pd, &send_cq, &recv_cq);
        let m = bufs(&pd, 16, 64);
        for i in 0..3 {
            b.post_recv(10 + i, &[m.dst.sge(0..64).unwrap()]).unwrap();
        }
        recv_cq.req_notify(true).unwrap();

        // Unsolicited: the receive completes, and no event comes.
        m.send(&a, 1);
        assert_eq!(completions(&recv_cq, 1), [(10, WcStatus::SUCCESS)]);
        assert!(
            !readable(ch.as_raw_fd(), 300),
            "an event for an unsolicited receive"
        );
        assert!(ch.try_get_cq_event().unwrap().is_none());

        // Solicited (IBV_SEND_SOLICITED, the SE bit): the event comes.
        a.post_send(&SendWr::send(2, &[m.src.sge(0..16).unwrap()]).solicited())
            .unwrap();
        let ev = ch.get_cq_event().unwrap();
        assert!(ev.is_for(&recv_cq));
        assert_eq!(completions(&recv_cq, 1), [(11, WcStatus::SUCCESS)]);

        // Armed for the next completion, then for a solicited one: rxe keeps the stronger
        // arming, so an unsolicited receive fires.
        recv_cq.req_notify(false).unwrap();
        recv_cq.req_notify(true).unwrap();
        m.send(&a, 3);
        assert!(ch.get_cq_event().unwrap().is_for(&recv_cq));
        assert_eq!(completions(&recv_cq, 1), [(12, WcStatus::SUCCESS)]);
    });
}

#[test]
fn solicited_only_arming_and_a_failed_send_completion() {
    // The IB spec lets a failed completion wake a CQ armed for solicited completions;
    // rxe posts every requester completion, failed ones included, as unsolicited. The software
    // device does as rxe, and this test records what the device does.
    with_channel(|ctx, ch, pd| {
        let send_cq = channel_cq(ctx, &ch, 16, ());
        let recv_cq = Cq::builder(ctx).cqe(16).build().unwrap();
        let (a, _b) = rc_pair(ctx, &pd, &send_cq, &recv_cq);
        let s = vec![0u8; 16];
        let src = Mr::new(&pd, s, Access::LOCAL_WRITE).unwrap();
        send_cq.req_notify(true).unwrap();
        // An RDMA write with an rkey the peer does not have: REM_ACCESS_ERR.
        // The peer's word that a region of its own is open to writes, when it is not: the type
        // cannot check a peer's region, the peer's device does.
        let far = vec![0u8; 16];
        let far_mr = Mr::new(&pd, far, Access::LOCAL_WRITE).unwrap();
        let r = far_mr.remote();
        let bogus = RemoteAddr::from_peer(r.addr(), r.rkey(), Access::REMOTE_WRITE);
        a.post_send(&SendWr::rdma_write(1, &[src.sge(0..16).unwrap()], bogus).signaled())
            .unwrap();
        assert_eq!(completions(&send_cq, 1), [(1, WcStatus::REM_ACCESS_ERR)]);
        assert!(
            !readable(ch.as_raw_fd(), 300),
            "a failed send completion woke a CQ armed for solicited completions"
        );
        // Armed for any completion, the flush of the next request (the QP is in ERR) fires.
        armed_event(&ch, &send_cq, || {
            a.post_send(&SendWr::send(2, &[src.sge(0..16).unwrap()]).signaled())
                .unwrap()
        });
        assert_eq!(completions(&send_cq, 1), [(2, WcStatus::WR_FLUSH_ERR)]);
    });
}

#[test]
fn event_acks_ack_many_events_at_once() {
    // The CQ is built here, not by `with_channel_cq`: its user context is leaked on purpose
    // (below), and scripts/valgrind/memcheck.supp matches that leak on this test's frame.
    with_channel(|ctx, ch, pd| {
        let cq = channel_cq(ctx, &ch, 64, ());
        let ch = &ch;
        let (a, b, m) = pair_and_message(ctx, &pd, &cq);

        let mut acks = EventAcks::new();
        assert!(acks.is_empty());
        for i in 0..5 {
            let ev = armed_event(ch, &cq, || m.signaled_message(&a, &b, 100 + i, i));
            ev.ack_later(&mut acks);
            completions(&cq, 2);
        }
        assert_eq!(acks.len(), 5);
        acks.ack(); // ibv_ack_cq_events(cq, 5)
        assert!(acks.is_empty());
        drop((a, b));
        // The proof that the five were acked: the verb itself, which waits for every event
        // got to be acked, returns. (The typed destroy would ack what is held first; the raw
        // verb does not, so the CQ is left to it, and its user context is leaked.)
        let raw_cq = cq.as_raw();
        std::mem::forget(cq);
        // SAFETY: a live CQ that no QP uses; the typed handle is forgotten, so it is destroyed
        // once.
        unsafe { raw::ibv_destroy_cq(raw_cq) }.expect("ibv_destroy_cq");
    });
}

#[test]
fn raw_destroy_cq_waits_until_its_events_are_acked() {
    // The verbs' own rule, on both backends: ibv_destroy_cq returns only once every event got
    // was acked with ibv_ack_cq_events. The event is got and acked with the raw verbs, and the
    // CQ destroyed with the raw verb (its typed handle forgotten, its user context leaked).
    let ctx = open();
    let ch = CompChannel::new(&ctx).unwrap();
    let pd = Pd::new(&ctx).unwrap();
    let cq = channel_cq(&ctx, &ch, 16, ());
    one_event_then_drop_the_pair(&ctx, &pd, &cq);
    assert!(readable(ch.as_raw_fd(), 5000), "no event within 5 s");
    // SAFETY: a live channel.
    let (got, _) = unsafe { raw::ibv_get_cq_event(ch.as_raw()) }.expect("ibv_get_cq_event");
    assert_eq!(got.as_ptr(), cq.as_raw());
    let raw_cq = cq.as_raw() as usize;
    std::mem::forget(cq);

    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        // SAFETY: a live CQ no QP uses, destroyed once (here); its typed handle is forgotten.
        let r = unsafe { raw::ibv_destroy_cq(raw_cq as *mut _) };
        let _ = tx.send(r);
    });
    assert!(
        rx.recv_timeout(Duration::from_millis(300)).is_err(),
        "ibv_destroy_cq returned with an event not acked"
    );
    // SAFETY: the event got above, acked once; the CQ is live (its destroy waits for this).
    unsafe { raw::ibv_ack_cq_events(raw_cq as *mut _, 1) };
    let r = rx
        .recv_timeout(Duration::from_secs(5))
        .expect("ibv_destroy_cq still waits after the ack");
    assert_eq!(r, Ok(()));
}

#[test]
fn destroying_a_cq_acks_the_events_still_held() {
    with_channel(|ctx, ch, pd| {
        let cq = channel_cq(ctx, &ch, 64, ());
        let other = channel_cq(ctx, &ch, 64, ());
        let (a, b, m) = pair_and_message(ctx, &pd, &cq);
        let mut held = Vec::new();
        let mut acks = EventAcks::new();
        for i in 0..3 {
            cq.req_notify(false).unwrap();
            m.signaled_message(&a, &b, 100 + i, i);
            let ev = ch.get_cq_event().unwrap();
            if i == 0 {
                ev.ack_later(&mut acks);
            } else {
                held.push(ev);
            }
            completions(&cq, 2);
        }
        drop((a, b));
        // Three events of `cq` unacked, held on this very thread: the destroy acks them
        // first, so it returns.
        destroyed(cq.destroy());
        // They ack nothing now (the CQ is gone).
        drop(held);
        acks.ack();
        // The other CQ of the channel is untouched, and so is the channel.
        assert!(ch.try_get_cq_event().unwrap().is_none());
        destroyed(other.destroy());
        destroyed(ch.destroy());
    });
}

#[test]
fn an_event_of_a_cq_destroyed_on_another_thread_is_acked_once() {
    // An event held on one thread while the CQ is destroyed on another: the destroy acks it,
    // and its drop afterwards does nothing.
    with_channel_cq(64, |ctx, ch, pd, cq| {
        one_event_then_drop_the_pair(ctx, &pd, &cq);
        let ev = ch.get_cq_event().unwrap();
        std::thread::scope(|s| {
            s.spawn(move || destroyed(cq.destroy())).join().unwrap();
        });
        assert!(ev.as_raw_cq() as usize != 0);
        drop(ev);
    });
}

#[test]
fn cq_overrun_raises_cq_err() {
    with_pd(|ctx, pd| {
        let small = Cq::builder(ctx).cqe(1).build().unwrap();
        let big = Cq::builder(ctx).cqe(64).build().unwrap();
        let n = small.cqe() as u64;
        // `a` sends (and completes) into `small`; `b` receives into `big`.
        let (a, b) = rc_pair_on(ctx, &pd, (&small, &big), (&big, &big), 32);
        let m = bufs(&pd, 16, 16);
        assert!(ctx.try_get_async_event().unwrap().is_none());
        for i in 0..=n {
            m.signaled_message(&a, &b, 100 + i, i);
        }
        // Every receive lands; one send completion more than `small` holds.
        completions(&big, n as usize + 1);
        assert!(
            readable(ctx.async_fd().unwrap(), 5000),
            "no async event within 5 s"
        );
        let ev = ctx
            .try_get_async_event()
            .unwrap()
            .expect("the fd was readable");
        match *ev {
            AsyncEvent::CqErr(c) => assert!(c.is(&small) && !c.is(&big)),
            other => panic!("expected CQ_ERR for the small CQ, got {other:?}"),
        }
        assert_eq!(ev.event_type(), 0); // IBV_EVENT_CQ_ERR
        drop(ev); // ibv_ack_async_event
        assert!(
            !readable(ctx.async_fd().unwrap(), 100),
            "one CQ_ERR for one lost completion"
        );
        let got = completions(&small, n as usize);
        assert!(got.iter().all(|g| g.1 == WcStatus::SUCCESS), "{got:?}");
    });
}

/// The QP's state as the device has it (`ibv_query_qp`).
fn qp_state<R: RecvSide>(qp: &Up<'_, R>) -> u32 {
    // SAFETY: plain C data, written by the call; a live QP.
    unsafe {
        let mut a: typed_verbs::ffi::sys::ibv_qp_attr = std::mem::zeroed();
        let mut i: typed_verbs::ffi::sys::ibv_qp_init_attr = std::mem::zeroed();
        raw::ibv_query_qp(qp.as_raw(), &mut a, 1, &mut i).expect("ibv_query_qp");
        a.qp_state
    }
}

/// The async events that come within `ms` milliseconds.
fn async_events(ctx: &Context, ms: u64) -> Vec<AsyncEvent> {
    let mut seen = Vec::new();
    let start = Instant::now();
    while start.elapsed() < Duration::from_millis(ms) {
        if readable(ctx.async_fd().unwrap(), 50) {
            if let Some(ev) = ctx.try_get_async_event().unwrap() {
                seen.push(*ev);
            }
        }
    }
    seen
}

#[test]
fn a_receive_cq_overrun_raises_cq_err_and_moves_the_responder_to_err() {
    // Class G, as rxe0 shows it: the lost receive completion raises CQ_ERR, the responder
    // moves to ERR and flushes its other receives into the full CQ (one CQ_ERR each), and the
    // request, never acknowledged, does not complete.
    with_pd(|ctx, pd| {
        let small = Cq::builder(ctx).cqe(1).build().unwrap();
        let big = Cq::builder(ctx).cqe(64).build().unwrap();
        assert_eq!(small.cqe(), 1, "the test counts on a CQ of one entry");
        let (a, b) = rc_pair_on(ctx, &pd, (&big, &big), (&big, &small), 8);
        let m = bufs(&pd, 16, 16);
        for i in 0..4 {
            m.recv(&b, 100 + i);
        }
        for i in 0..2 {
            a.post_send(&SendWr::send(i, &[m.src.sge(0..16).unwrap()]).signaled())
                .unwrap();
        }
        assert_eq!(completions(&big, 1), [(0, WcStatus::SUCCESS)]);
        let seen = async_events(ctx, 700);
        assert_eq!(seen.len(), 3, "one CQ_ERR per lost completion: {seen:?}");
        assert!(
            seen.iter()
                .all(|e| matches!(e, AsyncEvent::CqErr(c) if c.is(&small))),
            "{seen:?}"
        );
        use typed_verbs::ffi::sys::ibv_qp_state::{IBV_QPS_ERR, IBV_QPS_RTS};
        assert_eq!((qp_state(&b), qp_state(&a)), (IBV_QPS_ERR, IBV_QPS_RTS));
        // Only the first receive's completion is in the small CQ; the flushes were lost.
        assert_eq!(completions(&small, 1), [(100, WcStatus::SUCCESS)]);
        let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
        std::thread::sleep(Duration::from_millis(300));
        assert_eq!(small.poll(&mut wc).unwrap().len(), 0);
        assert_eq!(
            big.poll(&mut wc).unwrap().len(),
            0,
            "the unacknowledged send completed"
        );
    });
}

#[test]
fn srq_limit_reached_when_a_receive_leaves_fewer_than_the_limit() {
    with_pd(|ctx, pd| {
        let cq = Cq::builder(ctx).cqe(64).build().unwrap();
        let srq = Srq::builder(&pd)
            .max_wr(16)
            .context("pool")
            .build()
            .unwrap();
        assert_eq!(srq.query().unwrap().srq_limit, 0);
        let (a, _b) = srq_pair(ctx, &pd, &cq, &srq, (32, Some(4)), Some(4));
        let m = bufs(&pd, 16, 16 * 8);
        for i in 0..8 {
            let off = i as usize * 16;
            srq.post_recv(100 + i, &[m.dst.sge(off..off + 16).unwrap()])
                .unwrap();
        }
        srq.arm_limit(4).expect("ibv_modify_srq(IBV_SRQ_LIMIT)");
        assert_eq!(srq.query().unwrap().srq_limit, 4);

        // Four receives consumed: four left, not fewer than the limit.
        for i in 0..4 {
            m.send(&a, i);
        }
        completions(&cq, 4);
        assert!(
            !readable(ctx.async_fd().unwrap(), 300),
            "limit event with 4 left of limit 4"
        );
        // The fifth leaves three.
        m.send(&a, 4);
        completions(&cq, 1);
        assert!(
            readable(ctx.async_fd().unwrap(), 5000),
            "no limit event within 5 s"
        );
        let ev = ctx.get_async_event().unwrap();
        match *ev {
            AsyncEvent::SrqLimitReached(r) => assert!(r.is(&srq)),
            other => panic!("expected SRQ_LIMIT_REACHED, got {other:?}"),
        }
        drop(ev);
        // The event disarmed the limit.
        assert_eq!(srq.query().unwrap().srq_limit, 0);
        m.send(&a, 5);
        completions(&cq, 1);
        assert!(
            !readable(ctx.async_fd().unwrap(), 300),
            "a second event without re-arming"
        );
    });
}

#[test]
fn srq_limit_above_the_srq_size_is_refused() {
    let ctx = open();
    let pd = Pd::new(&ctx).unwrap();
    let srq = Srq::builder(&pd).max_wr(16).build().unwrap();
    let size = srq.query().unwrap().max_wr;
    let e = srq.arm_limit(size + 1).unwrap_err();
    assert_eq!((e.verb, e.errno()), (Verb::ModifySrq, libc::EINVAL), "{e}");
    srq.arm_limit(size).expect("a limit of the SRQ's size");
    srq.arm_limit(0).expect("0 disarms");
    assert_eq!(srq.query().unwrap().srq_limit, 0);
}

#[test]
fn destroying_an_srq_acks_its_async_event_still_held() {
    with_pd(|ctx, pd| {
        let cq = Cq::builder(ctx).cqe(64).build().unwrap();
        let srq = Srq::builder(&pd).max_wr(8).build().unwrap();
        let ev = {
            let (a, _b) = srq_pair(ctx, &pd, &cq, &srq, (8, None), None);
            let m = bufs(&pd, 16, 32);
            srq.post_recv(1, &[m.dst.sge(0..16).unwrap()]).unwrap();
            srq.post_recv(2, &[m.dst.sge(16..32).unwrap()]).unwrap();
            srq.arm_limit(2).unwrap();
            m.send(&a, 1);
            completions(&cq, 1);
            ctx.get_async_event().unwrap()
        };
        assert!(matches!(*ev, AsyncEvent::SrqLimitReached(r) if r.is(&srq)));
        // Held, unacked, on this thread: ibv_destroy_srq would wait for it forever; the typed
        // destroy acks it first.
        destroyed(srq.destroy());
        drop(ev);
    });
}

/// Async events raised for QPs that an error moves to ERR: none on rxe (Linux 6.1), whose
/// responder and completer move a QP to ERR without an event, for every path tried here
/// (remote access, remote invalid request, RNR retries exceeded, a receive too small, a QP with
/// an SRQ moved to ERR); the software device does the same.
#[test]
fn qp_errors_raise_no_async_event_as_on_rxe() {
    with_pd(|ctx, pd| {
        let cq = Cq::builder(ctx).cqe(64).build().unwrap();
        let m = bufs(&pd, 16, 16);

        // Remote access error: REM_ACCESS_ERR at the requester, the responder to ERR.
        let (a, b) = rc_pair(ctx, &pd, &cq, &cq);
        // The peer's word that the region is open to writes, when it is not (see above).
        let r = m.src.remote();
        let bogus = RemoteAddr::from_peer(r.addr(), r.rkey(), Access::REMOTE_WRITE);
        a.post_send(&SendWr::rdma_write(1, &[m.src.sge(0..16).unwrap()], bogus).signaled())
            .unwrap();
        assert_eq!(completions(&cq, 1), [(1, WcStatus::REM_ACCESS_ERR)]);
        assert_eq!(async_events(ctx, 400), [], "after a remote access error");
        drop((a, b));

        // Remote invalid request (an atomic the responder's access flags refuse).
        let (a, b) = rc_pair(ctx, &pd, &cq, &cq);
        let target = Mr::new(
            &pd,
            vec![0u8; 16],
            Access::LOCAL_WRITE | Access::REMOTE_ATOMIC,
        )
        .unwrap();
        let word = m.dst.atomic_result(0).unwrap();
        a.post_send(
            &SendWr::fetch_add(2, &word, target.remote().atomic_at(0).unwrap(), 1).signaled(),
        )
        .unwrap();
        assert_eq!(completions(&cq, 1), [(2, WcStatus::REM_INV_REQ_ERR)]);
        assert_eq!(async_events(ctx, 400), [], "after a remote invalid request");
        drop((a, b, target));

        // RNR retries exceeded (rnr_retry 0, no receive posted).
        let qa = Qp::<Rc>::builder(&pd, &cq, &cq)
            .max_send_wr(4)
            .build()
            .unwrap();
        let qb = Qp::<Rc>::builder(&pd, &cq, &cq)
            .max_send_wr(4)
            .build()
            .unwrap();
        let (an, bn) = (qa.qp_num(), qb.qp_num());
        let (a, b) = (connect(ctx, qa, bn, 0), connect(ctx, qb, an, 0));
        a.post_send(&SendWr::send(3, &[m.src.sge(0..16).unwrap()]).signaled())
            .unwrap();
        assert_eq!(completions(&cq, 1), [(3, WcStatus::RNR_RETRY_EXC_ERR)]);
        assert_eq!(async_events(ctx, 400), [], "after RNR retries exceeded");
        drop((a, b));

        // A receive too small for the message: LOC_QP_OP_ERR at the responder.
        let (a, b) = rc_pair(ctx, &pd, &cq, &cq);
        b.post_recv(4, &[m.dst.sge(0..4).unwrap()]).unwrap();
        a.post_send(&SendWr::send(5, &[m.src.sge(0..16).unwrap()]).signaled())
            .unwrap();
        let mut got = completions(&cq, 2);
        got.sort_by_key(|g| g.0);
        assert_eq!(
            got,
            [(4, WcStatus::LOC_QP_OP_ERR), (5, WcStatus::REM_OP_ERR)]
        );
        assert_eq!(async_events(ctx, 400), [], "after a malformed receive");
        drop((a, b));

        // A QP with an SRQ moved to ERR (no IBV_EVENT_QP_LAST_WQE_REACHED on rxe).
        let srq = Srq::builder(&pd).max_wr(4).build().unwrap();
        let (a, b) = srq_pair(ctx, &pd, &cq, &srq, (4, None), None);
        let b = b.to_error().unwrap_or_else(|e| panic!("RTS -> ERR: {e}"));
        assert_eq!(
            async_events(ctx, 400),
            [],
            "after a QP with an SRQ moved to ERR"
        );
        drop((a, b));
    });
}

#[cfg(feature = "tokio")]
#[test]
fn an_event_is_awaited_through_tokio() {
    within(LIMIT, || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_io()
            .build()
            .unwrap();
        let ctx = open();
        let ch = CompChannel::new(&ctx).unwrap();
        let pd = Pd::new(&ctx).unwrap();
        let cq = channel_cq(&ctx, &ch, 16, 5u32);
        let (a, b, m) = pair_and_message(&ctx, &pd, &cq);
        // Outside a runtime: an error, not a panic.
        let e = ch.cq_events().unwrap_err();
        assert_eq!(e.verb, Verb::GetCqEvent);
        rt.block_on(async {
            let events = ch.cq_events().unwrap();
            for round in 0..2u64 {
                cq.req_notify(false).unwrap();
                b.post_recv(10 + round, &[m.dst.sge(0..16).unwrap()])
                    .unwrap();
                m.send(&a, round);
                let ev = events.get_cq_event().await.unwrap();
                assert_eq!(ev.user_context(&cq), Some(&5));
                completions(&cq, 1);
            }
        });
    });
}

#[test]
fn moving_an_idle_rc_qp_to_sqd_raises_sq_drained() {
    // rxe drains the send queue on the way into SQD (rxe_qp_drain runs the requester), and the
    // requester that finds nothing in progress reports it: IBV_EVENT_SQ_DRAINED on the QP,
    // raised whatever en_sqd_async_notify says.
    with_pd(|ctx, pd| {
        let cq = Cq::builder(ctx).cqe(16).build().unwrap();
        let (a, b) = rc_pair(ctx, &pd, &cq, &cq);
        assert!(ctx.try_get_async_event().unwrap().is_none());
        // SAFETY: plain C data; a live QP, moved RTS -> SQD (a transition of the kernel's
        // table) behind the typed layer's back, then only dropped.
        unsafe {
            let mut attr: typed_verbs::ffi::sys::ibv_qp_attr = std::mem::zeroed();
            attr.qp_state = typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_SQD;
            raw::ibv_modify_qp(a.as_raw(), &mut attr, 1).expect("RTS -> SQD");
        }
        assert_eq!(
            qp_state(&a),
            typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_SQD
        );
        let seen = async_events(ctx, 1000);
        assert!(
            matches!(seen[..], [AsyncEvent::SqDrained(q)] if q.is(&a) && !q.is(&b)),
            "expected one SQ_DRAINED naming the QP, got {seen:?}"
        );
        drop((a, b));
    });
}

#[cfg(feature = "software-device")]
#[test]
fn a_qp_moved_to_sqd_with_a_request_awaiting_its_ack_drains_when_the_ack_comes() {
    // rxe's drain ends when the request in flight is acknowledged: SQ_DRAINED comes then, not at
    // the modify. The software device shows it with late ACKs (`SwConfig::ack_delay`).
    within(LIMIT, || {
        const LATE: Duration = Duration::from_millis(1000);
        let ctx = common::open_registered(
            "sw-late-ack-sqd",
            typed_verbs::software::SwConfig {
                ack_delay: LATE,
                ..Default::default()
            },
        );
        let pd = Pd::new(&ctx).unwrap();
        let cq = Cq::builder(&ctx).cqe(16).build().unwrap();
        let (a, b, m) = pair_and_message(&ctx, &pd, &cq);
        m.signaled_message(&a, &b, 10, 1);
        // SAFETY: plain C data; a live QP, moved RTS -> SQD (a transition of the kernel's
        // table) behind the typed layer's back, then only dropped.
        unsafe {
            let mut attr: typed_verbs::ffi::sys::ibv_qp_attr = std::mem::zeroed();
            attr.qp_state = typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_SQD;
            raw::ibv_modify_qp(a.as_raw(), &mut attr, 1).expect("RTS -> SQD");
        }
        let early = async_events(&ctx, LATE.as_millis() as u64 / 4);
        assert!(early.is_empty(), "drained before the ACK came: {early:?}");
        let seen = async_events(&ctx, 2 * LATE.as_millis() as u64);
        assert!(
            matches!(seen[..], [AsyncEvent::SqDrained(q)] if q.is(&a)),
            "expected one SQ_DRAINED naming the QP, got {seen:?}"
        );
        let mut got = completions(&cq, 2);
        got.sort_by_key(|&(id, _)| id);
        assert_eq!(got, [(1, WcStatus::SUCCESS), (10, WcStatus::SUCCESS)]);
        drop((a, b));
    });
}
