// Deallocating a parent domain that a CQ still takes its resources from.
use typed_verbs::{Context, CqEx, ParentDomain, Pd, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let parent = ParentDomain::new(&ctx, &pd)?;
    let cq = CqEx::<Standard>::builder(&ctx).parent_domain(&parent).build()?;
    let _ = parent.destroy();
    drop(cq);
    Ok(())
}
