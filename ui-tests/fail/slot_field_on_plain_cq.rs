// A record with `slot` polled on a plain CQ, whose wr_ids are the program's numbers, not slots.
mod common;
use typed_verbs::{completion_record, wc_flags, CqEx};

completion_record! {
    struct Recv { slot, byte_len }
    max_batch = 8;
}

fn main() -> Result<(), typed_verbs::Error> {
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(common::sw0()).cqe(8).build()?;
    Recv::poll(&mut cq, |r| drop(r))?;
    Ok(())
}
