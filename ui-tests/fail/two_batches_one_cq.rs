// Opening a second batch on a CQ while the first is open (ibv_start_poll twice without
// ibv_end_poll): inside the first batch's closure, the CQ is still mutably borrowed.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|first| {
        let second = cq.poll_batch(|second| second.completion().wr_id());
        drop((first, second));
    })?;
    Ok(())
}
