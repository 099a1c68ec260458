// Neighbour of rc_params_for_uc_connect and query_rc_params_of_uc: an RC QP connects with
// `RcParams` and reads them back (the extended RC QP too), a UC QP connects with `()`.
mod common;
use typed_verbs::connect::RcParams;
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let params = RcParams { timeout: 12, retry_cnt: 3, ..RcParams::default() };

    let rc = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let e = rc.endpoint(1, 0)?;
    let rc = rc.connect_with(&e, &e, AccessFlags::LOCAL_WRITE, params)?;
    assert_eq!(rc.query_rc_params()?, params);

    let ex = Qp::<Rc>::builder(&pd, &cq, &cq).send_ops::<send_ops!(SEND)>().build()?;
    let e = ex.endpoint(1, 0)?;
    let ex = ex.connect_with(&e, &e, AccessFlags::LOCAL_WRITE, params)?;
    assert_eq!(ex.query_rc_params()?, params);

    let uc = Qp::<Uc>::builder(&pd, &cq, &cq).build()?;
    let e = uc.endpoint(1, 0)?;
    let uc = uc.connect_with(&e, &e, AccessFlags::LOCAL_WRITE, ())?;
    drop((rc, ex, uc));
    Ok(())
}
