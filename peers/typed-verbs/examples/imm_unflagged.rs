// Reading imm_data from a CQ created without IBV_WC_EX_WITH_IMM.
use typed_verbs::{wc_flags, Context, CqEx};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(4).build()?;
    cq.poll_batch(|batch| {
        if let Ok(wc) = batch.completion().result() {
            let _ = wc.imm_data();
        }
    })?;
    Ok(())
}
