// An event loop as a new user writes it: wait for the completion event, poll a batch inside
// `if let`, and re-arm the CQ right there, while a QP uses the CQ and the batch's result is
// still in scope. The CQ's poller borrows it shared, like the QP does.
use typed_verbs::{
    software, CompChannel, Context, CqEx, InjectedCompletion, Pd, Qp, Rc, Standard, WcOpcode,
};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let channel = CompChannel::new(&ctx)?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(8).channel(&channel).build()?;
    let pd = Pd::new(&ctx)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    cq.req_notify(false)?;
    software::inject(&cq, InjectedCompletion::success(1, WcOpcode::RECV))?;
    let mut poller = cq.poller()?;
    let mut seen = 0;
    while seen < 1 {
        let event = channel.get_cq_event()?;
        assert!(event.is_for(&cq));
        event.ack();
        if let Some(wr_id) = poller.poll_batch(|batch| batch.completion().wr_id())? {
            cq.req_notify(false)?; // re-arm before the next wait
            assert_eq!((wr_id, qp.qp_num() > 0), (1, true));
            seen += 1;
        }
    }
    Ok(())
}
