// INIT -> RTR asked of a QP that is already in RTR.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?.to_rtr(())?;
    let _qp = qp.to_rtr(())?;
    Ok(())
}
