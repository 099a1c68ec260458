// rdma_connect on a CM id whose address is resolved but not its route.
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnParam, EventChannel, Tcp};
use typed_verbs::{Context, Cq, Pd, Qp, Rc};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let (pd, cq) = (Pd::new(&ctx)?, Cq::builder(&ctx).cqe(8).build()?);
    let ch = EventChannel::new(&ctx)?;
    let t = Duration::from_secs(2);
    let id = CmId::<Tcp>::new(&ch)?.resolve_addr(None, "127.0.0.1:7471".parse().unwrap(), t)?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build()?;
    let _conn = id.connect(qp, &ConnParam::default(), t)?;
    Ok(())
}
