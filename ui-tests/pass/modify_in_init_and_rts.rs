// Neighbour of modify_rts_in_init: the INIT -> INIT and RTS -> RTS modifies the kernel's state
// table allows, each with a struct of exactly the attributes it may change (None: unchanged).
// (An alternate path, `alt_path`, is InfiniBand only: the kernel refuses it on RoCE, as sw0 does.)
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;

    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?;
    qp.modify_init(ConnectedInitModify { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() })?;
    let rtr = common::rc_rtr(common::loopback()?, qp.qp_num());
    let qp = qp.to_rtr(rtr)?.to_rts(common::RC_RTS)?;
    qp.modify_rts(RcRtsModify {
        access: Some(AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ),
        min_rnr_timer: Some(1),
        path_mig_state: Some(PathMigState::Rearm),
        ..Default::default()
    })?;

    let ud = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let ud = ud.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    ud.modify_init(UdInitModify { qkey: Some(2), ..Default::default() })?;
    let ud = ud.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    ud.modify_rts(UdRtsModify { qkey: Some(3) })?;
    drop((qp, ud));
    Ok(())
}
