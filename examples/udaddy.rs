//! udaddy: rdma-core's RDMA CM datagram setup and simple ping-pong test
//! (librdmacm/examples/udaddy.c, udaddy(1)) on the crate's typed API: UD "connections" (SIDR)
//! through `typed_verbs::cm`, typed UD QPs, address handles, memory regions and work requests.
//! Same options, same exchange and output, so that it works against rdma-core's `udaddy` both
//! ways.
//!
//! ```text
//! udaddy [-b bind_address] [-c connections] [-C message_count] [-S message_size]
//! udaddy -s server_address [-b bind_address] [-c connections] [-C message_count] [-S message_size]
//! udaddy --self [-b bind_address] [-c connections] [-C message_count] [-S message_size]
//! ```
//!
//! As udaddy's, the port is 7174 and `-p` is the port space (`-p 0x111`, RDMA_PS_UDP, the only
//! one the typed CM has: `-P ipoib` and `-p 2` are refused, as are `-f gid` and `-t`). `--self`
//! runs the server and the client on two threads of this process (over 127.0.0.1 unless `-b`
//! says otherwise). The device is `TYPED_VERBS_DEVICE`, else the first real device, else `sw0`.
//!
//! # The test (udaddy.c)
//!
//! Every "connection" has its own PD, one CQ of `2 * message_count` entries, a UD QP with
//! `message_count` send and receive slots and one buffer of `message_size` bytes plus the 40 of
//! a GRH; receives are posted before the lookup or its answer. The client resolves the server's
//! QP (SIDR: `rdma_connect` on a UDP id, answered by the server's `rdma_accept`), sends
//! `message_count` messages with its QP number as immediate data (unsignaled) and waits for as
//! many replies; the server waits for the messages, makes its reply address handle from the
//! first one's work completion and GRH (`ibv_create_ah_from_wc`), sends as many back (signaled)
//! and waits for their completions.
//!
//! # Loss
//!
//! UD does not retransmit: where udaddy would wait for ever for a lost message, this program
//! waits `LOSS_WAIT` after the last completion, says how many messages came, and fails with
//! `ETIMEDOUT`.

#[path = "common/cmex.rs"]
mod cmex;

use cmex::{cm_event_of, create_id, getaddrinfo, getopt, listen, lookup, next_request, open, Out};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::cm::{ConnParam, ConnectRequest, Connection, EventChannel, Udp};
use typed_verbs::{
    Access, AddressHandle, AddressVector, Context, Cq, ErrorKind, Gid, GlobalRoute, Mr, PageBuf,
    Pd, Qp, SendWr, Ud, UdDest, WorkCompletion,
};

/// udaddy's port.
const PORT: u16 = 7174;
/// `sizeof(struct ibv_grh)`.
const GRH: usize = 40;
/// `RDMA_PS_UDP`, `RDMA_PS_IPOIB`.
const PS_UDP: u64 = 0x0111;
const PS_IPOIB: u64 = 0x0002;
/// The Q_Key the kernel gives every RDMA_PS_UDP id (`RDMA_UDP_QKEY`): what the server's QP
/// accepts (udaddy reads it back with `ibv_query_qp`).
const RDMA_UDP_QKEY: u32 = 0x0123_4567;
/// udaddy's `rdma_resolve_addr` and `rdma_resolve_route` timeouts (2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// How long the service lookup waits for the server's answer.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(30);
/// How long a side waits for its next message before it counts the rest as lost.
const LOSS_WAIT: Duration = Duration::from_secs(10);

#[derive(Clone, Debug)]
struct Opts {
    dst: Option<String>,
    src: Option<String>,
    connections: i32,
    message_count: i32,
    message_size: i32,
    self_test: bool,
}

fn usage(argv0: &str) -> ! {
    println!("usage: {argv0}");
    println!("\t[-s server_address]");
    println!("\t[-b bind_address]");
    println!("\t[-f address_format]");
    println!("\t    name, ip, ipv6, or gid");
    println!("\t[-P port_space]");
    println!("\t    udp or ipoib");
    println!("\t[-c connections]");
    println!("\t[-C message_count]");
    println!("\t[-S message_size]");
    println!("\t[-t type_of_service]");
    println!("\t[-p port_space - {PS_UDP:#x} for UDP (default), {PS_IPOIB:#x} for IPOIB]");
    println!("\t[--self]");
    std::process::exit(1);
}

