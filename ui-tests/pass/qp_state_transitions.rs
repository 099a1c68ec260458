// Neighbour of rc_rtr_missing_attribute, to_rts_from_init and ud_attributes_for_rc_init: every QP
// type taken RESET -> INIT -> RTR -> RTS with its own attributes, then to ERR and RESET.
mod common;
use typed_verbs::{
    AccessFlags, ConnectedInit, Mtu, Qp, RawPacket, RawPacketInit, Rc, RcRtr, RcRts, SqPsn, Uc, UcRtr, Ud, UdInit,
};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let av = common::loopback()?;
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ };

    let rc = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let dest = rc.qp_num();
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: dest, rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let rc = rc.to_init(init)?.to_rtr(rtr)?.to_rts(rts)?;

    let uc = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let rtr = UcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: dest, rq_psn: 0 };
    let uc = uc.to_init(init)?.to_rtr(rtr)?;
    let uc = uc.to_rts(SqPsn { sq_psn: 0 })?;

    let ud = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let ud = ud.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?;
    let ud = ud.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;

    let raw = Qp::<RawPacket>::builder(&pd, &cq, &cq).build()?;
    let raw = raw.to_init(RawPacketInit { port_num: 1 })?;
    let raw = raw.to_rtr(())?.to_rts(())?;

    let rc = rc.to_error()?.to_reset()?;
    drop((rc, uc, ud, raw));
    Ok(())
}
