// RTS -> RTS on a QP that is in INIT.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?;
    qp.modify_rts(RcRtsModify { min_rnr_timer: Some(1), ..Default::default() })?;
    Ok(())
}
