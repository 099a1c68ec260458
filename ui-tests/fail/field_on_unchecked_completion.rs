// Reading the opcode before looking at the status.
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    if let Some(batch) = cq.start_poll()? {
        println!("{:?}", batch.completion().opcode());
    }
    Ok(())
}
