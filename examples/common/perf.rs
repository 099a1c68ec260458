//! What `tv_send_bw`, `tv_write_bw`, `tv_send_lat` and `tv_write_lat` share: perftest's
//! (linux-rdma/perftest) `ib_send_bw`, `ib_write_bw`, `ib_send_lat` and `ib_write_lat` on the
//! typed API. The same core options, the same test loops (`run_iter_bw`, `run_iter_bw_server`,
//! `run_iter_lat_send`, `run_iter_lat_write` of perftest_resources.c), the same figures computed
//! the same way (`print_report_bw`, `print_report_lat` of perftest_parameters.c) and printed in
//! the same table, so that one parser reads perftest's output and ours.
//!
//! Each program includes this file with `#[path = "common/perf.rs"] mod perf;`.
//!
//! # The exchange
//!
//! Over TCP, not perftest's own format (the typed tools talk to each other, and run side by side
//! with perftest, not against it). The client connects; each side sends one 128-byte message,
//! `"TVPERF1 <lid> <qpn> <psn> <rkey> <addr> <len> <gid>"` (hex, the GID as 32 hex digits,
//! NUL-padded), the address and length being its receive half of the buffer (the target of the
//! peer's RDMA writes); both bring their QP to RTS towards the other's, then synchronise (one
//! byte each way). The TCP connection stays open: the sides synchronise again before and after
//! each message size, outside the timed loops.
//!
//! # The posting method (`--use_old_post_send`)
//!
//! As perftest, the tools post through the extended QP (ibv_wr_post(3): `ibv_wr_start`, the
//! request, `ibv_wr_complete`; the typed `Qp::post_batch`, one request per batch as perftest's
//! `post_list` 1) when the device has it, and through the legacy `ibv_post_send` with
//! `--use_old_post_send` or when creating the extended QP fails with
//! `ErrorKind::SendOpsUnsupported` (siw, irdma, mlx4, qedr). The banner says which, as
//! perftest's: `ibv_wr* API     : ON` or `OFF`. (perftest also keeps the legacy path for
//! devices missing from its own list, rxe among them: on rxe, perftest posts with
//! `ibv_post_send` and the typed tools, by default, with `ibv_wr_*`.)
//!
//! # Connection through rdma_cm (`-R`)
//!
//! The connection is perftest's default, a TCP exchange; `-R` (perftest's connection through
//! rdma_cm) is refused with a message ([`connect`]): the typed tools do not implement it.
#![allow(dead_code)] // each program uses part of this module

#[path = "side.rs"]
mod side;
pub use side::{because, Role};
use side::{getopt, help, options, refuse, run_both, run_one, server_name};
use std::fmt::Display;
use std::io::{Read, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use typed_verbs::{
    access, send_ops, Access, AccessFlags, AddressVector, ConnectedInit, Context, CqEx, ErrorKind,
    Ex, Gid, GlobalRoute, Mr, Mtu, NoFields, OwnRq, PageBuf, Pd, Qp, Rc, RcRtr, RcRts, RemoteAddr,
    RemoteMr, Rts, SendWr, Sge, SingleThreaded,
};

/// perftest's `MAX_SIZE`: `-a` runs 2 B to 8 MiB.
pub const MAX_SIZE: u64 = 1 << 23;
/// perftest's `RESULT_LINE`.
pub const RESULT_LINE: &str =
    "---------------------------------------------------------------------------------------";
/// perftest's `RESULT_FMT` (MB/sec, as perftest 4.5 prints it).
pub const RESULT_FMT: &str =
    " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]";
/// perftest's `RESULT_FMT_LAT`.
pub const RESULT_FMT_LAT: &str = " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] ";
/// `DEF_PORT`.
const DEF_PORT: u16 = 18515;
/// `DEF_CACHE_LINE_SIZE` and the cycle buffer (`sysconf(_SC_PAGESIZE)`): bandwidth tests of
/// messages up to half a page move their buffer by a cache line per message within a page.
const CACHE_LINE: u64 = 64;
const CYCLE_BUFFER: u64 = 4096;
/// `MSG_SIZE_CQ_MOD_LIMIT`: above it, without `-Q` and without `-a`, every send is signalled.
const MSG_SIZE_CQ_MOD_LIMIT: u64 = 8192;
/// `DEF_HOP_LIMIT`.
const HOP_LIMIT: u8 = 64;
/// `IBV_LINK_LAYER_ETHERNET`.
const LINK_LAYER_ETHERNET: u8 = 2;
/// Size of one exchange message.
const MSG_LEN: usize = 128;

/// The operation a program measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verb {
    /// `IBV_WR_SEND` into posted receives.
    Send,
    /// `IBV_WR_RDMA_WRITE` into the peer's buffer.
    Write,
}

/// Bandwidth or latency.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Test {
    /// `BW`: a stream of `-n` messages, `-t` outstanding, every `-Q`th signalled.
    Bw,
    /// `LAT`: ping-pong, half the round trip per message.
    Lat,
}

/// One program.
pub struct Tool {
    /// Its name (`tv_send_bw`).
    pub name: &'static str,
    /// The title perftest prints (`Send BW Test`).
    pub title: &'static str,
    /// What it measures.
    pub verb: Verb,
    /// How.
    pub test: Test,
}

impl Tool {
    /// The program `name`, whose result table is titled `title`, measuring `verb` by `test`.
    pub const fn new(name: &'static str, title: &'static str, verb: Verb, test: Test) -> Tool {
        Tool {
            name,
            title,
            verb,
            test,
        }
    }
}

/// The parsed command line, with perftest's defaults and `force_dependecies` applied.
#[derive(Clone, Debug)]
pub struct Opts {
    /// `-p`: TCP port of the exchange.
    pub port: u16,
    /// `-d`: the device (else `TYPED_VERBS_DEVICE`, else the first device).
    pub ib_dev: Option<String>,
    /// `-i`: the device's port.
    pub ib_port: u8,
    /// `-x`: GID index (`None`: 0 on an Ethernet port, none on InfiniBand).
    pub gid_idx: Option<u8>,
    /// `-s`: message size.
    pub size: u64,
    /// `-n`: iterations.
    pub iters: u64,
    /// `-a`: every size from 2 B to 8 MiB.
    pub all: bool,
    /// `-F`: accepted (perftest: do not fail on a CPU frequency mismatch; the typed tools time
    /// with the monotonic clock, not cycles).
    pub cpu_freq_f: bool,
    /// `-t`: send queue depth (outstanding sends).
    pub tx_depth: u64,
    /// `-Q`: signal every `cq_mod`th send.
    pub cq_mod: u64,
    /// Whether `-Q` was given.
    pub cq_mod_set: bool,
    /// `-r`: receives posted (send tests).
    pub rx_depth: u64,
    /// `-N`: no peak bandwidth.
    pub no_peak: bool,
    /// `-R`: connect through rdma_cm.
    pub rdma_cm: bool,
    /// The server's host (client); `None` for the server.
    pub server_name: Option<String>,
    /// `--self`: server and client on two threads of this process.
    pub self_test: bool,
    /// `--use_old_post_send`: post with the legacy `ibv_post_send`, not the extended QP's
    /// `ibv_wr_*`.
    pub use_old_post_send: bool,
}

