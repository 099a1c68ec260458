// An Sge borrows its region: one made inside `Mr::scoped` cannot leave the closure, since the
// region is deregistered when the scope ends (a work request naming it later would name memory
// the program has back). Neighbour: scoped_region_within_closure.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut buf = vec![0u8; 64];
    let sge = Mr::scoped(&pd, &mut buf, Access::LOCAL_WRITE, |mr| mr.sge(0..6))?;
    let _ = sge;
    Ok(())
}
