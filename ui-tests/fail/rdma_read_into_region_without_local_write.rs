// An RDMA read's response is written by the local device into the read's SGEs: they must lie in
// a region with LOCAL_WRITE. Here the destination is registered with REMOTE_READ only.
// Neighbour: typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let peer = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    let into = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    let sgl = [into.sge(0..64).unwrap()];
    let _ = SendWr::<Rc>::rdma_read(1, &sgl, peer.remote().at(0, 64).unwrap());
    Ok(())
}