fn usage(t: &Tool) -> String {
    let (size, tx, iters) = match t.test {
        Test::Bw => (65536, 128, 1000),
        Test::Lat => (2, 1, 1000),
    };
    let mut u = format!(
        "Usage:\n  {n}            start a server and wait for connection\n  {n} <host>     connect to server at <host>\n  {n} --self     server and client on two threads of this process (software device)\n\nOptions:\n",
        n = t.name
    );
    let mut line = |s: String| {
        u.push_str(&s);
        u.push('\n');
    };
    line(" -a, --all                  Run sizes from 2 till 2^23".into());
    line(" -d, --ib-dev=<dev>         Use IB device <dev> (default $TYPED_VERBS_DEVICE, else the first device)".into());
    line(" -F, --CPU-freq             Accepted for perftest compatibility (timing uses the monotonic clock)".into());
    line(" -h, --help                 Show this help screen.".into());
    line(" -i, --ib-port=<port>       Use port <port> of IB device (default 1)".into());
    line(format!(
        " -n, --iters=<iters>        Number of exchanges (at least 5, default {iters})"
    ));
    if t.test == Test::Bw {
        line(" -N, --noPeak               Don't measure peak bandwidth".into());
        line(" -Q, --cq-mod               Generate Cqe only after <--cq-mod> completion (default 100)".into());
    }
    line(" -p, --port=<port>          Listen on/connect to port <port> (default 18515)".into());
    if t.verb == Verb::Send {
        line(" -r, --rx-depth=<dep>       Rx queue size (default 512)".into());
    }
    line(" -R, --rdma_cm              Connect QPs with rdma_cm (not implemented: TCP)".into());
    line(format!(
        " -s, --size=<size>          Size of message to exchange (default {size})"
    ));
    line(format!(
        " -t, --tx-depth=<dep>       Size of tx queue (default {tx})"
    ));
    line(" -x, --gid-index=<index>    Test uses GID with GID index".into());
    line("     --self                 Server and client on two threads of this process".into());
    line("     --use_old_post_send    Use old post send flow (ibv_post_send, not ibv_wr_*)".into());
    u
}

/// `strtol(s, NULL, 0)`, strictly: decimal, `0x` hex or `0` octal, the whole string.
fn parse_num(s: &str) -> Option<u64> {
    if let Some(h) = s.strip_prefix("0x").or_else(|| s.strip_prefix("0X")) {
        u64::from_str_radix(h, 16).ok()
    } else if s.len() > 1 && s.starts_with('0') {
        u64::from_str_radix(&s[1..], 8).ok()
    } else {
        s.parse().ok()
    }
}

/// Parses the command line as perftest's `parser` does for these options (getopt_long:
/// `-n100` or `-n 100`, `--iters=100` or `--iters 100`, grouped flags `-aF`, `--` ends the
/// options). `Err` carries the exit code after the usage or an error was printed.
pub fn parse_args(t: &Tool, args: impl IntoIterator<Item = String>) -> Result<Opts, ExitCode> {
    let mut o = Opts {
        port: DEF_PORT,
        ib_dev: None,
        ib_port: 1,
        gid_idx: None,
        size: if t.test == Test::Bw { 65536 } else { 2 },
        iters: 1000,
        all: false,
        cpu_freq_f: false,
        tx_depth: if t.test == Test::Bw { 128 } else { 1 },
        cq_mod: 100,
        cq_mod_set: false,
        rx_depth: if t.verb == Verb::Send { 512 } else { 1 },
        no_peak: false,
        rdma_cm: false,
        server_name: None,
        self_test: false,
        use_old_post_send: false,
    };
    let bad = |msg: &str| refuse(t.name, &usage(t), msg);
    let opts = options("pdisnrhStxQaFRNO");
    let (seen, positional) = getopt(&opts, args).map_err(|m| bad(&m))?;
    for (c, v) in seen {
        let num = |lo: u64, hi: u64, what: &str| {
            parse_num(&v)
                .filter(|n| (lo..=hi).contains(n))
                .ok_or_else(|| bad(&format!("{what} should be between {lo} and {hi}")))
        };
        match c {
            'h' => return Err(help(&usage(t))),
            'a' => o.all = true,
            'F' => o.cpu_freq_f = true,
            'R' => o.rdma_cm = true,
            'N' => o.no_peak = true,
            'S' => o.self_test = true,
            'O' => o.use_old_post_send = true,
            'p' => o.port = num(0, 65535, "port")? as u16,
            'd' => o.ib_dev = Some(v),
            'i' => o.ib_port = num(1, 255, "IB port")? as u8,
            's' => o.size = num(1, u32::MAX.into(), "Message size")?,
            'n' => o.iters = num(5, 100_000_000, "Iteration num")?,
            't' => o.tx_depth = num(1, 15000, "Tx depth")?,
            'x' => o.gid_idx = Some(num(0, 255, "Gid index")? as u8),
            'r' => o.rx_depth = num(1, 16384, " Rx depth")?,
            'Q' => {
                o.cq_mod = num(1, 1024, "CQ moderation")?;
                o.cq_mod_set = true;
            }
            _ => unreachable!("option {c}"),
        }
    }
    o.server_name = server_name(positional, o.self_test).ok_or_else(|| bad(""))?;
    // force_dependecies.
    if o.tx_depth > o.iters {
        o.tx_depth = o.iters;
    }
    if t.verb == Verb::Send && o.rx_depth > o.iters {
        o.rx_depth = o.iters;
    }
    if t.test == Test::Lat {
        o.cq_mod = 1; // perftest: cq_mod is at most tx_depth, 1 in latency tests
    }
    if o.size > MSG_SIZE_CQ_MOD_LIMIT && !o.all && !o.cq_mod_set {
        o.cq_mod = 1;
    }
    if o.cq_mod > o.tx_depth {
        o.cq_mod = o.tx_depth;
    }
    if t.verb == Verb::Send && o.rx_depth % 2 == 1 && !o.all {
        o.rx_depth += 1; // perftest's "WA for a bug when rx_depth is odd in SEND"
    }
    if t.test == Test::Bw && o.iters > 20000 {
        o.no_peak = true;
    }
    if o.all {
        o.size = MAX_SIZE;
    }
    Ok(o)
}

/// Where a side's lines go: stdout, with `server: ` in front of the server's under `--self`
/// (the client's lines stay as perftest prints them, so one parser reads both programs).
#[derive(Clone, Copy)]
pub struct Out {
    prefix: &'static str,
}

