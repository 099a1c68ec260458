//! What `rc_pingpong`, `uc_pingpong`, `ud_pingpong` and `srq_pingpong` share: the command line
//! of rdma-core's programs of the same name (libibverbs/examples/*_pingpong.c), their TCP
//! exchange of addresses, the ping-pong loop over a generated poll loop, and the summary.
//!
//! Each example includes this file with `#[path = "common/pingpong.rs"] mod pingpong;` and uses
//! part of it.
//!
//! # The exchange (pingpong.c and each program's `pp_{client,server}_exch_dest`)
//!
//! One message per QP (`srq_pingpong`: always 256, the unused ones zero), each the 52 bytes of
//! `sprintf(msg, "%04x:%06x:%06x:%s", lid, qpn, psn, gid)` with its NUL, where `gid` is the 16
//! bytes of the GID as 32 hex digits (`gid_to_wire_gid`). The client connects, sends its
//! messages, reads the server's, sends `"done"` (5 bytes, with the NUL) and closes; then it
//! brings its QPs up. The server accepts one connection, reads the client's messages, brings its
//! QPs up (so that it is ready to receive before the client can send), sends its own messages
//! and reads `"done"`. The client sends first.
#![allow(dead_code)] // each example uses part of this module

#[path = "side.rs"]
mod side;
pub use side::{because, Role};
use side::{getopt, help, options, refuse, run_both, run_one, server_name, Opt};

