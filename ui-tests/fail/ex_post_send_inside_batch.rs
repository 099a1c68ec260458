// A legacy post_send of the QP inside its own open batch: rxe holds the send queue's spinlock
// from ibv_wr_start, and the post would spin for ever on this thread.
mod common;
use typed_verbs::{send_ops, SendWr};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let inner = &qp;
    qp.post_batch(|b| {
        inner.post_send(&SendWr::send_inline(1, b"deadlock"))?;
        b.send(2).inline(b"ok")
    })
}
