// A work request built for a UD QP posted to an RC QP.
use typed_verbs::qp_state::Rts;
use typed_verbs::{OwnRq, Qp, Rc, SendWr, Shared, Ud};

fn post(rc: &Qp<'_, Rc, OwnRq, Shared, (), Rts>, wr: &SendWr<'_, Ud>) {
    let _ = rc.post_send(wr);
}

fn main() {
    let _ = post;
}
