// Neighbour of ex_send_without_dest_on_ud: a UD send in a batch names its destination.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::{send_ops, AddressHandle};

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = Qp::<Ud>::builder(&pd, &cq, &cq).max_inline_data(16).send_ops::<send_ops!(SEND)>().build()?
        .to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    let ah = AddressHandle::new(&pd, common::loopback()?)?;
    let to = UdDest::new(&ah, qp.qp_num(), 0x11);
    qp.post_batch(|b| b.send_to(1, to).signaled().inline(b"to me"))?;
    common::expect_successes(&cq, 1)
}
