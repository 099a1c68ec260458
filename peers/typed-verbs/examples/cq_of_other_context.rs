// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use typed_verbs::prelude::*;

fn main() {
    peer_typed_verbs::report((|| -> Result<String> {
        let dev = peer_typed_verbs::device();
        let (ctx1, ctx2) = (Context::open(&dev)?, Context::open(&dev)?);
        let pd = Pd::new(&ctx1)?;
        let _own = Cq::builder(&ctx1).cqe(8).build()?;
        let cq = Cq::builder(&ctx2).cqe(8).build()?;
        let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
        Ok("the QP was created".into())
    })());
}
