//! ucmatose: rdma-core's RDMA CM connection and simple ping-pong test
//! (librdmacm/examples/cmatose.c, ucmatose(1)) on the crate's typed API: connections through
//! `typed_verbs::cm`, typed RC QPs, memory regions and work requests. Same options, same
//! connection parameters, message exchange, disconnect sequence and output, so that it works
//! against rdma-core's `ucmatose` both ways.
//!
//! ```text
//! ucmatose [-b bind_address] [-c connections] [-C message_count] [-S message_size] [-p port]
//! ucmatose -s server_address [-b bind_address] [-c connections] [-C message_count]
//!          [-S message_size] [-p port]
//! ucmatose --self [-b bind_address] [-c connections] [-C message_count] [-S message_size] [-p port]
//! ```
//!
//! `--self` runs the server and the client on two threads of this process (over 127.0.0.1
//! unless `-b` says otherwise), so that the program runs on the software device `sw0` too. The
//! device is `TYPED_VERBS_DEVICE`, else the first real device, else `sw0`.
//!
//! What the typed CM leaves out is refused with a message: `-f gid` (AF_IB addresses),
//! `-P ib` (RDMA_PS_IB), `-t` and `-a` (`rdma_set_option`), `-m` (`rdma_migrate_id`: the crate
//! never migrates an id, since a migration frees a channel that may hold events).
//!
//! # The test (cmatose.c)
//!
//! Every connection has its own PD, a send and a receive CQ of `message_count` entries, an RC
//! QP with `message_count` send and receive slots (every send signaled) and one buffer of
//! `message_size` bytes. Both sides post their `message_count` receives before they connect or
//! accept. The client connects with one RDMA read each way, 5 retries and no RNR retry; the
//! server accepts with what the client asked and 7 retries (`rdma_accept(id, NULL)`). Once every
//! connection is up, the server sends `message_count` messages on each and waits for their
//! completions, then for the client's; the client waits for the server's messages, then sends as
//! many back. The server disconnects every connection and waits for their disconnect events;
//! the client waits for the server's disconnect and answers it.

#[path = "common/cmex.rs"]
mod cmex;

use cmex::{cm_event_of, create_id, getaddrinfo, getopt, listen, lookup, next_request, open, Out};
use std::net::SocketAddr;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::cm::{
    CmId, ConnEvent, ConnParam, ConnectRequest, Connected, Connection, EventChannel, Tcp,
};
use typed_verbs::{
    Access, Context, Cq, ErrorKind, Mr, PageBuf, Pd, Qp, Rc, SendWr, WorkCompletion,
};

/// cmatose's `rdma_resolve_addr` and `rdma_resolve_route` timeouts (2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// How long a connect or accept waits for the peer (cmatose waits for ever).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long a side waits for its messages' completions and for disconnect events (cmatose
/// waits for ever; RC retransmits what the wire loses, so this is far beyond any need).
const TRANSFER_TIMEOUT: Duration = Duration::from_secs(120);

#[derive(Clone, Debug)]
struct Opts {
    /// `-s`: the server's address (the client).
    dst: Option<String>,
    /// `-b`: the address to bind to.
    src: Option<String>,
    /// `-p`.
    port: String,
    /// `-c`.
    connections: i32,
    /// `-C`.
    message_count: i32,
    /// `-S`.
    message_size: i32,
    /// `--self`.
    self_test: bool,
}

fn usage(argv0: &str) -> ! {
    println!("usage: {argv0}");
    println!("\t[-s server_address]");
    println!("\t[-b bind_address]");
    println!("\t[-f address_format]");
    println!("\t    name, ip, ipv6, or gid");
    println!("\t[-P port_space]");
    println!("\t    tcp or ib");
    println!("\t[-c connections]");
    println!("\t[-C message_count]");
    println!("\t[-S message_size]");
    println!("\t[-t type_of_service]");
    println!("\t[-p port_number]");
    println!("\t[-m(igrate)]");
    println!("\t[-a ack_timeout]");
    println!("\t[--self]");
    std::process::exit(1);
}

