// Natural code: changing an INIT QP's access flags with `modify_init` (INIT -> INIT), which
// keeps the receives already posted. Neighbour of to_init_twice.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::qp_state::ConnectedInitModify;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    qp.modify_init(ConnectedInitModify { access: Some(AccessFlags::REMOTE_WRITE), ..Default::default() })?;
    drop(qp);
    Ok(())
}
