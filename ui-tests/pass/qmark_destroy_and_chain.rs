// `?` on every destroy and on post_send_chain in a function returning the crate's Result: a
// failed destroy is an Error (the object is dropped; `try_destroy` gives it back), a chain's
// PostError converts to the Error of the first request not posted.
use typed_verbs::prelude::*;

fn main() -> Result<()> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let ch = CompChannel::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).channel(&ch).build()?;
    let cq_ex = CqEx::<Standard>::builder(&ctx).cqe(8).build()?;
    let mr = Mr::new(&pd, PageBuf::new(64)?, Access::REMOTE_WRITE)?;
    let gid = ctx.query_gid(1, 0)?;
    let grh = Some(GlobalRoute { dgid: gid, flow_label: 0, sgid_index: 0, hop_limit: 1, traffic_class: 0 });
    let av = AddressVector { dlid: 0, sl: 0, src_path_bits: 0, static_rate: 0, port_num: 1, grh };
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq_ex).max_send_wr(4).build()?;
    let rtr = RcRtr { av, path_mtu: Mtu::Mtu1024, dest_qp_num: qp.qp_num(), rq_psn: 0, max_dest_rd_atomic: 1, min_rnr_timer: 12 };
    let rts = RcRts { sq_psn: 0, timeout: 14, retry_cnt: 7, rnr_retry: 7, max_rd_atomic: 1 };
    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::REMOTE_WRITE };
    let qp = qp.to_init(init)?.to_rtr(rtr)?.to_rts(rts)?;

    let (a, b) = ([mr.sge(0..8).unwrap()], [mr.sge(8..16).unwrap()]);
    let target = mr.remote();
    qp.post_send_chain(&[
        SendWr::rdma_write(1, &a, target.at(32, 8).unwrap()),
        SendWr::rdma_write(2, &b, target.at(40, 8).unwrap()).signaled(),
    ])?;
    let mut wc: [WorkCompletion; 1] = Default::default();
    while cq.poll(&mut wc)?.is_empty() {}

    qp.destroy()?;
    let buf: PageBuf = mr.destroy()?;
    assert_eq!(buf.len(), 64);
    cq.destroy()?;
    cq_ex.destroy()?;
    ch.destroy()?;
    pd.destroy()?;
    ctx.close()?;
    Ok(())
}
