// A QP factory generic over any CQ (legacy, extended, Shared or SINGLE_THREADED): the QP's
// threading is named `QpThreading<C>` (Shared only when the CQ is), with no extra bound.
use typed_verbs::prelude::*;

fn make_qp<'a, C: AnyCq>(pd: &'a Pd<'_>, cq: &'a C) -> Result<Qp<'a, Rc, OwnRq, QpThreading<C>>> {
    Qp::<Rc>::builder(pd, cq, cq).max_send_wr(16).max_recv_wr(16).build()
}

/// The same with two CQs.
fn make_qp2<'a, S: AnyCq, R: AnyCq>(pd: &'a Pd<'_>, send: &'a S, recv: &'a R) -> Result<Qp<'a, Ud, OwnRq, QpThreading<S, R>>> {
    Qp::<Ud>::builder(pd, send, recv).build()
}

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let legacy = Cq::builder(&ctx).cqe(8).build()?;
    let shared = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let single = CqEx::<Standard, SingleThreaded>::builder(&ctx).cqe(8).build()?;
    let a: Qp<'_, Rc, OwnRq, Shared> = make_qp(&pd, &legacy)?;
    let b: Qp<'_, Rc, OwnRq, Shared> = make_qp(&pd, &shared)?;
    let c: Qp<'_, Rc, OwnRq, SingleThreaded> = make_qp(&pd, &single)?;
    let d: Qp<'_, Ud, OwnRq, SingleThreaded> = make_qp2(&pd, &legacy, &single)?;
    drop((a, b, c, d));
    Ok(())
}
