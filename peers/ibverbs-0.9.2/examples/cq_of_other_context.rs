// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use peer_ibverbs::*;

fn main() {
    report((|| -> Res<_> {
        let (ctx1, ctx2) = (open()?, open()?);
        let pd = ctx1.alloc_pd()?;
        let _own = ctx1.create_cq(8, 0)?;
        let cq = ctx2.create_cq(8, 0)?;
        let _qp = pd
            .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)
            .build()?;
        Ok("the QP was created".into())
    })());
}
