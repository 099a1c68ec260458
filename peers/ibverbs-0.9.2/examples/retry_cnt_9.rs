// An RC QP brought to RTS with retry_cnt 9 (the field is 3 bits: 0..=7).
use peer_ibverbs::*;

fn main() {
    report((|| -> Res<_> {
        let ctx = open()?;
        let (cq, pd) = (ctx.create_cq(8, 0)?, ctx.alloc_pd()?);
        let rc = ibverbs::ibv_qp_type::IBV_QPT_RC;
        let a = pd
            .create_qp(&cq, &cq, rc)
            .set_gid_index(1)
            .set_retry_count(9)
            .build()?;
        let b = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build()?;
        let (ea, eb) = (a.endpoint(), b.endpoint());
        let (_a, _b) = (a.handshake(eb)?, b.handshake(ea)?);
        Ok("the QP reached RTS with retry_cnt 9".into())
    })());
}
