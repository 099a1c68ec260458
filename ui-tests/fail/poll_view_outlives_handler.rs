// Keeping a generated loop's completion view after the handler returned (the batch moved on).
use typed_verbs::{completion_record, wc_flags, Context, CqEx};

completion_record! {
    struct Recv { wr_id, byte_len }
    max_batch = 8;
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(4).build()?;
    let mut kept = Vec::new();
    Recv::poll(&mut cq, |r| kept.push(r))?;
    drop(kept);
    Ok(())
}
