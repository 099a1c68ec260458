//! Runtime tests that need two nodes: a server half and a client half connected through the
//! typed rdma_cm layer.
//!
//! - `TYPED_VERBS_CM_ROLE`: `both` (default: the two halves in two threads of this process,
//!   over `TYPED_VERBS_CM_ADDR`, default 127.0.0.1), `server` (only the server halves; each
//!   serves exactly one connection and returns) or `client` (only the client halves, connecting
//!   to `TYPED_VERBS_CM_PEER`).
//! - Each test uses its own port: `TYPED_VERBS_CM_PORT_BASE` (default 18600) plus the test's
//!   index. A client half retries its connect for up to 30 s while its server is not yet
//!   listening (rejected with "invalid service ID", or unreachable).
//! - UD waits are bounded and report loss (a NOTE line) instead of hanging.
//!
//! Where the device has no connection manager, each test prints a SKIP line.

mod common;
use common::note;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};
use typed_verbs::cm::{CmId, ConnEvent, ConnParam, Listening, Tcp, Udp};
use typed_verbs::{
    send_ops, Access, AccessFlags, AddressHandle, Context, Cq, Endpoint, ErrorKind, Gid, Mr, Mtu,
    Qp, Rc, RemoteMr, SendWr, Ud, UdDest, WorkCompletion,
};

const T: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Role {
    Both,
    Server,
    Client,
}

fn role() -> Role {
    match std::env::var("TYPED_VERBS_CM_ROLE").as_deref() {
        Err(_) | Ok("") | Ok("both") => Role::Both,
        Ok("server") => Role::Server,
        Ok("client") => Role::Client,
        Ok(other) => panic!("TYPED_VERBS_CM_ROLE={other}: expected both, server or client"),
    }
}

