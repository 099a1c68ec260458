// Reading src_qp from a CQ created without IBV_WC_EX_WITH_SRC_QP.
use typed_verbs::{Context, CqEx, NoFields};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<NoFields>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Ok(wc) = batch.completion().result() {
            let _ = wc.src_qp();
        }
    })?;
    Ok(())
}
