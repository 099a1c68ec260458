// Two work requests of one batch open at once: a request's setters attach to the last builder
// called, so the first request's data would land in the second.
mod common;
use typed_verbs::send_ops;

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    qp.post_batch(|b| {
        let first = b.send(1);
        let second = b.send(2);
        first.inline(b"one")?;
        second.inline(b"two")
    })
}
