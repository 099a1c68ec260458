// A generated poll loop that reads imm_data, used on a CQ created without IBV_WC_EX_WITH_IMM.
mod common;
use typed_verbs::{completion_record, wc_flags, CqEx};

completion_record! {
    struct Recv { wr_id, byte_len, imm_data }
    max_batch = 8;
}

fn main() -> Result<(), typed_verbs::Error> {
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(common::sw0()).cqe(4).build()?;
    Recv::poll(&mut cq, |r| drop(r))?;
    Ok(())
}
