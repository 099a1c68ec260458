// The README's first program with ibverbs 0.9.2: an RC pair in loopback and a 4 KiB send and
// receive, on the first RDMA device. The RDMA write of 5 bytes cannot be written: post_send
// posts IBV_WR_SEND only, and QueuePair keeps its ibv_qp pointer private.
fn main() -> Result<(), Box<dyn std::error::Error>> {
    let devices = ibverbs::devices()?;
    let ctx = devices.iter().next().ok_or("no RDMA device")?.open()?;
    let cq = ctx.create_cq(16, 0)?;
    let pd = ctx.alloc_pd()?;
    let rc = ibverbs::ibv_qp_type::IBV_QPT_RC;
    let a = pd
        .create_qp(&cq, &cq, rc)
        .set_gid_index(1)
        .set_max_send_wr(4)
        .build()?;
    let b = pd.create_qp(&cq, &cq, rc).set_gid_index(1).build()?;
    let (ea, eb) = (a.endpoint(), b.endpoint()); // exchanged out of band
    let mut a = a.handshake(eb)?; // RESET -> INIT -> RTR -> RTS
    let mut b = b.handshake(ea)?;
    let mut rx = pd.allocate::<u8>(4096)?;
    let mut tx = pd.allocate::<u8>(4096)?;
    // Safety: rx and tx stay alive and untouched until their completions are polled.
    unsafe { b.post_receive(&mut rx, .., 1) }?;
    tx.fill(7);
    unsafe { a.post_send(&mut tx, .., 2) }?;
    let (mut wcs, mut done) = ([ibverbs::ibv_wc::default(); 8], 0);
    while done < 2 {
        for wc in cq.poll(&mut wcs)? {
            if let Some((status, vendor_err)) = wc.error() {
                return Err(format!(
                    "completion {}: status {status}, vendor_err {vendor_err}",
                    wc.wr_id()
                )
                .into());
            }
            if wc.wr_id() == 1 {
                assert!(rx.iter().all(|&x| x == 7));
            }
            done += 1;
        }
    }
    println!("first: ok (send and receive; no RDMA write)");
    Ok(())
}
