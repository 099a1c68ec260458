// A batch on an extended QP in INIT: only a QP in RTS sends.
mod common;
use typed_verbs::{send_ops, Qp, Rc};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_inline_data(16).send_ops::<send_ops!(SEND)>().build()?.to_init(common::INIT)?;
    qp.post_batch(|b| b.send(1).inline(b"too early"))
}