impl Out {
    /// A line on stdout.
    pub fn say(&self, line: impl Display) {
        println!("{}{line}", self.prefix);
    }
}

/// The peer's QP and receive buffer, as the exchange carries them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Dest {
    /// The port's LID (0 on RoCE).
    pub lid: u16,
    /// The QP number.
    pub qpn: u32,
    /// The first PSN the QP sends.
    pub psn: u32,
    /// The rkey of the buffer.
    pub rkey: u32,
    /// The address of its receive half.
    pub addr: u64,
    /// The receive half's length.
    pub len: u64,
    /// The GID (zero without one).
    pub gid: Gid,
}

impl Dest {
    fn to_wire(self) -> [u8; MSG_LEN] {
        let gid: String = self.gid.0.iter().map(|b| format!("{b:02x}")).collect();
        let text = format!(
            "TVPERF1 {:x} {:x} {:x} {:x} {:x} {:x} {gid}",
            self.lid, self.qpn, self.psn, self.rkey, self.addr, self.len
        );
        let mut msg = [0u8; MSG_LEN];
        msg[..text.len()].copy_from_slice(text.as_bytes());
        msg
    }

    fn from_wire(msg: &[u8]) -> Option<Dest> {
        let end = msg.iter().position(|&b| b == 0).unwrap_or(msg.len());
        let text = std::str::from_utf8(&msg[..end]).ok()?;
        let mut f = text.split(' ');
        if f.next()? != "TVPERF1" {
            return None;
        }
        let mut hex = || u64::from_str_radix(f.next()?, 16).ok();
        let (lid, qpn, psn, rkey, addr, len) = (hex()?, hex()?, hex()?, hex()?, hex()?, hex()?);
        let wire = f.next()?.as_bytes();
        if wire.len() != 32 {
            return None;
        }
        let mut gid = [0u8; 16];
        for (i, b) in gid.iter_mut().enumerate() {
            *b = u8::from_str_radix(std::str::from_utf8(&wire[2 * i..2 * i + 2]).ok()?, 16).ok()?;
        }
        Some(Dest {
            lid: lid.try_into().ok()?,
            qpn: qpn.try_into().ok()?,
            psn: psn.try_into().ok()?,
            rkey: rkey.try_into().ok()?,
            addr,
            len,
            gid: Gid(gid),
        })
    }

    fn line(&self, which: &str) -> String {
        format!(
            " {which} address: LID {:#06x} QPN {:#06x} PSN {:#08x} RKey {:#010x} VAddr {:#018x} GID {}",
            self.lid,
            self.qpn,
            self.psn,
            self.rkey,
            self.addr,
            std::net::Ipv6Addr::from(self.gid.0)
        )
    }
}

/// The TCP connection to the peer: the exchange, then the synchronisation points.
pub struct Link {
    s: TcpStream,
}

impl Link {
    fn open(role: Role, port: u16) -> Result<Link, String> {
        let s = match role {
            Role::Client(host) => {
                // The server may not listen yet (perftest's client retries too).
                let mut tries = 0;
                loop {
                    match TcpStream::connect((host.as_str(), port)) {
                        Ok(s) => break s,
                        Err(_) if tries < 50 => {
                            tries += 1;
                            std::thread::sleep(std::time::Duration::from_millis(100));
                        }
                        Err(e) => return Err(format!("Couldn't connect to {host}:{port}: {e}")),
                    }
                }
            }
            Role::Server(listener) => {
                let listener = match listener {
                    Some(l) => l,
                    None => TcpListener::bind((Ipv4Addr::UNSPECIFIED, port))
                        .map_err(|e| format!("Couldn't listen to port {port}: {e}"))?,
                };
                listener.accept().map_err(because("accept() failed"))?.0
            }
        };
        s.set_nodelay(true).map_err(because("setsockopt"))?;
        Ok(Link { s })
    }

    fn exchange(&mut self, mine: &Dest) -> Result<Dest, String> {
        self.s
            .write_all(&mine.to_wire())
            .map_err(because("Couldn't send local address"))?;
        let mut msg = [0u8; MSG_LEN];
        self.s
            .read_exact(&mut msg)
            .map_err(because("Couldn't read remote address"))?;
        Dest::from_wire(&msg).ok_or_else(|| "Couldn't parse remote address".to_string())
    }

    /// `ctx_hand_shake`: one byte each way; returns once the peer reached the same point.
    pub fn sync(&mut self) -> Result<(), String> {
        self.s.write_all(b"s").map_err(because(
            "Failed to exchange data between server and clients",
        ))?;
        let mut b = [0u8; 1];
        self.s.read_exact(&mut b).map_err(because(
            "Failed to exchange data between server and clients",
        ))?;
        Ok(())
    }
}

/// A random 24-bit PSN.
fn random_psn() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u32(std::process::id());
    h.finish() as u32 & 0xff_ffff
}

typed_verbs::completion_record! {
    /// What the loops read of a completion: nothing but its success.
    pub struct PerfWc { wr_id }
    /// A failed work request.
    pub struct PerfWcError { wr_id, status, vendor_err }
    max_batch = 16;
}

/// The CQs: extended, single-threaded (each side polls its own on one thread), no optional
/// field (the loops read the status only).
pub type PerfCq<'a> = CqEx<'a, NoFields, SingleThreaded>;
/// The right to poll a [`PerfCq`].
pub type PerfPoller<'a> = typed_verbs::Poller<'a, NoFields, SingleThreaded>;
/// The connected QP, posting with the legacy `ibv_post_send` (`--use_old_post_send`).
pub type PerfQp<'a> = Qp<'a, Rc, OwnRq, SingleThreaded, (), Rts>;
/// The send ops of the extended QP: what the four tools post.
pub type PerfOps = send_ops!(SEND | RDMA_WRITE);
/// The connected QP, posting through the extended QP's `ibv_wr_*` (the default).
pub type PerfExQp<'a> = Qp<'a, Ex<Rc, PerfOps>, OwnRq, SingleThreaded, (), Rts>;

/// The QP of a side, with its posting method (perftest's `post_send_method`): the loops are
/// generic over [`PerfPost`] and chosen once, outside them ([`on_qp!`]).
pub enum PerfQps<'a> {
    /// `ibv_post_send` (`--use_old_post_send`, or a device without extended QPs).
    Old(PerfQp<'a>),
    /// `ibv_wr_start`, the request, `ibv_wr_complete` (`Qp::post_batch`).
    New(PerfExQp<'a>),
}

impl PerfQps<'_> {
    /// Whether the QP posts through `ibv_wr_*` (perftest's `ibv_wr* API : ON`).
    pub fn wr_api(&self) -> bool {
        matches!(self, PerfQps::New(_))
    }
}

