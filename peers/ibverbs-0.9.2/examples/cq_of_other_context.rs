// A QP created with the PD of one context and a CQ of another (two opens of the same device).
use peer_ibverbs::*;

fn main() {
    report((|| -> Outcome<_> {
        let (ctx1, ctx2) = (open()?, open()?);
        let pd = ctx1.alloc_pd().setup("alloc_pd")?;
        let own = ctx1.create_cq(8, 0).setup("create_cq")?;
        let cq = ctx2.create_cq(8, 0).setup("create_cq")?;
        let rc = ibverbs::ibv_qp_type::IBV_QPT_RC;
        // The same QP with its own context's CQ is created.
        let _control = pd.create_qp(&own, &own, rc).build().setup("create_qp")?;
        let _qp = pd.create_qp(&cq, &cq, rc).build().misuse(
            "create_qp with the other context's CQ (with its own context's, it was created)",
        )?;
        Ok("the QP was created".into())
    })());
}