fn unsupported(what: &str) -> ! {
    cmex::unsupported("cmatose", what)
}

fn parse() -> Opts {
    let argv0 = std::env::args().next().unwrap_or_else(|| "ucmatose".into());
    let mut o = Opts {
        dst: None,
        src: None,
        port: "7471".into(),
        connections: 1,
        message_count: 10,
        message_size: 100,
        self_test: false,
    };
    let Ok((seen, _operands)) = getopt(std::env::args(), "s:b:f:P:c:C:S:t:p:a:m") else {
        usage(&argv0)
    };
    for (c, v) in seen {
        let v = v.unwrap_or_default();
        match c {
            's' => o.dst = Some(v),
            'b' => o.src = Some(v),
            'f' => cmex::address_format("cmatose", &v),
            'P' => cmex::port_space_format("cmatose", &v, "tcp", "ib", "-P ib (RDMA_PS_IB)"),
            'c' => o.connections = cmex::atoi(&v),
            'C' => o.message_count = cmex::atoi(&v),
            'S' => o.message_size = cmex::atoi(&v),
            't' => unsupported("-t (rdma_set_option RDMA_OPTION_ID_TOS)"),
            'p' => o.port = v,
            'm' => unsupported("-m (rdma_migrate_id)"),
            'a' => unsupported("-a (rdma_set_option RDMA_OPTION_ID_ACK_TIMEOUT)"),
            '\0' => o.self_test = true,
            _ => usage(&argv0),
        }
    }
    // create_message: no size, no messages.
    cmex::message_counts(&mut o.connections, &mut o.message_count, o.message_size);
    o
}

fn main() -> ExitCode {
    let o = parse();
    let both = o.self_test;
    cmex::cmatose_main(
        o,
        both,
        |o| (&mut o.src, &mut o.dst),
        run_server,
        run_client,
    )
}

/// `get_rdma_addr`: the address and port as `rdma_getaddrinfo` resolves them.
fn rdma_addr(host: Option<&str>, port: &str, out: &Out) -> Result<SocketAddr, i32> {
    let port: u16 = port.parse().map_err(|_| {
        out.say("rdma_getaddrinfo error: Servname not supported for ai_socktype");
        -8 // EAI_SERVICE
    })?;
    getaddrinfo(host, port, out)
}

/// One connection (`struct cmatest_node`): its CQs and message buffer (the PD lives as long
/// as the QP and the region that hold it); the QP is in its connection.
struct Node {
    send_cq: Arc<Cq<'static>>,
    recv_cq: Arc<Cq<'static>>,
    mr: Option<Mr<'static>>,
}

/// `init_node` up to the QP (in RESET), and `create_message`.
fn init_node(ctx: &Arc<Context>, o: &Opts, out: &Out) -> Result<(Node, Qp<'static, Rc>), i32> {
    let pd = Arc::new(Pd::new(ctx).map_err(|_| {
        out.say("cmatose: unable to allocate PD");
        -12 // -ENOMEM
    })?);
    let cqe = if o.message_count > 0 {
        o.message_count as u32
    } else {
        1
    };
    let cq = || Cq::builder(ctx).cqe(cqe).build().map(Arc::new);
    let (send_cq, recv_cq) = match (cq(), cq()) {
        (Ok(s), Ok(r)) => (s, r),
        _ => {
            out.say("cmatose: unable to create CQ");
            return Err(-12);
        }
    };
    let qp = Qp::<Rc>::builder(&pd, &send_cq, &recv_cq)
        .max_send_wr(cqe)
        .max_recv_wr(cqe)
        .max_send_sge(1)
        .max_recv_sge(1)
        .sq_sig_all(true)
        .build()
        .map_err(|e| {
            out.warn(format!("cmatose: unable to create QP: {e}"));
            -1
        })?;
    let mr = if o.message_count > 0 {
        let mr = PageBuf::new(o.message_size as usize)
            .and_then(|b| Mr::new(&pd, b, Access::LOCAL_WRITE))
            .map_err(|_| {
                out.say("failed to reg MR");
                out.say("cmatose: failed to create messages: -1");
                -1
            })?;
        Some(mr)
    } else {
        None
    };
    Ok((
        Node {
            send_cq,
            recv_cq,
            mr,
        },
        qp,
    ))
}

