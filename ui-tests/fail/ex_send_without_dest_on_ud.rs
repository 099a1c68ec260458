// A UD send in a batch without its address: ibv_wr_set_ud_addr is mandatory on UD, and only
// `send_to` (which takes the UdDest) exists there.
mod common;
use typed_verbs::prelude::*;
use typed_verbs::send_ops;

fn main() -> Result<()> {
    let (pd, cq) = common::pd_and_cq()?;
    let mut qp = Qp::<Ud>::builder(&pd, &cq, &cq).max_inline_data(16).send_ops::<send_ops!(SEND)>().build()?
        .to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 0x11 })?.to_rtr(())?.to_rts(SqPsn { sq_psn: 0 })?;
    qp.post_batch(|b| b.send(1).inline(b"to whom?"))
}
