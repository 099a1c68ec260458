// Neighbour of fixed_sgl_over_send_sge_cap, fixed_recv_sgl_over_recv_sge_cap,
// fixed_srq_sgl_over_sge_cap and send_sge_cap_above_typed_max: on an RC QP whose type promises
// three send and two receive SGEs (connected to itself), a fixed list of three is gathered in
// order and scattered over a fixed list of two; a one-element list fits the default cap of 1; a
// slice longer than the actual cap compiles and is refused when posted, with the verb and the
// limit; an SRQ whose type promises two takes a fixed list of two.
use typed_verbs::{
    Access, AccessFlags, AddressVector, ConnectedInit, Context, Cq, ErrorKind, GlobalRoute, Mr, Mtu, Pd, Qp, Rc, RcRtr,
    RcRts, SendWr, Srq, Verb, WorkCompletion,
};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let src = b"aaaabbbbcccc....".to_vec();
    let dst = vec![0u8; 32];
    let tx = Mr::new(&pd, src, Access::LOCAL_WRITE)?;
    let rx = Mr::new(&pd, dst, Access::LOCAL_WRITE)?;

    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).send_sge_cap::<3>().recv_sge_cap::<2>().max_send_wr(4).max_recv_wr(4).build()?;
    assert!(qp.caps().max_send_sge >= 3 && qp.caps().max_recv_sge >= 2);
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: qp.qp_num(), rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let qp = qp.to_init(init)?.to_rtr(rtr)?.to_rts(rts)?;

    // Three SGEs, in reverse order of the buffer: gathered as listed.
    let three = [tx.sge(8..12).unwrap(), tx.sge(4..8).unwrap(), tx.sge(0..4).unwrap()];
    qp.post_recv(1, &[rx.sge(20..26).unwrap(), rx.sge(0..16).unwrap()])?;
    qp.post_send(&SendWr::send(2, &three).signaled())?;
    let mut wc: [WorkCompletion; 2] = Default::default();
    let mut done = 0;
    while done < 2 {
        done += cq.poll(&mut wc[done..])?.len();
    }
    assert!(wc.iter().all(|c| c.success().is_some()), "{wc:?}");
    let (mut head, mut tail) = ([0u8; 6], [0u8; 6]);
    rx.read(20, &mut head)?;
    rx.read(0, &mut tail)?;
    assert_eq!((&head, &tail), (b"ccccbb", b"bbaaaa"));

    // A slice may be longer than the type's cap: the actual cap decides, when posted.
    let over: Vec<_> = (0..qp.caps().max_send_sge as usize + 1).map(|_| tx.sge(0..1).unwrap()).collect();
    let e = qp.post_send(&SendWr::send(3, &over[..])).expect_err("longer than max_send_sge");
    assert_eq!(e.verb, Verb::PostSend);
    assert!(matches!(e.kind, ErrorKind::OutOfRange { .. }), "{e}");

    // A request for a QP of the default type (one send SGE) takes a one-element list.
    let _: SendWr<'_, Rc> = SendWr::send(4, &[tx.sge(0..4).unwrap()]);

    let srq = Srq::builder(&pd).max_wr(4).sge_cap::<2>().build()?;
    assert!(srq.attr().max_sge >= 2);
    srq.post_recv(5, &[rx.sge(0..8).unwrap(), rx.sge(8..16).unwrap()])?;
    Ok(())
}