use std::cell::RefCell;
use std::collections::hash_map::RandomState;
use std::fmt::Display;
use std::hash::{BuildHasher, Hasher};
use std::io::{Read, Write};
use std::net::{Ipv4Addr, Ipv6Addr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use typed_verbs::event::EventAcks;
use typed_verbs::qp::ex::OpsFor;
use typed_verbs::qp::FixedDest;
use typed_verbs::qp_state::{Rts, Transitions};
use typed_verbs::{
    Access, AccessFlags, AddressHandle, AddressVector, CompChannel, ConnectedInit, Context, Cq, Ex,
    Gid, GlobalRoute, Mr, Mtu, OwnRq, PageBuf, Pd, Qp, QpBuilder, QpType, Rc, RcRtr, RcRts, SendWr,
    Sge, Shared, SqPsn, Threading, Uc, UcRtr, Ud, UdDest,
};

/// `PINGPONG_RECV_WRID`: the `wr_id` of every receive.
pub const RECV_WRID: u64 = 1;
/// `PINGPONG_SEND_WRID`: the `wr_id` of every send.
pub const SEND_WRID: u64 = 2;
/// `sizeof "0000:000000:000000:00000000000000000000000000000000"`.
pub const MSG_LEN: usize = 52;
/// `srq_pingpong`'s `MAX_QP`: it always exchanges this many addresses.
pub const MAX_QP: usize = 256;
/// `IBV_LINK_LAYER_ETHERNET`.
const LINK_LAYER_ETHERNET: u8 = 2;

typed_verbs::completion_record! {
    /// What the ping-pong loop reads of a completion: which work request, on which QP.
    pub struct PpWc { wr_id, qp_num }
    max_batch = 16;
}

/// What one program's command line offers beyond the options every one has.
pub struct Program {
    /// The program's name, as rdma-core's without `ibv_` (`rc_pingpong`).
    pub name: &'static str,
    /// The default of `-s`.
    pub default_size: u32,
    /// Whether it takes `-m/--mtu` (not `ud_pingpong`).
    pub mtu: bool,
    /// Whether it takes `-q/--num-qp` (`srq_pingpong`).
    pub num_qp: bool,
    /// Whether it takes `-N/--new_send` and `-c/--chk` (`rc_pingpong`, as rdma-core's).
    pub new_send: bool,
}

impl Program {
    /// A program over connected QPs, `rc_pingpong` or `uc_pingpong`: 4096 bytes by default, `-m`
    /// but not `-q`.
    pub const fn connected(name: &'static str) -> Program {
        Program {
            name,
            default_size: 4096,
            mtu: true,
            num_qp: false,
            new_send: false,
        }
    }
}

/// The parsed command line.
#[derive(Clone, Debug)]
pub struct Opts {
    /// `-p`: the TCP port of the exchange.
    pub port: u16,
    /// `-d`: the device (else `TYPED_VERBS_DEVICE`, else the first real device, else the
    /// software device `sw0`).
    pub ib_dev: Option<String>,
    /// `-i`: the device's port.
    pub ib_port: u8,
    /// `-s`: the message size.
    pub size: u32,
    /// `-m`: the path MTU.
    pub mtu: Mtu,
    /// `-r`: receives posted at a time.
    pub rx_depth: u32,
    /// `-n`: exchanges.
    pub iters: u32,
    /// `-l`: service level.
    pub sl: u8,
    /// `-e`: sleep on completion events.
    pub events: bool,
    /// `-g`: the local GID index (-1: none, no GRH).
    pub gid_idx: i32,
    /// `-q`: QPs (`srq_pingpong`; 1 otherwise).
    pub num_qp: u32,
    /// The host to connect to (client); `None` for the server.
    pub server_name: Option<String>,
    /// `--self`: server and client in this process, on two threads, over 127.0.0.1.
    pub self_test: bool,
    /// `--timeout`: how long the loop waits for a completion before it reports the messages
    /// that did not arrive as lost and fails (`None`: forever, as rdma-core's programs wait).
    /// Not in rdma-core's programs; it changes nothing on the wire.
    pub timeout: Option<Duration>,
    /// `-N` (`rc_pingpong`): post the sends through an extended QP (`ibv_wr_start` ...
    /// `ibv_wr_complete`) instead of `ibv_post_send`.
    pub new_send: bool,
    /// `-c` (`rc_pingpong`): the client marks its buffer as rdma-core's does, and the server
    /// checks what it holds at the end ([`check_buffer`]).
    pub chk: bool,
}

/// The default of `--timeout`: a wait for a completion is bounded, so that a message lost on
/// the wire (UD and UC are not retransmitted) ends the run with a report instead of a hang.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(5);

fn usage(p: &Program) -> String {
    let mut u = String::new();
    let mut line = |s: String| {
        u.push_str(&s);
        u.push('\n');
    };
    line("Usage:".into());
    line(format!(
        "  {}            start a server and wait for connection",
        p.name
    ));
    line(format!(
        "  {} <host>     connect to server at <host>",
        p.name
    ));
    line(format!(
        "  {} --self     run server and client in this process (over 127.0.0.1)",
        p.name
    ));
    line(String::new());
    line("Options:".into());
    line("  -p, --port=<port>      listen on/connect to port <port> (default 18515)".into());
    line(
        "  -d, --ib-dev=<dev>     use IB device <dev> (default $TYPED_VERBS_DEVICE, else the first device)"
            .into(),
    );
    line("  -i, --ib-port=<port>   use port <port> of IB device (default 1)".into());
    line(format!(
        "  -s, --size=<size>      size of message to exchange (default {})",
        p.default_size
    ));
    if p.mtu {
        line("  -m, --mtu=<size>       path MTU (default 1024)".into());
    }
    if p.num_qp {
        line("  -q, --num-qp=<num>     number of QPs to use (default 16)".into());
    }
    line("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)".into());
    line("  -n, --iters=<iters>    number of exchanges (default 1000)".into());
    line("  -l, --sl=<sl>          service level value".into());
    line("  -e, --events           sleep on CQ events (default poll)".into());
    line("  -g, --gid-idx=<gid index> local port gid index".into());
    if p.new_send {
        line("  -c, --chk              validate received buffer".into());
        line("  -N, --new_send         use new post send WR API".into());
    }
    line("      --self             server and client on two threads of this process".into());
    line(format!(
        "      --timeout=<secs>   give up when no completion comes for <secs> seconds and report the lost messages (default {}; 0: wait forever)",
        DEFAULT_TIMEOUT.as_secs()
    ));
    u
}

/// `strtoul(s, NULL, 0)`, strictly: decimal, `0x` hex or `0` octal, the whole string.
fn parse_c_uint(s: &str) -> Option<u64> {
    let s = s.strip_prefix('+').unwrap_or(s);
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// `strtol(s, NULL, 0)`, strictly.
fn parse_c_int(s: &str) -> Option<i64> {
    match s.strip_prefix('-') {
        Some(rest) => parse_c_uint(rest)
            .and_then(|v| i64::try_from(v).ok())
            .map(|v| -v),
        None => parse_c_uint(s).and_then(|v| i64::try_from(v).ok()),
    }
}

/// Parses the command line as getopt_long does for rdma-core's program (options and the host
/// in any order, `-n100` or `-n 100`, `--iters=100` or `--iters 100`, flags grouped as `-eg1`,
/// `--` ends the options). `Err` carries the exit code after usage or an error was printed.
pub fn parse_args(p: &Program, args: impl IntoIterator<Item = String>) -> Result<Opts, ExitCode> {
    let mut o = Opts {
        port: 18515,
        ib_dev: None,
        ib_port: 1,
        size: p.default_size,
        mtu: Mtu::Mtu1024,
        rx_depth: 500,
        iters: 1000,
        sl: 0,
        events: false,
        gid_idx: -1,
        num_qp: if p.num_qp { 16 } else { 1 },
        server_name: None,
        self_test: false,
        timeout: Some(DEFAULT_TIMEOUT),
        new_send: false,
        chk: false,
    };
    let bad = |msg: &str| refuse(p.name, &usage(p), msg);
    // -m and -q where the program takes them.
    let mut keys = String::from("pdisnrhSlgeT");
    if p.mtu {
        keys.push('m');
    }
    if p.num_qp {
        keys.push('q');
    }
    let mut opts = options(&keys);
    if p.new_send {
        // rdma-core's rc_pingpong spells these two so (perftest's -N is --noPeak).
        opts.push(Opt::flag('N', "new_send"));
        opts.push(Opt::flag('c', "chk"));
    }
    let (seen, positional) = getopt(&opts, args).map_err(|m| bad(&m))?;
    for (c, v) in seen {
        let uint = |max: u64| parse_c_uint(&v).filter(|n| *n <= max);
        match c {
            'h' => return Err(help(&usage(p))),
            'e' => o.events = true,
            'N' => o.new_send = true,
            'c' => o.chk = true,
            'S' => o.self_test = true,
            'T' => {
                let secs = v
                    .parse::<f64>()
                    .ok()
                    .filter(|s| s.is_finite() && *s >= 0.0 && *s <= 1e9)
                    .ok_or_else(|| bad(&format!("bad --timeout '{v}'")))?;
                o.timeout = (secs > 0.0).then(|| Duration::from_secs_f64(secs));
            }
            'p' => o.port = uint(65535).ok_or_else(|| bad(""))? as u16,
            'd' => o.ib_dev = Some(v),
            'i' => {
                o.ib_port = parse_c_int(&v)
                    .filter(|n| (1..=255).contains(n))
                    .ok_or_else(|| bad(""))? as u8
            }
            's' => {
                o.size = uint(u32::MAX.into())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| bad(""))? as u32
            }
            'm' => {
                o.mtu = match parse_c_int(&v) {
                    Some(256) => Mtu::Mtu256,
                    Some(512) => Mtu::Mtu512,
                    Some(1024) => Mtu::Mtu1024,
                    Some(2048) => Mtu::Mtu2048,
                    Some(4096) => Mtu::Mtu4096,
                    _ => return Err(bad("")),
                }
            }
            'q' => o.num_qp = uint(u32::MAX.into()).ok_or_else(|| bad(""))? as u32,
            'r' => {
                o.rx_depth = uint(u32::MAX.into())
                    .filter(|n| *n >= 1)
                    .ok_or_else(|| bad(""))? as u32
            }
            'n' => o.iters = uint(i32::MAX as u64).ok_or_else(|| bad(""))? as u32,
            'l' => {
                o.sl = parse_c_int(&v)
                    .filter(|n| (0..=15).contains(n))
                    .ok_or_else(|| bad(""))? as u8
            }
            'g' => {
                o.gid_idx = parse_c_int(&v)
                    .and_then(|n| i32::try_from(n).ok())
                    .ok_or_else(|| bad(""))?
            }
            _ => unreachable!("option {c}"),
        }
    }
    o.server_name = server_name(positional, o.self_test).ok_or_else(|| bad(""))?;
    if p.num_qp {
        if o.num_qp > o.rx_depth {
            eprintln!(
                "rx_depth {} is too small for {} QPs -- must have at least one receive per QP.",
                o.rx_depth, o.num_qp
            );
            return Err(ExitCode::FAILURE);
        }
        if o.num_qp == 0 || o.num_qp as usize >= MAX_QP {
            eprintln!(
                "num_qp {} must be at least 1 and less than {MAX_QP}",
                o.num_qp
            );
            return Err(ExitCode::FAILURE);
        }
    }
    Ok(o)
}

/// Where a side's lines go: stdout, with `server: ` or `client: ` in front under `--self`.
#[derive(Clone, Copy)]
pub struct Out {
    prefix: &'static str,
}

impl Out {
    /// Lines with nothing in front (one side per process).
    pub const PLAIN: Out = Out { prefix: "" };

    /// A line on stdout.
    pub fn say(&self, line: impl Display) {
        println!("{}{line}", self.prefix);
    }
    /// A line on stderr.
    pub fn warn(&self, line: impl Display) {
        eprintln!("{}{line}", self.prefix);
    }
}

/// A QP's address as the exchange carries it (`struct pingpong_dest`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dest {
    /// The port's LID (0 on RoCE).
    pub lid: u16,
    /// The QP number.
    pub qpn: u32,
    /// The first PSN the QP sends.
    pub psn: u32,
    /// The GID (zero without `-g`).
    pub gid: Gid,
}

