//! The typed rdma_cm layer (src/cm/): connect, accept and reject with private data both
//! ways, RC and UD traffic over CM connections, a peer's disconnect as an event, address errors,
//! a connect to a port nobody listens on, timeouts, dropped and forgotten values, threads and
//! tasks sharing a channel. Runs on sw0 (with the software CM) and, in the VM lane, on rxe0 with
//! `TYPED_VERBS_CM_ADDR` set to rxe0's address (default 127.0.0.1).
//!
//! Where the device has no connection manager (EOPNOTSUPP from rdma_create_event_channel) each
//! test prints a SKIP line.

use crate::common;
use common::{cm_addr, note};
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::cm::{
    CmEventKind, CmId, ConnEvent, ConnParam, Connection, EventChannel, PortSpace, RouteResolved,
    Tcp, Udp,
};
use typed_verbs::{
    Access, AddressHandle, Cq, ErrorKind, Mr, Qp, Rc, SendWr, Ud, UdDest, Verb, WorkCompletion,
};

const T: Duration = Duration::from_secs(10);

use common::CmSetup as Setup;

/// The test device, a PD, a CQ and an event channel; `None` (with a SKIP line) where the device
/// has no connection manager.
fn setup(test: &str) -> Option<Setup> {
    common::cm_setup(test)
}

fn listener<P: PortSpace>(s: &Setup) -> (CmId<P, typed_verbs::cm::Listening>, SocketAddr) {
    let l = CmId::<P>::new(&s.ch)
        .unwrap()
        .bind(SocketAddr::new(cm_addr(), 0))
        .unwrap()
        .listen(8)
        .unwrap();
    let addr = l.local_addr().expect("a bound listener has an address");
    assert_ne!(addr.port(), 0, "an ephemeral port was chosen");
    (l, addr)
}

fn rc_qp(s: &Setup) -> Qp<'static, Rc> {
    Qp::<Rc>::builder(&s.pd, &s.cq, &s.cq)
        .max_send_wr(8)
        .max_recv_wr(8)
        .build()
        .unwrap()
}

fn ud_qp(s: &Setup) -> Qp<'static, Ud> {
    Qp::<Ud>::builder(&s.pd, &s.cq, &s.cq)
        .max_send_wr(8)
        .max_recv_wr(8)
        .build()
        .unwrap()
}

/// Polls `cq` until `n` completions came (each must succeed), or panics after `limit`.
fn completions(cq: &Cq<'_>, n: usize, limit: Duration) -> Vec<(u64, u32)> {
    let got = common::poll_n(cq, n, limit, Duration::ZERO, |w| {
        let ok = w
            .success()
            .unwrap_or_else(|| panic!("completion failed: {:?}", w.status()));
        (ok.wr_id(), ok.byte_len())
    });
    assert!(
        got.len() >= n,
        "{n} completions within {limit:?}, got {got:?}"
    );
    got
}

/// A client's id on the setup's channel with its address and route to `addr` resolved.
fn routed<P: PortSpace>(s: &Setup, addr: SocketAddr) -> CmId<P, RouteResolved> {
    routed_via(&s.ch, addr)
}

/// An id of `ch` with its address and route to `addr` resolved (at most [`T`] each).
fn routed_via<P: PortSpace>(ch: &EventChannel, addr: SocketAddr) -> CmId<P, RouteResolved> {
    let id = CmId::<P>::new(ch)
        .unwrap()
        .resolve_addr(None, addr, T)
        .unwrap();
    id.resolve_route(T).unwrap()
}

/// A region of `len` zeroed bytes in the setup's PD, to receive into (shared with the
/// server's thread).
fn rx_region(s: &Setup, len: usize) -> Arc<Mr<'static, Vec<u8>>> {
    Arc::new(Mr::new(&s.pd, vec![0u8; len], Access::LOCAL_WRITE).unwrap())
}

/// The default connection parameters with `private_data` for the peer.
fn carrying(private_data: &[u8]) -> ConnParam<'_> {
    ConnParam {
        private_data,
        ..ConnParam::default()
    }
}

/// A current-thread tokio runtime with I/O only, for the tests that poll futures by hand.
#[cfg(feature = "tokio")]
fn io_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .build()
        .unwrap()
}

/// A current-thread tokio runtime with I/O and time, for the async tests.
#[cfg(feature = "tokio")]
fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

/// An RC connection in one process: the server half in a thread, the client here.
fn rc_pair(
    s: &Setup,
    client_data: &[u8],
    server_data: &[u8],
) -> (Connection<'static, Tcp>, Connection<'static, Tcp>) {
    let (l, addr) = listener::<Tcp>(s);
    let qp = rc_qp(s);
    let server_data = server_data.to_vec();
    let server = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        req.accept(qp, &carrying(&server_data), T).unwrap()
    });
    let id = CmId::<Tcp>::new(&s.ch)
        .unwrap()
        .resolve_addr(None, addr, T)
        .unwrap();
    assert_eq!(id.peer_addr(), Some(addr));
    let id = id.resolve_route(T).unwrap();
    let client = id.connect(rc_qp(s), &carrying(client_data), T).unwrap();
    (client, server.join().unwrap())
}

