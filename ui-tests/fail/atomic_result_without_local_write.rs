// An atomic's old value is written by the local device into its result buffer: the region
// needs LOCAL_WRITE, so `atomic_result` exists only on regions registered with it. Neighbour:
// typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_READ)?;
    let _old = mr.atomic_result(0);
    Ok(())
}