impl Dest {
    /// `sprintf(msg, "%04x:%06x:%06x:%s", ...)` with `gid_to_wire_gid`, NUL-padded to 52 bytes.
    pub fn to_wire(self) -> [u8; MSG_LEN] {
        let gid: String = self.gid.0.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!("{:04x}:{:06x}:{:06x}:{gid}", self.lid, self.qpn, self.psn);
        let mut msg = [0u8; MSG_LEN];
        let n = text.len().min(MSG_LEN - 1);
        msg[..n].copy_from_slice(&text.as_bytes()[..n]);
        msg
    }

    /// `sscanf(msg, "%x:%x:%x:%s", ...)` with `wire_gid_to_gid`.
    pub fn from_wire(msg: &[u8]) -> Option<Dest> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = std::str::from_utf8(&msg[..end]).ok()?;
        let mut parts = text.splitn(4, ':');
        let lid = u16::from_str_radix(parts.next()?, 16).ok()?;
        let qpn = u32::from_str_radix(parts.next()?, 16).ok()?;
        let psn = u32::from_str_radix(parts.next()?, 16).ok()?;
        let wire = parts.next()?.as_bytes();
        if wire.len() != 32 {
            return None;
        }
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            let hex = std::str::from_utf8(&wire[2 * i..2 * i + 2]).ok()?;
            *b = u8::from_str_radix(hex, 16).ok()?;
        }
        Some(Dest {
            lid,
            qpn,
            psn,
            gid: Gid(gid),
        })
    }

    /// The address line rdma-core's programs print (`inet_ntop(AF_INET6, gid)`).
    pub fn line(&self, which: &str) -> String {
        format!(
            "  {which} LID 0x{:04x}, QPN 0x{:06x}, PSN 0x{:06x}, GID {}",
            self.lid,
            self.qpn,
            self.psn,
            Ipv6Addr::from(self.gid.0)
        )
    }
}

/// A random 24-bit PSN (`lrand48() & 0xffffff`).
pub fn random_psn() -> u32 {
    let mut h = RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32 & 0xff_ffff
}

/// What this side puts into its addresses: the port's LID, the GID of `-g` (zero without it),
/// and the GID index its address vectors send from.
#[derive(Clone, Copy, Debug)]
pub struct Local {
    /// The port's LID.
    pub lid: u16,
    /// The local GID.
    pub gid: Gid,
    /// The GID index (`-g`); `None` without one.
    pub gid_idx: Option<u8>,
}

impl Local {
    /// This side's address for the QP `qpn` with the send PSN `psn`.
    pub fn dest(&self, qpn: u32, psn: u32) -> Dest {
        Dest {
            lid: self.lid,
            qpn,
            psn,
            gid: self.gid,
        }
    }

    /// The address vector to `dest`, as `pp_connect_ctx` makes it: a global route only when
    /// the remote GID's interface id is not zero.
    pub fn av(&self, o: &Opts, dest: &Dest, hop_limit: u8) -> AddressVector {
        let grh = (dest.gid.0[8..] != [0u8; 8]).then_some(GlobalRoute {
            dgid: dest.gid,
            flow_label: 0,
            sgid_index: self.gid_idx.unwrap_or(0),
            hop_limit,
            traffic_class: 0,
        });
        AddressVector {
            dlid: dest.lid,
            sl: o.sl,
            src_path_bits: 0,
            static_rate: 0,
            port_num: o.ib_port,
            grh,
        }
    }
}

/// Opens `-d` (else `TYPED_VERBS_DEVICE`, else the first real device, else `sw0`).
pub fn open_device(o: &Opts) -> Result<Context, String> {
    match &o.ib_dev {
        Some(name) => Context::open(name).map_err(|e| format!("IB device {name} not found: {e}")),
        None => Context::open_from_env().map_err(because("Couldn't get context")),
    }
}

