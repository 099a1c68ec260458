// A helper generic over the QP type and the receive side that posts a plain send, without the
// bounds that say it may: the first error names the bound to add. Neighbour:
// generic_send_helper (the same helper with `T: Connected, R: PlainSendQueue`).
use typed_verbs::prelude::*;
use typed_verbs::wr::Connected;
use typed_verbs::RecvSide;

fn send_one<T: Connected, R: RecvSide>(qp: &Qp<'_, T, R, Shared, (), Rts>, sge: Sge<'_>) -> Result<()> {
    qp.post_send(&SendWr::send(1, &[sge]).signaled())
}

fn main() {
    let _ = send_one::<Rc, OwnRq>;
}