#[test]
fn rc_connect_and_accept_carry_private_data_both_ways_then_a_send_and_an_rdma_write() {
    let Some(s) = setup("rc_connect_and_accept") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"from the client", b"from the server");
    // RC private data is padded (REQ to 56 bytes, REP to 196): the sent bytes come first.
    assert_eq!(&server.private_data()[..15], b"from the client");
    assert_eq!(&client.private_data()[..15], b"from the server");
    assert!(server.private_data().len() >= 15 && client.private_data().len() >= 15);
    assert_eq!(client.peer_param().qp_num, server.qp().qp_num());
    assert_eq!(server.peer_param().qp_num, client.qp().qp_num());
    assert_eq!(client.peer_addr(), server.local_addr());
    assert!(client.ud_peer().is_none());

    let src = Mr::new(&s.pd, vec![0u8; 64], Access::LOCAL_WRITE).unwrap();
    let dst = Mr::new(
        &s.pd,
        vec![0u8; 64],
        Access::LOCAL_WRITE | Access::REMOTE_WRITE,
    )
    .unwrap();
    src.write(0, b"over rdma_cm").unwrap();
    server
        .qp()
        .post_recv(1, &[dst.sge(0..32).unwrap()])
        .unwrap();
    let sge = [src.sge(0..12).unwrap()];
    client
        .qp()
        .post_send(&SendWr::send(2, &sge).signaled())
        .unwrap();
    let at = dst.remote().at(32, 12).unwrap();
    client
        .qp()
        .post_send(&SendWr::rdma_write(3, &sge, at).signaled())
        .unwrap();
    let mut got = completions(&s.cq, 3, T);
    got.sort();
    assert_eq!(got.iter().map(|g| g.0).collect::<Vec<_>>(), [1, 2, 3]);
    assert_eq!(got[0].1, 12, "the receive's byte count");
    let mut bytes = [0u8; 44];
    dst.read(0, &mut bytes).unwrap();
    assert_eq!(
        (&bytes[..12], &bytes[32..44]),
        (&b"over rdma_cm"[..], &b"over rdma_cm"[..])
    );
}

#[test]
fn receives_posted_in_init_before_connect_and_accept_catch_the_first_sends() {
    let Some(s) = setup("receives_posted_in_init") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let rx = rx_region(&s, 64);
    let (qp, rx2) = (rc_qp(&s), rx.clone());
    let server = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        let qp = req.init_qp(qp).unwrap();
        qp.post_recv(10, &[rx2.sge(0..32).unwrap()]).unwrap();
        req.accept(qp, &ConnParam::default(), T).unwrap()
    });
    let id = routed::<Tcp>(&s, addr);
    let qp = id.init_qp(rc_qp(&s)).unwrap();
    qp.post_recv(20, &[rx.sge(32..64).unwrap()]).unwrap();
    let client = id.connect(qp, &ConnParam::default(), T).unwrap();
    let server = server.join().unwrap();
    let tx = Mr::new(&s.pd, vec![7u8; 8], Access::LOCAL_WRITE).unwrap();
    let sge = [tx.sge(0..8).unwrap()];
    client.qp().post_send(&SendWr::send(1, &sge)).unwrap();
    server.qp().post_send(&SendWr::send(2, &sge)).unwrap();
    let mut got = completions(&s.cq, 2, T);
    got.sort();
    assert_eq!(got, [(10, 8), (20, 8)]);
}

#[test]
fn a_reject_gives_the_connecting_side_the_status_and_the_private_data() {
    let Some(s) = setup("a_reject_gives_the_status") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let server = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        assert_eq!(&req.private_data()[..5], b"let's");
        req.reject(b"go away").unwrap();
        l
    });
    let id = routed::<Tcp>(&s, addr);
    let e = id.connect(rc_qp(&s), &carrying(b"let's"), T).unwrap_err();
    assert_eq!(e.verb, Verb::Connect);
    match &e.kind {
        ErrorKind::Rejected {
            status,
            private_data,
        } => {
            assert_eq!(*status, 28, "IB_CM_REJ_CONSUMER_DEFINED");
            assert_eq!(&private_data[..7], b"go away");
        }
        other => panic!("expected a rejection, got {other:?} ({e})"),
    }
    assert_eq!(e.errno(), libc::ECONNREFUSED);
    let text = e.to_string();
    assert!(
        text.starts_with("rdma_connect rejected by the peer: status 28"),
        "{text}"
    );
    drop(server.join().unwrap());
}