/// `pp_get_port_info` and the GID of `-g`, as the programs' `main` reads them. Under `--self`
/// on an Ethernet port without `-g`, GID index 0 is used (and said), since RoCE needs a GRH.
pub fn local(ctx: &Context, o: &Opts, out: &Out) -> Result<Local, String> {
    let port = ctx
        .query_port(o.ib_port)
        .map_err(because("Couldn't get port info"))?;
    if port.link_layer != LINK_LAYER_ETHERNET && port.lid == 0 {
        return Err("Couldn't get local LID".into());
    }
    let mut gid_idx = o.gid_idx;
    if gid_idx < 0 && o.self_test && port.link_layer == LINK_LAYER_ETHERNET {
        out.say("  (--self on an Ethernet port without -g: using GID index 0)");
        gid_idx = 0;
    }
    let (gid, gid_idx) = match u32::try_from(gid_idx) {
        Ok(i) => {
            let gid = ctx
                .query_gid(o.ib_port, i)
                .map_err(|e| format!("can't read sgid of index {i}: {e}"))?;
            (gid, u8::try_from(i).ok())
        }
        Err(_) => (Gid::default(), None),
    };
    Ok(Local {
        lid: port.lid,
        gid,
        gid_idx,
    })
}

/// Reads one 52-byte message.
fn read_dest(s: &mut TcpStream) -> std::io::Result<Option<Dest>> {
    let mut msg = [0u8; MSG_LEN];
    s.read_exact(&mut msg)?;
    Ok(Dest::from_wire(&msg))
}

fn read_dests(s: &mut TcpStream, n: usize) -> Result<Vec<Dest>, String> {
    (0..n)
        .map(|i| match read_dest(s) {
            Ok(Some(d)) => Ok(d),
            Ok(None) => Err(format!("Couldn't parse remote address [{i}]")),
            Err(e) => Err(format!("Couldn't read remote address [{i}]: {e}")),
        })
        .collect()
}

fn write_dests(s: &mut TcpStream, mine: &[Dest]) -> Result<(), String> {
    for d in mine {
        s.write_all(&d.to_wire())
            .map_err(because("Couldn't send local address"))?;
    }
    Ok(())
}

/// The exchange of addresses, with `connect` (bringing the QPs up to RTS for the remote
/// addresses) called where rdma-core calls `pp_connect_ctx`: on the server before it answers,
/// on the client after the exchange. `mine` is one message per address sent (and as many are
/// read). Returns the remote addresses and what `connect` made.
pub fn exchange<Q>(
    role: Role,
    port: u16,
    mine: &[Dest],
    connect: impl FnOnce(&[Dest]) -> Result<Q, String>,
) -> Result<(Vec<Dest>, Q), String> {
    match role {
        Role::Client(host) => {
            let mut s = TcpStream::connect((host.as_str(), port))
                .map_err(|e| format!("Couldn't connect to {host}:{port}: {e}"))?;
            write_dests(&mut s, mine)?;
            let rem = read_dests(&mut s, mine.len())?;
            s.write_all(b"done\0")
                .map_err(because("Couldn't read/write remote address"))?;
            drop(s);
            let q = connect(&rem)?;
            Ok((rem, q))
        }
        Role::Server(listener) => {
            let listener = match listener {
                Some(l) => l,
                None => TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
                    .map_err(|e| format!("Couldn't listen to port {port}: {e}"))?,
            };
            let (mut s, _) = listener.accept().map_err(because("accept() failed"))?;
            drop(listener);
            let rem = read_dests(&mut s, mine.len())?;
            let q = connect(&rem).map_err(|e| format!("{e}\nCouldn't connect to remote QP"))?;
            write_dests(&mut s, mine)?;
            let mut done = [0u8; 5];
            s.read_exact(&mut done)
                .map_err(because("Couldn't send/recv local address"))?;
            if &done[..4] != b"done" {
                return Err("Couldn't send/recv local address: no \"done\"".into());
            }
            Ok((rem, q))
        }
    }
}

/// One side's QPs as the ping-pong loop drives them.
pub trait Side {
    /// `pp_post_recv`: posts up to `n` receives, stopping at the first failure; how many.
    fn post_recv(&self, n: u32) -> u32;
    /// `pp_post_send`: the signaled send of QP `i`.
    fn post_send(&self, i: usize) -> typed_verbs::Result<()>;
    /// How many QPs (1 but for `srq_pingpong`).
    fn num_qp(&self) -> usize {
        1
    }
    /// `find_qp`: the index of the QP numbered `qp_num`.
    fn qp_index(&self, _qp_num: u32) -> Option<usize> {
        Some(0)
    }
}

/// With `-e`: the completion channel the CQ is created with.
pub fn channel<'c>(ctx: &'c Context, o: &Opts) -> Result<Option<CompChannel<'c>>, String> {
    o.events
        .then(|| CompChannel::new(ctx))
        .transpose()
        .map_err(because("Couldn't create completion channel"))
}

/// `ibv_create_cq(context, cqe, NULL, channel, 0)`.
pub fn create_cq<'a>(
    ctx: &'a Context,
    cqe: u32,
    channel: Option<&'a CompChannel<'_>>,
) -> Result<Cq<'a>, String> {
    let mut b = Cq::builder(ctx).cqe(cqe);
    if let Some(ch) = channel {
        b = b.channel(ch);
    }
    b.build().map_err(because("Couldn't create CQ"))
}

/// With `-e`, arms the CQ for its first completion event, as `main` does once the receives
/// are posted (before the exchange, so that no completion can come before it is armed).
pub fn arm(cq: &Cq<'_>, o: &Opts) -> Result<(), String> {
    if o.events {
        cq.req_notify(false)
            .map_err(because("Couldn't request CQ notification"))?;
    }
    Ok(())
}

