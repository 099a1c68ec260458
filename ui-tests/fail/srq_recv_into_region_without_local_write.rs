// The same rule on an SRQ (ibv_post_srq_recv(3)): a receive is written by the device, so its
// SGEs must lie in a region with LOCAL_WRITE; `Access::NONE` has none. Neighbour:
// typed_access_rights.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let srq = Srq::builder(&pd).max_wr(4).build()?;
    let source = Mr::new(&pd, vec![1u8; 4096], Access::NONE)?;
    srq.post_recv(1, &[source.sge(0..64).unwrap()])?;
    Ok(())
}
