// Freeing a buffer while a memory region registers it.
use typed_verbs::{AccessFlags, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let mr = Mr::new(&pd, &mut buf, AccessFlags::LOCAL_WRITE)?;
    drop(buf);
    drop(mr);
    Ok(())
}