fn unsupported(what: &str) -> ! {
    cmex::unsupported("udaddy", what)
}

fn parse() -> Opts {
    let argv0 = std::env::args().next().unwrap_or_else(|| "udaddy".into());
    let mut o = Opts {
        dst: None,
        src: None,
        connections: 1,
        message_count: 10,
        message_size: 100,
        self_test: false,
    };
    let Ok((seen, _)) = getopt(std::env::args(), "s:b:c:C:S:t:p:P:f:") else {
        usage(&argv0)
    };
    for (c, v) in seen {
        let v = v.unwrap_or_default();
        match c {
            's' => o.dst = Some(v),
            'b' => o.src = Some(v),
            'c' => o.connections = cmex::atoi(&v),
            'C' => o.message_count = cmex::atoi(&v),
            'S' => o.message_size = cmex::atoi(&v),
            't' => unsupported("-t (rdma_set_option RDMA_OPTION_ID_TOS)"),
            'p' => {
                if cmex::strtoul(&v) != PS_UDP {
                    unsupported("a port space other than RDMA_PS_UDP (0x111)");
                }
            }
            'f' => cmex::address_format("udaddy", &v),
            'P' => {
                cmex::port_space_format("udaddy", &v, "udp", "ipoib", "-P ipoib (RDMA_PS_IPOIB)")
            }
            '\0' => o.self_test = true,
            _ => usage(&argv0),
        }
    }
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

/// The device, its CM event channel, and the address of `host` at `port`.
fn open_at(
    host: Option<&str>,
    port: u16,
    out: &Out,
) -> Result<(Arc<Context>, EventChannel, SocketAddr), i32> {
    let (ctx, ch) = open(out)?;
    Ok((Arc::new(ctx), ch, getaddrinfo(host, port, out)?))
}

/// One "connection" (`struct cmatest_node`) but its QP: the PD, the CQ, the buffer, and where
/// its messages go (the reply address handle, the peer's QP number and Q_Key).
struct Node {
    pd: Arc<Pd<'static>>,
    cq: Arc<Cq<'static>>,
    mr: Option<Mr<'static>>,
    ah: Option<AddressHandle<'static>>,
    remote_qpn: u32,
    remote_qkey: u32,
}

/// `verify_test_params`: a message fits the port's active MTU.
fn verify_test_params(ctx: &Context, o: &Opts, out: &Out) -> Result<(), i32> {
    let port = ctx.query_port(1).map_err(|e| {
        out.warn(format!("ibv_query_port: {e}"));
        -1
    })?;
    let mtu = 1i32 << (port.active_mtu + 7);
    if o.message_count > 0 && o.message_size > mtu {
        out.say(format!(
            "udaddy: message_size {} is larger than active mtu {mtu}",
            o.message_size
        ));
        return Err(-22);
    }
    Ok(())
}

/// `init_node` up to the QP (in RESET), and `create_message`.
fn init_node(ctx: &Arc<Context>, o: &Opts, out: &Out) -> Result<(Node, Qp<'static, Ud>), i32> {
    let pd = Arc::new(Pd::new(ctx).map_err(|_| {
        out.say("udaddy: unable to allocate PD");
        -12
    })?);
    let cqe = if o.message_count > 0 {
        o.message_count as u32 * 2
    } else {
        2
    };
    let cq = Arc::new(Cq::builder(ctx).cqe(cqe).build().map_err(|_| {
        out.say("udaddy: unable to create CQ");
        -12
    })?);
    let wr = if o.message_count > 0 {
        o.message_count as u32
    } else {
        1
    };
    let qp = Qp::<Ud>::builder(&pd, &cq, &cq)
        .max_send_wr(wr)
        .max_recv_wr(wr)
        .max_send_sge(1)
        .max_recv_sge(1)
        .build()
        .map_err(|e| {
            out.warn(format!("udaddy: unable to create QP: {e}"));
            -1
        })?;
    let mr = if o.message_count > 0 {
        let mr = PageBuf::new(o.message_size as usize + GRH)
            .and_then(|b| Mr::new(&pd, b, Access::LOCAL_WRITE))
            .map_err(|_| {
                out.say("failed to reg MR");
                out.say("udaddy: failed to create messages: -1");
                -1
            })?;
        Some(mr)
    } else {
        None
    };
    Ok((
        Node {
            pd,
            cq,
            mr,
            ah: None,
            remote_qpn: 0,
            remote_qkey: 0,
        },
        qp,
    ))
}

impl Node {
    /// `post_recvs`: `message_count` receives of the buffer with room for the GRH.
    fn post_recvs<St: typed_verbs::wr::RecvReady>(
        &self,
        qp: &Qp<'static, Ud, typed_verbs::OwnRq, typed_verbs::Shared, (), St>,
        o: &Opts,
        out: &Out,
    ) -> Result<(), i32> {
        let Some(mr) = &self.mr else { return Ok(()) };
        let sge = mr
            .sge(0..o.message_size as usize + GRH)
            .expect("the whole buffer");
        for _ in 0..o.message_count {
            if let Err(e) = qp.post_recv(0, &[sge]) {
                out.say(format!("failed to post receives: {e}"));
                return Err(-1);
            }
        }
        Ok(())
    }

    /// `post_sends`: `message_count` sends with this QP's number as immediate data.
    fn post_sends(
        &self,
        conn: &Connection<'static, Udp>,
        signaled: bool,
        o: &Opts,
        out: &Out,
    ) -> Result<(), i32> {
        let (Some(mr), Some(ah)) = (&self.mr, &self.ah) else {
            return Ok(());
        };
        let sge = [mr.sge(0..o.message_size as usize).expect("the buffer")];
        let dest = UdDest::new(ah, self.remote_qpn, self.remote_qkey);
        for _ in 0..o.message_count {
            let wr = SendWr::send_to_with_imm(0, &sge, dest, conn.qp().qp_num());
            let wr = if signaled { wr.signaled() } else { wr };
            if let Err(e) = conn.qp().post_send(&wr) {
                out.say(format!("failed to post sends: {e}"));
                return Err(-1);
            }
        }
        Ok(())
    }

    /// `create_reply_ah`: the address handle back to the sender of `wc`, from the GRH in the
    /// buffer as `ibv_init_ah_from_wc` reads it (RoCE v2 over IPv4 puts the IPv4 header in the
    /// GRH's last 20 bytes), the peer's QP number from the immediate data, the Q_Key this
    /// side's QP accepts.
    fn create_reply_ah(&mut self, ctx: &Context, wc: &WorkCompletion) -> Result<(), String> {
        let ok = wc.success().ok_or("a failed completion")?;
        let mr = self.mr.as_ref().ok_or("no buffer")?;
        let mut grh = [0u8; GRH];
        mr.read(0, &mut grh).map_err(|e| e.to_string())?;
        let ip4 = &grh[20..40];
        let (sgid, dgid, traffic_class, flow_label) = if grh_is_ipv4(&grh) {
            let mapped = |b: &[u8]| {
                Gid(Ipv4Addr::new(b[0], b[1], b[2], b[3])
                    .to_ipv6_mapped()
                    .octets())
            };
            (mapped(&ip4[12..16]), mapped(&ip4[16..20]), ip4[1], 0)
        } else {
            let vtf = u32::from_be_bytes(grh[0..4].try_into().unwrap());
            let gid = |b: &[u8]| Gid(<[u8; 16]>::try_from(b).unwrap());
            (
                gid(&grh[8..24]),
                gid(&grh[24..40]),
                (vtf >> 20) as u8,
                vtf & 0xf_ffff,
            )
        };
        // The local GID the message came to: its index is the reply's source.
        let gids = ctx.query_port(1).map(|p| p.gid_tbl_len).unwrap_or(1);
        let sgid_index = (0..gids)
            .find(|&i| ctx.query_gid(1, i).is_ok_and(|g| g == dgid))
            .unwrap_or(0) as u8;
        let av = AddressVector {
            dlid: ok.slid(),
            sl: ok.sl(),
            src_path_bits: ok.dlid_path_bits(),
            static_rate: 0,
            port_num: 1,
            grh: Some(GlobalRoute {
                dgid: sgid,
                flow_label,
                sgid_index,
                hop_limit: 0xff,
                traffic_class,
            }),
        };
        self.ah = Some(AddressHandle::new(&self.pd, av).map_err(|e| e.to_string())?);
        self.remote_qpn = ok.imm_data().ok_or("no immediate data")?;
        self.remote_qkey = RDMA_UDP_QKEY;
        Ok(())
    }
}

/// Whether the GRH area of a receive holds an IPv4 header in its last 20 bytes (RoCE v2 over
/// IPv4), as libibverbs' `get_grh_header_version` tells: not IPv6 (version 6) and IPv4
/// (version 4) there; or, with both versions, an IPv4 header of 5 words whose checksum holds.
/// (rxe zeroes the first 20 bytes, and does not fill the checksum of what it loops back.)
fn grh_is_ipv4(grh: &[u8; GRH]) -> bool {
    let ip4 = &grh[20..40];
    if grh[0] >> 4 != 6 {
        return ip4[0] >> 4 == 4;
    }
    if ip4[0] & 0xf != 5 {
        return false;
    }
    let mut sum: u32 = ip4
        .chunks(2)
        .map(|w| u32::from(u16::from_be_bytes([w[0], w[1]])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum == 0xffff
}

/// `poll_cqs`: `message_count` completions from every connection's CQ; the server makes its
/// reply address handle from the first. Bounded: `LOSS_WAIT` without a completion counts the
/// rest as lost.
fn poll_cqs(
    ctx: &Context,
    nodes: &mut [(Node, Connection<'static, Udp>)],
    o: &Opts,
    out: &Out,
) -> i32 {
    let mut wc = [const { WorkCompletion::new() }; 8];
    for (node, _) in nodes.iter_mut() {
        let mut done = 0;
        let mut last = Instant::now();
        while done < o.message_count {
            let got = match node.cq.poll(&mut wc) {
                Ok(g) => g,
                Err(e) => {
                    out.say(format!("udaddy: failed polling CQ: {e}"));
                    return -1;
                }
            };
            if got.is_empty() {
                if last.elapsed() > LOSS_WAIT {
                    out.say(format!(
                        "udaddy: {done} of {} completions, none for {}s: the rest were lost",
                        o.message_count,
                        LOSS_WAIT.as_secs()
                    ));
                    return -110; // -ETIMEDOUT
                }
                std::thread::sleep(Duration::from_micros(100));
                continue;
            }
            last = Instant::now();
            if let Some(w) = got.iter().find(|w| w.success().is_none()) {
                out.say(format!(
                    "udaddy: completion failed: {}",
                    w.status().name().unwrap_or("?")
                ));
                return -1;
            }
            if node.ah.is_none() {
                if let Err(e) = node.create_reply_ah(ctx, &got[0]) {
                    out.say(format!("udaddy: failed to create reply AH: {e}"));
                    return -1;
                }
            }
            done += got.len() as i32;
        }
    }
    0
}

fn event_error(e: &typed_verbs::Error, what: &str, out: &Out) -> i32 {
    match cm_event_of(e) {
        Some((ev, status)) => {
            out.say(format!("udaddy: event: {ev}, error: {status}"));
            status
        }
        None if matches!(e.kind, ErrorKind::CmTimedOut(_)) => {
            out.warn(format!("{what}: {e}"));
            -110
        }
        None => {
            out.warn(format!("{what}: {e}"));
            -e.errno().max(1)
        }
    }
}

/// `connect_handler`: the node, receives posted, the answer with this QP's number.
fn accept(
    ctx: &Arc<Context>,
    req: ConnectRequest<Udp>,
    o: &Opts,
    out: &Out,
) -> Result<(Node, Connection<'static, Udp>), i32> {
    let fail = |req: ConnectRequest<Udp>, ret: i32| {
        out.say("udaddy: failing connection request");
        let _ = req.reject(&[]);
        Err(ret)
    };
    if let Err(r) = verify_test_params(ctx, o, out) {
        return fail(req, r);
    }
    let (node, qp) = match init_node(ctx, o, out) {
        Ok(x) => x,
        Err(r) => return fail(req, r),
    };
    let qp = match req.init_qp(qp) {
        Ok(qp) => qp,
        Err(e) => {
            out.warn(format!("udaddy: failure accepting: {e}"));
            return fail(req, -1);
        }
    };
    if let Err(r) = node.post_recvs(&qp, o, out) {
        return fail(req, r);
    }
    match req.accept(qp, &ConnParam::default()) {
        Ok(conn) => Ok((node, conn)),
        Err(e) => Err(event_error(&e, "udaddy: failure accepting", out)),
    }
}

/// `run_server`.
fn run_server(o: &Opts, out: &Out, ready: Option<std::sync::mpsc::Sender<SocketAddr>>) -> i32 {
    out.say("udaddy: starting server");
    let (ctx, ch, addr) = match open_at(o.src.as_deref(), PORT, out) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let listener = match listen::<Udp>("udaddy", &ch, addr, ready, out) {
        Ok(l) => l,
        Err(r) => return r,
    };
    // connect_events (its result ignored, as udaddy's server ignores it).
    let mut nodes = Vec::new();
    for _ in 0..o.connections {
        match next_request(&listener) {
            Ok(req) => match accept(&ctx, req, o, out) {
                Ok(n) => nodes.push(n),
                Err(_) => break,
            },
            Err(e) => {
                event_error(&e, "udaddy: failure in rdma_get_cm_event", out);
                break;
            }
        }
    }
    if o.message_count > 0 {
        out.say("receiving data transfers");
        let r = poll_cqs(&ctx, &mut nodes, o, out);
        if r != 0 {
            return r;
        }
        out.say("sending replies");
        for (node, conn) in &nodes {
            if let Err(r) = node.post_sends(conn, true, o, out) {
                return r;
            }
        }
        let r = poll_cqs(&ctx, &mut nodes, o, out);
        if r != 0 {
            return r;
        }
        out.say("data transfers complete");
    }
    0
}

/// `run_client`.
fn run_client(o: &Opts, out: &Out) -> i32 {
    out.say("udaddy: starting client");
    let (ctx, ch, dst) = match open_at(o.dst.as_deref(), PORT, out) {
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
    out.say("udaddy: connecting");
    let mut nodes: Vec<(Node, Connection<'static, Udp>)> = Vec::new();
    for _ in 0..o.connections {
        let id = match create_id::<Udp>(&ch, "rdma_create_id", out) {
            Ok(id) => id,
            Err(r) => return r,
        };
        let id = match id.resolve_addr(src, dst, RESOLVE_TIMEOUT) {
            Ok(id) => id,
            Err(e) => return event_error(&e, "udaddy: failure getting addr", out),
        };
        let id = match id.resolve_route(RESOLVE_TIMEOUT) {
            Ok(id) => id,
            Err(e) => return event_error(&e, "udaddy: resolve route failed", out),
        };
        // route_handler.
        if let Err(r) = verify_test_params(&ctx, o, out) {
            return r;
        }
        let (mut node, qp) = match init_node(&ctx, o, out) {
            Ok(x) => x,
            Err(r) => return r,
        };
        let qp = match id.init_qp(qp) {
            Ok(qp) => qp,
            Err(e) => {
                out.warn(format!("udaddy: failure connecting: {e}"));
                return -1;
            }
        };
        if let Err(r) = node.post_recvs(&qp, o, out) {
            return r;
        }
        let conn = match id.connect(qp, &ConnParam::default(), CONNECT_TIMEOUT) {
            Ok(c) => c,
            Err(e) => return event_error(&e, "udaddy: failure connecting", out),
        };
        // resolved_handler: the peer as the SIDR reply gave it.
        let peer = conn.ud_peer().expect("the active side learns its peer");
        node.ah = match AddressHandle::new(&node.pd, peer.av) {
            Ok(ah) => Some(ah),
            Err(_) => {
                out.say("udaddy: failure creating address handle");
                return -1;
            }
        };
        node.remote_qpn = peer.qp_num;
        node.remote_qkey = peer.qkey;
        nodes.push((node, conn));
    }
    if o.message_count > 0 {
        out.say("initiating data transfers");
        for (node, conn) in &nodes {
            if let Err(r) = node.post_sends(conn, false, o, out) {
                return r;
            }
        }
        out.say("receiving data transfers");
        let r = poll_cqs(&ctx, &mut nodes, o, out);
        if r != 0 {
            return r;
        }
        out.say("data transfers complete");
    }
    0
}