/// Runs `$body` with `$q` bound to the QP of `$qps` (a `&mut PerfQps`), whichever its method:
/// the body is compiled once per method, so the loops choose no method per message.
macro_rules! on_qp {
    ($qps:expr, |$q:ident| $body:expr) => {
        match $qps {
            PerfQps::Old($q) => $body,
            PerfQps::New($q) => $body,
        }
    };
}

/// How a QP posts the loops' requests: one signalled or unsignalled send or RDMA write of one
/// SGE, and a receive.
pub trait PerfPost {
    /// A request, made before it is posted (once, where a loop posts the same one each time).
    type Wr<'s>;
    /// A send of `sge`, signalled if `signaled`.
    fn send<'s>(sge: &'s [Sge<'s>; 1], signaled: bool) -> Self::Wr<'s>;
    /// An RDMA write of `sge` to `remote`, signalled if `signaled`.
    fn write<'s>(
        sge: &'s [Sge<'s>; 1],
        remote: RemoteAddr<PerfAccess>,
        signaled: bool,
    ) -> Self::Wr<'s>;
    /// Posts `wr`.
    fn post(&mut self, wr: &Self::Wr<'_>) -> typed_verbs::Result<()>;
    /// Posts a receive into `sge`.
    fn post_recv(&self, sge: &[Sge<'_>; 1]) -> typed_verbs::Result<()>;
}

impl PerfPost for PerfQp<'_> {
    type Wr<'s> = SendWr<'s, Rc>;
    #[inline(always)]
    fn send<'s>(sge: &'s [Sge<'s>; 1], signaled: bool) -> SendWr<'s, Rc> {
        let wr = SendWr::send(0, sge);
        if signaled {
            wr.signaled()
        } else {
            wr
        }
    }
    #[inline(always)]
    fn write<'s>(
        sge: &'s [Sge<'s>; 1],
        remote: RemoteAddr<PerfAccess>,
        signaled: bool,
    ) -> SendWr<'s, Rc> {
        let wr = SendWr::rdma_write(0, sge, remote);
        if signaled {
            wr.signaled()
        } else {
            wr
        }
    }
    #[inline(always)]
    fn post(&mut self, wr: &SendWr<'_, Rc>) -> typed_verbs::Result<()> {
        self.post_send(wr)
    }
    #[inline(always)]
    fn post_recv(&self, sge: &[Sge<'_>; 1]) -> typed_verbs::Result<()> {
        Qp::post_recv(self, 0, sge)
    }
}

/// A request of the extended QP: what its builder and `ibv_wr_set_sge` get.
#[derive(Clone, Copy)]
pub struct ExWr<'s> {
    /// The write's target; `None` for a send.
    remote: Option<RemoteAddr<PerfAccess>>,
    sge: Sge<'s>,
    signaled: bool,
}

impl PerfPost for PerfExQp<'_> {
    type Wr<'s> = ExWr<'s>;
    #[inline(always)]
    fn send<'s>(sge: &'s [Sge<'s>; 1], signaled: bool) -> ExWr<'s> {
        ExWr {
            remote: None,
            sge: sge[0],
            signaled,
        }
    }
    #[inline(always)]
    fn write<'s>(
        sge: &'s [Sge<'s>; 1],
        remote: RemoteAddr<PerfAccess>,
        signaled: bool,
    ) -> ExWr<'s> {
        ExWr {
            remote: Some(remote),
            sge: sge[0],
            signaled,
        }
    }
    /// perftest's `_new_post_send` with `post_list` 1: `ibv_wr_start`, `wr_id`, `wr_flags`,
    /// the op, `ibv_wr_set_sge`, `ibv_wr_complete`.
    #[inline(always)]
    fn post(&mut self, wr: &ExWr<'_>) -> typed_verbs::Result<()> {
        let w = *wr;
        self.post_batch(|b| match w.remote {
            None => {
                let r = b.send(0);
                if w.signaled { r.signaled() } else { r }.sge(w.sge)
            }
            Some(remote) => {
                let r = b.rdma_write(0, remote);
                if w.signaled { r.signaled() } else { r }.sge(w.sge)
            }
        })
    }
    #[inline(always)]
    fn post_recv(&self, sge: &[Sge<'_>; 1]) -> typed_verbs::Result<()> {
        Qp::post_recv(self, 0, sge)
    }
}

/// `INC(size, cache_line_size)`.
fn inc(size: u64) -> u64 {
    size.div_ceil(CACHE_LINE) * CACHE_LINE
}

/// How many places a message of `size` cycles through (perftest's `increase_loc_addr` and
/// `increase_rem_addr`, for messages of at most half the cycle buffer; 1 otherwise).
fn cycle_slots(size: u64) -> u64 {
    if size <= CYCLE_BUFFER / 2 {
        CYCLE_BUFFER / inc(size)
    } else {
        1
    }
}

/// `BUFF_SIZE(size, cycle_buffer)`: each half of the buffer.
fn buff_size(size: u64) -> u64 {
    size.max(CYCLE_BUFFER)
}

/// The rights of each side's buffer (perftest's `IBV_ACCESS_LOCAL_WRITE |
/// IBV_ACCESS_REMOTE_WRITE`): the peer writes its receive half.
pub type PerfAccess = access!(LOCAL_WRITE | REMOTE_WRITE);
const PERF_ACCESS: PerfAccess = Access::LOCAL_WRITE.union(Access::REMOTE_WRITE);

/// Everything one side of a test holds, set up and connected.
pub struct Conn<'a> {
    /// The QP, in RTS, with its posting method.
    pub qp: PerfQps<'a>,
    /// The buffer: the send half at 0, the receive half (the peer's RDMA target) at `half`.
    pub mr: &'a Mr<'a, PageBuf, PerfAccess>,
    /// Length of each half.
    pub half: u64,
    /// The peer's receive half.
    pub remote: RemoteMr<PerfAccess>,
    /// The TCP link to the peer.
    pub link: Link,
}

impl<'a> Conn<'a> {
    /// The local SGE of message `n` of `size` bytes in the half at `base`, cycling as perftest.
    fn sges(&self, base: u64, size: u64) -> Vec<[Sge<'a>; 1]> {
        (0..cycle_slots(size))
            .map(|k| {
                let at = (base + k * inc(size)) as usize;
                [self
                    .mr
                    .sge(at..at + size as usize)
                    .expect("within the buffer")]
            })
            .collect()
    }

    /// The peer's receive-half addresses of message `n`, cycling as perftest.
    fn remotes(&self, size: u64) -> Vec<RemoteAddr<PerfAccess>> {
        (0..cycle_slots(size))
            .map(|k| {
                self.remote
                    .at(k * inc(size), size)
                    .expect("within the peer's buffer")
            })
            .collect()
    }
}

