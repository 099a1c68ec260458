// Neighbour of uc_qp_with_srq / raw_packet_qp_with_srq / recv_caps_on_srq_qp: all four QP types
// with their own receive queue (receive caps set), and RC and UD with an SRQ.
use typed_verbs::{Context, Cq, Pd, Qp, RawPacket, Rc, Srq, Ud, Uc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(16).build()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let rc = Qp::<Rc>::builder(&pd, &cq, &cq).max_recv_wr(4).max_recv_sge(2).build()?;
    let uc = Qp::<Uc>::builder(&pd, &cq, &cq).max_recv_wr(4).build()?;
    let ud = Qp::<Ud>::builder(&pd, &cq, &cq).max_recv_sge(1).build()?;
    let raw = Qp::<RawPacket>::builder(&pd, &cq, &cq).max_recv_wr(2).build()?;
    let rc_srq = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq).max_send_wr(4).build()?;
    let ud_srq = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    assert!(rc.caps().max_recv_wr >= 4 && rc.caps().max_recv_sge >= 2);
    assert!(uc.caps().max_recv_wr >= 4);
    assert!(ud.caps().max_recv_sge >= 1);
    assert!(raw.caps().max_recv_wr >= 2);
    assert_eq!(rc_srq.caps().max_recv_wr, 0);
    assert_eq!(ud_srq.caps().max_recv_wr, 0);
    Ok(())
}
