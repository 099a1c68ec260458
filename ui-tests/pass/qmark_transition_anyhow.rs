// `?` on QP transitions, a destroy and a chain into anyhow::Error, with borrowed handles, in a
// `fn main() -> anyhow::Result<()>`.
mod common;
use typed_verbs::prelude::*;

fn main() -> anyhow::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let av = common::loopback()?;
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