#[test]
fn private_data_over_the_port_spaces_limit_is_refused_before_the_call() {
    let Some(s) = setup("private_data_over_the_limit") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let id = routed::<Tcp>(&s, addr);
    let long = [0u8; 57];
    let e = id.connect(rc_qp(&s), &carrying(&long), T).unwrap_err();
    assert_eq!(e.verb, Verb::Connect);
    assert!(
        matches!(
            e.kind,
            ErrorKind::OutOfRange {
                what: "private_data_len",
                value: 57,
                min: 0,
                max: 56
            }
        ),
        "{e}"
    );
    // Nothing reached the listener.
    let e = l.get_request(Duration::from_millis(300)).unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CmTimedOut(_)), "{e}");
}

#[test]
fn a_dropped_request_rejects_the_peer_and_the_listener_serves_the_next() {
    let Some(s) = setup("a_dropped_request_rejects") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let l = Arc::new(l);
    let (l2, qp) = (l.clone(), rc_qp(&s));
    let server = std::thread::spawn(move || {
        drop(l2.get_request(T).unwrap()); // rejected and destroyed
        let req = l2.get_request(T).unwrap();
        req.accept(qp, &ConnParam::default(), T).unwrap()
    });
    let connect = || {
        let id = CmId::<Tcp>::new(&s.ch)
            .unwrap()
            .resolve_addr(None, addr, T)
            .unwrap();
        id.resolve_route(T)
            .unwrap()
            .connect(rc_qp(&s), &ConnParam::default(), T)
    };
    let e = connect().unwrap_err();
    assert!(matches!(e.kind, ErrorKind::Rejected { .. }), "{e}");
    let _client = connect().unwrap();
    let _server = server.join().unwrap();
}

#[test]
fn a_connect_to_a_port_nobody_listens_on_is_rejected() {
    let Some(s) = setup("a_connect_to_a_port_nobody_listens_on") else {
        return;
    };
    // A port that was just free: bound, then released.
    let addr = {
        let (l, addr) = listener::<Tcp>(&s);
        drop(l);
        addr
    };
    let id = routed::<Tcp>(&s, addr);
    let e = id.connect(rc_qp(&s), &ConnParam::default(), T).unwrap_err();
    match e.kind {
        ErrorKind::Rejected { status, .. } => {
            note(
                "a_connect_to_a_port_nobody_listens_on",
                format!("REJECTED status {status}"),
            );
            assert_eq!(status, 8, "IB_CM_REJ_INVALID_SERVICE_ID: {e}");
        }
        ref other => panic!("expected REJECTED, got {other:?}: {e}"),
    }
}

#[test]
fn an_address_no_device_reaches_is_an_address_error_not_a_hang() {
    let Some(s) = setup("an_address_no_device_reaches") else {
        return;
    };
    // TEST-NET-1 (RFC 5737): no route to it from the test device.
    let dst: SocketAddr = "192.0.2.1:7471".parse().unwrap();
    let start = Instant::now();
    let cm_timeout = Duration::from_millis(500);
    let e = CmId::<Tcp>::new(&s.ch)
        .unwrap()
        .resolve_addr(None, dst, cm_timeout)
        .unwrap_err();
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "answered in time: {:?}",
        start.elapsed()
    );
    assert_eq!(e.verb, Verb::ResolveAddr);
    match e.kind {
        ErrorKind::CmEvent { event, status } => {
            note(
                "an_address_no_device_reaches",
                format!("{event}, status {status}"),
            );
            assert_eq!(
                event,
                CmEventKind::from_raw(1),
                "RDMA_CM_EVENT_ADDR_ERROR: {e}"
            );
            assert!(status < 0, "a negative errno: {e}");
        }
        ErrorKind::Os(errno) => note(
            "an_address_no_device_reaches",
            format!("rdma_resolve_addr refused: errno {errno}"),
        ),
        ref other => panic!("expected an address error, got {other:?}: {e}"),
    }
}

#[test]
fn waiting_for_a_request_times_out_with_a_typed_error() {
    let Some(s) = setup("waiting_for_a_request_times_out") else {
        return;
    };
    let (l, _) = listener::<Tcp>(&s);
    let start = Instant::now();
    let e = l.get_request(Duration::from_millis(200)).unwrap_err();
    let took = start.elapsed();
    assert!(
        took >= Duration::from_millis(200) && took < Duration::from_secs(3),
        "{took:?}"
    );
    assert_eq!((e.verb, e.errno()), (Verb::GetCmEvent, libc::ETIMEDOUT));
    assert!(matches!(e.kind, ErrorKind::CmTimedOut(t) if t == Duration::from_millis(200)));
}

