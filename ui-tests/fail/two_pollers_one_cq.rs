// A second poller (and so a second batch) on a CQ whose first poller still lives.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let (_shared, mut first) = cq.split();
    let (_again, mut second) = cq.split();
    let a = first.poll_batch(|a| a.completion().wr_id())?;
    let b = second.poll_batch(|b| b.completion().wr_id())?;
    drop((a, b));
    Ok(())
}