fn ip_env(name: &str, default: &str) -> IpAddr {
    std::env::var(name)
        .ok()
        .filter(|s| !s.is_empty())
        .unwrap_or_else(|| default.to_owned())
        .parse()
        .unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn port(index: u16) -> u16 {
    let base: u16 = std::env::var("TYPED_VERBS_CM_PORT_BASE")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(18600);
    base + index
}

use common::CmSetup as Node;

fn node(test: &str) -> Option<Node> {
    common::cm_setup(test)
}

/// Runs the halves the role asks for: `server` with a listener on the test's port, `client`
/// with the server's address.
fn run<P: typed_verbs::cm::PortSpace>(
    test: &str,
    index: u16,
    server: impl FnOnce(Node, CmId<P, Listening>) + Send + 'static,
    client: impl FnOnce(Node, SocketAddr),
) {
    let r = role();
    let local = ip_env("TYPED_VERBS_CM_ADDR", "127.0.0.1");
    let listen_on = match r {
        Role::Both => SocketAddr::new(local, port(index)),
        _ => SocketAddr::new("0.0.0.0".parse().unwrap(), port(index)),
    };
    let srv = if r != Role::Client {
        let Some(n) = node(test) else { return };
        let l = CmId::<P>::new(&n.ch)
            .unwrap()
            .bind(listen_on)
            .unwrap()
            .listen(4)
            .unwrap();
        Some(std::thread::spawn(move || server(n, l)))
    } else {
        None
    };
    if r != Role::Server {
        let Some(n) = node(test) else { return };
        let peer = match r {
            Role::Client => ip_env("TYPED_VERBS_CM_PEER", "127.0.0.1"),
            _ => local,
        };
        client(n, SocketAddr::new(peer, port(index)));
    }
    if let Some(s) = srv {
        s.join().expect("the server half");
    }
}

/// Resolves and connects with a fresh QP from `make` each time, retrying while the server is
/// not listening yet, for up to 30 s.
fn connect_retrying<P: typed_verbs::cm::PortSpace, Q, C>(
    n: &Node,
    to: SocketAddr,
    mut attempt: impl FnMut(CmId<P, typed_verbs::cm::RouteResolved>) -> typed_verbs::Result<C>,
) -> C {
    let start = Instant::now();
    let _ = std::marker::PhantomData::<Q>;
    loop {
        let r = CmId::<P>::new(&n.ch)
            .and_then(|id| id.resolve_addr(None, to, Duration::from_secs(2)))
            .and_then(|id| id.resolve_route(Duration::from_secs(2)))
            .and_then(&mut attempt);
        match r {
            Ok(c) => return c,
            Err(e)
                if start.elapsed() < T
                    && matches!(
                        e.kind,
                        ErrorKind::Rejected { status: 8, .. }
                            | ErrorKind::CmEvent { .. }
                            | ErrorKind::CmTimedOut(_)
                    ) =>
            {
                std::thread::sleep(Duration::from_millis(200));
            }
            Err(e) => panic!("connecting to {to}: {e}"),
        }
    }
}

fn wait_completions(cq: &Cq<'_>, n: usize, limit: Duration) -> Vec<(u64, u32)> {
    let start = Instant::now();
    let mut got = Vec::new();
    let mut wc: [WorkCompletion; 8] = std::array::from_fn(|_| WorkCompletion::new());
    while got.len() < n && start.elapsed() < limit {
        let polled = cq.poll(&mut wc).unwrap();
        if polled.is_empty() {
            // The peer may be a thread of this process (the software device, role `both`):
            // under valgrind, which runs one thread at a time, a spinning poll can starve it.
            std::thread::yield_now();
        }
        for w in polled {
            let ok = w
                .success()
                .unwrap_or_else(|| panic!("completion failed: {:?}", w.status()));
            got.push((ok.wr_id(), ok.byte_len()));
        }
    }
    got
}

/// Waits (up to 30 s) for the successful completion of `wr_id` and returns its byte count;
/// completions of other work requests polled meanwhile wait in `pending` for their turn.
fn wait_for(cq: &Cq<'_>, pending: &mut Vec<(u64, u32)>, wr_id: u64) -> u32 {
    let start = Instant::now();
    loop {
        if let Some(i) = pending.iter().position(|p| p.0 == wr_id) {
            return pending.remove(i).1;
        }
        assert!(start.elapsed() < T, "completion {wr_id} within {T:?}");
        pending.extend(wait_completions(cq, 1, Duration::from_millis(100)));
    }
}

#[test]
fn rc_echo_over_the_cm_then_the_clients_disconnect_reaches_the_server() {
    const N: u64 = 16;
    run::<Tcp>(
        "rc_echo_over_the_cm",
        0,
        |n, l| {
            let req = l.get_request(T).unwrap();
            assert_eq!(&req.private_data()[..5], b"hello");
            let buf = Mr::new(&n.pd, vec![0u8; 4096], Access::LOCAL_WRITE).unwrap();
            let qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq)
                .max_recv_wr(4)
                .build()
                .unwrap();
            let qp = req.init_qp(qp).unwrap();
            qp.post_recv(0, &[buf.sge(0..64).unwrap()]).unwrap();
            let conn = req
                .accept(
                    qp,
                    &ConnParam {
                        private_data: b"welcome",
                        ..ConnParam::default()
                    },
                    T,
                )
                .unwrap();
            let mut pending = Vec::new();
            for i in 0..N {
                assert_eq!(wait_for(&n.cq, &mut pending, i), 8, "message {i}");
                conn.qp()
                    .post_recv(i + 1, &[buf.sge(0..64).unwrap()])
                    .unwrap();
                conn.qp()
                    .post_send(&SendWr::send(100 + i, &[buf.sge(0..8).unwrap()]).signaled())
                    .unwrap();
                wait_for(&n.cq, &mut pending, 100 + i); // the echo sent
            }
            assert_eq!(conn.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
        },
        |n, to| {
            let buf = Mr::new(&n.pd, vec![0u8; 4096], Access::LOCAL_WRITE).unwrap();
            let conn = connect_retrying::<Tcp, (), _>(&n, to, |id| {
                let qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq)
                    .max_recv_wr(4)
                    .build()?;
                let qp = id.init_qp(qp)?;
                qp.post_recv(1000, &[buf.sge(64..128).unwrap()])?;
                id.connect(
                    qp,
                    &ConnParam {
                        private_data: b"hello",
                        ..ConnParam::default()
                    },
                    T,
                )
            });
            assert_eq!(&conn.private_data()[..7], b"welcome");
            let mut pending = Vec::new();
            for i in 0..N {
                buf.write(0, &i.to_le_bytes()).unwrap();
                conn.qp()
                    .post_send(&SendWr::send(i, &[buf.sge(0..8).unwrap()]).signaled())
                    .unwrap();
                wait_for(&n.cq, &mut pending, i); // sent
                assert_eq!(
                    wait_for(&n.cq, &mut pending, 1000 + i),
                    8,
                    "the echo of {i}"
                );
                let mut echo = [0u8; 8];
                buf.read(64, &mut echo).unwrap();
                assert_eq!(u64::from_le_bytes(echo), i);
                conn.qp()
                    .post_recv(1000 + i + 1, &[buf.sge(64..128).unwrap()])
                    .unwrap();
            }
            let (_qp, id) = conn.disconnect().unwrap();
            drop(id);
        },
    );
}

