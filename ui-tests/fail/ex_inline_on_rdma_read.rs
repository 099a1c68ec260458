// Inline data on an RDMA read: "valid only for SEND and RDMA_WRITE" (ibv_wr_post(3)); a read
// lands in SGEs.
mod common;
use typed_verbs::{send_ops, Access};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(RDMA_READ)>(&pd, &cq)?;
    let mr = common::region(Access::LOCAL_WRITE | Access::REMOTE_READ)?;
    qp.post_batch(|b| b.rdma_read(1, mr.remote().at(0, 8).unwrap()).inline(b"12345678"))
}
