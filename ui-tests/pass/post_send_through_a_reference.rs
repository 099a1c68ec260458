// Neighbour of send_wr_for_ud_on_rc: `post_send` takes the QP's own work request as `&wr`, and
// as `&wr` where `wr` is already a reference (`for wr in &wrs`), as when it took a `&SendWr` and
// the compiler dereferenced the argument to it. Each arrives.
use typed_verbs::{
    Access, AccessFlags, AddressVector, ConnectedInit, Context, Cq, GlobalRoute, Mr, Mtu, Pd, Qp, Rc, RcRtr, RcRts,
    SendWr, WorkCompletion,
};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(16).build()?;
    let tx = Mr::new(&pd, b"abcd".to_vec(), Access::LOCAL_WRITE)?;
    let rx = Mr::new(&pd, vec![0u8; 4], Access::LOCAL_WRITE)?;

    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq).max_send_wr(8).max_recv_wr(8).build()?;
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: qp.qp_num(), rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let qp = qp.to_init(init)?.to_rtr(rtr)?.to_rts(rts)?;

    let sges: Vec<[typed_verbs::Sge; 1]> = (0..4).map(|i| [tx.sge(i..i + 1).unwrap()]).collect();
    for i in 0..4 {
        qp.post_recv(10 + i, &[rx.sge(i as usize..i as usize + 1).unwrap()])?;
    }
    let wrs: Vec<SendWr<'_, Rc>> = sges[..2].iter().zip(0..).map(|(s, i)| SendWr::send(i, s).signaled()).collect();
    for wr in &wrs {
        qp.post_send(&wr)?; // `wr` is a `&SendWr`: this is a `&&SendWr`
    }
    let third = SendWr::send(2, &sges[2]).signaled();
    qp.post_send(&&third)?;
    qp.post_send(&SendWr::send(3, &sges[3]).signaled())?;

    let mut wc: [WorkCompletion; 8] = Default::default();
    let mut done = 0;
    while done < 8 {
        done += cq.poll(&mut wc[done..])?.len();
    }
    assert!(wc.iter().all(|c| c.success().is_some()), "{wc:?}");
    let mut out = [0u8; 4];
    rx.read(0, &mut out)?;
    assert_eq!(&out, b"abcd");
    Ok(())
}
