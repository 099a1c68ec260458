// Neighbour of slot_used_after_post, slot_field_on_plain_cq, slot_cq_for_plain_qp,
// plain_send_on_slot_send_qp, plain_recv_on_slot_qp and slot_record_with_wr_id: an RC pair on
// sw0 that receives into slots (own receive queue and SRQ) and sends from slots, reads the
// received bytes with no copy, and gets every slot back through a generated loop and through
// poll_batch; a slot-mode QP with a plain send CQ still posts plain sends.
use typed_verbs::qp_state::{Reset, Rts};
use typed_verbs::{
    Access, completion_record, wc_flags, AccessFlags, AddressVector, ConnectedInit, Context, Cq, CqEx,
    GlobalRoute, Mtu, PageBuf, Pd, Qp, Rc, RcRtr, RcRts, RecvSide, SendWr, Shared, Slot, Srq,
    WcOpcode,
};

completion_record! {
    /// A completion of the slot CQ.
    struct Msg { slot, opcode, byte_len }
    max_batch = 8;
}

fn up<'a, R: RecvSide>(
    ctx: &Context,
    qp: Qp<'a, Rc, R, Shared, (), Reset>,
    dest: u32,
) -> Result<Qp<'a, Rc, R, Shared, (), Rts>, typed_verbs::Error> {
    let grh = Some(GlobalRoute {
        dgid: ctx.query_gid(1, 0)?,
        flow_label: 0,
        sgid_index: 0,
        hop_limit: 1,
        traffic_class: 0,
    });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let rtr = RcRtr {
        av,
        path_mtu: Mtu::Mtu1024,
        dest_qp_num: dest,
        rq_psn: 0,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
    };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    Ok(qp
        .to_init(init)?
        .to_rtr(rtr)?
        .to_rts(rts)?)
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = std::sync::Arc::new(Context::open("sw0")?);
    let pd = std::sync::Arc::new(Pd::new(&ctx)?);
    let mut cq = CqEx::<wc_flags!(BYTE_LEN)>::builder(&ctx).cqe(16).slots().build()?;
    let srq = Srq::builder(&pd).max_wr(4).slots().build()?;
    let (shared, mut poller) = cq.split();
    let a = Qp::<Rc>::slot_builder(&pd, shared, shared).max_send_wr(4).max_recv_wr(4).build()?;
    let b = Qp::<Rc>::slot_builder_with_srq(&pd, shared, shared, &srq).max_send_wr(4).build()?;
    let (an, bn) = (a.qp_num(), b.qp_num());
    let (a, b) = (up(&ctx, a, bn)?, up(&ctx, b, an)?);

    let mut slots = Slot::register(&pd, PageBuf::new(4096)?, Access::LOCAL_WRITE, 1024)?;
    srq.post_recv_slot(slots.pop().unwrap())?;
    a.post_recv_slot(slots.pop().unwrap())?;
    let mut out = slots.pop().unwrap();
    out[..5].copy_from_slice(b"hello"); // not posted: a plain `&mut [u8]`
    a.post_send_slot(out, 5)?; // moved into the queue
    let mut sent = None;
    let mut seen = 0;
    while seen < 2 {
        seen += Msg::poll(&mut poller, |r| match r {
            Ok(m) if m.opcode() == WcOpcode::RECV => assert_eq!(&m.received()[..], b"hello"),
            Ok(m) => sent = Some(m.into_slot()), // the send's slot, writable again
            Err(e) => panic!("{e:?}"),
        })?;
    }
    let mut back = sent.expect("the send's slot");
    back[..2].copy_from_slice(b"hi");
    b.post_send_slot(back, 2)?;
    // The receive on `a` and the send of `b`, through poll_batch.
    let mut seen = 0;
    while seen < 2 {
        let got = poller.poll_batch(|mut batch| {
            let slot = batch.take_slot().expect("a slot per completion");
            let c = batch.completion().result().expect("success");
            if c.opcode() == WcOpcode::RECV {
                assert_eq!(&typed_verbs::Received::new(slot, c.byte_len())[..], b"hi");
            }
        })?;
        seen += got.is_some() as usize;
    }
    // A slot-mode QP whose send CQ is plain takes plain sends.
    let plain = Cq::builder(&ctx).cqe(4).build()?;
    let c = Qp::<Rc>::slot_builder(&pd, &plain, shared).build()?;
    let _ = (plain_sends as fn(&_) -> _, c);
    Ok(())
}

fn plain_sends(qp: &Qp<'_, Rc, typed_verbs::SlotRq, Shared, (), Rts>) -> typed_verbs::Result<()> {
    qp.post_send(&SendWr::send_inline(1, b"x").signaled())
}
