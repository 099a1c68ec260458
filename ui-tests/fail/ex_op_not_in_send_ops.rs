// An RDMA write in the batch of a QP created for sends only: its builder is NULL in the
// provider (IBV_QP_EX_WITH_RDMA_WRITE was not requested), so the method does not exist.
mod common;
use typed_verbs::{send_ops, Access};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(SEND)>(&pd, &cq)?;
    let mr = common::region(Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    qp.post_batch(|b| b.rdma_write(1, mr.remote().at(0, 8).unwrap()).sge(mr.sge(8..16).unwrap()))
}
