// Freeing a borrowed buffer while a memory region registers it: `Mr::scoped` borrows it for
// the whole scope.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| {
        drop(buf);
        mr.write(0, &[1])
    })??;
    Ok(())
}
