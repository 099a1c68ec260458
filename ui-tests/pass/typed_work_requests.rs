// Neighbour of post_send_before_rts, post_recv_before_init, post_recv_on_srq_qp, rdma_read_on_uc
// and rdma_write_on_ud: each QP type's legal work requests built, receives posted from INIT on
// (on the QP or on its SRQ). Nothing is sent: the send side is exercised by the runtime tests.
use typed_verbs::{Access, AccessFlags, ConnectedInit, Context, Cq, Mr, Pd, Qp, RawPacket, Rc, SendWr, Srq, Uc, UdInit, Ud};

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let pd = Pd::new(&ctx)?;
    let cq = Cq::builder(&ctx).cqe(8).build()?;
    let buf = vec![0u8; 64];
    let mr = Mr::new(&pd, buf, Access::REMOTE_WRITE | Access::REMOTE_READ | Access::REMOTE_ATOMIC)?;
    let sgl = [mr.sge(0..64).unwrap()];
    let word = mr.atomic_result(0).unwrap();
    let remote = mr.remote().at(0, 64).unwrap();
    let target = mr.remote().atomic_at(0).unwrap();

    let _ = SendWr::<Rc>::send(1, &sgl).signaled();
    let _ = SendWr::<Rc>::send_inline(2, b"inline").solicited();
    let _ = SendWr::<Rc>::send_with_imm(3, &sgl, 7);
    let _ = SendWr::<Rc>::rdma_write(4, &sgl, remote);
    let _ = SendWr::<Rc>::rdma_write_with_imm(5, &sgl, remote, 8);
    let _ = SendWr::<Rc>::rdma_read(6, &sgl, remote);
    let _ = SendWr::<Rc>::compare_swap(7, &word, target, 0, 1);
    let _ = SendWr::<Rc>::fetch_add(8, &word, target, 1);
    let _ = SendWr::<Uc>::send_with_imm(9, &sgl, 7);
    let _ = SendWr::<Uc>::rdma_write_with_imm(10, &sgl, remote, 8);
    let _ = SendWr::<RawPacket>::send(11, &sgl);

    let init = ConnectedInit { port_num: 1, pkey_index: 0, access: AccessFlags::LOCAL_WRITE };
    let rc = Qp::<Rc>::builder(&pd, &cq, &cq).build()?.to_init(init)?;
    rc.post_recv(12, &sgl)?;
    let srq = Srq::builder(&pd).max_wr(4).build()?;
    let ud = Qp::<Ud>::builder_with_srq(&pd, &cq, &cq, &srq).build()?;
    let _ud = ud.to_init(UdInit { port_num: 1, pkey_index: 0, qkey: 1 })?;
    srq.post_recv(13, &sgl)?;
    Ok(())
}
