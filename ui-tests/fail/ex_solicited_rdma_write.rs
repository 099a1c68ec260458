// IBV_SEND_SOLICITED on an RDMA write without immediate: "Valid only for Send and RDMA Write
// with immediate" (ibv_post_send(3)); no receive completion would carry it.
mod common;
use typed_verbs::{send_ops, Access};

fn main() -> typed_verbs::Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = common::ex_rc::<send_ops!(RDMA_WRITE)>(&pd, &cq)?;
    let mr = common::region(Access::LOCAL_WRITE | Access::REMOTE_WRITE)?;
    qp.post_batch(|b| b.rdma_write(1, mr.remote().at(0, 8).unwrap()).solicited().sge(mr.sge(8..16).unwrap()))
}