#[test]
fn a_disconnect_by_the_client_is_an_event_on_the_server_and_flushes_the_clients_qp() {
    let Some(s) = setup("a_disconnect_by_the_client") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"", b"");
    let rx = Mr::new(&s.pd, vec![0u8; 16], Access::LOCAL_WRITE).unwrap();
    client.qp().post_recv(5, &[rx.sge(0..16).unwrap()]).unwrap();
    let (qp, id) = client.disconnect().unwrap();
    assert_eq!(server.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
    // rdma_disconnect(3): "This routine should be called by both the client and server side
    // of a connection": the server's answers the client's (a DREP to its DREQ).
    let (_server_qp, server_id) = server.disconnect().unwrap();
    assert_eq!(id.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
    assert_ne!(
        server_id.next_event(Duration::from_millis(100)).unwrap(),
        Some(ConnEvent::Disconnected),
        "one DISCONNECTED per side"
    );
    // The QP is in ERR: the posted receive flushed.
    let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
    let start = Instant::now();
    loop {
        let got = s.cq.poll(&mut wc).unwrap();
        if let Some(w) = got.first() {
            assert_eq!(w.wr_id(), 5);
            assert!(w.success().is_none(), "flushed, not completed");
            break;
        }
        assert!(start.elapsed() < T, "the receive flushed");
    }
    drop((qp, id));
}

#[test]
fn a_server_that_drops_its_connection_is_seen_disconnecting_by_the_client() {
    let Some(s) = setup("a_server_that_drops_its_connection") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"", b"");
    assert_eq!(
        client.next_event(Duration::from_millis(100)).unwrap(),
        None,
        "nothing yet"
    );
    drop(server); // QP destroyed, then the id: the CM sends a DREQ
    assert_eq!(client.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
}

#[test]
fn ud_over_the_cm_the_active_side_learns_the_peer_and_a_datagram_arrives() {
    let Some(s) = setup("ud_over_the_cm") else {
        return;
    };
    let (l, addr) = listener::<Udp>(&s);
    let rx = rx_region(&s, 4096);
    let (qp, rx2) = (ud_qp(&s), rx.clone());
    let server = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        assert_eq!(&req.private_data()[..4], b"ping");
        let qp = req.init_qp(qp).unwrap();
        qp.post_recv(1, &[rx2.sge(0..40 + 64).unwrap()]).unwrap(); // GRH + payload
        req.accept(qp, &carrying(b"pong")).unwrap()
    });
    let id = routed::<Udp>(&s, addr);
    let client = id.connect(ud_qp(&s), &carrying(b"ping"), T).unwrap();
    let server = server.join().unwrap();
    assert_eq!(&client.private_data()[..4], b"pong");
    let peer = client.ud_peer().expect("the active side learns its peer");
    assert_eq!(peer.qp_num, server.qp().qp_num());
    assert_eq!(peer.qkey, 0x0123_4567, "RDMA_UDP_QKEY");
    assert!(server.ud_peer().is_none());
    let ah = AddressHandle::new(&s.pd, peer.av).unwrap();
    let tx = Mr::new(&s.pd, b"datagram".to_vec(), Access::LOCAL_WRITE).unwrap();
    let sge = [tx.sge(0..8).unwrap()];
    let dest = UdDest::new(&ah, peer.qp_num, peer.qkey);
    client
        .qp()
        .post_send(&SendWr::send_to(2, &sge, dest).signaled())
        .unwrap();
    // UD may lose: a bounded wait that reports the loss rather than hanging.
    let got = completions(&s.cq, 2, T);
    let recv = got.iter().find(|g| g.0 == 1).expect("the datagram arrived");
    assert_eq!(recv.1, 40 + 8, "GRH + payload");
    let mut b = [0u8; 8];
    rx.read(40, &mut b).unwrap();
    assert_eq!(&b, b"datagram");
}

#[test]
fn two_threads_waiting_on_one_channel_each_get_their_own_ids_events() {
    let Some(s) = setup("two_threads_waiting_on_one_channel") else {
        return;
    };
    let (l1, a1) = listener::<Tcp>(&s);
    let (l2, a2) = listener::<Tcp>(&s);
    let (q1, q2) = (rc_qp(&s), rc_qp(&s));
    let serve =
        |l: CmId<Tcp, typed_verbs::cm::Listening>, qp: Qp<'static, Rc>, tag: &'static [u8]| {
            std::thread::spawn(move || {
                let req = l.get_request(T).unwrap();
                assert_eq!(
                    &req.private_data()[..tag.len()],
                    tag,
                    "each listener its own request"
                );
                req.accept(qp, &ConnParam::default(), T).unwrap()
            })
        };
    let (s1, s2) = (serve(l1, q1, b"first"), serve(l2, q2, b"second"));
    // Both servers wait on the same channel; connect to the second first.
    std::thread::sleep(Duration::from_millis(50));
    let connect = |addr, tag: &[u8]| {
        let id = routed::<Tcp>(&s, addr);
        id.connect(rc_qp(&s), &carrying(tag), T).unwrap()
    };
    let c2 = connect(a2, b"second");
    let c1 = connect(a1, b"first");
    let (x1, x2) = (s1.join().unwrap(), s2.join().unwrap());
    assert_eq!(c1.peer_param().qp_num, x1.qp().qp_num());
    assert_eq!(c2.peer_param().qp_num, x2.qp().qp_num());
}

