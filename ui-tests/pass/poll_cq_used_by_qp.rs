// Neighbour of two_batches_one_cq and destroy_cq_used_by_qp: an extended CQ that QPs use is
// split into the shared half they borrow and the one poller; the poller opens batches (on
// another thread, for a Shared CQ) while the QPs live.
use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, Pd, Qp, Rc, Ud, WcOpcode};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let mut cq = CqEx::<wc_flags!(BYTE_LEN | QP_NUM)>::builder(&ctx).cqe(8).build()?;
    let (shared, mut poller) = cq.split();
    let rc = Qp::<Rc>::builder(&pd, shared, shared).build()?;
    let ud = Qp::<Ud>::builder(&pd, shared, shared).build()?;
    for qp in [rc.qp_num(), ud.qp_num()] {
        software::inject(shared, InjectedCompletion::success(qp.into(), WcOpcode::RECV).qp_num(qp).byte_len(32))?;
    }
    let seen = std::thread::scope(|s| {
        s.spawn(move || -> Result<Vec<(u64, u32)>, typed_verbs::Error> {
            let mut seen = Vec::new();
            poller
                .poll_batch(|batch| -> Result<(), typed_verbs::Error> {
                    let mut next = Some(batch);
                    while let Some(batch) = next {
                        let wc = batch.completion().result().expect("success");
                        seen.push((wc.wr_id(), wc.qp_num()));
                        next = batch.advance()?;
                    }
                    Ok(())
                })?
                .transpose()?;
            Ok(seen)
        })
        .join()
        .unwrap()
    })?;
    assert_eq!(seen, [(rc.qp_num().into(), rc.qp_num()), (ud.qp_num().into(), ud.qp_num())]);
    rc.destroy()?;
    ud.destroy()?;
    cq.destroy()?;
    Ok(())
}
