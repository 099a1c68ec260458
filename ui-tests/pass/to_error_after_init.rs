// ERR from every state that left RESET: INIT here, and through a generic function bounded by
// `NotReset` (the states `to_error` takes), RTS.
use typed_verbs::prelude::*;
use typed_verbs::qp_state::{ErrorState, NotReset};
use typed_verbs::{OwnRq, QpState, Shared};

fn flush<'a, St: QpState + NotReset>(
    qp: Qp<'a, Ud, OwnRq, Shared, (), St>,
) -> Result<Qp<'a, Ud, OwnRq, Shared, (), ErrorState>> {
    qp.to_error()
}

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let init = UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 };
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq).build()?.to_init(init)?;
    let qp = qp.to_error()?.to_reset()?;
    let qp = qp.to_init(init)?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    let qp = flush(qp)?;
    let _again = flush(qp)?; // ERR -> ERR is in the table too
    Ok(())
}
