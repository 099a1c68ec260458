// Dropping a PD while a QP uses it.
fn main() -> peer_ibverbs::Res<()> {
    let ctx = peer_ibverbs::open()?;
    let (cq, pd) = (ctx.create_cq(8, 0)?, ctx.alloc_pd()?);
    let qp = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)
        .build()?;
    drop(pd);
    drop(qp);
    Ok(())
}
