// Opening an ibv_start_poll batch on a CQ created with ibv_create_cq.
use typed_verbs::{Context, Cq};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let mut cq = Cq::builder(&ctx).cqe(4).build()?;
    let _n = cq.poll_batch(|_batch| 0)?;
    Ok(())
}
