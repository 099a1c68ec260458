// An RDMA write's target must be registered with REMOTE_WRITE. A `RemoteAddr` carries the
// rights of the region it was made from; this region has LOCAL_WRITE only. Neighbour:
// typed_access_rights.
mod common;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (src, inbox) = (common::region(Access::LOCAL_WRITE)?, common::region(Access::LOCAL_WRITE)?);
    let sgl = [src.sge(0..64).unwrap()];
    let _ = SendWr::<Rc>::rdma_write(1, &sgl, inbox.remote().at(0, 64).unwrap());
    Ok(())
}
