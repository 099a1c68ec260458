// Using the batch on another thread: the send queue's lock was taken by the thread that opened
// it.
mod common;
use typed_verbs::send_ops;

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    qp.post_batch(|b| {
        std::thread::scope(|s| s.spawn(|| b.send(1).inline(b"from afar")).join().unwrap())
    })
}
