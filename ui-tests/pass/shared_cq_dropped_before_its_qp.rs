// Neighbour of destroy_shared_cq_used_by_qp: dropping the program's references to a shared CQ,
// PD and context before the QP that uses them. The QP keeps them alive; they are destroyed
// after it, children first. `Arc::into_inner` hands a parent back for an explicit destroy once
// nothing uses it.
use std::sync::Arc;
use typed_verbs::{Context, CqEx, Pd, Qp, Rc, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    drop(cq);
    drop(pd);
    qp.destroy()?; // then the CQ and the PD, which only it held
    Arc::into_inner(ctx).expect("no object holds the context").close()?;
    Ok(())
}
