// Sharing a CQ created with IBV_CREATE_CQ_ATTR_SINGLE_THREADED with another thread.
use typed_verbs::{Context, CqEx, SingleThreaded, Standard};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let cq = CqEx::<Standard, SingleThreaded>::builder(&ctx)
        .cqe(4)
        .build()?;
    std::thread::scope(|s| {
        s.spawn(|| cq.req_notify(false));
    });
    Ok(())
}
