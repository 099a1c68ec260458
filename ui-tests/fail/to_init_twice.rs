// `to_init` on a QP already in INIT (to change its access flags): RESET -> INIT is the only
// transition that starts from RESET, and the first error line names `modify_init`, which
// changes INIT's attributes and keeps posted receives. Neighbour: modify_init_access_flags.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::REMOTE_WRITE })?;
    drop(qp);
    Ok(())
}
