// Reading src_qp from a CQ created without IBV_WC_EX_WITH_SRC_QP.
mod common;
use typed_verbs::{CqEx, NoFields};

fn main() -> Result<(), typed_verbs::Error> {
    let mut cq = CqEx::<NoFields>::builder(common::sw0()).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Ok(wc) = batch.completion().result() {
            let _ = wc.src_qp();
        }
    })?;
    Ok(())
}
