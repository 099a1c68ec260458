// IBV_SEND_FENCE on a UC QP: "Valid only for QPs with Transport Service Type IBV_QPT_RC".
mod common;
use typed_verbs::prelude::*;
use typed_verbs::send_ops;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq).send_ops::<send_ops!(RDMA_WRITE)>().build()?;
    let me = qp.endpoint(1, 0)?;
    let mut qp = qp.connect(&me, &me, AccessFlags::REMOTE_WRITE)?;
    let mr = common::region(Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    qp.post_batch(|b| b.rdma_write(1, mr.remote().at(0, 8).unwrap()).fenced().sge(mr.sge(8..16).unwrap()))
}
