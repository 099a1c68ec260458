// RDMA reads are RC only (ibv_wr_post(3)'s table): a UC QP cannot be created for them.
mod common;
use typed_verbs::{send_ops, Qp, Uc};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let _qp = Qp::<Uc>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND | RDMA_READ)>().build()?;
    Ok(())
}
