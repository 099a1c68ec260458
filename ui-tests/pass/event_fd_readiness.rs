// Readiness of the event fds without the power to consume events: wait in poll(2) with a
// timeout, or register the fds' numbers with poll/epoll/mio (tokio: `CompChannel::cq_events`).
use std::os::fd::AsRawFd;
use std::time::Duration;
use typed_verbs::{software, CompChannel, Context, Cq, InjectedCompletion, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let channel = CompChannel::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).channel(&channel).build()?;
    let short = Some(Duration::from_millis(10));
    assert!(!channel.wait_readable(short)?);
    assert!(!ctx.wait_async_readable(short)?);
    cq.req_notify(false)?;
    software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    assert!(channel.wait_readable(Some(Duration::from_secs(5)))?);
    let (channel_fd, async_fd) = (channel.as_raw_fd(), ctx.async_fd()?);
    assert!(channel_fd >= 0 && async_fd >= 0 && channel_fd != async_fd);
    let ev = channel.try_get_cq_event()?.expect("readable, so an event waits");
    assert!(ev.is_for(&cq));
    Ok(())
}
