// An RDMA read into an SGE of a region without LOCAL_WRITE: the device would write there.
mod common;
use typed_verbs::{send_ops, Access};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(RDMA_READ)>(&pd, &cq)?;
    let mr = common::region(Access::REMOTE_READ)?;
    qp.post_batch(|b| b.rdma_read(1, mr.remote().at(0, 8).unwrap()).sge(mr.sge(8..16).unwrap()))
}