#[test]
fn destroying_ids_while_another_thread_waits_on_the_channel_does_not_hang() {
    let Some(s) = setup("destroying_ids_while_another_thread_waits") else {
        return;
    };
    let (l, _) = listener::<Tcp>(&s);
    let waiter = std::thread::spawn(move || l.get_request(Duration::from_millis(1500)));
    for _ in 0..20 {
        let (other, addr) = listener::<Tcp>(&s);
        let id = CmId::<Tcp>::new(&s.ch)
            .unwrap()
            .resolve_addr(None, addr, T)
            .unwrap();
        drop(other);
        drop(id);
    }
    let e = waiter.join().unwrap().unwrap_err();
    assert!(matches!(e.kind, ErrorKind::CmTimedOut(_)), "{e}");
}

#[test]
fn a_listener_dropped_with_an_unread_request_rejects_it_without_hanging() {
    let Some(s) = setup("a_listener_dropped_with_an_unread_request") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let id = routed::<Tcp>(&s, addr);
    let (qp, l2) = (rc_qp(&s), l);
    let dropper = std::thread::spawn(move || {
        // Let the request arrive (read and queued by the connecting thread's wait), then
        // drop the listener without reading it.
        std::thread::sleep(Duration::from_millis(300));
        drop(l2);
    });
    let start = Instant::now();
    let e = id.connect(qp, &ConnParam::default(), T).unwrap_err();
    assert!(start.elapsed() < T, "{e}");
    assert!(
        matches!(
            e.kind,
            ErrorKind::Rejected { .. } | ErrorKind::CmEvent { .. }
        ),
        "the connect fails: {e}"
    );
    dropper.join().unwrap();
}

#[test]
fn forgotten_requests_connections_and_channels_only_leak() {
    let Some(s) = setup("forgotten_values_only_leak") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"", b"");
    std::mem::forget(client); // its id and QP leak; nothing dangles
                              // The channel still works for others.
    let (client2, server2) = rc_pair(&s, b"again", b"");
    assert_eq!(&server2.private_data()[..5], b"again");
    drop((server, client2, server2));
    std::mem::forget(s.ch.clone());
    let (l, addr) = listener::<Tcp>(&s);
    let id = routed::<Tcp>(&s, addr);
    let qp = rc_qp(&s);
    let t = std::thread::spawn(move || {
        let req = l.get_request(T).unwrap();
        std::mem::forget(req); // never answered: the peer's connect times out or is rejected
        l
    });
    let e = id
        .connect(qp, &ConnParam::default(), Duration::from_secs(2))
        .unwrap_err();
    assert!(
        matches!(
            e.kind,
            ErrorKind::CmTimedOut(_) | ErrorKind::Rejected { .. } | ErrorKind::CmEvent { .. }
        ),
        "{e}"
    );
    drop(t.join().unwrap());
}

#[test]
fn a_connection_of_arcd_parents_is_static_and_moves_to_another_thread() {
    let Some(s) = setup("a_connection_of_arcd_parents_is_static") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"", b"");
    fn is_static_send<T: Send + 'static>(_: &T) {}
    is_static_send(&client);
    let rx = rx_region(&s, 16);
    server.qp().post_recv(1, &[rx.sge(0..16).unwrap()]).unwrap();
    let pd = s.pd.clone();
    let sender = std::thread::spawn(move || {
        let tx = Mr::new(&pd, b"moved".to_vec(), Access::LOCAL_WRITE).unwrap();
        client
            .qp()
            .post_send(&SendWr::send(2, &[tx.sge(0..5).unwrap()]).signaled())
            .unwrap();
        std::thread::sleep(Duration::from_millis(200));
        client // dropped by the caller after the completions
    });
    completions(&s.cq, 2, T);
    let client = sender.join().unwrap();
    drop((server, client));
}

#[cfg(feature = "software-device")]
#[test]
fn a_qp_on_another_device_than_the_id_is_refused_before_the_call() {
    let Some(s) = setup("a_qp_on_another_device") else {
        return;
    };
    if !s.ctx.is_software() {
        common::skip(
            "a_qp_on_another_device",
            "whole test: registers a second software device",
        );
        return;
    }
    let other = common::open_registered("sw-cm-other", typed_verbs::software::SwConfig::default());
    let (opd, ocq) = (
        typed_verbs::Pd::new(&other).unwrap(),
        Cq::builder(&other).cqe(4).build().unwrap(),
    );
    let (_l, addr) = listener::<Tcp>(&s);
    let id = routed::<Tcp>(&s, addr);
    let qp = Qp::<Rc>::builder(&opd, &ocq, &ocq).build().unwrap();
    let e = id.connect(qp, &ConnParam::default(), T).unwrap_err();
    assert_eq!(
        (e.verb, e.kind.clone()),
        (Verb::Connect, ErrorKind::NotOnCmDevice),
        "{e}"
    );
}