/// The ping-pong loop of rdma-core's programs: the client posts the first send on every QP;
/// each QP sends its next message once its previous send and a receive completed; a receive
/// is reposted when fewer than `num_qp + 1` are left. Runs until `iters` sends and receives
/// completed (in all), then prints the summary. The completions come from the generated
/// [`PpWc::poll_legacy`] (`ibv_poll_cq` into a stack array, as rdma-core's programs poll).
///
/// With `-e` (`channel`), each round first sleeps in `get_cq_event` until the CQ has had a
/// completion, arms the CQ again and then polls it until it is empty (a completion that came
/// before the CQ was armed again raises no event); the events are acked together at the end
/// (`ibv_ack_cq_events(cq, num_cq_events)`).
///
/// Unlike rdma-core's loop, every wait is bounded by `--timeout` ([`Opts::timeout`]): when no
/// completion comes for that long, a message was lost (UD and UC are not retransmitted, and a
/// wire may drop a frame; or the peer stopped), and the loop fails with an error that says how
/// many messages this side received and sent, and how many it never received.
///
/// Not an extended CQ with `PpWc::poll`: rdma-core 44's rxe provider (Debian 12) ends the batch
/// inside `ibv_next_poll` when it returns ENOENT, so the `ibv_end_poll` that the man page
/// requires after it moves the consumer index past the producer and unlocks twice (fixed in
/// rdma-core 55 and 61); a batch longer than one completion then corrupts the CQ.
pub fn run_loop(
    cq: &Cq<'_>,
    channel: Option<&CompChannel<'_>>,
    side: &impl Side,
    o: &Opts,
    client: bool,
    routs: u32,
    out: &Out,
) -> Result<(), String> {
    let mut st = PingPong {
        side,
        o,
        routs,
        rcnt: 0,
        scnt: 0,
        pending: vec![RECV_WRID; side.num_qp()],
        failed: None,
    };
    if client {
        for i in 0..side.num_qp() {
            side.post_send(i).map_err(because("Couldn't post send"))?;
            st.pending[i] |= SEND_WRID;
        }
    }
    let start = Instant::now();
    let mut events = EventAcks::new();
    // When the last completion came: a wait longer than the timeout from here reports loss.
    let mut progress = Instant::now();
    while st.rcnt < o.iters || st.scnt < o.iters {
        if let Some(ch) = channel {
            if let Some(limit) = o.timeout {
                let left = limit.saturating_sub(progress.elapsed());
                if left.is_zero()
                    || !ch
                        .wait_readable(Some(left))
                        .map_err(because("Failed to get cq_event"))?
                {
                    return Err(st.lost(limit));
                }
            }
            let ev = ch
                .get_cq_event()
                .map_err(because("Failed to get cq_event"))?;
            if !ev.is_for(cq) {
                return Err(format!("CQ event for unknown CQ {:p}", ev.as_raw_cq()));
            }
            ev.ack_later(&mut events);
            cq.req_notify(false)
                .map_err(because("Couldn't request CQ notification"))?;
        }
        loop {
            let taken =
                PpWc::poll_legacy(cq, |wc| st.completed(wc)).map_err(because("poll CQ failed"))?;
            if let Some(e) = st.failed.take() {
                return Err(e);
            }
            if taken > 0 {
                progress = Instant::now();
            } else if let Some(limit) = o.timeout {
                if channel.is_none() && progress.elapsed() >= limit {
                    return Err(st.lost(limit));
                }
            }
            if channel.is_none() || taken == 0 {
                break;
            }
        }
    }
    events.ack();
    let usec = start.elapsed().as_secs_f64() * 1e6;
    let bytes = u64::from(o.size) * u64::from(o.iters) * 2;
    out.say(format!(
        "{bytes} bytes in {:.2} seconds = {:.2} Mbit/sec",
        usec / 1e6,
        bytes as f64 * 8.0 / usec
    ));
    out.say(format!(
        "{} iters in {:.2} seconds = {:.2} usec/iter",
        o.iters,
        usec / 1e6,
        usec / f64::from(o.iters)
    ));
    Ok(())
}

/// The loop's counters (`parse_single_wc`'s state).
struct PingPong<'s, S> {
    side: &'s S,
    o: &'s Opts,
    /// Receives posted and not completed.
    routs: u32,
    rcnt: u32,
    scnt: u32,
    /// Per QP: the work requests (`RECV_WRID | SEND_WRID`) its next send waits for.
    pending: Vec<u64>,
    /// The first failure; the rest of the batch is not acted on.
    failed: Option<String>,
}

impl<S: Side> PingPong<'_, S> {
    /// The report of a wait that gave up after `limit` without a completion.
    fn lost(&self, limit: Duration) -> String {
        let iters = self.o.iters;
        format!(
            "no completion for {:.1} s after {} of {iters} receives and {} of {iters} sends: a message was lost (dropped on the wire, or the peer stopped); lost: {} of {iters} messages not received",
            limit.as_secs_f64(),
            self.rcnt,
            self.scnt,
            iters - self.rcnt
        )
    }

    fn completed(&mut self, wc: Result<PpWc, PpWcError>) {
        if self.failed.is_none() {
            if let Err(e) = self.step(wc) {
                self.failed = Some(e);
            }
        }
    }

    fn step(&mut self, wc: Result<PpWc, PpWcError>) -> Result<(), String> {
        let wc = wc.map_err(|e| {
            format!(
                "Failed status {:?} ({}) for wr_id {}",
                e.status,
                e.status.raw(),
                e.wr_id
            )
        })?;
        let num_qp = self.side.num_qp();
        let i = if num_qp == 1 {
            0
        } else {
            self.side
                .qp_index(wc.qp_num)
                .ok_or_else(|| format!("Couldn't find QPN {:06x}", wc.qp_num))?
        };
        match wc.wr_id {
            SEND_WRID => self.scnt += 1,
            RECV_WRID => {
                self.routs -= 1;
                if self.routs as usize <= num_qp {
                    self.routs += self.side.post_recv(self.o.rx_depth - self.routs);
                    if self.routs < self.o.rx_depth {
                        return Err(format!("Couldn't post receive ({})", self.routs));
                    }
                }
                self.rcnt += 1;
            }
            id => return Err(format!("Completion for unknown wr_id {id}")),
        }
        self.pending[i] &= !wc.wr_id;
        if self.scnt < self.o.iters && self.pending[i] == 0 {
            self.side
                .post_send(i)
                .map_err(because("Couldn't post send"))?;
            self.pending[i] = RECV_WRID | SEND_WRID;
        }
        Ok(())
    }
}

