// An RDMA read's source must be registered with REMOTE_READ; this one has REMOTE_WRITE (and
// the LOCAL_WRITE it includes) only. Neighbour: typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let into = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    let peer = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    let sgl = [into.sge(0..64).unwrap()];
    let _ = SendWr::<Rc>::rdma_read(1, &sgl, peer.remote().at(0, 64).unwrap());
    Ok(())
}
