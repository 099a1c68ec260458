// Closing the device context while a PD of it is still allocated.
use typed_verbs::{Context, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let _ = ctx.close();
    drop(pd);
    Ok(())
}
