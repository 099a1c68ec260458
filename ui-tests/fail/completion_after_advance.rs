// Using a completion after the batch moved on to the next one (ibv_next_poll).
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        let first = batch.completion();
        let _next = batch.advance();
        println!("{}", first.wr_id());
    })?;
    Ok(())
}
