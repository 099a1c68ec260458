// The RC connection parameters (ACK timeout, retry counts, RNR timer) read from a UC QP, which
// has none.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let e = qp.endpoint(1, 0)?;
    let qp = qp.connect(&e, &e, AccessFlags::LOCAL_WRITE)?;
    let _params = qp.query_rc_params()?;
    Ok(())
}
