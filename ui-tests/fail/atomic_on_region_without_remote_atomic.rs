// An atomic's target must be registered with REMOTE_ATOMIC: `atomic_at` makes an
// `AtomicTarget` only from a `RemoteMr` whose rights have it. This region has REMOTE_WRITE.
// Neighbour: typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let peer = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_WRITE)?;
    let _counter = peer.remote().atomic_at(0);
    Ok(())
}
