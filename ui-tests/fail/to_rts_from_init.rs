// RTR -> RTS asked of a QP that is still in INIT.
use typed_verbs::{AccessFlags, ConnectedInit, Context, Cq, Pd, Qp, Uc, SqPsn};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = qp.to_init(init)?;
    let _qp = qp.to_rts(SqPsn { sq_psn: 0 })?;
    Ok(())
}
