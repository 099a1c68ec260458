// A slot receive on a QP in ERR: rxe keeps a receive posted in ERR without a flush completion,
// so the slot would never come back. Neighbour: slot_zero_copy (slot receives from INIT on).
use std::sync::Arc;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = CqEx::<Standard>::builder(&ctx).cqe(16).slots().build()?;
    let qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE })?;
    let qp = qp.to_error()?;
    let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 4096)?;
    qp.post_recv_slot(slots.pop().unwrap())?;
    Ok(())
}
