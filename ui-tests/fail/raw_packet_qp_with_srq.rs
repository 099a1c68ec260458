// A RAW_PACKET QP associated with an SRQ.
mod common;
use typed_verbs::{Qp, RawPacket, Srq};

fn main() -> Result<(), typed_verbs::Error> {
    let (pd, cq) = common::pd_and_cq()?;
    let srq = Srq::builder(&pd).max_wr(8).build()?;
    let _qp = Qp::<RawPacket>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    Ok(())
}
