// INIT -> RTR of an RC QP without min_rnr_timer, which the transition requires.
mod common;
use typed_verbs::{AddressVector, Mtu, Qp, Rc, RcRtr};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let dest = qp.qp_num();
    let qp = qp.to_init(common::INIT)?;
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh: None };
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: dest, rq_psn: 0, max_dest_rd_atomic: 1 };
    let _qp = qp.to_rtr(rtr)?;
    Ok(())
}
