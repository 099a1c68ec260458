// A RAW_PACKET QP associated with an SRQ.
use typed_verbs::{Context, Cq, Pd, Qp, RawPacket, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let _qp = Qp::<RawPacket>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    Ok(())
}