/// The program's `main`: parses the command line and runs `run` as server or client, or both
/// on two threads under `--self`. `run` gets the options, its role and where its lines go.
pub fn main<F>(p: &Program, run: F) -> ExitCode
where
    F: Fn(&Opts, Role, &Out) -> Result<(), String> + Sync,
{
    let o = match parse_args(p, std::env::args()) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if o.self_test {
        return self_test(&o, &run);
    }
    run_one(o.server_name.as_ref(), |role| run(&o, role, &Out::PLAIN))
}

/// `--self`: the server on one thread, the client on another, each with its own context, the
/// exchange over 127.0.0.1. The listener is bound before either starts, so the client never
/// races the server. If either side fails the process exits at once with a failure (the other
/// side could wait for it forever).
fn self_test<F>(o: &Opts, run: &F) -> ExitCode
where
    F: Fn(&Opts, Role, &Out) -> Result<(), String> + Sync,
{
    run_both(o.port, "client: ", |role, server_name, prefix| {
        let o = Opts {
            server_name,
            ..o.clone()
        };
        run(&o, role, &Out { prefix })
    })
}

/// What `rc_pingpong` and `uc_pingpong` differ in: the QP type and the attributes of its RTR
/// and RTS transitions, as rdma-core's programs set them.
pub trait Connection: Transitions<Init = ConnectedInit> + FixedDest {
    /// INIT → RTR towards `rem`.
    fn rtr(av: AddressVector, mtu: Mtu, rem: &Dest) -> Self::Rtr;
    /// RTR → RTS, starting at `sq_psn`.
    fn rts(sq_psn: u32) -> Self::Rts;
}

impl Connection for Rc {
    fn rtr(av: AddressVector, mtu: Mtu, rem: &Dest) -> RcRtr {
        RcRtr {
            av,
            path_mtu: mtu,
            dest_qp_num: rem.qpn,
            rq_psn: rem.psn,
            max_dest_rd_atomic: 1,
            min_rnr_timer: 12,
        }
    }
    fn rts(sq_psn: u32) -> RcRts {
        RcRts {
            sq_psn,
            timeout: 14,
            retry_cnt: 7,
            rnr_retry: 7,
            max_rd_atomic: 1,
        }
    }
}

/// An extended QP of a connected type is brought up as the type is (`-N`).
impl<T: Connection, O: OpsFor<T>> Connection for Ex<T, O> {
    fn rtr(av: AddressVector, mtu: Mtu, rem: &Dest) -> T::Rtr {
        T::rtr(av, mtu, rem)
    }
    fn rts(sq_psn: u32) -> T::Rts {
        T::rts(sq_psn)
    }
}

impl Connection for Uc {
    fn rtr(av: AddressVector, mtu: Mtu, rem: &Dest) -> UcRtr {
        UcRtr {
            av,
            path_mtu: mtu,
            dest_qp_num: rem.qpn,
            rq_psn: rem.psn,
        }
    }
    fn rts(sq_psn: u32) -> SqPsn {
        SqPsn { sq_psn }
    }
}

/// How `rc_pingpong` and `uc_pingpong` post their sends: [`Legacy`] (`ibv_post_send`) or, with
/// `-N`, [`NewSend`] (a batch of one on an extended QP, as rdma-core's `-N` posts).
pub trait SendPath<T: Connection> {
    /// The QP's type: `T`, or the extended `Ex<T, _>`.
    type Q: Connection;
    /// Whether a message of at most the QP's `max_inline_data` bytes goes inline.
    const INLINE: bool;
    /// Creates the QP.
    fn build<'a>(b: QpBuilder<'a, T, OwnRq, Shared>) -> typed_verbs::Result<Qp<'a, Self::Q>>;
    /// `pp_post_send`: the signaled send of `sge`; of the bytes `inline` instead, if given.
    fn post(
        qp: &mut Qp<'_, Self::Q, OwnRq, Shared, (), Rts>,
        sge: Sge<'_>,
        inline: Option<&[u8]>,
    ) -> typed_verbs::Result<()>;
}

/// `ibv_post_send` of one `IBV_WR_SEND` from the buffer (the examples' path without `-N`).
pub struct Legacy;

impl<T: Connection> SendPath<T> for Legacy {
    type Q = T;
    const INLINE: bool = false;
    fn build<'a>(b: QpBuilder<'a, T, OwnRq, Shared>) -> typed_verbs::Result<Qp<'a, T>> {
        b.build()
    }
    fn post(
        qp: &mut Qp<'_, T, OwnRq, Shared, (), Rts>,
        sge: Sge<'_>,
        _: Option<&[u8]>,
    ) -> typed_verbs::Result<()> {
        qp.post_send(&SendWr::send(SEND_WRID, &[sge]).signaled())
    }
}

/// The send ops of `-N`'s QP: `IBV_QP_EX_WITH_SEND`, as rdma-core's.
pub type SendOnly = typed_verbs::send_ops!(SEND);

