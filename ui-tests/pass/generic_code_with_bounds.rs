// Neighbour of imm_data_in_generic_code and to_rtr_in_generic_code: the same generic functions
// with the bounds their errors name (`F: WithImm`, `St: FromInit`), called on a CQ with IMM and
// a QP in INIT.
use typed_verbs::cq_ex::WithImm;
use typed_verbs::prelude::*;
use typed_verbs::qp_state::FromInit;
use typed_verbs::{software, Batch, InjectedCompletion, WcFlags};

fn imm_of<F: WcFlags + WithImm>(batch: &Batch<'_, F>) -> Option<u32> {
    batch.completion().result().ok().and_then(|wc| wc.imm_data())
}

fn bring_up<'a, St: FromInit>(qp: Qp<'a, Ud, OwnRq, Shared, (), St>) -> Result<Qp<'a, Ud, OwnRq, Shared, (), Rtr>> {
    qp.to_rtr(())
}

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<wc_flags!(IMM)>::builder(&ctx).cqe(4).build()?;
    software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV).imm_data(5))?;
    let imm = cq.poll_batch(|batch| imm_of(&batch))?.expect("a completion");
    assert_eq!(imm, Some(5));

    let pd = Pd::new(&ctx)?;
    let legacy = Cq::builder(&ctx).cqe(8).build()?;
    let qp = Qp::<Ud>::builder(&pd, &legacy, &legacy).build()?;
    let qp = qp.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    let _qp: Qp<'_, Ud, OwnRq, Shared, (), Rtr> = bring_up(qp)?;
    Ok(())
}
