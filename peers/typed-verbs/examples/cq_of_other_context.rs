// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use peer_typed_verbs::{Outcome, Step};
use typed_verbs::prelude::*;

fn main() {
    peer_typed_verbs::report((|| -> Outcome<String> {
        let dev = peer_typed_verbs::device();
        let (ctx1, ctx2) = (Context::open(&dev)?, Context::open(&dev)?);
        let pd = Pd::new(&ctx1)?;
        let own = Cq::builder(&ctx1).cqe(8).build()?;
        let cq = Cq::builder(&ctx2).cqe(8).build()?;
        // The same QP with its own context's CQ is created.
        let _control = Qp::<Rc>::builder(&pd, &own, &own)
            .build()
            .setup("create_qp")?;
        let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).build().misuse(
            "create_qp with the other context's CQ (with its own context's, it was created)",
        )?;
        Ok("the QP was created".into())
    })());
}