/// `-N`: an extended QP created for [`SendOnly`] (`ibv_create_qp_ex` with
/// `IBV_QP_INIT_ATTR_SEND_OPS_FLAGS`), each send a batch of one (`ibv_wr_start`, `ibv_wr_send`,
/// the data, `ibv_wr_complete`). A message that fits the QP's `max_inline_data` goes inline
/// (`ibv_wr_set_inline_data`, with `IBV_SEND_INLINE`), a larger one from its SGE
/// (`ibv_wr_set_sge`, without the flag). rdma-core's `-N` sets `IBV_SEND_INLINE` and then calls
/// `ibv_wr_set_sge`, which rxe sends from the WQE's inline area: not the message (see
/// scripts/rxe-lane.sh's probe).
pub struct NewSend;

impl<T: Connection> SendPath<T> for NewSend
where
    SendOnly: OpsFor<T>,
{
    type Q = Ex<T, SendOnly>;
    const INLINE: bool = true;
    fn build<'a>(b: QpBuilder<'a, T, OwnRq, Shared>) -> typed_verbs::Result<Qp<'a, Self::Q>> {
        b.send_ops::<SendOnly>().build()
    }
    fn post(
        qp: &mut Qp<'_, Self::Q, OwnRq, Shared, (), Rts>,
        sge: Sge<'_>,
        inline: Option<&[u8]>,
    ) -> typed_verbs::Result<()> {
        qp.post_batch(|batch| {
            let wr = batch.send(SEND_WRID).signaled();
            match inline {
                Some(bytes) => wr.inline(bytes),
                None => wr.sge(sge),
            }
        })
    }
}

/// The connected QP and the one buffer every send and receive uses, as in rdma-core. The QP is
/// in a `RefCell`: a batch (`-N`) borrows it mutably while it is open.
struct ConnectedSide<'a, T: Connection, P: SendPath<T>> {
    qp: RefCell<Qp<'a, P::Q, OwnRq, Shared, (), Rts>>,
    mr: &'a Mr<'a>,
    sge: Sge<'a>,
    /// Whether the message goes inline (`-N`, and it fits `max_inline_data`).
    inline: bool,
}

impl<T: Connection, P: SendPath<T>> Side for ConnectedSide<'_, T, P> {
    fn post_recv(&self, n: u32) -> u32 {
        let qp = self.qp.borrow();
        post_recvs(n, || qp.post_recv(RECV_WRID, &[self.sge]).is_ok())
    }

    fn post_send(&self, _: usize) -> typed_verbs::Result<()> {
        let mut qp = self.qp.borrow_mut();
        if self.inline {
            // The message as it is now (the last one received, or the first): copied out of
            // the region, then into the work request by ibv_wr_set_inline_data.
            let mut bytes = [0u8; MAX_INLINE_COPY];
            let bytes = &mut bytes[..self.sge.length() as usize];
            self.mr.read(0, bytes)?;
            P::post(&mut qp, self.sge, Some(bytes))
        } else {
            P::post(&mut qp, self.sge, None)
        }
    }
}

/// The most a message sent inline may have here (the copy's stack buffer): a larger
/// `max_inline_data` is used up to this.
const MAX_INLINE_COPY: usize = 1024;

/// The capabilities of rdma-core's ping-pong QPs (`pp_init_ctx`): one send and `-r` receives
/// outstanding, one SGE each.
pub fn pp_caps<'a, T: QpType, S: Threading>(
    b: QpBuilder<'a, T, OwnRq, S>,
    o: &Opts,
) -> QpBuilder<'a, T, OwnRq, S> {
    b.max_send_wr(1)
        .max_recv_wr(o.rx_depth)
        .max_send_sge(1)
        .max_recv_sge(1)
}

/// `pp_post_recv`: up to `n` receives, each posted by `post` (false: refused); how many were.
pub fn post_recvs(n: u32, mut post: impl FnMut() -> bool) -> u32 {
    (0..n).take_while(|_| post()).count() as u32
}

/// The `-r` receives posted before the exchange (from INIT on, as rdma-core does), each by
/// `post`; an error unless all were.
pub fn post_first_recvs(o: &Opts, post: impl FnMut() -> bool) -> Result<u32, String> {
    let posted = post_recvs(o.rx_depth, post);
    if posted < o.rx_depth {
        return Err(format!("Couldn't post receive ({posted})"));
    }
    Ok(posted)
}

/// `rc_pingpong` and `uc_pingpong`: one QP of type `T`, brought up towards the peer's after the
/// exchange, then the ping-pong loop. Its sends go through `ibv_post_send`, or with `-N` through
/// an extended QP ([`NewSend`]).
pub fn run_connected<T: Connection>(o: &Opts, role: Role, out: &Out) -> Result<(), String>
where
    SendOnly: OpsFor<T>,
{
    if o.new_send {
        run_connected_by::<T, NewSend>(o, role, out)
    } else {
        run_connected_by::<T, Legacy>(o, role, out)
    }
}

