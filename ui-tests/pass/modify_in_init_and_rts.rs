// Neighbour of modify_rts_in_init: the INIT -> INIT and RTS -> RTS modifies the kernel's state
// table allows, each with a struct of exactly the attributes it may change (None: unchanged).
// (An alternate path, `alt_path`, is InfiniBand only: the kernel refuses it on RoCE, as sw0 does.)
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };

    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?;
    qp.modify_init(ConnectedInitModify { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() })?;
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: qp.qp_num(), rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let qp = qp.to_rtr(rtr)?.to_rts(rts)?;
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