/// The QP's attributes as perftest's `ctx_modify_qp_to_rtr` / `_rts` set them.
fn rtr(o: &Opts, mtu: Mtu, sgid_index: Option<u8>, rem: &Dest) -> RcRtr {
    let grh = sgid_index.map(|sgid_index| GlobalRoute {
        dgid: rem.gid,
        flow_label: 0,
        sgid_index,
        hop_limit: HOP_LIMIT,
        traffic_class: 0,
    });
    RcRtr {
        av: AddressVector {
            dlid: rem.lid,
            sl: 0,
            src_path_bits: 0,
            static_rate: 0,
            port_num: o.ib_port,
            grh,
        },
        path_mtu: mtu,
        dest_qp_num: rem.qpn,
        rq_psn: rem.psn,
        max_dest_rd_atomic: 1,
        min_rnr_timer: 12,
    }
}

fn mtu_of(active: u32) -> Mtu {
    match active {
        1 => Mtu::Mtu256,
        2 => Mtu::Mtu512,
        4 => Mtu::Mtu2048,
        5 => Mtu::Mtu4096,
        _ => Mtu::Mtu1024,
    }
}

/// The connection: over TCP (the exchange above), perftest's default. `-R` (perftest's
/// connection through rdma_cm) is refused with a message: the typed tools do not implement it.
pub fn connect(o: &Opts) -> Result<(), String> {
    if o.rdma_cm {
        return Err(
            "-R (connection through rdma_cm) is not implemented by the typed tools; they connect \
             over TCP, perftest's default (run without -R)"
                .into(),
        );
    }
    Ok(())
}

/// Opens the device, registers the buffer, creates the CQs and the QP, exchanges addresses
/// and brings the QP up; then `body` runs the test on the connection, with the pollers of the
/// send CQ and of the receive CQ (the send tools only: the write tools post no receive).
/// Everything is dropped (QP, CQs, buffer, PD, context) when it returns.
pub fn with_conn<R>(
    tool: &Tool,
    o: &Opts,
    role: Role,
    out: &Out,
    body: impl FnOnce(&mut Conn<'_>, PerfPoller<'_>, Option<PerfPoller<'_>>) -> Result<R, String>,
) -> Result<R, String> {
    connect(o)?;
    let ctx = match &o.ib_dev {
        Some(name) => {
            Context::open(name).map_err(|e| format!("IB device {name} not found: {e}"))?
        }
        None => Context::open_from_env().map_err(because("Couldn't get context"))?,
    };
    let port = ctx
        .query_port(o.ib_port)
        .map_err(because("Couldn't get port info"))?;
    // On an Ethernet port (RoCE) a GRH is needed: GID 0 unless -x says otherwise.
    let sgid_index = o
        .gid_idx
        .or((port.link_layer == LINK_LAYER_ETHERNET).then_some(0));
    let gid = match sgid_index {
        Some(i) => ctx
            .query_gid(o.ib_port, i.into())
            .map_err(|e| format!("can't read sgid of index {i}: {e}"))?,
        None => Gid::default(),
    };
    let pd = Pd::new(&ctx).map_err(because("Couldn't allocate PD"))?;
    let half = buff_size(o.size);
    let mut buf = PageBuf::new(2 * half as usize).map_err(because("Couldn't allocate buffer"))?;
    buf.fill(0);
    let mr = Mr::new(&pd, buf, PERF_ACCESS).map_err(because("Couldn't allocate MR"))?;
    let send_cq = PerfCq::builder(&ctx)
        .cqe(o.tx_depth as u32)
        .build()
        .map_err(because("Couldn't create CQ"))?;
    let recv_cq = match tool.verb {
        Verb::Send => Some(
            PerfCq::builder(&ctx)
                .cqe(o.rx_depth as u32)
                .build()
                .map_err(because("Couldn't create CQ"))?,
        ),
        Verb::Write => None,
    };
    let builder = || {
        Qp::<Rc>::builder(&pd, &send_cq, recv_cq.as_ref().unwrap_or(&send_cq))
            .max_send_wr(o.tx_depth as u32)
            .max_recv_wr(o.rx_depth as u32)
            .max_send_sge(1)
            .max_recv_sge(1)
    };
    let init = ConnectedInit {
        port_num: o.ib_port,
        pkey_index: 0,
        access: AccessFlags::REMOTE_WRITE,
    };
    let old = |why: &'static str| -> Result<_, String> {
        let qp = builder().build().map_err(because(why))?;
        qp.to_init(init)
            .map_err(because("Failed to modify QP to INIT"))
    };
    /// The QP in INIT, by posting method.
    enum InitQp<N, O> {
        New(N),
        Old(O),
    }
    // perftest's choice of post_send_method: the extended QP unless --use_old_post_send or the
    // device has none.
    let qp = if o.use_old_post_send {
        InitQp::Old(old("Couldn't create QP")?)
    } else {
        match builder().send_ops::<PerfOps>().build() {
            Ok(qp) => InitQp::New(
                qp.to_init(init)
                    .map_err(because("Failed to modify QP to INIT"))?,
            ),
            Err(e) if matches!(e.kind, ErrorKind::SendOpsUnsupported { .. }) => {
                InitQp::Old(old("Couldn't create QP")?)
            }
            Err(e) => return Err(because("Couldn't create QP")(e)),
        }
    };
    let remote_self = mr.remote();
    let me = Dest {
        lid: port.lid,
        qpn: match &qp {
            InitQp::New(q) => q.qp_num(),
            InitQp::Old(q) => q.qp_num(),
        },
        psn: random_psn(),
        rkey: remote_self.rkey(),
        addr: remote_self.addr() + half,
        len: half,
        gid,
    };
    let mut link = Link::open(role, o.port)?;
    let rem = link.exchange(&me)?;
    out.say(me.line("local "));
    out.say(rem.line("remote"));
    let rts = RcRts {
        sq_psn: me.psn,
        timeout: 14,
        retry_cnt: 7,
        rnr_retry: 7,
        max_rd_atomic: 1,
    };
    let rtr = rtr(o, mtu_of(port.active_mtu), sgid_index, &rem);
    macro_rules! up {
        ($qp:expr) => {
            $qp.to_rtr(rtr)
                .map_err(because("Failed to modify QP to RTR"))?
                .to_rts(rts)
                .map_err(because("Failed to modify QP to RTS"))?
        };
    }
    let qp = match qp {
        InitQp::New(q) => PerfQps::New(up!(q)),
        InitQp::Old(q) => PerfQps::Old(up!(q)),
    };
    // Both QPs in RTS before either sends.
    link.sync()?;
    let mut conn = Conn {
        qp,
        mr: &mr,
        half,
        // The peer registered its buffer as this side did.
        remote: RemoteMr::from_peer(rem.addr, rem.len, rem.rkey, PERF_ACCESS),
        link,
    };
    let send_poll = send_cq.poller().map_err(because("poller"))?;
    let recv_poll = match &recv_cq {
        Some(cq) => Some(cq.poller().map_err(because("poller"))?),
        None => None,
    };
    body(&mut conn, send_poll, recv_poll)
}

