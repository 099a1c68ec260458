// An RDMA write work request for a UD QP.
mod common;
use typed_verbs::{Access, SendWr, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let mr = common::region(Access::REMOTE_WRITE | Access::REMOTE_READ)?;
    let (sgl, remote) = ([mr.sge(0..64).unwrap()], mr.remote().at(0, 64).unwrap());
    let _wr = SendWr::<Ud>::rdma_write(1, &sgl, remote);
    Ok(())
}
