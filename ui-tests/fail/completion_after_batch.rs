// Using a completion after its batch ended (ibv_end_poll).
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let kept;
    {
        let Some(batch) = cq.start_poll()? else { return Ok(()) };
        kept = batch.completion();
    }
    println!("{}", kept.wr_id());
    Ok(())
}