/// The sizes to run: `-s`, or 2 to 8 MiB with `-a`.
pub fn sizes(o: &Opts) -> Vec<u64> {
    if o.all {
        (1..24).map(|i| 1u64 << i).collect()
    } else {
        vec![o.size]
    }
}

/// perftest's banner before the table (a short form of `ctx_print_test_info`).
fn banner(tool: &Tool, o: &Opts, out: &Out, cq_mod: u64, wr_api: bool) {
    out.say(RESULT_LINE);
    out.say(format!("                    {}", tool.title));
    out.say(format!(
        " Device         : {}",
        o.ib_dev.as_deref().unwrap_or("(default)")
    ));
    out.say(" Connection type : RC\t\tUsing SRQ      : OFF");
    out.say(format!(
        " ibv_wr* API     : {}",
        if wr_api { "ON" } else { "OFF" }
    ));
    out.say(format!(
        " TX depth        : {}\t\tCQ Moderation   : {cq_mod}",
        o.tx_depth
    ));
    if tool.verb == Verb::Send {
        out.say(format!(" RX depth        : {}", o.rx_depth));
    }
    out.say(" Data ex. method : Ethernet (TCP, typed-verbs' own exchange)");
    out.say(RESULT_LINE);
}

fn fail_wc(e: &PerfWcError) -> String {
    format!(
        "Completion with error at client: wr_id {} status {:?} ({}) vendor error {:#x}",
        e.wr_id,
        e.status,
        e.status.raw(),
        e.vendor_err
    )
}

/// Polls `cq` once (one batch of up to 16): how many completed, or the first failure.
#[inline(always)]
fn poll(poller: &mut PerfPoller<'_>) -> Result<u64, String> {
    let mut failed = None;
    let n = PerfWc::poll(poller, |wc| {
        if let Err(e) = wc {
            failed.get_or_insert(e);
        }
    })
    .map_err(because("poll CQ failed"))?;
    match failed {
        Some(e) => Err(fail_wc(&e)),
        None => Ok(n as u64),
    }
}

// ---------------------------------------------------------------------------------------------
// Time.

/// perftest's `get_cycles()`: the time-stamp counter on x86-64, one instruction. Not the
/// monotonic clock: in a VM whose clock source is the HPET (qemu under TCG) every
/// `clock_gettime` is a system call and a device read, tens of microseconds under TCG, which
/// the loops would pay per message. Elsewhere, the monotonic clock's nanoseconds.
#[inline(always)]
pub fn cycles() -> u64 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `rdtsc` exists on every x86-64 processor; it reads the time-stamp counter
        // and touches no memory.
        unsafe { std::arch::x86_64::_rdtsc() }
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        static EPOCH: std::sync::OnceLock<Instant> = std::sync::OnceLock::new();
        EPOCH.get_or_init(Instant::now).elapsed().as_nanos() as u64
    }
}

/// The rate of [`cycles`], measured against the monotonic clock over the run itself (perftest
/// samples it the same way when `/proc/cpuinfo`'s figure is off, as it is in a VM): a start
/// before the loop and an end after it, at least 20 ms apart.
pub struct Rate {
    t0: Instant,
    c0: u64,
}

impl Rate {
    /// The start, before the loop.
    pub fn start() -> Rate {
        Rate {
            t0: Instant::now(),
            c0: cycles(),
        }
    }

    /// The end, after the loop: cycles per nanosecond.
    pub fn per_ns(self) -> f64 {
        let min = Duration::from_millis(20);
        let el = self.t0.elapsed();
        if el < min {
            std::thread::sleep(min - el);
        }
        let c1 = cycles();
        let ns = self.t0.elapsed().as_nanos() as f64;
        (c1.wrapping_sub(self.c0)) as f64 / ns
    }
}

// ---------------------------------------------------------------------------------------------
// Bandwidth.

/// What `run_iter_bw` records: each post's time and each signalled completion's time
/// (`tposted`, `tcompleted`), or only the start and the end with `-N` (`noPeak`).
struct BwTimes {
    posted: Vec<Option<u64>>,
    completed: Vec<Option<u64>>,
    /// Cycles per nanosecond.
    rate: f64,
}

/// `print_report_bw` for one size: peak (unless `-N`), average and message rate, in perftest's
/// row format. Times are nanoseconds where perftest has cycles (`cycles_to_units` is then 1e9
/// per second).
fn bw_row(size: u64, iters: u64, cq_mod: u64, no_peak: bool, t: &BwTimes) -> String {
    let ns = |a: u64, b: u64| b.wrapping_sub(a) as f64 / t.rate;
    let p0 = t.posted[0].expect("a first post");
    let last = if no_peak { 0 } else { iters as usize - 1 };
    let end = t.completed[last].expect("a last completion");
    let sum = ns(p0, end);
    let mut peak = 0.0;
    if !no_peak {
        // opt_delta starts at tcompleted[0] - tposted[0] (set only when the first send was
        // signalled; perftest's then reads an unset entry, which only makes it larger).
        let mut opt = t.completed[0].map(|c| ns(p0, c)).unwrap_or(f64::INFINITY);
        let n = iters as usize;
        let cq = cq_mod as usize;
        for i in 0..n {
            let tp = t.posted[i].expect("every post timed");
            let mut j = (i + 1).div_ceil(cq) * cq - 1;
            while j < n {
                if let Some(tc) = t.completed[j] {
                    let d = ns(tp, tc) / (j - i + 1) as f64;
                    if d < opt {
                        opt = d;
                    }
                }
                j += cq;
            }
            if n % cq != 0 {
                let j = n - 1;
                if let Some(tc) = t.completed[j] {
                    let d = ns(tp, tc) / (j - i + 1) as f64;
                    if d < opt {
                        opt = d;
                    }
                }
            }
        }
        peak = size as f64 * 1e9 / (opt * 1048576.0);
    }
    let bw_avg = size as f64 * iters as f64 * 1e9 / (sum * 1048576.0);
    let msg_rate = iters as f64 * 1e9 / (sum * 1e6);
    format!(" {size:<7}    {iters:<10}       {peak:<7.2}            {bw_avg:<7.2}\t\t   {msg_rate:<7.6}")
}

