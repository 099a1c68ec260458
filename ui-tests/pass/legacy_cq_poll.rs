// Neighbour of poll_batch_on_legacy_cq: a legacy CQ is polled with ibv_poll_cq into an array.
use typed_verbs::{software, Context, Cq, InjectedCompletion, WcOpcode, WorkCompletion};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = Cq::builder(&ctx).cqe(4).context("label").build()?;
    software::inject(&cq, InjectedCompletion::success(5, WcOpcode::RECV).byte_len(12))?;
    let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
    let got = cq.poll(&mut wc)?;
    assert_eq!(got.len(), 1);
    let ok = got[0].success().expect("success");
    assert_eq!((ok.wr_id(), ok.byte_len(), *cq.user_context()), (5, 12, "label"));
    Ok(())
}
