// Multi-rail: one borrowed buffer registered in two PDs (two devices, in a real program) for
// the run of a closure; the regions and their SGEs are used inside it, and the buffer is the
// program's again after it. Neighbour of scoped_in_region_escapes.
use typed_verbs::{Access, Context, Mr, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let (a, b) = (Context::open("sw0")?, Context::open("sw0")?);
    let (pa, pb) = (Pd::new(&a)?, Pd::new(&b)?);
    let mut buf = vec![0u8; 64];
    let lkeys = Mr::scoped_in([&pa, &pb], &mut buf, Access::LOCAL_WRITE, |[ra, rb]| {
        let (sa, sb) = (ra.sge(0..8).unwrap(), rb.sge(0..8).unwrap());
        ra.write(0, b"two")?;
        Ok::<_, typed_verbs::Error>((sa.lkey(), sb.lkey()))
    })??;
    let _ = lkeys;
    assert_eq!(&buf[..3], b"two");
    Ok(())
}
