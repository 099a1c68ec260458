// A UD send without a destination.
use typed_verbs::{Access, Context, Mr, Pd, SendWr, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let sgl = [mr.sge(0..64).unwrap()];
    let _wr = SendWr::<Ud>::send(1, &sgl);
    Ok(())
}
