// `?` on QP transitions and destroys into `Box<dyn Error>` (and its Send + Sync form), with
// handles that borrow locals: the error does not carry the QP, so no lifetime leaks into it.
use std::error::Error;
use typed_verbs::{
    AccessFlags, AddressVector, ConnectedInit, Context, Cq, Mtu, Pd, Qp, Rc, RcRtr, SqPsn, Ud, UdInit,
};

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
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let qp = qp.to_init(ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::NONE })?;
    // On RoCE (sw0 is) an address vector needs a global route: the device refuses, and the
    // error says which transition it was.
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: None };
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: 1, rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let e = qp.to_rtr(rtr).expect_err("no global route on RoCE");
    let boxed: Box<dyn Error> = e.into();
    assert!(boxed.to_string().starts_with("ibv_modify_qp INIT->RTR failed"));
    Ok(())
}
