// A fixed-size list of three SGEs for a QP whose type promises two send SGEs.
mod common;
use typed_verbs::qp_state::Rts;
use typed_verbs::{Access, Mr, OwnRq, Qp, Rc, SendWr, Shared};

fn post(qp: &Qp<'_, Rc, OwnRq, Shared, (), Rts, 2>, mr: &Mr<'_>) {
    let sgl = [
        mr.sge(0..8).unwrap(),
        mr.sge(8..16).unwrap(),
        mr.sge(16..24).unwrap(),
    ];
    let _ = qp.post_send(&SendWr::send(1, &sgl));
}

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let _qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .send_sge_cap::<2>()
        .build()?;
    let _ = post;
    drop(mr);
    Ok(())
}
