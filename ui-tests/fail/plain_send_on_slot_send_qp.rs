// A plain send on a QP whose send CQ is a slot CQ: its completion would carry a wr_id that is
// not a slot.
use typed_verbs::{wc_flags, Context, CqEx, Pd, Qp, Rc, SendWr};
use typed_verbs::qp_state::Rts;

fn post(qp: &Qp<'_, Rc, typed_verbs::SlotRq<typed_verbs::slots::SlotSends>, typed_verbs::Shared, (), Rts>) {
    let _ = qp.post_send(&SendWr::send_inline(7, b"hi").signaled());
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(8).slots().build()?;
    let _qp = Qp::<Rc>::slot_builder(&pd, &cq, &cq).build()?;
    let _ = post;
    Ok(())
}
