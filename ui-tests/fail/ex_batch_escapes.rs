// Keeping the batch after its closure: it stands for the provider's open critical region, which
// ends when post_batch returns.
mod common;
use typed_verbs::{send_ops, wr::PostBatch, Rc};

type Ops = send_ops!(SEND);

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<Ops>(&pd, &cq)?;
    let mut kept: Option<&mut PostBatch<'_, Rc, Ops, 2>> = None;
    qp.post_batch(|b| {
        kept = Some(b);
        Ok(())
    })?;
    kept.unwrap().send(1).inline(b"late")
}
