// Posting a receive on a QP still in RESET.
use typed_verbs::{Access, Context, Cq, Mr, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    qp.post_recv(1, &[mr.sge(0..64).unwrap()])?;
    Ok(())
}
