// An RC QP brought to RTS with timeout 40 (the field is 5 bits: 0..=31). `handshake` makes the
// three transitions (INIT, RTR, RTS); the timeout is an RTS attribute, and the other QP, the
// same but for the timeout, makes them first.
use peer_ibverbs::*;

fn main() {
    report((|| -> Outcome<_> {
        let ctx = open()?;
        let cq = ctx.create_cq(8, 0).setup("create_cq")?;
        let pd = ctx.alloc_pd().setup("alloc_pd")?;
        let rc = ibverbs::ibv_qp_type::IBV_QPT_RC;
        let a = pd
            .create_qp(&cq, &cq, rc)
            .set_gid_index(1)
            .set_timeout(40)
            .build()
            .setup("create_qp")?;
        let b = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build();
        let b = b.setup("create_qp")?;
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let _b = b
            .handshake(ea)
            .setup("handshake with the default timeout")?;
        let _a = a.handshake(eb).misuse(
            "handshake with timeout 40 (with the default timeout 4, the other QP reached RTS)",
        )?;
        Ok("the QP reached RTS with timeout 40".into())
    })());
}
