// rdma_accept on the listening CM id instead of on the connect request it returned.
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnParam, EventChannel, Tcp};
use typed_verbs::{Context, Cq, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let (pd, cq) = (Pd::new(&ctx)?, Cq::builder(&ctx).cqe(8).build()?);
    let ch = EventChannel::new(&ctx)?;
    let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(8)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    listener.accept(qp, &ConnParam::default(), Duration::from_secs(2))?;
    Ok(())
}