impl Node {
    fn sge(&self, o: &Opts) -> Option<typed_verbs::Sge<'_>> {
        self.mr
            .as_ref()
            .and_then(|mr| mr.sge(0..o.message_size as usize))
    }

    /// `post_recvs`.
    fn post_recvs<St: typed_verbs::wr::RecvReady>(
        &self,
        qp: &Qp<'static, Rc, typed_verbs::OwnRq, typed_verbs::Shared, (), St>,
        o: &Opts,
        out: &Out,
    ) -> Result<(), i32> {
        let Some(sge) = self.sge(o) else {
            return Ok(());
        };
        for _ in 0..o.message_count {
            if let Err(e) = qp.post_recv(self as *const Node as u64, &[sge]) {
                out.say(format!("failed to post receives: {e}"));
                return Err(-1);
            }
        }
        Ok(())
    }

    /// `post_sends`.
    fn post_sends(&self, conn: &Connection<'static, Tcp>, o: &Opts, out: &Out) -> Result<(), i32> {
        let Some(sge) = self.sge(o) else {
            return Ok(());
        };
        for _ in 0..o.message_count {
            if let Err(e) = conn
                .qp()
                .post_send(&SendWr::send(self as *const Node as u64, &[sge]))
            {
                out.say(format!("failed to post sends: {e}"));
                return Err(-1);
            }
        }
        Ok(())
    }
}

