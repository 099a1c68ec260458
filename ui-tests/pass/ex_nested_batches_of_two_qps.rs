// Neighbour of ex_swap_nested_batches: the batches of two QPs open at once, one nested in the
// other's closure, each used for its own QP (the outer one also inside the inner closure).
mod common;
use typed_verbs::send_ops;

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut one = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let mut two = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let rx = typed_verbs::Mr::new(&pd, typed_verbs::PageBuf::new(4096)?, typed_verbs::Access::LOCAL_WRITE)?; // the QPs' PD
    one.post_recv(1, &[rx.sge(0..64).unwrap()])?;
    one.post_recv(2, &[rx.sge(64..128).unwrap()])?;
    two.post_recv(3, &[rx.sge(128..192).unwrap()])?;
    one.post_batch(|outer| {
        two.post_batch(|inner| {
            outer.send(10).signaled().inline(b"one, from inside")?;
            inner.send(20).signaled().inline(b"two")
        })?;
        outer.send(11).signaled().inline(b"one, after")
    })?;
    common::expect_successes(&cq, 6)
}
