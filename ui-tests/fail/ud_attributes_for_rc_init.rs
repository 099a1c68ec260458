// RESET -> INIT of an RC QP given a UD QP's attributes (a qkey instead of access flags).
use typed_verbs::{Context, Cq, Pd, Qp, Rc, UdInit};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let _qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    Ok(())
}
