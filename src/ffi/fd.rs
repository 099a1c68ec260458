//! File descriptors of the C side: the completion channel's and the async event fd, made
//! O_NONBLOCK and waited on in poll(2). Plain libc, below every object.

use std::os::fd::RawFd;
use std::time::Duration;

/// Sets O_NONBLOCK on `fd` (if it is not set yet), as rdma-core's users do to poll the fd.
pub(crate) fn set_nonblocking(fd: RawFd) -> std::result::Result<(), i32> {
    let errno = || {
        std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO)
    };
    // SAFETY: fcntl on an fd; failures are reported.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(errno());
    }
    if flags & libc::O_NONBLOCK != 0 {
        return Ok(());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags | libc::O_NONBLOCK) } < 0 {
        return Err(errno());
    }
    Ok(())
}

/// Waits until `fd` is readable, at most `timeout` (`None`: without a limit), in poll(2);
/// whether it became readable. EINTR is retried (with the time left).
pub(crate) fn wait_readable(
    fd: RawFd,
    timeout: Option<Duration>,
) -> std::result::Result<bool, i32> {
    let deadline = timeout.map(|t| std::time::Instant::now() + t);
    loop {
        let ms = match deadline {
            None => -1,
            Some(d) => {
                let left = d.saturating_duration_since(std::time::Instant::now());
                // Rounded up, so a short timeout still waits; capped at poll's int.
                let ms = left.as_nanos().div_ceil(1_000_000);
                ms.min(i32::MAX as u128) as i32
            }
        };
        let mut p = libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        };
        // SAFETY: one valid pollfd.
        let n = unsafe { libc::poll(&mut p, 1, ms) };
        if n >= 0 {
            if p.revents & libc::POLLNVAL != 0 {
                return Err(libc::EBADF);
            }
            return Ok(n > 0);
        }
        let e = std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EIO);
        if e != libc::EINTR {
            return Err(e);
        }
    }
}
