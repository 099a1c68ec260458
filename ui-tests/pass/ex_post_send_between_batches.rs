// Neighbour of ex_post_send_inside_batch, ex_two_requests_at_once, ex_batch_escapes and
// ex_batch_before_rts: legacy posts before and after a batch of an extended QP in RTS, and the
// requests of a batch one after the other.
mod common;
use typed_verbs::{send_ops, SendWr};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let rx = typed_verbs::Mr::new(&pd, typed_verbs::PageBuf::new(4096)?, typed_verbs::Access::LOCAL_WRITE)?; // the QP's PD
    for i in 0..4 {
        qp.post_recv(i, &[rx.sge(0..64).unwrap()])?;
    }
    qp.post_send(&SendWr::send_inline(10, b"before").signaled())?;
    qp.post_batch(|b| {
        b.send(11).signaled().inline(b"one")?;
        b.send(12).signaled().inline(b"two")
    })?;
    qp.post_send(&SendWr::send_inline(13, b"after").signaled())?;
    common::expect_successes(&cq, 8)
}
