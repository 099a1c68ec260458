// Borrowing a completion channel's fd as an `AsFd`: with a `BorrowedFd`, safe code could dup
// it and read an event that libibverbs never acks, and `ibv_destroy_cq` would wait for that
// ack forever. The channel gives readiness (`wait_readable`, `cq_events`) and the fd's number
// (`AsRawFd`), which only `unsafe` code can read from.
use std::io::Read;
use std::os::fd::AsFd;
use typed_verbs::{CompChannel, Context};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let channel = CompChannel::new(&ctx)?;
    let mut stolen = std::fs::File::from(channel.as_fd().try_clone_to_owned().unwrap());
    let _ = stolen.read(&mut [0u8; 8]);
    Ok(())
}
