// Attaching an RC QP to a multicast group: only UD QPs can join one.
use typed_verbs::{Context, Cq, Gid, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let _member = qp.attach_mcast(Gid([0xff; 16]), 0)?;
    Ok(())
}
