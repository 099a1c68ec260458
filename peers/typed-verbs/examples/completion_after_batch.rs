// Using a completion after its batch ended (ibv_end_poll): the completion borrows the batch.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        let kept = batch.completion();
        drop(batch); // ibv_end_poll
        println!("{}", kept.wr_id());
    })?;
    Ok(())
}
