// Neighbour of ex_read_on_uc, ex_empty_send_ops and ex_send_ops_without_builder: each QP type
// created for the ops ibv_wr_post(3)'s table allows it.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::send_ops;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let _rc = Qp::<Rc>::builder(&pd, &cq, &cq)
        .send_ops::<send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_WRITE_WITH_IMM | RDMA_READ | ATOMIC_CMP_AND_SWP | ATOMIC_FETCH_AND_ADD)>()
        .build()?;
    let _uc = Qp::<Uc>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND | SEND_WITH_IMM | RDMA_WRITE | RDMA_WRITE_WITH_IMM)>().build()?;
    let _ud = Qp::<Ud>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND | SEND_WITH_IMM)>().build()?;
    let _raw = Qp::<RawPacket>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND)>().build()?;
    Ok(())
}
