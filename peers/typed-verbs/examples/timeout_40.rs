// An RC QP brought to RTS with timeout 40 (the field is 5 bits: 0..=31).
use typed_verbs::prelude::*;
use typed_verbs::RcParams;

fn main() {
    peer_typed_verbs::report((|| -> Result<String> {
        let ctx = Context::open(&peer_typed_verbs::device())?;
        let pd = Pd::new(&ctx)?;
        let cq = Cq::builder(&ctx).cqe(8).build()?;
        let (a, b) = (
            Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
            Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
        );
        let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
        let params = RcParams {
            timeout: 40,
            ..RcParams::default()
        };
        let _a = a.connect_with(&ea, &eb, AccessFlags::LOCAL_WRITE, params)?;
        Ok("the QP reached RTS with timeout 40".into())
    })());
}
