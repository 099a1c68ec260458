// Posting a send on the QP of a connect request before the request is accepted: the QP is in
// INIT (receives may be posted there; sends wait for the accept, which brings it to RTS).
use std::time::Duration;
use typed_verbs::cm::{CmId, EventChannel, Tcp};
use typed_verbs::{Access, Context, Cq, Mr, Pd, Qp, Rc, SendWr};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let (pd, cq) = (Pd::new(&ctx)?, Cq::builder(&ctx).cqe(8).build()?);
    let mr = Mr::new(&pd, vec![0u8; 64], Access::LOCAL_WRITE)?;
    let ch = EventChannel::new(&ctx)?;
    let listener = CmId::<Tcp>::new(&ch)?.bind("127.0.0.1:0".parse().unwrap())?.listen(8)?;
    let req = listener.get_request(Duration::from_secs(2))?;
    let qp = req.init_qp(Qp::<Rc>::builder(&pd, &cq, &cq).build()?)?;
    let sgl = [mr.sge(0..64).unwrap()];
    qp.post_send(&SendWr::send(1, &sgl))?;
    Ok(())
}
