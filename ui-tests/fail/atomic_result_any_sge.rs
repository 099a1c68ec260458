// An atomic's old value lands in exactly 8 bytes: a list of SGEs (here of 16 bytes) is not
// accepted, only an `AtomicResult` made by `mr.atomic_result(offset)`. Neighbour:
// typed_work_requests.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mr = Mr::new(&pd, PageBuf::new(4096)?, Access::REMOTE_ATOMIC)?;
    let old = [mr.sge(0..16).unwrap()];
    let _ = SendWr::<Rc>::fetch_add(1, &old, mr.remote().atomic_at(512).unwrap(), 1);
    Ok(())
}