/// `ib_send_bw` / `ib_write_bw`: the client streams, the server (send: receives and reposts;
/// write: waits); the client prints the figures, and so does a send server (no peak, from
/// its first receive to its last, as perftest's).
pub fn run_bw(tool: &Tool, o: &Opts, role: Role, out: &Out) -> Result<(), String> {
    let client = role.is_client();
    with_conn(tool, o, role, out, |c, mut send_poll, mut recv_poll| {
        let mut header = false;
        for size in sizes(o) {
            let cq_mod = o.cq_mod;
            if !header {
                banner(tool, o, out, cq_mod, c.qp.wr_api());
                if client || tool.verb == Verb::Send {
                    out.say(RESULT_FMT);
                }
                header = true;
            }
            if client {
                let sges = c.sges(0, size);
                let remotes = c.remotes(size);
                c.link.sync()?;
                let t = on_qp!(&mut c.qp, |q| bw_client(
                    q,
                    tool.verb,
                    o,
                    size,
                    cq_mod,
                    &sges,
                    &remotes,
                    &mut send_poll,
                ))?;
                out.say(bw_row(size, o.iters, cq_mod, o.no_peak, &t));
            } else if let Some(rp) = recv_poll.as_mut() {
                let sges = c.sges(c.half, size);
                // ctx_set_recv_wqes: rx_depth receives before the handshake.
                for r in 0..o.rx_depth {
                    let s = &sges[(r % sges.len() as u64) as usize];
                    on_qp!(&c.qp, |q| PerfPost::post_recv(q, s))
                        .map_err(because("Couldn't post receive"))?;
                }
                c.link.sync()?;
                let t = on_qp!(&c.qp, |q| bw_server(q, o, &sges, rp))?;
                out.say(bw_row(size, o.iters, cq_mod, true, &t));
            } else {
                c.link.sync()?;
            }
            c.link.sync()?;
        }
        Ok(())
    })
}

/// `run_iter_bw` with one QP and `post_list` 1: post while fewer than `tx_depth` are
/// outstanding, every `cq_mod`th and the last signalled; each completion counts `cq_mod`.
#[allow(clippy::too_many_arguments)]
fn bw_client<Q: PerfPost>(
    qp: &mut Q,
    verb: Verb,
    o: &Opts,
    size: u64,
    cq_mod: u64,
    sges: &[[Sge; 1]],
    remotes: &[RemoteAddr<PerfAccess>],
    poller: &mut PerfPoller<'_>,
) -> Result<BwTimes, String> {
    let _ = size;
    let iters = o.iters;
    let peak = !o.no_peak;
    let mut t = BwTimes {
        posted: vec![None; if peak { iters as usize } else { 1 }],
        completed: vec![None; if peak { iters as usize } else { 1 }],
        rate: 0.0,
    };
    let rate = Rate::start();
    let (mut scnt, mut ccnt) = (0u64, 0u64);
    // `scnt % cq_mod` and `scnt % slots` as counters, without a division per message.
    let (mut to_signal, mut k) = (cq_mod, 0usize);
    if !peak {
        t.posted[0] = Some(cycles());
    }
    while scnt < iters || ccnt < iters {
        // perftest's `scnt - ccnt + post_list <= tx_depth`.
        while scnt < iters && scnt < o.tx_depth + ccnt {
            to_signal -= 1;
            let signaled = to_signal == 0 || scnt == iters - 1;
            if to_signal == 0 {
                to_signal = cq_mod;
            }
            if peak {
                t.posted[scnt as usize] = Some(cycles());
            }
            let wr = match verb {
                Verb::Send => Q::send(&sges[k], signaled),
                Verb::Write => Q::write(&sges[k], remotes[k], signaled),
            };
            qp.post(&wr)
                .map_err(|e| format!("Couldn't post send: qp 0 scnt={scnt}: {e}"))?;
            scnt += 1;
            k += 1;
            if k == sges.len() {
                k = 0;
            }
        }
        if ccnt < iters {
            let n = poll(poller)?;
            for _ in 0..n {
                ccnt += cq_mod;
                if peak {
                    let at = ccnt.min(iters) as usize - 1;
                    t.completed[at] = Some(cycles());
                }
            }
        }
    }
    if !peak {
        t.completed[0] = Some(cycles());
    }
    t.rate = rate.per_ns();
    Ok(t)
}

/// `run_iter_bw_server`: poll the receive CQ, repost while fewer than `iters` were posted; the
/// time runs from the first receive to the last.
fn bw_server<Q: PerfPost>(
    qp: &Q,
    o: &Opts,
    sges: &[[Sge; 1]],
    poller: &mut PerfPoller<'_>,
) -> Result<BwTimes, String> {
    let iters = o.iters;
    let slots = sges.len() as u64;
    let mut t = BwTimes {
        posted: vec![None],
        completed: vec![None],
        rate: 0.0,
    };
    let rate = Rate::start();
    let (mut rcnt, mut posted) = (0u64, o.rx_depth);
    while rcnt < iters {
        let n = poll(poller)?;
        if n > 0 && t.posted[0].is_none() {
            t.posted[0] = Some(cycles());
        }
        for _ in 0..n {
            rcnt += 1;
            if posted < iters {
                let s = &sges[(posted % slots) as usize];
                qp.post_recv(s)
                    .map_err(|e| format!("Couldn't post recv Qp=0 rcnt={rcnt}: {e}"))?;
                posted += 1;
            }
        }
    }
    t.completed[0] = Some(cycles());
    t.rate = rate.per_ns();
    Ok(t)
}

// ---------------------------------------------------------------------------------------------
// Latency.

/// `print_report_lat`: half the time between consecutive posts (`tposted[i + 1] -
/// tposted[i]`), sorted, the two largest dropped (`LAT_MEASURE_TAIL`), the median
/// (`t_typical`), the mean, the standard deviation (perftest's, whose terms are truncated to
/// whole microseconds: `int temp_var`), and the 99 % and 99.9 % entries.
pub fn lat_row(size: u64, iters: u64, posted: &[u64], per_ns: f64) -> String {
    let mut delta: Vec<u64> = posted.windows(2).map(|w| w[1].wrapping_sub(w[0])).collect();
    delta.sort_unstable();
    // cycles per microsecond, times the round trip's 2 (`cycles_rtt_quotient`).
    let q = per_ns * 1000.0 * 2.0;
    let n = delta.len() - 2;
    let median = if (n - 1) % 2 == 1 {
        (delta[n / 2] + delta[n / 2 - 1]) / 2
    } else {
        delta[n / 2]
    };
    let avg = delta[..n].iter().map(|&d| d as f64 / q).sum::<f64>() / n as f64;
    let var: f64 = delta[..n]
        .iter()
        .map(|&d| {
            let tv = (avg - d as f64 / q) as i32; // perftest's `int temp_var`
            (tv as f64).powi(2) as i32 as f64 // and `int pow_var`
        })
        .sum();
    let stdev = (var / n as f64).sqrt();
    let i99 = (n as f64 * 0.99).ceil() as usize;
    let i999 = (n as f64 * 0.999).ceil() as usize;
    format!(
        " {size:<7} {iters}          {:<7.2}        {:<7.2}      {:<7.2}  \t       {:<7.2}     \t{:<7.2}\t\t{:<7.2} \t\t{:<7.2}",
        delta[0] as f64 / q,
        delta[n] as f64 / q,
        median as f64 / q,
        avg,
        stdev,
        delta[i99] as f64 / q,
        delta[i999] as f64 / q
    )
}

