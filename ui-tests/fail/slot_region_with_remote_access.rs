// Slots are handed out as plain slices, so no peer may reach their memory: a slot region is
// registered with LOCAL_WRITE, never a remote right. Neighbour:
// typed_access_rights.
use std::sync::Arc;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let _slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE | Access::REMOTE_READ, 1024)?;
    Ok(())
}
