// Opening a second batch on a CQ while the first is open (start_poll twice without end_poll).
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let first = cq.start_poll()?;
    let second = cq.start_poll()?;
    drop((first, second));
    Ok(())
}
