// Neighbour of post_send_chain_before_rts: a chain of sends posted on an RC QP in RTS
// (connected to itself) arrives in order; an empty chain posts nothing and is Ok.
use typed_verbs::{
    Access, AccessFlags, AddressVector, ConnectedInit, Context, Cq, GlobalRoute, Mr, Mtu, Pd, Qp, Rc, RcRtr, RcRts,
    SendWr, WorkCompletion,
};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let tx = Mr::new(&pd, b"firstsecond".to_vec(), Access::LOCAL_WRITE)?;
    let rx = Mr::new(&pd, vec![0u8; 16], Access::LOCAL_WRITE)?;

    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(4).max_recv_wr(4).build()?;
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: qp.qp_num(), rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let qp = qp.to_init(init)?.to_rtr(rtr)?.to_rts(rts)?;

    qp.post_recv(1, &[rx.sge(0..5).unwrap()])?;
    qp.post_recv(2, &[rx.sge(5..11).unwrap()])?;
    qp.post_send_chain::<0>(&[])?;
    let (first, second) = ([tx.sge(0..5).unwrap()], [tx.sge(5..11).unwrap()]);
    qp.post_send_chain(&[SendWr::send(3, &first).signaled(), SendWr::send(4, &second).signaled()])
        ?;
    let mut wc: [WorkCompletion; 4] = Default::default();
    let mut done = 0;
    while done < 4 {
        done += cq.poll(&mut wc[done..])?.len();
    }
    assert!(wc.iter().all(|c| c.success().is_some()), "{wc:?}");
    let mut out = [0u8; 11];
    rx.read(0, &mut out)?;
    assert_eq!(&out, b"firstsecond");
    Ok(())
}
