// `?` on QP transitions, a destroy and a chain into anyhow::Error, with borrowed handles, in a
// `fn main() -> anyhow::Result<()>`.
use typed_verbs::prelude::*;

fn main() -> anyhow::Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let dest_qp_num = qp.qp_num();
    let qp = qp
        .to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?
        .to_rtr(UcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num, rq_psn: 0 })?
        .to_rts(SqPsn { sq_psn: 0 })?;
    qp.post_send_chain::<0>(&[])?;
    qp.destroy()?;
    Ok(())
}
