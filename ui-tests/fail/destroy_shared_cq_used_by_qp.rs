// Destroying a shared CQ that a QP still uses: the QP keeps the CQ alive through its own `Arc`,
// so the CQ cannot be taken out of the `Arc` to be destroyed (ibv_destroy_cq would fail with
// EBUSY). Drop the `Arc` instead: the CQ is destroyed after its last user.
use std::sync::Arc;
use typed_verbs::{Context, CqEx, Pd, Qp, Rc, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Arc::new(Context::open("sw0")?);
    let pd = Arc::new(Pd::new(&ctx)?);
    let cq = Arc::new(CqEx::<Standard>::builder(&ctx).cqe(4).build()?);
    let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    cq.destroy()?;
    Ok(())
}
