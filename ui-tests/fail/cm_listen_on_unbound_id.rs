// rdma_listen on a CM id that was never bound.
use typed_verbs::cm::{CmId, EventChannel, Tcp};
use typed_verbs::Context;

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let ch = EventChannel::new(&ctx)?;
    let _listener = CmId::<Tcp>::new(&ch)?.listen(8)?;
    Ok(())
}