#[cfg(feature = "tokio")]
#[test]
fn async_connect_and_accept_and_a_cancelled_wait_loses_nothing() {
    let Some(s) = setup("async_connect_and_accept") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let (l, addr) = listener::<Tcp>(&s);
        // A wait cancelled before the request came: the request is not lost.
        {
            let fut = l.get_request_async();
            let cancelled = tokio::time::timeout(Duration::from_millis(50), fut).await;
            assert!(cancelled.is_err(), "nothing came yet");
        }
        // A wait polled once (its waker registered) and then forgotten: it only leaks; the
        // next wait on the listener still gets the request.
        {
            use std::future::Future;
            let mut fut = Box::pin(l.get_request_async());
            std::future::poll_fn(|cx| {
                assert!(fut.as_mut().poll(cx).is_pending(), "nothing came yet");
                std::task::Poll::Ready(())
            })
            .await;
            std::mem::forget(fut);
        }
        let (pd, cq) = (s.pd.clone(), s.cq.clone());
        let server = tokio::spawn(async move {
            let req = l.get_request_async().await.unwrap();
            let qp = Qp::<Rc>::builder(&pd, &cq, &cq).build().unwrap();
            req.accept_async(qp, &carrying(b"async")).await.unwrap()
        });
        let client = async {
            let id = CmId::<Tcp>::new(&s.ch).unwrap();
            let id = id.resolve_addr_async(None, addr, T).await.unwrap();
            let id = id.resolve_route_async(T).await.unwrap();
            id.connect_async(rc_qp(&s), &ConnParam::default())
                .await
                .unwrap()
        };
        let client = client.await;
        let server = server.await.unwrap();
        assert_eq!(&client.private_data()[..5], b"async");
        drop(client);
        let ev = tokio::time::timeout(T, server.next_event_async())
            .await
            .unwrap()
            .unwrap();
        assert_eq!(ev, ConnEvent::Disconnected);
    });
}

/// A waker is user code: one that calls into the CM (here: makes an id on the same channel)
/// must not find the channel's lock held, or the thread that routed the event would wait for
/// itself for ever.
#[cfg(feature = "tokio")]
#[test]
fn a_waker_that_calls_into_the_channel_does_not_deadlock_the_thread_that_routes_its_event() {
    use std::future::Future;
    use std::task::{Context as TaskCx, Poll, Wake, Waker};
    let Some(s) = setup("a_waker_that_calls_into_the_channel") else {
        return;
    };
    struct CallsIn(EventChannel);
    impl Wake for CallsIn {
        fn wake(self: Arc<Self>) {
            drop(CmId::<Tcp>::new(&self.0).unwrap());
        }
    }
    let rt = io_runtime();
    let _enter = rt.enter();
    let (l, addr) = listener::<Tcp>(&s);
    let waker = Waker::from(Arc::new(CallsIn(s.ch.clone())));
    let mut fut = Box::pin(l.get_request_async());
    assert!(fut
        .as_mut()
        .poll(&mut TaskCx::from_waker(&waker))
        .is_pending());
    // The client's own wait reads the request and routes it to the listener: it wakes the
    // waker above.
    let (tx, rx) = std::sync::mpsc::channel();
    let (ch, qp) = (s.ch.clone(), rc_qp(&s));
    std::thread::spawn(move || {
        let id = routed_via::<Tcp>(&ch, addr);
        let r = id.connect(qp, &ConnParam::default(), Duration::from_secs(1));
        let _ = tx.send(r.map(drop));
    });
    let Ok(answered) = rx.recv_timeout(Duration::from_secs(20)) else {
        // The routing thread is stuck holding the channel's lock: dropping anything of the
        // channel here would wait for it too. Fail without.
        std::mem::forget(fut);
        std::mem::forget(l);
        std::mem::forget(s);
        // The runtime too: its shutdown wakes the waker the fd holds, which would wait as well.
        std::mem::forget(_enter);
        std::mem::forget(rt);
        panic!("the connecting thread is stuck in the waker (it woke it under the channel's lock)");
    };
    let e = answered.unwrap_err();
    assert!(
        matches!(e.kind, ErrorKind::CmTimedOut(_)),
        "nobody accepted: {e}"
    );
    // The request was routed to the listener meanwhile.
    match fut.as_mut().poll(&mut TaskCx::from_waker(&waker)) {
        Poll::Ready(r) => drop(r.unwrap()),
        Poll::Pending => panic!("the request was routed to the listener"),
    }
}

