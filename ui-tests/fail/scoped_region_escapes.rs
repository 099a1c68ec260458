// A region over a borrowed buffer leaving its scope: after `Mr::scoped` returns the buffer is
// deregistered and the caller's again, so the region must not outlive the closure.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let mut escaped = None;
    Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| {
        escaped = Some(mr);
    })?;
    escaped.unwrap().write(0, &[1])?;
    Ok(())
}
