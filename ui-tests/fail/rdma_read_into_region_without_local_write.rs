// An RDMA read's response is written by the local device into the read's SGEs: they must lie in
// a region with LOCAL_WRITE. Here the destination is registered with REMOTE_READ only.
// Neighbour: typed_access_rights.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (peer, into) = (common::region(Access::REMOTE_READ)?, common::region(Access::REMOTE_READ)?);
    let sgl = [into.sge(0..64).unwrap()];
    let _ = SendWr::<Rc>::rdma_read(1, &sgl, peer.remote().at(0, 64).unwrap());
    Ok(())
}