/// `ib_send_lat` / `ib_write_lat`: both sides run the ping-pong and print the figures.
pub fn run_lat(tool: &Tool, o: &Opts, role: Role, out: &Out) -> Result<(), String> {
    let client = role.is_client();
    with_conn(tool, o, role, out, |c, mut send_poll, mut recv_poll| {
        banner(tool, o, out, 1, c.qp.wr_api());
        out.say(RESULT_FMT_LAT);
        let mut posted = Vec::with_capacity(o.iters as usize);
        for size in sizes(o) {
            posted.clear();
            let sge = c.sges(0, size)[0];
            let rate;
            match recv_poll.as_mut() {
                Some(rp) => {
                    let rsge = c.sges(c.half, size)[0];
                    for _ in 0..o.rx_depth {
                        on_qp!(&c.qp, |q| PerfPost::post_recv(q, &rsge))
                            .map_err(because("Couldn't post receive"))?;
                    }
                    c.link.sync()?;
                    rate = Rate::start();
                    on_qp!(&mut c.qp, |q| send_lat(
                        q,
                        o,
                        client,
                        &sge,
                        &rsge,
                        &mut send_poll,
                        rp,
                        &mut posted
                    ))?;
                }
                None => {
                    let remote = c.remotes(size)[0];
                    c.link.sync()?;
                    rate = Rate::start();
                    let (mr, half) = (c.mr, c.half);
                    on_qp!(&mut c.qp, |q| write_lat(
                        q,
                        mr,
                        half,
                        o,
                        client,
                        size,
                        &sge,
                        remote,
                        &mut send_poll,
                        &mut posted,
                    ))?;
                }
            }
            let per_ns = rate.per_ns();
            out.say(lat_row(size, o.iters, &posted, per_ns));
            c.link.sync()?;
        }
        Ok(())
    })
}

/// `run_iter_lat_send`: receive (the server first), then send, signalled, and wait for its
/// completion; repost a receive while fewer than `iters` were posted.
#[allow(clippy::too_many_arguments)]
fn send_lat<Q: PerfPost>(
    qp: &mut Q,
    o: &Opts,
    client: bool,
    sge: &[Sge; 1],
    rsge: &[Sge; 1],
    send_poll: &mut PerfPoller<'_>,
    recv_poll: &mut PerfPoller<'_>,
    posted: &mut Vec<u64>,
) -> Result<(), String> {
    let iters = o.iters;
    let (mut scnt, mut rcnt) = (0u64, 0u64);
    let wr = Q::send(sge, true);
    while scnt < iters || rcnt < iters {
        if rcnt < iters && !(scnt < 1 && client) {
            while poll(recv_poll)? == 0 {}
            rcnt += 1;
            if rcnt + o.rx_depth <= iters {
                qp.post_recv(rsge)
                    .map_err(|e| format!("Couldn't post recv: rcnt={rcnt}: {e}"))?;
            }
        }
        if scnt < iters {
            posted.push(cycles());
            scnt += 1;
            qp.post(&wr)
                .map_err(|e| format!("Couldn't post send: scnt={scnt}: {e}"))?;
            while poll(send_poll)? == 0 {}
        }
    }
    Ok(())
}

/// `run_iter_lat_write`: wait until the peer's write has set the last byte of our receive half
/// to the count (the server first sends), set the last byte of our send half to ours, write
/// it all to the peer, wait for the write's completion.
///
/// perftest reads the byte through a `volatile char *`; Rust's memory model has no volatile
/// exemption for memory another agent writes, so the byte is read with `Mr::read`, the crate's
/// safe, race-free read of registered memory (a relaxed atomic byte copy: one `rep movsb` of
/// one byte and the bounds check, in a function that is not inlined).
#[allow(clippy::too_many_arguments)]
fn write_lat<Q: PerfPost>(
    qp: &mut Q,
    mr: &Mr<'_, PageBuf, PerfAccess>,
    half: u64,
    o: &Opts,
    client: bool,
    size: u64,
    sge: &[Sge; 1],
    remote: RemoteAddr<PerfAccess>,
    send_poll: &mut PerfPoller<'_>,
    posted: &mut Vec<u64>,
) -> Result<(), String> {
    let iters = o.iters;
    let poll_at = (half + size - 1) as usize;
    let post_at = (size - 1) as usize;
    let (mut scnt, mut ccnt, mut rcnt) = (0u64, 0u64, 0u64);
    let wr = Q::write(sge, remote, true);
    let mut byte = [0u8; 1];
    while scnt < iters || ccnt < iters || rcnt < iters {
        // perftest's `!(scnt < 1 && machine == SERVER)`: the server writes first.
        if rcnt < iters && (client || scnt >= 1) {
            rcnt += 1;
            loop {
                mr.read(poll_at, &mut byte).map_err(because("read"))?;
                if byte[0] == rcnt as u8 {
                    break;
                }
                // No `spin_loop()` hint, as perftest's loop has none: under qemu's TCG a
                // `pause` leaves the translated code for the main loop at every spin.
            }
        }
        if scnt < iters {
            posted.push(cycles());
            scnt += 1;
            mr.write(post_at, &[scnt as u8]).map_err(because("write"))?;
            qp.post(&wr)
                .map_err(|e| format!("Couldn't post send: scnt={scnt}: {e}"))?;
        }
        if ccnt < iters {
            while poll(send_poll)? == 0 {}
            ccnt += 1;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// main.

/// The program's `main`: parses the command line and runs `run` as server or client, or both
/// on two threads under `--self`. A side whose test succeeded closes its table with
/// `RESULT_LINE`, as perftest's programs do at their end.
pub fn main<F>(tool: &Tool, test: F) -> ExitCode
where
    F: Fn(&Tool, &Opts, Role, &Out) -> Result<(), String> + Sync,
{
    let run = |tool: &Tool, o: &Opts, role: Role, out: &Out| {
        test(tool, o, role, out)?;
        out.say(RESULT_LINE);
        Ok(())
    };
    let o = match parse_args(tool, std::env::args()) {
        Ok(o) => o,
        Err(code) => return code,
    };
    if o.self_test {
        return self_test(tool, &o, &run);
    }
    run_one(o.server_name.as_ref(), |role| {
        run(tool, &o, role, &Out { prefix: "" })
    })
}

/// `--self`: the server on one thread, the client on another, each with its own context, the
/// exchange over 127.0.0.1 (the listener bound before either starts). If either side fails the
/// process exits at once with a failure (the other could wait for it forever).
fn self_test<F>(tool: &Tool, o: &Opts, run: &F) -> ExitCode
where
    F: Fn(&Tool, &Opts, Role, &Out) -> Result<(), String> + Sync,
{
    // The client's lines have nothing in front (its errors do: "client: ").
    run_both(o.port, "", |role, server_name, prefix| {
        let o = Opts {
            server_name,
            ..o.clone()
        };
        run(tool, &o, role, &Out { prefix })
    })
}