/// `poll_cqs`: `message_count` completions from the send or receive CQ of every connection.
/// cmatose counts them whatever their status; this program also says when one failed.
fn poll_cqs(nodes: &[(Node, Connection<'static, Tcp>)], send: bool, o: &Opts, out: &Out) -> i32 {
    let mut wc = [const { WorkCompletion::new() }; 8];
    for (node, _) in nodes {
        let cq = if send { &node.send_cq } else { &node.recv_cq };
        let start = Instant::now();
        let mut done = 0;
        while done < o.message_count {
            match cq.poll(&mut wc) {
                Ok(got) => {
                    for w in got {
                        if w.success().is_none() {
                            out.say(format!(
                                "cmatose: completion failed: {}",
                                w.status().name().unwrap_or("?")
                            ));
                            return -1;
                        }
                    }
                    done += got.len() as i32;
                    if got.is_empty() {
                        if start.elapsed() > TRANSFER_TIMEOUT {
                            out.say(format!(
                                "cmatose: {done} of {} completions in {TRANSFER_TIMEOUT:?}",
                                o.message_count
                            ));
                            return -1;
                        }
                        std::thread::sleep(Duration::from_micros(50));
                    }
                }
                Err(e) => {
                    out.say(format!("cmatose: failed polling CQ: {e}"));
                    return -1;
                }
            }
        }
    }
    0
}

/// Waits for an id's `RDMA_CM_EVENT_DISCONNECTED` (`disconnect_events`, for one connection).
fn disconnected(
    next: impl Fn(Duration) -> typed_verbs::Result<Option<ConnEvent>>,
    out: &Out,
) -> i32 {
    let start = Instant::now();
    while start.elapsed() < TRANSFER_TIMEOUT {
        match next(Duration::from_secs(1)) {
            Ok(Some(ConnEvent::Disconnected)) => return 0,
            Ok(_) => {}
            Err(e) => {
                out.warn(format!(
                    "cmatose: failure in rdma_get_cm_event in disconnect events: {e}"
                ));
                return e.errno().max(1);
            }
        }
    }
    out.warn(format!(
        "cmatose: no disconnect event in {TRANSFER_TIMEOUT:?}"
    ));
    -1
}

/// The device, its CM event channel, and the address of `host` at `port`.
fn open_at(
    host: Option<&str>,
    port: &str,
    out: &Out,
) -> Result<(Arc<Context>, EventChannel, SocketAddr), i32> {
    let (ctx, ch) = open(out)?;
    Ok((Arc::new(ctx), ch, rdma_addr(host, port, out)?))
}

/// `connect_handler` and the events up to ESTABLISHED, for one request: the node, receives
/// posted, the accept with what the client asked (`rdma_accept(id, NULL)`).
fn accept(
    ctx: &Arc<Context>,
    req: ConnectRequest<Tcp>,
    o: &Opts,
    out: &Out,
) -> Result<(Node, Connection<'static, Tcp>), i32> {
    let (node, qp) = match init_node(ctx, o, out) {
        Ok(x) => x,
        Err(ret) => {
            out.say("cmatose: failing connection request");
            let _ = req.reject(&[]);
            return Err(ret);
        }
    };
    let qp = match req.init_qp(qp) {
        Ok(qp) => qp,
        Err(e) => {
            out.warn(format!("cmatose: failure accepting: {e}"));
            out.say("cmatose: failing connection request");
            return Err(-1);
        }
    };
    if let Err(ret) = node.post_recvs(&qp, o, out) {
        out.say("cmatose: failing connection request");
        return Err(ret);
    }
    let peer = req.peer_param();
    let param = ConnParam {
        private_data: &[],
        responder_resources: peer.responder_resources,
        initiator_depth: peer.initiator_depth,
        retry_count: 7,
        rnr_retry_count: 7,
        ..ConnParam::default()
    };
    match req.accept(qp, &param, CONNECT_TIMEOUT) {
        Ok(conn) => Ok((node, conn)),
        Err(e) => Err(connect_error(&e, "cmatose: failure accepting", out)),
    }
}

/// An error event as cmatose prints it (`event: NAME, error: STATUS`), and its status; another
/// error as `perror` would.
fn connect_error(e: &typed_verbs::Error, what: &str, out: &Out) -> i32 {
    match cm_event_of(e) {
        Some((ev, status)) => {
            out.say(format!("cmatose: event: {ev}, error: {status}"));
            status
        }
        None if matches!(e.kind, ErrorKind::CmTimedOut(_)) => {
            out.warn(format!("{what}: {e}"));
            -110 // -ETIMEDOUT
        }
        None => {
            out.warn(format!("{what}: {e}"));
            -e.errno().max(1)
        }
    }
}

/// `run_server`.
fn run_server(o: &Opts, out: &Out, ready: Option<std::sync::mpsc::Sender<SocketAddr>>) -> i32 {
    out.say("cmatose: starting server");
    let (ctx, ch, addr) = match open_at(o.src.as_deref(), &o.port, out) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let listener = match listen::<Tcp>("cmatose", &ch, addr, ready, out) {
        Ok(l) => l,
        Err(r) => return r,
    };
    // connect_events: until every connection is up or one failed.
    let mut nodes = Vec::new();
    let mut ret = 0;
    for _ in 0..o.connections {
        let req = match next_request(&listener) {
            Ok(r) => r,
            Err(e) => {
                ret = connect_error(
                    &e,
                    "cmatose: failure in rdma_get_cm_event in connect events",
                    out,
                );
                break;
            }
        };
        match accept(&ctx, req, o, out) {
            Ok(n) => nodes.push(n),
            Err(r) => {
                ret = r;
                break;
            }
        }
    }
    if ret != 0 {
        return ret;
    }
    if o.message_count > 0 {
        out.say("initiating data transfers");
        for (node, conn) in &nodes {
            if let Err(r) = node.post_sends(conn, o, out) {
                return r;
            }
        }
        out.say("completing sends");
        let r = poll_cqs(&nodes, true, o, out);
        if r != 0 {
            return r;
        }
        out.say("receiving data transfers");
        let r = poll_cqs(&nodes, false, o, out);
        if r != 0 {
            return r;
        }
        out.say("data transfers complete");
    }
    out.say("cmatose: disconnecting");
    let mut ids: Vec<(Node, CmId<Tcp, Connected>)> = Vec::new();
    for (node, conn) in nodes {
        let (qp, id) = conn.into_parts();
        // rdma_disconnect moves a librdmacm QP to ERR first: so does Connection::disconnect;
        // here the QP goes to ERR after the id's disconnect, with the same effect.
        let _ = id.disconnect();
        drop(qp.to_error());
        ids.push((node, id));
    }
    // disconnect_events.
    for (_, id) in &ids {
        let r = disconnected(|t| id.next_event(t), out);
        if r != 0 {
            ret = r;
            break;
        }
        let _ = id.disconnect();
    }
    out.say("disconnected");
    ret
}

/// `run_client`.
fn run_client(o: &Opts, out: &Out) -> i32 {
    out.say("cmatose: starting client");
    let (ctx, ch, dst) = match open_at(o.dst.as_deref(), &o.port, out) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let src = match &o.src {
        Some(s) => match lookup(s) {
            Ok(ip) => Some(SocketAddr::new(ip, 0)),
            Err(e) => {
                out.say(format!("rdma_getaddrinfo error: {e}"));
                return -2;
            }
        },
        None => None,
    };
    out.say("cmatose: connecting");
    // connect_events: each connection resolved, its node made and receives posted on the
    // route, then connected (responder resources 1, initiator depth 1, 5 retries, no RNR retry).
    let mut nodes: Vec<(Node, Connection<'static, Tcp>)> = Vec::new();
    let mut ret = 0;
    for _ in 0..o.connections {
        let id = match create_id::<Tcp>(&ch, "rdma_create_id", out) {
            Ok(id) => id,
            Err(r) => return r,
        };
        let id = match id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
            Ok(id) => id,
            Err(e) => {
                ret = connect_error(&e, "cmatose: failure getting addr", out);
                break;
            }
        };
        let id = match id.resolve_route(RESOLVE_TIMEOUT) {
            Ok(id) => id,
            Err(e) => {
                ret = connect_error(&e, "cmatose: resolve route failed", out);
                break;
            }
        };
        let (node, qp) = match init_node(&ctx, o, out) {
            Ok(x) => x,
            Err(r) => {
                ret = r;
                break;
            }
        };
        let qp = match id.init_qp(qp) {
            Ok(qp) => qp,
            Err(e) => {
                out.warn(format!("cmatose: failure connecting: {e}"));
                ret = -1;
                break;
            }
        };
        if let Err(r) = node.post_recvs(&qp, o, out) {
            ret = r;
            break;
        }
        let param = ConnParam {
            private_data: &[],
            responder_resources: 1,
            initiator_depth: 1,
            retry_count: 5,
            rnr_retry_count: 0,
            ..ConnParam::default()
        };
        match id.connect(qp, &param, CONNECT_TIMEOUT) {
            Ok(conn) => nodes.push((node, conn)),
            Err(e) => {
                ret = connect_error(&e, "cmatose: failure connecting", out);
                break;
            }
        }
    }
    if ret == 0 && o.message_count > 0 {
        out.say("receiving data transfers");
        ret = poll_cqs(&nodes, false, o, out);
        if ret == 0 {
            out.say("sending replies");
            for (node, conn) in &nodes {
                if let Err(r) = node.post_sends(conn, o, out) {
                    ret = r;
                    break;
                }
            }
            if ret == 0 {
                out.say("data transfers complete");
            }
        }
    }
    // disconnect_events: the server's disconnect of each connection, answered.
    for (_node, conn) in nodes {
        let r = disconnected(|t| conn.next_event(t), out);
        let _ = conn.disconnect();
        if r != 0 {
            ret = r;
            break;
        }
    }
    ret
}