/// The software CM reads the channel's context: a context closed or dropped before its channel
/// is refused (EBUSY) and stays open, so the channel never reaches a freed context.
#[cfg(feature = "software-device")]
#[test]
fn a_software_context_dropped_before_its_channel_stays_open_for_it() {
    let ctx = common::open_registered(
        "sw-cm-ctx-first",
        typed_verbs::software::SwConfig::default(),
    );
    let ch = EventChannel::new(&ctx).unwrap();
    let refused = ctx.try_close().unwrap_err();
    assert_eq!(refused.error.errno(), libc::EBUSY, "{}", refused.error);
    drop(refused.object); // dropped: it stays open (a leak), the channel still reaches it
    let l = CmId::<Tcp>::new(&ch)
        .unwrap()
        .bind("127.0.0.1:0".parse().unwrap())
        .unwrap()
        .listen(1)
        .unwrap();
    let id = CmId::<Tcp>::new(&ch).unwrap();
    let id = id.resolve_addr(None, l.local_addr().unwrap(), T).unwrap();
    drop((id, l, ch));
}

/// `Duration::MAX` is a timeout a program may give for "no limit": no verb may overflow
/// computing its deadline (or the CM's own wait plus the crate's slack).
#[test]
fn a_timeout_of_duration_max_waits_without_overflowing() {
    let Some(s) = setup("a_timeout_of_duration_max") else {
        return;
    };
    let (l, addr) = listener::<Tcp>(&s);
    let (ch, qp) = (s.ch.clone(), rc_qp(&s));
    let client = std::thread::spawn(move || {
        let id = CmId::<Tcp>::new(&ch)
            .unwrap()
            .resolve_addr(None, addr, Duration::MAX)
            .unwrap();
        let id = id.resolve_route(Duration::MAX).unwrap();
        id.connect(qp, &ConnParam::default(), Duration::MAX)
            .unwrap()
    });
    let req = l.get_request(Duration::MAX).unwrap();
    let server = req
        .accept(rc_qp(&s), &ConnParam::default(), Duration::MAX)
        .unwrap();
    drop(client.join().unwrap());
    assert_eq!(
        server.next_event(Duration::MAX).unwrap(),
        Some(ConnEvent::Disconnected)
    );
}

/// Two tasks awaiting requests on one shared listener: each is woken for a request. (The
/// listener's queue kept one waker: the second task's replaced the first's, which was never
/// woken again, and the first task waited for ever with a request readable on the fd.)
#[cfg(feature = "tokio")]
#[test]
fn two_tasks_awaiting_requests_on_one_listener_each_get_one() {
    let Some(s) = setup("two_tasks_awaiting_requests_on_one_listener") else {
        return;
    };
    let rt = runtime();
    rt.block_on(async {
        let (l, addr) = listener::<Tcp>(&s);
        let l = Arc::new(l);
        let tasks: Vec<_> = (0..2)
            .map(|_| {
                let l = Arc::clone(&l);
                tokio::spawn(async move { l.get_request_async().await.map(drop) })
            })
            .collect();
        // Both tasks are waiting (their wakers registered) before anybody connects.
        tokio::time::sleep(Duration::from_millis(100)).await;
        let clients: Vec<_> = (0..2)
            .map(|_| {
                let (ch, qp) = (s.ch.clone(), rc_qp(&s));
                std::thread::spawn(move || {
                    let id = routed_via::<Tcp>(&ch, addr);
                    // Each request is dropped by the task that gets it: a rejection.
                    let _ = id.connect(qp, &ConnParam::default(), Duration::from_secs(2));
                })
            })
            .collect();
        let both = tokio::time::timeout(Duration::from_secs(10), async {
            for t in tasks {
                t.await.unwrap().unwrap();
            }
        })
        .await;
        for c in clients {
            c.join().unwrap();
        }
        assert!(both.is_ok(), "a task waiting for a request was never woken");
    });
}

