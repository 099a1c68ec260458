// A send SGE cap no device offers (and no type can hold): 65.
use typed_verbs::{Context, Cq, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).send_sge_cap::<65>().build()?;
    Ok(())
}
