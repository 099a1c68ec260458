// rdma_resolve_route on a CM id whose destination address was never resolved.
use std::time::Duration;
use typed_verbs::cm::{CmId, EventChannel, Tcp};
use typed_verbs::Context;

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let ch = EventChannel::new(&ctx)?;
    let _id = CmId::<Tcp>::new(&ch)?.resolve_route(Duration::from_secs(2))?;
    Ok(())
}
