// Neighbour of mcast_on_rc_qp: a UD QP joins a multicast group in RESET, before its bring-up,
// keeps it through its transitions, leaves one group, and is destroyed with the other still
// joined (its destroy leaves it first: "ibv_destroy_qp() fails if the QP is attached to a
// multicast group").
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let (mut a, mut b) = ([0u8; 16], [0u8; 16]);
    (a[0], a[15], b[0], b[15]) = (0xff, 1, 0xff, 2);
    qp.attach_mcast(Gid(a), 0)?;
    qp.attach_mcast(Gid(b), 0)?;
    let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    assert_eq!(qp.mcast_groups(), [(Gid(a), 0), (Gid(b), 0)]);
    qp.detach_mcast(Gid(a), 0)?;
    qp.destroy()?;
    Ok(())
}