#[test]
fn a_server_that_rejects_gives_the_client_its_status_and_data() {
    run::<Tcp>(
        "a_server_that_rejects",
        1,
        |_n, l| {
            let req = l.get_request(T).unwrap();
            req.reject(b"full").unwrap();
        },
        |n, to| {
            let start = Instant::now();
            loop {
                let id = CmId::<Tcp>::new(&n.ch)
                    .unwrap()
                    .resolve_addr(None, to, Duration::from_secs(2))
                    .and_then(|id| id.resolve_route(Duration::from_secs(2)));
                let Ok(id) = id else {
                    assert!(start.elapsed() < T, "the server's address resolves");
                    continue;
                };
                let qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq).build().unwrap();
                match id
                    .connect(qp, &ConnParam::default(), T)
                    .map(drop)
                    .unwrap_err()
                    .kind
                {
                    ErrorKind::Rejected {
                        status: 28,
                        private_data,
                    } => {
                        assert_eq!(&private_data[..4], b"full");
                        return;
                    }
                    ErrorKind::Rejected { status: 8, .. } if start.elapsed() < T => {
                        std::thread::sleep(Duration::from_millis(200))
                    }
                    other => panic!("expected the server's reject: {other:?}"),
                }
            }
        },
    );
}

#[test]
fn ud_over_the_cm_datagrams_arrive_and_loss_is_reported() {
    const N: u64 = 20;
    run::<Udp>(
        "ud_over_the_cm",
        2,
        |n, l| {
            let req = l.get_request(T).unwrap();
            let buf = Mr::new(&n.pd, vec![0u8; 64 * 128], Access::LOCAL_WRITE).unwrap();
            let qp = Qp::<Ud>::builder(&n.pd, &n.cq, &n.cq)
                .max_recv_wr(N as u32)
                .build()
                .unwrap();
            let qp = req.init_qp(qp).unwrap();
            for i in 0..N as usize {
                qp.post_recv(i as u64, &[buf.sge(i * 128..i * 128 + 128).unwrap()])
                    .unwrap();
            }
            let _conn = req.accept(qp, &ConnParam::default()).unwrap();
            let got = wait_completions(&n.cq, N as usize, Duration::from_secs(10));
            if got.len() < N as usize {
                note(
                    "ud_over_the_cm",
                    format!("{} of {N} datagrams lost", N as usize - got.len()),
                );
            }
            assert!(!got.is_empty(), "at least one datagram of {N} arrived");
            assert!(got.iter().all(|g| g.1 == 40 + 8), "GRH + payload: {got:?}");
        },
        |n, to| {
            let conn = connect_retrying::<Udp, (), _>(&n, to, |id| {
                let qp = Qp::<Ud>::builder(&n.pd, &n.cq, &n.cq)
                    .max_send_wr(N as u32)
                    .build()?;
                id.connect(qp, &ConnParam::default(), T)
            });
            let peer = conn.ud_peer().expect("the peer of a UD connect");
            let ah = AddressHandle::new(&n.pd, peer.av).unwrap();
            let buf = Mr::new(&n.pd, vec![7u8; 8], Access::LOCAL_WRITE).unwrap();
            let sge = [buf.sge(0..8).unwrap()];
            for i in 0..N {
                let dest = UdDest::new(&ah, peer.qp_num, peer.qkey);
                conn.qp()
                    .post_send(&SendWr::send_to(i, &sge, dest).signaled())
                    .unwrap();
                assert_eq!(wait_completions(&n.cq, 1, T).len(), 1, "send {i} completed");
            }
        },
    );
}

/// An [`Endpoint`] as bytes, for the connection manager's private data.
const ENDPOINT_LEN: usize = 29;

