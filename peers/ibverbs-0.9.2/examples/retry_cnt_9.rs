// An RC QP brought to RTS with retry_cnt 9 (the field is 3 bits: 0..=7).
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
            .set_retry_count(9)
            .build()
            .setup("create_qp")?;
        let b = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build();
        let b = b.setup("create_qp")?;
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let _b = b
            .handshake(ea)
            .setup("handshake with the default retry count")?;
        let _a = a.handshake(eb).misuse("handshake with retry_cnt 9")?;
        Ok("the QP reached RTS with retry_cnt 9".into())
    })());
}
