// An RC QP brought to RTS with retry_cnt 9 (the field is 3 bits: 0..=7). `connect_with`
// makes the three transitions (INIT, RTR, RTS); the other QP makes them first, with the defaults.
use peer_typed_verbs::{Outcome, Step};
use typed_verbs::prelude::*;
use typed_verbs::RcParams;

fn main() {
    peer_typed_verbs::report((|| -> Outcome<String> {
        let ctx = Context::open(&peer_typed_verbs::device())?;
        let pd = Pd::new(&ctx)?;
        let cq = Cq::builder(&ctx).cqe(8).build()?;
        let (a, b) = (
            Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
            Qp::<Rc>::builder(&pd, &cq, &cq).build()?,
        );
        let (ea, eb) = (a.endpoint(1, 0)?, b.endpoint(1, 0)?);
        let _b = b
            .connect(&eb, &ea, AccessFlags::LOCAL_WRITE)
            .setup("connect with the defaults")?;
        let params = RcParams {
            retry_cnt: 9,
            ..RcParams::default()
        };
        let _a = a
            .connect_with(&ea, &eb, AccessFlags::LOCAL_WRITE, params)
            .misuse("connect_with retry_cnt 9 (with the defaults, the other QP reached RTS)")?;
        Ok("the QP reached RTS with retry_cnt 9".into())
    })());
}
