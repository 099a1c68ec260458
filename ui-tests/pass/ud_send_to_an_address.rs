// Neighbour of send_without_dest_on_ud: a UD send names its destination (an address handle,
// the remote QP number and Q_Key) with `SendWr::send_to`, and is posted from RTS.
use typed_verbs::prelude::*;
use typed_verbs::AddressHandle;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    let grh = Some(GlobalRoute { dgid: ctx.query_gid(1, 0)?, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let ah = AddressHandle::new(&pd, AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh })?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let sgl = [mr.sge(0..64).expect("in the region")];
    qp.post_send(&SendWr::send_to(1, &sgl, UdDest::new(&ah, qp.qp_num(), 0x11)).signaled())?;
    Ok(())
}
