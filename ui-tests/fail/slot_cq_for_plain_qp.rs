// A slot CQ as the CQ of a plain QP, whose receives carry the program's wr_ids.
use typed_verbs::{wc_flags, Context, CqEx, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(8).slots().build()?;
    let _qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    Ok(())
}
