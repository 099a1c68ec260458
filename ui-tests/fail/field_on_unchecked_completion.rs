// Reading the opcode before looking at the status.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        println!("{:?}", batch.completion().opcode());
    })?;
    Ok(())
}
