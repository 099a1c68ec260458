// A helper generic over the QP type and the receive side that posts a plain send, without the
// bounds that say it may: the first error names the bound to add. Neighbour:
// generic_send_helper (the same helper with `T: FixedDest, R: PlainSendQueue`).
use typed_verbs::prelude::*;
use typed_verbs::qp::FixedDest;
use typed_verbs::RecvSide;

fn send_one<T: FixedDest, R: RecvSide>(qp: &Qp<'_, T, R, Shared, (), Rts>, sge: Sge<'_>) -> Result<()> {
    qp.post_send(&SendWr::send(1, &[sge]).signaled())
}

fn main() {
    let _ = send_one::<Rc, OwnRq>;
}
