// An Sge borrows its region: the region cannot be destroyed (or dropped) while one of its SGEs
// is still to be posted. Neighbour: typed_work_requests (SGEs made and posted while the region
// lives).
use typed_verbs::{Access, Context, Mr, PageBuf, Pd};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE)?;
    let sge = mr.sge(0..64).expect("in range");
    let buf = mr.destroy()?; // deregistered: the buffer is the program's again
    let _ = (sge.lkey(), buf);
    Ok(())
}