fn endpoint_to_bytes(e: &Endpoint) -> [u8; ENDPOINT_LEN] {
    let mut b = [0u8; ENDPOINT_LEN];
    b[0..4].copy_from_slice(&e.qp_num.to_le_bytes());
    b[4] = e.port_num;
    b[5..7].copy_from_slice(&e.lid.to_le_bytes());
    b[7..23].copy_from_slice(&e.gid.0);
    b[23] = e.gid_index;
    b[24..28].copy_from_slice(&e.psn.to_le_bytes());
    b[28] = e.mtu as u8;
    b
}

fn endpoint_from_bytes(b: &[u8]) -> Endpoint {
    let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
    Endpoint {
        qp_num: u32_at(0),
        port_num: b[4],
        lid: u16::from_le_bytes([b[5], b[6]]),
        gid: Gid(b[7..23].try_into().unwrap()),
        gid_index: b[23],
        psn: u32_at(24),
        mtu: Mtu::from_raw(b[28].into()).expect("an MTU"),
    }
}

/// The index of the GID of port 1 that is `addr` (IPv4-mapped for an IPv4 address, as RoCE v2
/// lists it), so that a QP brought up by hand sends from the address the connection manager
/// uses; index 0 where none is (the software device).
fn gid_index_of(ctx: &Context, addr: IpAddr) -> u8 {
    let want = match addr {
        IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
        IpAddr::V6(v6) => v6.octets(),
    };
    let len = ctx.query_port(1).map_or(0, |p| p.gid_tbl_len).min(256);
    (0..len)
        .find(|&i| ctx.query_gid(1, i).is_ok_and(|g| g.0 == want))
        .map_or(0, |i| i as u8)
}

