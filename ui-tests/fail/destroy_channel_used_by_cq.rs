// Destroying a completion channel that a CQ still uses ("fails if any CQs are still associated
// with the completion event channel").
use typed_verbs::{CompChannel, Context, Cq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let channel = CompChannel::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).channel(&channel).build()?;
    let _ = channel.destroy();
    drop(cq);
    Ok(())
}
