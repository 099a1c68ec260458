// RESET -> ERR: the kernel's qp_state_table has no such transition (its RESET row names only
// RESET and INIT), so `to_error` is only for a QP that left RESET.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let _flushed = qp.to_error()?;
    Ok(())
}
