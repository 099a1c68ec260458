// INIT -> RTR in code generic over the QP's state `St`, without the bound that says it starts
// from INIT.
use typed_verbs::prelude::*;
use typed_verbs::QpState;

fn bring_up<'a, St: QpState>(qp: Qp<'a, Ud, OwnRq, Shared, (), St>) -> Result<Qp<'a, Ud, OwnRq, Shared, (), Rtr>> {
    qp.to_rtr(())
}

fn main() {
    let _ = bring_up::<Init>;
}
