// Opening a second batch on a CQ while the first is open (ibv_start_poll twice without
// ibv_end_poll), through the CQ's poller: inside the first batch's closure, the poller is
// still mutably borrowed. (Through `CqEx::poll_batch`, which takes `&self`, the second is
// refused at run time, `ErrorKind::BatchOpen`, before any call: tests/typed/ownership.rs.)
use typed_verbs::{Context, CqEx, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard>::builder(&ctx).cqe(4).build()?;
    let mut poller = cq.poller()?;
    poller.poll_batch(|first| {
        let second = poller.poll_batch(|second| second.completion().wr_id());
        drop((first, second));
    })?;
    Ok(())
}