/// [`run_connected`] with the sends posted by `P`.
fn run_connected_by<T: Connection, P: SendPath<T>>(
    o: &Opts,
    role: Role,
    out: &Out,
) -> Result<(), String> {
    let ctx = open_device(o)?;
    let pd = Pd::new(&ctx).map_err(because("Couldn't allocate PD"))?;
    let client = role.is_client();
    let size = o.size as usize;
    // Page-aligned, as rdma-core's memalign(page_size, size).
    let mut buf = PageBuf::new(size).map_err(because("Couldn't allocate work buf."))?;
    buf.fill(0x7b);
    if o.chk && client {
        // rdma-core's `-c`: `ctx->buf[i] = i / page_size % sizeof(char)` at every page's start,
        // which is 0 (before the first send; nothing was received yet).
        for at in (0..size).step_by(page_size()) {
            buf[at] = 0;
        }
    }
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE).map_err(because("Couldn't register MR"))?;
    let sge = mr.sge(0..size).expect("the whole region");
    let channel = channel(&ctx, o)?;
    let cq = create_cq(&ctx, o.rx_depth + 1, channel.as_ref())?;
    let qp = P::build(pp_caps(Qp::<T>::builder(&pd, &cq, &cq), o))
        .map_err(because("Couldn't create QP"))?;
    // rdma-core: IBV_SEND_INLINE when `init_attr.cap.max_inline_data >= size` (the QP's actual
    // cap, after creation).
    let inline = P::INLINE && size <= (qp.caps().max_inline_data as usize).min(MAX_INLINE_COPY);
    let qp = qp
        .to_init(ConnectedInit {
            port_num: o.ib_port,
            pkey_index: 0,
            access: AccessFlags::NONE,
        })
        .map_err(because("Failed to modify QP to INIT"))?;
    // Receives may be posted from INIT on: all of them before the exchange, as rdma-core does.
    let posted = post_first_recvs(o, || qp.post_recv(RECV_WRID, &[sge]).is_ok())?;
    arm(&cq, o)?;

    let local = local(&ctx, o, out)?;
    let me = local.dest(qp.qp_num(), random_psn());
    out.say(me.line("local address: "));
    let (rem, qp) = exchange(role, o.port, &[me], |rem| {
        let rem = &rem[0];
        qp.to_rtr(P::Q::rtr(local.av(o, rem, 1), o.mtu, rem))
            .map_err(because("Failed to modify QP to RTR"))?
            .to_rts(P::Q::rts(me.psn))
            .map_err(because("Failed to modify QP to RTS"))
    })?;
    out.say(rem[0].line("remote address:"));

    let side = ConnectedSide::<T, P> {
        qp: RefCell::new(qp),
        mr: &mr,
        sge,
        inline,
    };
    run_loop(&cq, channel.as_ref(), &side, o, client, posted, out)?;
    if o.chk {
        check_buffer(&mr, size, out)?;
    }
    Ok(())
}

/// `sysconf(_SC_PAGESIZE)`, rdma-core's `page_size`.
fn page_size() -> usize {
    // SAFETY: sysconf reads a constant of the system; no memory is passed.
    let n = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    usize::try_from(n).ok().filter(|&n| n > 0).unwrap_or(4096)
}

/// `-c`, once the loop is done: what the buffer holds must be the client's message (rdma-core's
/// client marks its buffer with `-c`; every message goes there and back, so the server ends
/// with the client's last message and the client with the server's echo of it).
///
/// rdma-core's server checks one byte per page (`ctx->buf[i] != i / page_size % sizeof(char)`,
/// that is, 0 at each page's start), prints `invalid data in page N` for each page whose byte
/// differs, and exits 0 all the same; its client checks nothing. This one checks on both sides,
/// prints the same line for each page where any byte differs from the client's message (0 at
/// each page's start, rdma-core's `0x7b` elsewhere), and fails, naming the first byte that
/// differs and the page's first 16 bytes: a check of one byte does not see a message replaced
/// by other bytes that start with 0.
pub fn check_buffer(mr: &Mr<'_>, size: usize, out: &Out) -> Result<(), String> {
    let mut held = vec![0u8; size];
    mr.read(0, &mut held)
        .map_err(because("Couldn't read the buffer"))?;
    let page = page_size();
    let expected = |at: usize| if at % page == 0 { 0 } else { 0x7b };
    let mut first = None;
    for (n, chunk) in held.chunks(page).enumerate() {
        let start = n * page;
        if let Some(i) = (0..chunk.len()).find(|&i| chunk[i] != expected(start + i)) {
            out.say(format!("invalid data in page {n}"));
            first.get_or_insert((start, start + i));
        }
    }
    match first {
        None => Ok(()),
        Some((page_start, at)) => {
            let head: Vec<String> = held[page_start..size.min(page_start + 16)]
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            Err(format!(
                "-c: byte {at} of the buffer is {:#04x}, the client's is {:#04x}; its page starts {}",
                held[at],
                expected(at),
                head.join(" ")
            ))
        }
    }
}

/// `ud_pingpong`'s command line: 1024 bytes by default (what rdma-core's code sets; its usage
/// text says 2048), neither `-m` nor `-q`.
pub const UD_PROGRAM: Program = Program {
    name: "ud_pingpong",
    default_size: 1024,
    mtu: false,
    num_qp: false,
    new_send: false,
};

/// The Q_Key both sides of `ud_pingpong` use.
pub const UD_QKEY: u32 = 0x1111_1111;
/// The GRH at the start of every UD receive buffer.
pub const GRH_LEN: usize = 40;

/// `ud_pingpong`'s two views of its buffer of `size + GRH_LEN` bytes: receives take all of it
/// from the start, sends go from byte `GRH_LEN`.
pub fn ud_sges<'a>(mr: &'a Mr<'_>, size: usize) -> (Sge<'a>, Sge<'a>) {
    let recv = mr.sge(0..size + GRH_LEN).expect("the whole region");
    let send = mr.sge(GRH_LEN..size + GRH_LEN).expect("past the GRH");
    (recv, send)
}

/// `ud_pingpong`'s side: the QP in RTS, the address handle of the remote QP and the buffer's
/// two views.
pub struct UdSide<'a> {
    pub qp: Qp<'a, Ud, OwnRq, Shared, (), Rts>,
    pub ah: AddressHandle<'a>,
    pub remote_qpn: u32,
    pub recv: Sge<'a>,
    pub send: Sge<'a>,
}

impl Side for UdSide<'_> {
    fn post_recv(&self, n: u32) -> u32 {
        post_recvs(n, || self.qp.post_recv(RECV_WRID, &[self.recv]).is_ok())
    }

    fn post_send(&self, _: usize) -> typed_verbs::Result<()> {
        let dest = UdDest::new(&self.ah, self.remote_qpn, UD_QKEY);
        self.qp
            .post_send(&SendWr::send_to(SEND_WRID, &[self.send], dest).signaled())
    }
}
