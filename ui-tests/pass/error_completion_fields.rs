// Neighbour of success_field_on_error_completion and field_on_unchecked_completion: a failed
// completion's wr_id, status and vendor_err; a successful one's opcode after `.result()`.
use typed_verbs::{software, Context, CqEx, InjectedCompletion, Standard, WcOpcode, WcStatus};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    software::inject(&cq, InjectedCompletion::error(3, WcStatus::REM_ACCESS_ERR, 0x42))?;
    software::inject(&cq, InjectedCompletion::success(4, WcOpcode::RDMA_WRITE))?;
    cq.poll_batch(|batch| -> typed_verbs::Result<()> {
        let failed = batch.completion().result().expect_err("a failure");
        assert_eq!((failed.wr_id(), failed.status(), failed.vendor_err()), (3, WcStatus::REM_ACCESS_ERR, 0x42));
        let batch = batch.advance()?.expect("a second completion");
        let ok = batch.completion().result().expect("a success");
        assert_eq!((ok.wr_id(), ok.opcode()), (4, WcOpcode::RDMA_WRITE));
        Ok(())
    })?
    .expect("empty")?;
    Ok(())
}
