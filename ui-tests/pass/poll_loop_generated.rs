// Neighbour of poll_field_without_flag, poll_unknown_field, poll_success_field_in_error_record and
// poll_max_batch_zero: generated loops on a Shared and a SINGLE_THREADED extended CQ, through a
// Poller while QPs use the CQ, and on a legacy CQ; every field on a CQ with all flags.
use typed_verbs::{
    completion_record, software, wc_flags, AllFields, Context, Cq, CqEx, InjectedCompletion, Pd, Qp,
    Rc, SingleThreaded, WcOpcode, WcStatus,
};

completion_record! {
    /// What this program reads of a receive.
    pub struct Recv { wr_id, opcode, byte_len, imm_data }
    /// A failed work request.
    pub struct Failed { wr_id, status, vendor_err }
    max_batch = 2;
}

completion_record! {
    struct Everything {
        wr_id, status, opcode, completion_flags, byte_len, imm_data, invalidated_rkey, qp_num,
        src_qp, slid, sl, dlid_path_bits, completion_ts, completion_wallclock_ns, cvlan, flow_tag
    }
    max_batch = 1;
}

fn main() -> Result<(), typed_verbs::Error> {
    let ctx = Context::open("sw0")?;
    let recv = |id| InjectedCompletion::success(id, WcOpcode::RECV).byte_len(64).imm_data(7);

    let mut shared = CqEx::<wc_flags!(BYTE_LEN | IMM)>::builder(&ctx).cqe(8).build()?;
    for id in 0..3 {
        software::inject(&shared, recv(id))?;
    }
    software::inject(&shared, InjectedCompletion::error(9, WcStatus::WR_FLUSH_ERR, 5))?;
    let mut got = Vec::new();
    assert_eq!(Recv::poll(&mut shared, |r| got.push(r.map(|v| v.to_record())))?, 2, "max_batch bounds a batch");
    assert_eq!(Recv::poll(&mut shared, |r| got.push(r.map(|v| v.to_record())))?, 2);
    assert_eq!(Recv::poll(&mut shared, |r| got.push(r.map(|v| v.to_record())))?, 0, "empty");
    assert_eq!(got[0], Ok(Recv { wr_id: 0, opcode: WcOpcode::RECV, byte_len: 64, imm_data: Some(7) }));
    assert_eq!(got[3], Err(Failed { wr_id: 9, status: WcStatus::WR_FLUSH_ERR, vendor_err: 5 }));

    let mut local = CqEx::<wc_flags!(BYTE_LEN | IMM | QP_NUM), SingleThreaded>::builder(&ctx).cqe(4).build()?;
    software::inject(&local, recv(1))?;
    assert_eq!(Recv::poll(&mut local, |r| assert!(r.is_ok()))?, 1);

    let pd = Pd::new(&ctx)?;
    let mut used = CqEx::<wc_flags!(BYTE_LEN | IMM)>::builder(&ctx).cqe(4).build()?;
    let (shared_half, mut poller) = used.split();
    let _qp = Qp::<Rc>::builder(&pd, shared_half, shared_half).build()?;
    software::inject(shared_half, recv(2))?;
    assert_eq!(Recv::poll(&mut poller, |r| assert_eq!(r.map(|v| v.wr_id()), Ok(2)))?, 1);

    let legacy = Cq::builder(&ctx).cqe(4).build()?;
    software::inject(&legacy, recv(3))?;
    assert_eq!(Recv::poll_legacy(&legacy, |r| assert_eq!(r.map(|r| r.imm_data), Ok(Some(7))))?, 1);

    let mut all = CqEx::<AllFields>::builder(&ctx).cqe(4).build()?;
    software::inject(&all, recv(4).cvlan(3).flow_tag(5).completion_ts(6))?;
    Everything::poll(&mut all, |r| {
        let r = r.expect("success");
        assert_eq!((r.wr_id(), r.cvlan(), r.flow_tag(), r.completion_ts()), (4, 3, 5, 6));
    })?;
    Ok(())
}
