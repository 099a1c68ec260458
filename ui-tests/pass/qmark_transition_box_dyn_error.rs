// `?` on QP transitions and destroys into `Box<dyn Error>` (and its Send + Sync form), with
// handles that borrow locals: the error does not carry the QP, so no lifetime leaks into it.
use std::error::Error;
use typed_verbs::{Context, Cq, Pd, Qp, SqPsn, Ud, UdInit};

fn bring_up(ctx: &Context) -> Result<u32, Box<dyn Error + Send + Sync>> {
    let pd = Pd::new(ctx)?;
    let cq = Cq::builder(ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    let n = qp.qp_num();
    qp.destroy()?;
    cq.destroy()?;
    pd.destroy()?;
    Ok(n)
}

fn main() -> Result<(), Box<dyn Error>> {
    let ctx = Context::open("sw0")?;
    let n = bring_up(&ctx).map_err(|e| e as Box<dyn Error>)?;
    assert!(n > 0);
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?;
    // RESET -> ERR is not in the kernel's table: the error says which transition it was.
    let e = qp.to_error().expect_err("RESET -> ERR is refused");
    let boxed: Box<dyn Error> = e.into();
    assert!(boxed.to_string().starts_with("ibv_modify_qp RESET->ERR failed"));
    Ok(())
}
