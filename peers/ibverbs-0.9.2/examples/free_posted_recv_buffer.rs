// A receive buffer dropped while the receive is posted (the device may still write it).
fn main() -> peer_ibverbs::Res<()> {
    let ctx = peer_ibverbs::open()?;
    let (cq, pd) = (ctx.create_cq(8, 0)?, ctx.alloc_pd()?);
    let rc = ibverbs::ibv_qp_type::IBV_QPT_RC;
    let a = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build()?;
    let b = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build()?;
    let (ea, eb) = (a.endpoint(), b.endpoint());
    let (_a, mut b) = (a.handshake(eb)?, b.handshake(ea)?);
    let mut buf = pd.allocate::<u8>(4096)?;
    b.post_receive(&mut buf, .., 1)?;
    drop(buf);
    Ok(())
}
