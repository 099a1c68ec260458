//! The active side's QP of an RC connection made by `CmId::connect` takes the peer's RDMA reads
//! (rping's server reads the client's buffer): the CM adds REMOTE_READ to its access flags only
//! once it knows the responder resources, after `rdma_connect`, so the crate moves the QP INIT →
//! INIT again after the connect response, as librdmacm does for its own QPs. Runs on sw0 and, in
//! the VM lane, on rxe0 (`TYPED_VERBS_CM_ADDR`, default 127.0.0.1).

use crate::common;
use common::{cm_addr, open};
use std::net::SocketAddr;
use std::time::{Duration, Instant};
use typed_verbs::cm::{CmId, ConnParam, Tcp};
use typed_verbs::{
    Access, Cq, Mr, PageBuf, Pd, Qp, Rc, RemoteAddr, SendWr, WcOpcode, WorkCompletion,
};

const T: Duration = Duration::from_secs(10);

/// The first completion of `cq` within `T`.
fn one(cq: &Cq<'_>) -> WorkCompletion {
    let start = Instant::now();
    let mut wc = [const { WorkCompletion::new() }; 1];
    while cq.poll(&mut wc).unwrap().is_empty() {
        assert!(start.elapsed() < T, "a completion within {T:?}");
        std::thread::sleep(Duration::from_millis(1));
    }
    let [w] = wc;
    w
}

#[test]
fn the_server_rdma_reads_the_memory_of_the_client_that_connected() {
    let ctx = open();
    let Some(ch) = common::event_channel(&ctx, "the_server_rdma_reads") else {
        return;
    };
    let pd = Pd::new(&ctx).unwrap();
    let server_cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let client_cq = Cq::builder(&ctx).cqe(8).build().unwrap();
    let listener = CmId::<Tcp>::new(&ch)
        .unwrap()
        .bind(SocketAddr::new(cm_addr(), 0))
        .unwrap()
        .listen(4)
        .unwrap();
    let addr = listener.local_addr().unwrap();
    // The client's source buffer, open to remote reads (as rping's start buffer).
    let source = Mr::new(
        &pd,
        PageBuf::new(64).unwrap(),
        Access::LOCAL_WRITE | Access::REMOTE_READ | Access::REMOTE_WRITE,
    )
    .unwrap();
    source.write(0, b"read me from the other side").unwrap();
    let sink = Mr::new(&pd, PageBuf::new(64).unwrap(), Access::LOCAL_WRITE).unwrap();
    std::thread::scope(|s| {
        let server = s.spawn(|| {
            let req = listener.get_request(T).unwrap();
            let qp = Qp::<Rc>::builder(&pd, &server_cq, &server_cq)
                .build()
                .unwrap();
            req.accept(qp, &ConnParam::default(), T).unwrap()
        });
        // The client hands its QP over in INIT (receives may be posted first, as rping does).
        let id = CmId::<Tcp>::new(&ch)
            .unwrap()
            .resolve_addr(None, addr, T)
            .unwrap()
            .resolve_route(T)
            .unwrap();
        let qp = id
            .init_qp(
                Qp::<Rc>::builder(&pd, &client_cq, &client_cq)
                    .build()
                    .unwrap(),
            )
            .unwrap();
        let client = id.connect(qp, &ConnParam::default(), T).unwrap();
        let server = server.join().unwrap();
        let r = source.remote();
        let sge = sink.sge(0..27).unwrap();
        server
            .qp()
            .post_send(
                &SendWr::rdma_read(
                    7,
                    &[sge],
                    RemoteAddr::from_peer(r.addr(), r.rkey(), Access::REMOTE_READ),
                )
                .signaled(),
            )
            .unwrap();
        let wc = one(&server_cq);
        let ok = wc
            .success()
            .unwrap_or_else(|| panic!("the RDMA read failed: {:?}", wc.status()));
        assert_eq!((ok.wr_id(), ok.opcode()), (7, WcOpcode::RDMA_READ));
        let mut got = [0u8; 27];
        sink.read(0, &mut got).unwrap();
        assert_eq!(&got, b"read me from the other side");
        drop((client, server));
    });
}
