// Borrowing a context's async event fd: with a `BorrowedFd`, safe code could dup it and read
// an async event that is never acked, and the destroy of the object it names would wait for
// that ack forever. `Context::async_fd` gives only the fd's number; readiness comes from
// `wait_async_readable`.
use std::io::Read;
use typed_verbs::Context;

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut stolen = std::fs::File::from(ctx.async_fd()?.try_clone_to_owned().unwrap());
    let _ = stolen.read(&mut [0u8; 8]);
    Ok(())
}
