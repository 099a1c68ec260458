// Destroying a UD QP while it is attached to a multicast group ("ibv_destroy_qp() fails if the
// QP is attached to a multicast group").
use typed_verbs::{Context, Cq, Gid, Pd, Qp, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let mut gid = [0u8; 16];
    gid[0] = 0xff;
    let member = qp.attach_mcast(Gid(gid), 0)?;
    let _ = qp.destroy();
    drop(member);
    Ok(())
}
