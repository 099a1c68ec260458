// A region's rights are its type: `Mr::new` takes `Access` constants, not the QP's run-time
// `AccessFlags`, and the error says which to pass. Neighbour: typed_access_rights.
use typed_verbs::{AccessFlags, Context, Mr, PageBuf, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let _mr = Mr::new(&pd, PageBuf::new(4096)?, AccessFlags::LOCAL_WRITE)?;
    Ok(())
}
