// A record with `slot` polled on a plain CQ, whose wr_ids are the program's numbers, not slots.
use typed_verbs::{completion_record, wc_flags, Context, CqEx};

completion_record! {
    struct Recv { slot, byte_len }
    max_batch = 8;
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(8).build()?;
    Recv::poll(&mut cq, |r| drop(r))?;
    Ok(())
}