/// A waker is user code and may panic: the other tasks whose events the same thread routed are
/// still woken (the panic reached the caller after the first waker, and the wakers after it
/// were dropped unwoken: those tasks waited for ever with their events queued).
#[cfg(feature = "tokio")]
#[test]
fn a_panicking_waker_does_not_keep_the_other_routed_tasks_asleep() {
    use std::future::Future;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::task::{Context as TaskCx, Poll, Wake, Waker};
    let Some(s) = setup("a_panicking_waker") else {
        return;
    };
    struct Panics;
    impl Wake for Panics {
        fn wake(self: Arc<Self>) {
            panic!("a waker that panics");
        }
    }
    struct Flag(AtomicBool);
    impl Wake for Flag {
        fn wake(self: Arc<Self>) {
            self.0.store(true, Ordering::SeqCst);
        }
    }
    let rt = io_runtime();
    let _enter = rt.enter();
    let (l1, a1) = listener::<Tcp>(&s);
    let (l2, a2) = listener::<Tcp>(&s);
    let (l3, _) = listener::<Tcp>(&s);
    let panics = Waker::from(Arc::new(Panics));
    let flag = Arc::new(Flag(AtomicBool::new(false)));
    let flag_waker = Waker::from(Arc::clone(&flag));
    let mut f1 = Box::pin(l1.get_request_async());
    assert!(f1
        .as_mut()
        .poll(&mut TaskCx::from_waker(&panics))
        .is_pending());
    // Polled last: the fd's reader waker is this one, never the panicking one.
    let mut f2 = Box::pin(l2.get_request_async());
    assert!(f2
        .as_mut()
        .poll(&mut TaskCx::from_waker(&flag_waker))
        .is_pending());
    // Requests to l1 then l2, from ids of another channel: nobody reads this one meanwhile.
    let ch2 = EventChannel::new(&s.ctx).unwrap();
    let clients: Vec<_> = [a1, a2]
        .into_iter()
        .map(|addr| {
            let (ch, qp) = (ch2.clone(), rc_qp(&s));
            let c = std::thread::spawn(move || {
                let id = routed_via::<Tcp>(&ch, addr);
                let _ = id.connect(qp, &ConnParam::default(), Duration::from_secs(1));
            });
            std::thread::sleep(Duration::from_millis(300));
            c
        })
        .collect();
    // This thread reads both requests and routes them: it wakes the panicking waker, then the
    // flag's.
    let woke = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = l3.get_request(Duration::from_millis(10));
    }));
    assert!(
        woke.is_err(),
        "the waker's panic reaches the thread that woke it"
    );
    assert!(
        flag.0.load(Ordering::SeqCst),
        "the task whose request was routed after the panicking waker's was woken"
    );
    match f2.as_mut().poll(&mut TaskCx::from_waker(&flag_waker)) {
        Poll::Ready(r) => drop(r.unwrap()),
        Poll::Pending => panic!("l2's request was routed to it"),
    }
    drop(f1);
    for c in clients {
        c.join().unwrap();
    }
}

/// A channel first awaited in one runtime and then in another: the second runtime's waits
/// still see the fd's events while the first runtime is alive but idle. (The fd was registered
/// once, with the first runtime's reactor, which nobody drove: the wait slept until something
/// else woke it.)
#[cfg(feature = "tokio")]
#[test]
fn a_channel_awaited_in_a_second_runtime_still_gets_its_events() {
    let Some(s) = setup("a_channel_awaited_in_a_second_runtime") else {
        return;
    };
    let (rt1, rt2) = (runtime(), runtime());
    let (l, addr) = listener::<Tcp>(&s);
    rt1.block_on(async {
        let nothing = tokio::time::timeout(Duration::from_millis(20), l.get_request_async()).await;
        assert!(nothing.is_err(), "nobody connected yet");
    });
    let ch2 = EventChannel::new(&s.ctx).unwrap();
    let qp = rc_qp(&s);
    let client = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        let id = routed_via::<Tcp>(&ch2, addr);
        let _ = id.connect(qp, &ConnParam::default(), Duration::from_secs(1));
    });
    let start = Instant::now();
    let got = rt2.block_on(async {
        tokio::time::timeout(Duration::from_secs(5), l.get_request_async()).await
    });
    let took = start.elapsed();
    client.join().unwrap();
    // A timeout's own wake polls the wait once more, which then finds the request: the wait
    // must end before it.
    assert!(
        took < Duration::from_secs(4),
        "the request was seen after {took:?}"
    );
    drop(got.expect("the request came within 5 s").unwrap());
}

/// The state types tell the truth across a disconnect by every path: the crate's QPs are not
/// the CM's (`id->qp` stays NULL), so neither `rdma_disconnect` through a detached id nor the
/// peer's DISCONNECTED event touches them (the kernel's `cma_modify_qp_err` and librdmacm's
/// `ucma_modify_qp_err` do nothing without `id->qp`): each QP is still in RTS, as its type
/// says, and `Connection::disconnect`, which does move its QP, returns it typed `ErrorState`.
#[test]
fn a_disconnect_through_the_id_leaves_each_qp_in_the_state_its_type_says() {
    let Some(s) = setup("a_disconnect_through_the_id") else {
        return;
    };
    let (client, server) = rc_pair(&s, b"", b"");
    let (client_qp, client_id) = client.into_parts();
    client_id.disconnect().unwrap();
    assert_eq!(server.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
    let rts = typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_RTS;
    assert_eq!(client_qp.query_state().unwrap(), rts, "the detached QP");
    assert_eq!(
        server.qp().query_state().unwrap(),
        rts,
        "the peer's QP after DISCONNECTED"
    );
    let (server_qp, _id) = server.disconnect().unwrap();
    assert_eq!(
        server_qp.query_state().unwrap(),
        typed_verbs::ffi::sys::ibv_qp_state::IBV_QPS_ERR,
        "Connection::disconnect's QP, typed ErrorState"
    );
    drop((client_qp, client_id));
}
