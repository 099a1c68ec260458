// A send posted on an RC QP that has not been brought up (before the handshake).
fn main() -> peer_ibverbs::Res<()> {
    let ctx = peer_ibverbs::open()?;
    let (cq, pd) = (ctx.create_cq(8, 0)?, ctx.alloc_pd()?);
    let mut qp = pd
        .create_qp(&cq, &cq, ibverbs::ibv_qp_type::IBV_QPT_RC)
        .build()?;
    let mut mr = pd.allocate::<u8>(64)?;
    unsafe { qp.post_send(&mut mr, .., 1) }?;
    Ok(())
}
