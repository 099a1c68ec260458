// The regions of `Mr::scoped_in` (one buffer in several PDs) cannot leave the closure: they are
// deregistered when it returns. Neighbour: multi_rail_scoped_in.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let (a, b) = (Context::open("sw0")?, Context::open("sw0")?);
    let (pa, pb) = (Pd::new(&a)?, Pd::new(&b)?);
    let mut buf = vec![0u8; 64];
    let escaped = Mr::scoped_in([&pa, &pb], &mut buf, Access::LOCAL_WRITE, |[ra, _]| ra.sge(0..8))?;
    let _ = escaped;
    Ok(())
}