/// Extended RC QPs (ibv_wr_post(3)) across the two nodes: each side's QP is an `Ex<Rc, _>`
/// brought up by hand from the endpoints the connection manager's private data carries (the
/// CM's own QP only carries the exchange). The client posts one batch of an RDMA write (from an
/// SGE), a send (inline) and an RDMA read into the server's region; the server checks the send
/// and the write (which the send follows on the connection), and answers with a batch of its
/// own, a send of what it received (from an SGE); the client checks the read and the answer.
#[test]
fn an_extended_rc_batch_of_a_write_a_send_and_a_read_crosses_the_wire() {
    const SENT: &[u8] = b"sent inline in a batch";
    const WRITTEN: &[u8] = b"written by the client's batch";
    const TO_READ: &[u8] = b"read by the client's batch";
    let local_addr = ip_env("TYPED_VERBS_CM_ADDR", "127.0.0.1");
    let rights = Access::LOCAL_WRITE | Access::REMOTE_WRITE | Access::REMOTE_READ;
    run::<Tcp>(
        "an_extended_rc_batch",
        3,
        move |n, l| {
            let req = l.get_request(T).unwrap();
            assert!(
                req.private_data().len() >= ENDPOINT_LEN,
                "the client's endpoint"
            );
            let client = endpoint_from_bytes(&req.private_data()[..ENDPOINT_LEN]);
            let mem = Mr::new(&n.pd, vec![0u8; 4096], rights).unwrap();
            mem.write(2048, TO_READ).unwrap();
            let qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq)
                .max_send_wr(4)
                .max_recv_wr(4)
                .send_ops::<send_ops!(SEND)>()
                .build()
                .unwrap();
            let me = qp.endpoint(1, gid_index_of(&n.ctx, local_addr)).unwrap();
            let mut qp = qp
                .connect(
                    &me,
                    &client,
                    AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE | AccessFlags::REMOTE_READ,
                )
                .unwrap();
            qp.post_recv(10, &[mem.sge(0..64).unwrap()]).unwrap();
            let remote = mem.remote();
            let mut reply = endpoint_to_bytes(&me).to_vec();
            reply.extend_from_slice(&remote.addr().to_le_bytes());
            reply.extend_from_slice(&remote.len().to_le_bytes());
            reply.extend_from_slice(&remote.rkey().to_le_bytes());
            let cm_qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq).build().unwrap();
            let cm_qp = req.init_qp(cm_qp).unwrap();
            let conn = req
                .accept(
                    cm_qp,
                    &ConnParam {
                        private_data: &reply,
                        ..ConnParam::default()
                    },
                    T,
                )
                .unwrap();
            let mut pending = Vec::new();
            assert_eq!(wait_for(&n.cq, &mut pending, 10) as usize, SENT.len());
            let mut got = [0u8; 64];
            mem.read(0, &mut got[..SENT.len()]).unwrap();
            assert_eq!(&got[..SENT.len()], SENT, "the batch's inline send");
            mem.read(1024, &mut got[..WRITTEN.len()]).unwrap();
            assert_eq!(&got[..WRITTEN.len()], WRITTEN, "the batch's RDMA write");
            qp.post_batch(|batch| {
                batch
                    .send(11)
                    .signaled()
                    .sge(mem.sge(0..SENT.len()).unwrap())
            })
            .unwrap();
            assert_eq!(wait_for(&n.cq, &mut pending, 11) as usize, SENT.len());
            assert_eq!(conn.next_event(T).unwrap(), Some(ConnEvent::Disconnected));
        },
        |n, to| {
            let buf = Mr::new(&n.pd, vec![0u8; 4096], Access::LOCAL_WRITE).unwrap();
            buf.write(0, WRITTEN).unwrap();
            let qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq)
                .max_send_wr(4)
                .max_recv_wr(4)
                .max_inline_data(64)
                .send_ops::<send_ops!(SEND | RDMA_WRITE | RDMA_READ)>()
                .build()
                .unwrap();
            let me = qp.endpoint(1, gid_index_of(&n.ctx, local_addr)).unwrap();
            let mine = endpoint_to_bytes(&me);
            let conn = connect_retrying::<Tcp, (), _>(&n, to, |id| {
                let cm_qp = Qp::<Rc>::builder(&n.pd, &n.cq, &n.cq).build()?;
                let cm_qp = id.init_qp(cm_qp)?;
                id.connect(
                    cm_qp,
                    &ConnParam {
                        private_data: &mine,
                        ..ConnParam::default()
                    },
                    T,
                )
            });
            let data = conn.private_data();
            assert!(
                data.len() >= ENDPOINT_LEN + 20,
                "the server's endpoint and region"
            );
            let server = endpoint_from_bytes(&data[..ENDPOINT_LEN]);
            let u64_at = |i: usize| u64::from_le_bytes(data[i..i + 8].try_into().unwrap());
            let rkey = u32::from_le_bytes(
                data[ENDPOINT_LEN + 16..ENDPOINT_LEN + 20]
                    .try_into()
                    .unwrap(),
            );
            let region = RemoteMr::from_peer(
                u64_at(ENDPOINT_LEN),
                u64_at(ENDPOINT_LEN + 8),
                rkey,
                Access::REMOTE_WRITE | Access::REMOTE_READ,
            );
            let mut qp = qp.connect(&me, &server, AccessFlags::LOCAL_WRITE).unwrap();
            qp.post_recv(20, &[buf.sge(512..576).unwrap()]).unwrap();
            qp.post_batch(|batch| {
                batch
                    .rdma_write(1, region.at(1024, WRITTEN.len() as u64).unwrap())
                    .signaled()
                    .sge(buf.sge(0..WRITTEN.len()).unwrap())?;
                batch.send(2).signaled().inline(SENT)?;
                batch
                    .rdma_read(3, region.at(2048, TO_READ.len() as u64).unwrap())
                    .signaled()
                    .sge(buf.sge(256..256 + TO_READ.len()).unwrap())
            })
            .unwrap();
            let mut pending = Vec::new();
            assert_eq!(wait_for(&n.cq, &mut pending, 1) as usize, WRITTEN.len());
            assert_eq!(wait_for(&n.cq, &mut pending, 2) as usize, SENT.len());
            assert_eq!(wait_for(&n.cq, &mut pending, 3) as usize, TO_READ.len());
            let mut got = [0u8; 64];
            buf.read(256, &mut got[..TO_READ.len()]).unwrap();
            assert_eq!(&got[..TO_READ.len()], TO_READ, "the batch's RDMA read");
            assert_eq!(wait_for(&n.cq, &mut pending, 20) as usize, SENT.len());
            buf.read(512, &mut got[..SENT.len()]).unwrap();
            assert_eq!(
                &got[..SENT.len()],
                SENT,
                "the server's batch, an echo of the send"
            );
            let (_qp, id) = conn.disconnect().unwrap();
            drop(id);
        },
    );
}
