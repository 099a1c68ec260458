// Registering a borrowed buffer as an owned region: forgetting such a region would end the
// borrow while the device may still write the buffer. Borrowed buffers go through
// `Mr::scoped`; `Mr::new` takes buffers it can own.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let mr = Mr::new(&pd, &mut buf, Access::LOCAL_WRITE)?;
    std::mem::forget(mr);
    Ok(())
}
