// Neighbour of imm_data_without_imm, byte_len_without_flag, src_qp_without_flag and
// completion_ts_without_flag: the same reads on a CQ whose type has the flags.
use typed_verbs::{software, wc_flags, Context, CqEx, InjectedCompletion, WcOpcode};

type Flags = wc_flags!(BYTE_LEN | IMM | SRC_QP | COMPLETION_TIMESTAMP);

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Flags>::builder(&ctx).cqe(4).build()?;
    let c = InjectedCompletion::success(1, WcOpcode::RECV).byte_len(8).imm_data(5).src_qp(9).completion_ts(77);
    software::inject(&cq, c)?;
    cq.poll_batch(|batch| {
        let wc = batch.completion().result().expect("success");
        assert_eq!((wc.byte_len(), wc.imm_data(), wc.src_qp(), wc.completion_ts()), (8, Some(5), 9, 77));
    })?
    .expect("no completion");
    Ok(())
}
