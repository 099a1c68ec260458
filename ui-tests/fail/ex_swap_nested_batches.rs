// Swapping the batches of two QPs open at once (one nested in the other's closure): the outer
// closure would go on posting through the inner QP's batch after that batch had ended.
mod common;
use typed_verbs::send_ops;

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut one = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let mut two = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    one.post_batch(|outer| {
        two.post_batch(|inner| {
            std::mem::swap(outer, inner);
            Ok(())
        })?;
        outer.send(1).inline(b"into an ended batch")
    })
}
