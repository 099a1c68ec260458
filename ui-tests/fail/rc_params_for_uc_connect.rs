// A UC QP connected with an RC QP's connection parameters: UC has no ACKs, retries or RNR, so
// its `connect_with` takes `()`.
mod common;
use typed_verbs::connect::RcParams;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let e = qp.endpoint(1, 0)?;
    let _qp = qp.connect_with(&e, &e, AccessFlags::LOCAL_WRITE, RcParams::default())?;
    Ok(())
}
