// Neighbour of the destroy/drop/close cases: every object destroyed after its users, explicitly
// and by scope.
use typed_verbs::{CompChannel, Context, Cq, CqEx, ParentDomain, Pd, Qp, Rc, Srq, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    {
        let pd = Pd::new(&ctx)?;
        let channel = CompChannel::new(&ctx)?;
        let cq = Cq::builder(&ctx).cqe(8).channel(&channel).build()?;
        let srq = Srq::builder(&pd).max_wr(8).build()?;
        let parent = ParentDomain::new(&ctx, &pd)?;
        let cq_ex = CqEx::<Standard>::builder(&ctx).parent_domain(&parent).build()?;
        let qp = Qp::<Rc>::builder_with_srq(&pd, &cq, &cq_ex, &srq).build()?;
        qp.destroy()?;
        srq.destroy()?;
        cq.destroy()?;
        channel.destroy()?;
        cq_ex.destroy()?;
        parent.destroy()?;
        pd.destroy()?;
    }
    {
        // The same objects, dropped at the end of the scope in reverse order.
        let pd = Pd::new(&ctx)?;
        let cq = Cq::builder(&ctx).cqe(8).build()?;
        let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    }
    ctx.close()?;
    Ok(())
}
