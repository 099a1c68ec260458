// Neighbour of destroy_mcast_member and mcast_on_rc_qp: a UD QP joins, detaches, is destroyed.
use typed_verbs::{Context, Cq, Gid, Pd, Qp, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let mut gid = [0u8; 16];
    gid[0] = 0xff;
    let member = qp.attach_mcast(Gid(gid), 0)?;
    member.detach().map_err(|e| e.error)?;
    qp.destroy().map_err(|e| e.error)?;
    Ok(())
}
