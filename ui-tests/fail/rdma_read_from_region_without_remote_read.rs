// An RDMA read's source must be registered with REMOTE_READ; this one has REMOTE_WRITE (and
// the LOCAL_WRITE it includes) only. Neighbour: typed_access_rights.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (into, peer) = (common::region(Access::LOCAL_WRITE)?, common::region(Access::REMOTE_WRITE)?);
    let sgl = [into.sge(0..64).unwrap()];
    let _ = SendWr::<Rc>::rdma_read(1, &sgl, peer.remote().at(0, 64).unwrap());
    Ok(())
}
