//! `peer_crash`: what a program sees when its peer dies in the middle of traffic. Two roles, one
//! per host: the *survivor* (the server: it listens) and the *victim* (the client), which something outside kills mid-traffic (scripts/guest/crash-victim.sh in the
//! two-host lane: its process with SIGKILL, or, through the host, its whole VM). The survivor
//! must report the crash in bounded time, account for every request it posted, and tear down
//! cleanly; it prints one line that names the crash, `crash: CASE: ...`.
//!
//! ```text
//! peer_crash [-d DEV] [-g GID_INDEX] [-p PORT] [-n ANSWERS] [--slack SECS]
//!            [--disconnect-wait SECS] survivor CASE
//! peer_crash [-d DEV] [-g GID_INDEX] [-p PORT] [-n ANSWERS] victim CASE SERVER
//! ```
//!
//! The traffic: the survivor keeps numbered messages in flight (sends; on RC each with a 1 KiB
//! RDMA write into the victim's region as well: as many as its send queue holds on RC, 16
//! unanswered at most on UD and UC), the victim answers each with a send of the same number.
//! After `-n` answers (default 300) the victim prints `victim: traffic running (N answered)` and
//! goes on answering until it is killed.
//!
//! Cases (docs/peer-crash.md has what rxe gave):
//! - `rc-process`, `rc-vm`: an RC QP pair connected by `Qp::connect_with` (endpoints over a TCP
//!   exchange) with timeout 14 and retry_cnt 6 (rxe takes retry_cnt 7 as "retry forever"). The
//!   survivor must see `RETRY_EXC_ERR` within the bound after its last successful completion:
//!   4.096 µs × 2^timeout × (retry_cnt + 1), from the QP's attributes as `query_rc_params` reads them back
//!   (here 0.47 s), plus `--slack` (default 1 s, for TCG); and every other request it posted
//!   (sends, writes and receives) must complete, flushed (`WR_FLUSH_ERR`): posted = completed.
//!   Then the QP, the MR, the CQ, the PD and the context are destroyed, each call checked.
//! - `cm-process`, `cm-vm`: the same over rdma_cm (the crate's typed CM, `ConnParam`'s bounded
//!   defaults: `retry_count` 6 and `ack_timeout` 14 through `RDMA_OPTION_ID_ACK_TIMEOUT`; the
//!   bound is derived from what the QP reports).
//!   The first report of the crash, the CM's event (`RDMA_CM_EVENT_DISCONNECTED` or another) or
//!   the QP's error completion, must come within the bound; once the QP has failed, the CM event
//!   is waited for 2 s (a timeout if none). The survivor then disconnects (its QP to ERR; if no
//!   event came, its own DISCONNECTED is waited for `--disconnect-wait`, default 5 s, and
//!   reported) and every request it posted must complete.
//! - `ud-process`, `uc-process`: no ACKs: the survivor's sends keep completing successfully
//!   after the kill; the loss shows at the application level: no answer comes. A message is
//!   counted lost 0.5 s after it was sent unanswered; the peer is declared gone after 2 s
//!   without an answer (bound 2.5 s), and the survivor stops, its QP to ERR (its receives
//!   flushed), and prints `loss detected: N sent, M answered`.
//!
//! Every wait is bounded: a survivor that sees no error and no loss within 60 s of its last
//! progress fails ("hang"), and so does a victim that is not killed within 120 s.
//!
//! Without VMs there is no peer to kill: the software device (`sw0`) lives inside one process,
//! and a peer process cannot share it (the program refuses it). The program needs a real device
//! on two hosts (or two processes on one rxe device); the two-host lane runs it.

use std::collections::VecDeque;
use std::io::{Read, Write};
use std::net::{IpAddr, Ipv4Addr, SocketAddr, TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use typed_verbs::cm::{CmId, ConnEvent, ConnParam, EventChannel, Tcp};
use typed_verbs::{
    Access, AccessFlags, AddressHandle, AddressVector, Context, Cq, Endpoint, ErrorKind, Gid,
    GlobalRoute, Mr, Mtu, Pd, Qp, Rc, RemoteMr, SendWr, SqPsn, Uc, Ud, UdDest, UdInit, WcStatus,
    WorkCompletion,
};

/// Messages in flight (survivor) and the receive slots each side keeps posted.
const WINDOW: usize = 16;
const RECVS: usize = 32;
/// Bytes a receive slot holds (UD's 40-byte GRH, then the message).
const SLOT: usize = 128;
const GRH: usize = 40;
const MSG: usize = 16;
/// The RC write that goes with each message.
const WRITE_LEN: usize = 1024;
/// The receive slots, then the send slots (2 × WINDOW), then the write's source.
const SEND_AT: usize = RECVS * SLOT;
const WRITE_AT: usize = SEND_AT + 2 * WINDOW * SLOT;
const BUF: usize = WRITE_AT + WRITE_LEN;
/// The victim's region the survivor writes into.
const TARGET: usize = 64 * 1024;
const QKEY: u32 = 0x1111_1111;
/// wr_id tags: an RDMA write, a receive (the rest of a send's wr_id is its message number).
const WRITE_TAG: u64 = 1 << 62;
const RECV_TAG: u64 = 1 << 63;
/// UD and UC: an unanswered message is lost after this; the peer is gone after `SILENCE`.
const LOSS_AFTER: Duration = Duration::from_millis(500);
const SILENCE: Duration = Duration::from_secs(2);
/// No error, no loss, no progress for this long: a hang.
const HANG: Duration = Duration::from_secs(60);
/// How long the survivor waits for the rest of its requests once the first one failed.
const DRAIN: Duration = Duration::from_secs(5);
/// How long the CM event may come after the QP's error completion (the survivor's own
/// disconnect's DISCONNECTED is waited for `--disconnect-wait`).
const CM_EVENT_WAIT: Duration = Duration::from_secs(2);
const T: Duration = Duration::from_secs(30);

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Case {
    RcProcess,
    RcVm,
    CmProcess,
    CmVm,
    UdProcess,
    UcProcess,
}

impl Case {
    fn parse(s: &str) -> Option<Case> {
        Some(match s {
            "rc-process" => Case::RcProcess,
            "rc-vm" => Case::RcVm,
            "cm-process" => Case::CmProcess,
            "cm-vm" => Case::CmVm,
            "ud-process" => Case::UdProcess,
            "uc-process" => Case::UcProcess,
            _ => return None,
        })
    }
    fn name(self) -> &'static str {
        match self {
            Case::RcProcess => "rc-process",
            Case::RcVm => "rc-vm",
            Case::CmProcess => "cm-process",
            Case::CmVm => "cm-vm",
            Case::UdProcess => "ud-process",
            Case::UcProcess => "uc-process",
        }
    }
    fn killed(self) -> &'static str {
        match self {
            Case::RcVm | Case::CmVm => "peer VM killed (its qemu, SIGKILL, by the host)",
            _ => "peer process killed (SIGKILL)",
        }
    }
}

struct Opts {
    dev: String,
    gid_index: u8,
    port: u16,
    answers: u64,
    slack: Duration,
    disconnect_wait: Duration,
    survivor: bool,
    case: Case,
    server: Option<IpAddr>,
}

const USAGE: &str =
    "usage: peer_crash [-d DEV] [-g GID_INDEX] [-p PORT] [-n ANSWERS] [--slack SECS] \
[--disconnect-wait SECS] survivor|victim rc-process|rc-vm|cm-process|cm-vm|ud-process|uc-process [SERVER]";

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        dev: std::env::var("TYPED_VERBS_DEVICE").unwrap_or_else(|_| "rxe0".into()),
        gid_index: 1,
        port: 18777,
        answers: 300,
        slack: Duration::from_secs(1),
        disconnect_wait: Duration::from_secs(5),
        survivor: true,
        case: Case::RcProcess,
        server: None,
    };
    let mut operands = Vec::new();
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or(format!("{name} needs a value"));
        match a.as_str() {
            "-d" => o.dev = value("-d")?,
            "-g" => o.gid_index = value("-g")?.parse().map_err(|e| format!("-g: {e}"))?,
            "-p" => o.port = value("-p")?.parse().map_err(|e| format!("-p: {e}"))?,
            "-n" => o.answers = value("-n")?.parse().map_err(|e| format!("-n: {e}"))?,
            "--slack" => {
                let s: f64 = value("--slack")?
                    .parse()
                    .map_err(|e| format!("--slack: {e}"))?;
                o.slack = Duration::from_secs_f64(s);
            }
            "--disconnect-wait" => {
                let s: f64 = value("--disconnect-wait")?
                    .parse()
                    .map_err(|e| format!("--disconnect-wait: {e}"))?;
                o.disconnect_wait = Duration::from_secs_f64(s);
            }
            "-h" | "--help" => return Err(String::new()),
            _ if a.starts_with('-') => return Err(format!("unknown option {a}")),
            _ => operands.push(a),
        }
    }
    match operands.as_slice() {
        [role, case, rest @ ..] => {
            o.survivor = match role.as_str() {
                "survivor" => true,
                "victim" => false,
                r => return Err(format!("role {r}: survivor or victim")),
            };
            o.case = Case::parse(case).ok_or(format!("unknown case {case}"))?;
            match (o.survivor, rest) {
                (true, []) => {}
                (false, [server]) => {
                    o.server = Some(server.parse().map_err(|e| format!("{server}: {e}"))?)
                }
                _ => {
                    return Err("the victim takes the survivor's address, the survivor none".into())
                }
            }
        }
        _ => return Err("a role and a case".into()),
    }
    Ok(o)
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            if !e.is_empty() {
                eprintln!("peer_crash: {e}");
            }
            eprintln!("{USAGE}");
            return ExitCode::FAILURE;
        }
    };
    let r = match (o.survivor, o.case) {
        (true, Case::RcProcess | Case::RcVm) => survivor_rc(&o),
        (true, Case::CmProcess | Case::CmVm) => survivor_cm(&o),
        (true, Case::UdProcess | Case::UcProcess) => survivor_lossy(&o),
        (false, _) => victim(&o),
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            println!("FAIL: {}: {e}", o.case.name());
            ExitCode::FAILURE
        }
    }
}

fn err<E: std::fmt::Display>(what: &'static str) -> impl FnOnce(E) -> String {
    move |e| format!("{what}: {e}")
}

/// The RC bound for a QP's (timeout, retry_cnt): 4.096 µs × 2^timeout × (retry_cnt + 1).
fn rc_bound((timeout, retry_cnt): (u8, u8)) -> Duration {
    Duration::from_nanos(4096 * (1u64 << timeout) * (u64::from(retry_cnt) + 1))
}

// ---- What the two sides exchange: an endpoint and a region (49 bytes). ----

const PEER_LEN: usize = 49;

struct PeerInfo {
    ep: Endpoint,
    addr: u64,
    len: u64,
    rkey: u32,
}

impl PeerInfo {
    fn to_bytes(&self) -> [u8; PEER_LEN] {
        let e = &self.ep;
        let mut b = [0u8; PEER_LEN];
        b[0..4].copy_from_slice(&e.qp_num.to_le_bytes());
        b[4] = e.port_num;
        b[5..7].copy_from_slice(&e.lid.to_le_bytes());
        b[7..23].copy_from_slice(&e.gid.0);
        b[23] = e.gid_index;
        b[24..28].copy_from_slice(&e.psn.to_le_bytes());
        b[28] = e.mtu as u8;
        b[29..37].copy_from_slice(&self.addr.to_le_bytes());
        b[37..45].copy_from_slice(&self.len.to_le_bytes());
        b[45..49].copy_from_slice(&self.rkey.to_le_bytes());
        b
    }

    fn from_bytes(b: &[u8]) -> Result<PeerInfo, String> {
        if b.len() < PEER_LEN {
            return Err(format!("the peer sent {} bytes, not {PEER_LEN}", b.len()));
        }
        let u32_at = |i: usize| u32::from_le_bytes(b[i..i + 4].try_into().unwrap());
        let u64_at = |i: usize| u64::from_le_bytes(b[i..i + 8].try_into().unwrap());
        Ok(PeerInfo {
            ep: Endpoint {
                qp_num: u32_at(0),
                port_num: b[4],
                lid: u16::from_le_bytes([b[5], b[6]]),
                gid: Gid(b[7..23].try_into().unwrap()),
                gid_index: b[23],
                psn: u32_at(24),
                mtu: Mtu::from_raw(b[28].into()).ok_or("the peer's MTU")?,
            },
            addr: u64_at(29),
            len: u64_at(37),
            rkey: u32_at(45),
        })
    }
}

/// The TCP exchange: the survivor accepts one connection (within 60 s), the victim connects
/// (retrying for 30 s); each writes its info and reads the other's. The stream stays open.
fn exchange(o: &Opts, mine: &PeerInfo) -> Result<(PeerInfo, TcpStream), String> {
    let mut s = if o.survivor {
        let l = TcpListener::bind((Ipv4Addr::UNSPECIFIED, o.port)).map_err(err("listen"))?;
        l.set_nonblocking(true).map_err(err("listen"))?;
        let start = Instant::now();
        loop {
            match l.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock && start.elapsed() < HANG => {
                    std::thread::sleep(Duration::from_millis(50))
                }
                Err(e) => return Err(format!("accepting the victim: {e}")),
            }
        }
    } else {
        let to = SocketAddr::new(o.server.expect("the victim's server"), o.port);
        let start = Instant::now();
        loop {
            match TcpStream::connect_timeout(&to, Duration::from_secs(2)) {
                Ok(s) => break s,
                Err(_) if start.elapsed() < T => std::thread::sleep(Duration::from_millis(200)),
                Err(e) => return Err(format!("connecting to {to}: {e}")),
            }
        }
    };
    s.set_nonblocking(false).map_err(err("exchange"))?;
    s.set_read_timeout(Some(T)).map_err(err("exchange"))?;
    s.write_all(&mine.to_bytes())
        .map_err(err("sending our endpoint"))?;
    let mut b = [0u8; PEER_LEN];
    s.read_exact(&mut b)
        .map_err(err("reading the peer's endpoint"))?;
    Ok((PeerInfo::from_bytes(&b)?, s))
}

/// The address vector to the peer (RoCE: a global route to its GID).
fn av(me: &Endpoint, peer: &Endpoint, hop_limit: u8) -> AddressVector {
    AddressVector {
        dlid: peer.lid,
        sl: 0,
        src_path_bits: 0,
        static_rate: 0,
        port_num: me.port_num,
        grh: (peer.gid != Gid::default()).then_some(GlobalRoute {
            dgid: peer.gid,
            flow_label: 0,
            sgid_index: me.gid_index,
            hop_limit,
            traffic_class: 0,
        }),
    }
}

/// The message number in a receive slot (UD: after the GRH).
fn slot_seq(mr: &Mr<'_, Vec<u8>>, slot: usize, ud: bool) -> u64 {
    let mut b = [0u8; 8];
    let at = slot * SLOT + if ud { GRH } else { 0 };
    mr.read(at, &mut b).expect("a slot inside the buffer");
    u64::from_le_bytes(b)
}

/// The send slot for message `seq`, holding its number.
fn send_slot(mr: &Mr<'_, Vec<u8>>, seq: u64) -> std::ops::Range<usize> {
    let at = SEND_AT + (seq as usize % (2 * WINDOW)) * SLOT;
    mr.write(at, &seq.to_le_bytes())
        .expect("a slot inside the buffer");
    at..at + MSG
}

fn recv_range(slot: usize) -> std::ops::Range<usize> {
    slot * SLOT..(slot + 1) * SLOT
}

// ---- The survivor's accounting. ----

/// What the survivor posted and what completed, and when.
struct Traffic {
    ud: bool,
    /// RC: a message is posted whenever the send queue has room, answered or not, so that
    /// requests are always in flight (an RC QP finds a dead peer only by a request that is
    /// not acknowledged: a survivor waiting for answers with nothing in flight would wait
    /// forever). UD and UC: at most `WINDOW` messages unanswered.
    stream: bool,
    next_seq: u64,
    unanswered: VecDeque<(u64, Instant)>,
    answered: u64,
    lost: u64,
    sends_posted: u64,
    sends_done: u64,
    sends_ok: u64,
    sends_ok_after_last_answer: u64,
    recvs_posted: u64,
    recvs_done: u64,
    /// Error completions: status, whether a receive, count.
    errors: Vec<(WcStatus, bool, u64)>,
    /// The first error: its status, whether a receive, its time since the last progress, when.
    first_error: Option<(WcStatus, bool, Duration, Instant)>,
    last_progress: Instant,
    last_answer: Instant,
    stopped: bool,
}

impl Traffic {
    fn new(ud: bool, stream: bool) -> Traffic {
        let now = Instant::now();
        Traffic {
            ud,
            stream,
            next_seq: 0,
            unanswered: VecDeque::new(),
            answered: 0,
            lost: 0,
            sends_posted: 0,
            sends_done: 0,
            sends_ok: 0,
            sends_ok_after_last_answer: 0,
            recvs_posted: 0,
            recvs_done: 0,
            errors: Vec::new(),
            first_error: None,
            last_progress: now,
            last_answer: now,
            stopped: false,
        }
    }

    /// Posts the first receives.
    fn post_recvs(
        &mut self,
        mut post_recv: impl FnMut(usize) -> typed_verbs::Result<()>,
    ) -> Result<(), String> {
        for slot in 0..RECVS {
            post_recv(slot).map_err(err("posting a receive"))?;
            self.recvs_posted += 1;
        }
        Ok(())
    }

    /// Posts messages while the window has room (`post` posts message `seq` and says how many
    /// requests that was).
    fn fill(
        &mut self,
        mut post: impl FnMut(u64) -> typed_verbs::Result<u64>,
    ) -> Result<(), String> {
        while !self.stopped
            && (self.stream || self.unanswered.len() < WINDOW)
            && self.sends_posted - self.sends_done + 2 <= 2 * WINDOW as u64
        {
            let seq = self.next_seq;
            let n = post(seq).map_err(|e| format!("posting message {seq}: {e}"))?;
            self.sends_posted += n;
            self.unanswered.push_back((seq, Instant::now()));
            self.next_seq += 1;
        }
        Ok(())
    }

    /// Polls the CQ once; a successful receive is reposted unless the traffic stopped.
    fn poll(
        &mut self,
        cq: &Cq<'_>,
        mr: &Mr<'_, Vec<u8>>,
        mut repost: impl FnMut(usize) -> typed_verbs::Result<()>,
    ) -> Result<usize, String> {
        let mut wc: [WorkCompletion; 16] = std::array::from_fn(|_| WorkCompletion::new());
        let polled = cq.poll(&mut wc).map_err(err("polling the CQ"))?;
        let now = Instant::now();
        for w in polled.iter() {
            let recv = w.wr_id() & RECV_TAG != 0;
            if recv {
                self.recvs_done += 1;
            } else {
                self.sends_done += 1;
            }
            if w.status() != WcStatus::SUCCESS {
                match self
                    .errors
                    .iter_mut()
                    .find(|e| e.0 == w.status() && e.1 == recv)
                {
                    Some(e) => e.2 += 1,
                    None => self.errors.push((w.status(), recv, 1)),
                }
                if self.first_error.is_none() {
                    self.first_error = Some((w.status(), recv, now - self.last_progress, now));
                }
                self.stopped = true;
                continue;
            }
            self.last_progress = now;
            if !recv {
                self.sends_ok += 1;
                if self.answered > 0 {
                    self.sends_ok_after_last_answer += 1;
                }
                continue;
            }
            let slot = (w.wr_id() & !RECV_TAG) as usize;
            let seq = slot_seq(mr, slot, self.ud);
            if let Some(i) = self.unanswered.iter().position(|u| u.0 == seq) {
                self.unanswered.remove(i);
            }
            self.answered += 1;
            self.sends_ok_after_last_answer = 0;
            self.last_answer = now;
            if !self.stopped {
                repost(slot).map_err(err("reposting a receive"))?;
                self.recvs_posted += 1;
            }
        }
        Ok(polled.len())
    }

    /// UD and UC: messages unanswered for `LOSS_AFTER` are lost (they leave the window).
    fn expire(&mut self) {
        let now = Instant::now();
        while let Some(&(_, at)) = self.unanswered.front() {
            if now - at < LOSS_AFTER {
                break;
            }
            self.unanswered.pop_front();
            self.lost += 1;
        }
    }

    fn all_done(&self) -> bool {
        self.sends_done == self.sends_posted && self.recvs_done == self.recvs_posted
    }

    fn count(&self, status: WcStatus, recv: bool) -> u64 {
        self.errors
            .iter()
            .filter(|e| e.0 == status && e.1 == recv)
            .map(|e| e.2)
            .sum()
    }

    fn errors_line(&self) -> String {
        let v: Vec<String> = self
            .errors
            .iter()
            .map(|(s, recv, n)| format!("{n} {} {s:?}", if *recv { "recv" } else { "send" }))
            .collect();
        v.join(", ")
    }

    fn ledger(&self) -> String {
        format!(
            "sends+writes posted {} completed {} ({} ok), receives posted {} completed {}",
            self.sends_posted, self.sends_done, self.sends_ok, self.recvs_posted, self.recvs_done
        )
    }

    /// Waits (bounded by `DRAIN`) until every posted request has completed.
    fn drain(
        &mut self,
        cq: &Cq<'_>,
        mr: &Mr<'_, Vec<u8>>,
        limit: Duration,
    ) -> Result<bool, String> {
        let start = Instant::now();
        while !self.all_done() && start.elapsed() < limit {
            if self.poll(cq, mr, |_| Ok(()))? == 0 {
                std::thread::sleep(Duration::from_millis(1));
            }
        }
        Ok(self.all_done())
    }
}

/// A context with a PD, a CQ and a registered buffer: what each side needs.
fn open(o: &Opts) -> Result<Context, String> {
    let ctx = Context::open(&o.dev).map_err(err("opening the device"))?;
    if ctx.device_name() == "sw0" {
        return Err(
            "the software device lives in one process: a peer process cannot share it \
                    (run on rxe0, in the two-host lane)"
                .into(),
        );
    }
    Ok(ctx)
}

fn teardown_line(steps: &[(&str, typed_verbs::Result<()>)]) -> Result<String, String> {
    for (what, r) in steps {
        if let Err(e) = r {
            return Err(format!("teardown: destroying the {what}: {e}"));
        }
    }
    Ok(format!(
        "teardown clean ({} destroyed)",
        steps.iter().map(|s| s.0).collect::<Vec<_>>().join(", ")
    ))
}

// ---- The survivor, RC (rc-process, rc-vm). ----

fn survivor_rc(o: &Opts) -> Result<(), String> {
    let ctx = open(o)?;
    let pd = Pd::new(&ctx).map_err(err("PD"))?;
    let cq = Cq::builder(&ctx)
        .cqe(4 * WINDOW as u32 + RECVS as u32)
        .build()
        .map_err(err("CQ"))?;
    let mr = Mr::new(&pd, vec![0u8; BUF], Access::LOCAL_WRITE).map_err(err("MR"))?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .max_send_wr(2 * WINDOW as u32 + 2)
        .max_recv_wr(RECVS as u32)
        .build()
        .map_err(err("QP"))?;
    let me = qp.endpoint(1, o.gid_index).map_err(err("endpoint"))?;
    let mine = PeerInfo {
        ep: me,
        addr: 0,
        len: 0,
        rkey: 0,
    };
    // The TCP stream stays open until the teardown (nothing more goes over it).
    let (peer, stream) = exchange(o, &mine)?;
    let qp = qp
        .connect(
            &me,
            &peer.ep,
            AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE,
        )
        .map_err(err("bringing the RC QP up"))?;
    let timing = qp
        .query_rc_params()
        .map(|p| (p.timeout, p.retry_cnt))
        .map_err(err("query_rc_params"))?;
    let target = RemoteMr::from_peer(peer.addr, peer.len, peer.rkey, Access::REMOTE_WRITE);
    let mut t = Traffic::new(false, true);
    t.post_recvs(|slot| {
        qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
    })?;
    let post = |seq: u64| -> typed_verbs::Result<u64> {
        let at = (seq as usize % (TARGET / WRITE_LEN)) * WRITE_LEN;
        let src = [mr.sge(WRITE_AT..WRITE_AT + WRITE_LEN).unwrap()];
        let dst = target
            .at(at as u64, WRITE_LEN as u64)
            .expect("inside the target");
        qp.post_send(&SendWr::rdma_write(WRITE_TAG | seq, &src, dst).signaled())?;
        let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
        qp.post_send(&SendWr::send(seq, &msg).signaled())?;
        Ok(2)
    };
    let repost =
        |slot: usize| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]);
    println!(
        "survivor: {}: RC QP {} up (timeout {}, retry_cnt {}) to QP {}; traffic",
        o.case.name(),
        qp.qp_num(),
        timing.0,
        timing.1,
        peer.ep.qp_num
    );
    while t.first_error.is_none() {
        t.fill(post)?;
        if t.poll(&cq, &mr, repost)? == 0 {
            std::thread::yield_now();
        }
        if t.first_error.is_none() && t.last_progress.elapsed() > HANG {
            return Err(format!(
                "hang: no error completion {HANG:?} after the last progress ({} answers; {})",
                t.answered,
                t.ledger()
            ));
        }
    }
    let (status, recv, after, _) = t.first_error.unwrap();
    let bound = rc_bound(timing) + o.slack;
    println!(
        "survivor: first error {status:?} ({}) {:.3} s after the last progress, {} answers",
        if recv { "a receive" } else { "a send or write" },
        after.as_secs_f64(),
        t.answered
    );
    let drained = t.drain(&cq, &mr, DRAIN)?;
    let mut moved = "";
    let qp = if drained {
        qp.to_error().map_err(err("moving the QP to ERR"))?
    } else {
        // The device flushed its queues only in part: move the QP to ERR, as a program would.
        moved = "; the rest flushed once the QP was moved to ERR";
        let qp = qp.to_error().map_err(err("moving the QP to ERR"))?;
        t.drain(&cq, &mr, DRAIN)?;
        qp
    };
    println!("survivor: completions: {}; {}", t.errors_line(), t.ledger());
    if !t.all_done() {
        return Err(format!(
            "lost: {} sends or writes and {} receives never completed ({})",
            t.sends_posted - t.sends_done,
            t.recvs_posted - t.recvs_done,
            t.ledger()
        ));
    }
    if recv || status != WcStatus::RETRY_EXC_ERR {
        return Err(format!(
            "the first error was {status:?} on a {}, expected RETRY_EXC_ERR on a send or write",
            if recv { "receive" } else { "send" }
        ));
    }
    if after > bound {
        return Err(format!(
            "RETRY_EXC_ERR came {:.3} s after the last progress, past the bound {:.3} s",
            after.as_secs_f64(),
            bound.as_secs_f64()
        ));
    }
    let flushed_sends = t.count(WcStatus::WR_FLUSH_ERR, false);
    let flushed_recvs = t.count(WcStatus::WR_FLUSH_ERR, true);
    // The first error (a send's), the successes, and flushes: nothing else.
    if flushed_sends + t.sends_ok + 1 != t.sends_done || flushed_recvs + t.answered != t.recvs_done
    {
        return Err(format!(
            "besides the first error, completions other than WR_FLUSH_ERR: {}",
            t.errors_line()
        ));
    }
    drop(stream);
    let down = teardown_line(&[
        ("QP", qp.destroy()),
        ("MR", mr.destroy().map(drop)),
        ("CQ", cq.destroy()),
        ("PD", pd.destroy()),
        ("context", ctx.close()),
    ])?;
    println!(
        "crash: {}: {} mid-traffic after {} answers; survivor saw RETRY_EXC_ERR {:.2} s after its last \
         progress (bound {:.2} s = 4.096 us x 2^{} x ({} + 1) + {:.1} s slack); \
         {flushed_sends} sends/writes and {flushed_recvs} receives flushed (WR_FLUSH_ERR){moved}; \
         posted {} = completed {}: nothing lost; {down}",
        o.case.name(),
        o.case.killed(),
        t.answered,
        after.as_secs_f64(),
        bound.as_secs_f64(),
        timing.0,
        timing.1,
        o.slack.as_secs_f64(),
        t.sends_posted + t.recvs_posted,
        t.sends_done + t.recvs_done,
    );
    Ok(())
}

// ---- The survivor, RC over rdma_cm (cm-process). ----

fn survivor_cm(o: &Opts) -> Result<(), String> {
    let ctx = open(o)?;
    let ch = EventChannel::new(&ctx).map_err(err("CM event channel"))?;
    let pd = Pd::new(&ctx).map_err(err("PD"))?;
    let cq = Cq::builder(&ctx)
        .cqe(4 * WINDOW as u32 + RECVS as u32)
        .build()
        .map_err(err("CQ"))?;
    let mr = Mr::new(&pd, vec![0u8; BUF], Access::LOCAL_WRITE).map_err(err("MR"))?;
    let listener = CmId::<Tcp>::new(&ch)
        .and_then(|id| id.bind(SocketAddr::new(Ipv4Addr::UNSPECIFIED.into(), o.port)))
        .and_then(|id| id.listen(1))
        .map_err(err("CM listen"))?;
    let req = listener.get_request(T).map_err(err("CM connect request"))?;
    let peer = PeerInfo::from_bytes(req.private_data())?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .max_send_wr(2 * WINDOW as u32 + 2)
        .max_recv_wr(RECVS as u32)
        .build()
        .map_err(err("QP"))?;
    let qp = req.init_qp(qp).map_err(err("CM init QP"))?;
    let mut t = Traffic::new(false, true);
    t.post_recvs(|slot| {
        qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
    })?;
    // ConnParam's defaults bound a dead peer: retry_count 6, ack_timeout 14 (rxe takes a retry
    // count of 7 as unlimited).
    let param = ConnParam::default();
    let conn = req.accept(qp, &param, T).map_err(err("CM accept"))?;
    drop(listener);
    // What rdma_cm gave the QP: retry_cnt from the connect's retry_count, the timeout from
    // ConnParam's ack_timeout (RDMA_OPTION_ID_ACK_TIMEOUT; without it, the path's packet
    // lifetime).
    let timing = conn
        .qp()
        .query_rc_params()
        .map(|p| (p.timeout, p.retry_cnt))
        .map_err(err("query_rc_params"))?;
    let target = RemoteMr::from_peer(peer.addr, peer.len, peer.rkey, Access::REMOTE_WRITE);
    println!(
        "survivor: {}: connected over rdma_cm, QP {} (timeout {}, retry_cnt {}); traffic",
        o.case.name(),
        conn.qp().qp_num(),
        timing.0,
        timing.1
    );
    // The first of: an error completion, a CM event.
    let mut event: Option<(ConnEvent, Duration)> = None;
    while t.first_error.is_none() && event.is_none() {
        let qp = conn.qp();
        t.fill(|seq| {
            let at = (seq as usize % (TARGET / WRITE_LEN)) * WRITE_LEN;
            let src = [mr.sge(WRITE_AT..WRITE_AT + WRITE_LEN).unwrap()];
            let dst = target
                .at(at as u64, WRITE_LEN as u64)
                .expect("inside the target");
            qp.post_send(&SendWr::rdma_write(WRITE_TAG | seq, &src, dst).signaled())?;
            let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
            qp.post_send(&SendWr::send(seq, &msg).signaled())?;
            Ok(2)
        })?;
        let n = t.poll(&cq, &mr, |slot| {
            qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
        })?;
        if let Some(ev) = conn.next_event(Duration::ZERO).map_err(err("CM event"))? {
            event = Some((ev, t.last_progress.elapsed()));
        }
        if n == 0 {
            std::thread::yield_now();
        }
        if t.last_progress.elapsed() > HANG {
            return Err(format!(
                "hang: no error completion and no CM event {HANG:?} after the last progress ({})",
                t.ledger()
            ));
        }
    }
    t.stopped = true;
    let event_first = event.is_some();
    // The CM event, if the QP's error came first (bounded).
    let waited = Instant::now();
    while event.is_none() && waited.elapsed() < CM_EVENT_WAIT {
        if let Some(ev) = conn
            .next_event(Duration::from_millis(100))
            .map_err(err("CM event"))?
        {
            event = Some((ev, t.last_progress.elapsed()));
        }
        t.poll(&cq, &mr, |_| Ok(()))?;
    }
    let qp_error = t.first_error;
    // Disconnect: the QP to ERR, the rest of its requests flushed.
    let (qp, id) = conn.disconnect().map_err(err("CM disconnect"))?;
    let disconnected = Instant::now();
    let drained = t.drain(&cq, &mr, DRAIN)?;
    let cm_line = match &event {
        Some((e, after)) => format!("{e:?} {:.2} s after the last progress", after.as_secs_f64()),
        None => {
            // No word from the peer's CM (its host is gone): our disconnect's DREQ goes
            // unanswered, and the CM reports DISCONNECTED when it gives up (bounded here).
            let mut seen = None;
            while seen.is_none() && disconnected.elapsed() < o.disconnect_wait {
                seen = id
                    .next_event(Duration::from_millis(200))
                    .map_err(err("CM event"))?;
            }
            let after_own = match seen {
                Some(e) => format!(
                    "{e:?} {:.2} s after the survivor's own disconnect",
                    disconnected.elapsed().as_secs_f64()
                ),
                None => format!(
                    "none within {:?} of the survivor's own disconnect",
                    o.disconnect_wait
                ),
            };
            format!("no event within {CM_EVENT_WAIT:?} of the QP's error (a timeout); {after_own}")
        }
    };
    let qp_line = match qp_error {
        Some((s, _, after, _)) => {
            format!("{s:?} {:.2} s after the last progress", after.as_secs_f64())
        }
        None => "no error before the disconnect".into(),
    };
    println!(
        "survivor: CM: {cm_line}; QP: {qp_line}; completions: {}; {}",
        t.errors_line(),
        t.ledger()
    );
    if !drained {
        return Err(format!("lost: requests never completed ({})", t.ledger()));
    }
    let bound = rc_bound(timing) + o.slack;
    // What reported the crash first, and when.
    let reported = match (&event, qp_error) {
        (Some((_, after)), _) if event_first => *after,
        (_, Some((_, _, after, _))) => after,
        _ => unreachable!("the loop above ends on an event or an error"),
    };
    if reported > bound {
        return Err(format!(
            "the crash was reported {:.3} s after the last progress, past the bound {:.3} s",
            reported.as_secs_f64(),
            bound.as_secs_f64()
        ));
    }
    let flushed = t.count(WcStatus::WR_FLUSH_ERR, false) + t.count(WcStatus::WR_FLUSH_ERR, true);
    drop(id);
    let down = teardown_line(&[
        ("QP", qp.destroy()),
        ("MR", mr.destroy().map(drop)),
        ("CQ", cq.destroy()),
        ("PD", pd.destroy()),
    ])?;
    drop(ch);
    ctx.close().map_err(err("closing the context"))?;
    println!(
        "crash: {}: {} mid-traffic after {} answers; first report {:.2} s after the survivor's last \
         progress, by {} (bound {:.2} s = 4.096 us x 2^{} x ({} + 1) + {:.1} s slack, timeout and \
         retry_cnt as rdma_cm set them); CM: {cm_line}; QP: {qp_line}; disconnected: {flushed} \
         requests flushed (WR_FLUSH_ERR), completions {}; posted {} = completed {}: nothing lost; \
         {down}, event channel and context closed",
        o.case.name(),
        o.case.killed(),
        t.answered,
        reported.as_secs_f64(),
        if event_first { "the CM" } else { "the QP" },
        bound.as_secs_f64(),
        timing.0,
        timing.1,
        o.slack.as_secs_f64(),
        t.errors_line(),
        t.sends_posted + t.recvs_posted,
        t.sends_done + t.recvs_done,
    );
    Ok(())
}

// ---- The survivor, UD and UC (ud-process, uc-process). ----

fn survivor_lossy(o: &Opts) -> Result<(), String> {
    let ud = o.case == Case::UdProcess;
    let ctx = open(o)?;
    let pd = Pd::new(&ctx).map_err(err("PD"))?;
    let cq = Cq::builder(&ctx)
        .cqe(4 * WINDOW as u32 + RECVS as u32)
        .build()
        .map_err(err("CQ"))?;
    let mr = Mr::new(&pd, vec![0u8; BUF], Access::LOCAL_WRITE).map_err(err("MR"))?;
    let mut t = Traffic::new(ud, false);
    let (report, down) = if ud {
        let qp = Qp::<Ud>::builder(&pd, &cq, &cq)
            .max_send_wr(2 * WINDOW as u32 + 2)
            .max_recv_wr(RECVS as u32)
            .build()
            .map_err(err("QP"))?;
        let me = ud_endpoint(&ctx, qp.qp_num(), o.gid_index)?;
        let qp = qp
            .to_init(UdInit {
                port_num: 1,
                pkey_index: 0,
                qkey: QKEY,
            })
            .map_err(err("UD INIT"))?;
        t.post_recvs(|slot| {
            qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
        })?;
        let mine = PeerInfo {
            ep: me,
            addr: 0,
            len: 0,
            rkey: 0,
        };
        let (peer, stream) = exchange(o, &mine)?;
        let qp = qp
            .to_rtr(())
            .and_then(|q| q.to_rts(SqPsn { sq_psn: me.psn }))
            .map_err(err("UD RTR/RTS"))?;
        let ah = AddressHandle::new(&pd, av(&me, &peer.ep, 64)).map_err(err("AH"))?;
        println!(
            "survivor: ud-process: UD QP {} to QP {}; traffic",
            qp.qp_num(),
            peer.ep.qp_num
        );
        let report = lossy_loop(
            &mut t,
            &cq,
            &mr,
            |seq| {
                let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
                qp.post_send(
                    &SendWr::send_to(seq, &msg, UdDest::new(&ah, peer.ep.qp_num, QKEY)).signaled(),
                )?;
                Ok(1)
            },
            |slot| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]),
        )?;
        let qp = qp.to_error().map_err(err("moving the QP to ERR"))?;
        t.drain(&cq, &mr, DRAIN)?;
        drop(stream);
        let down = teardown_line(&[("QP", qp.destroy()), ("AH", ah.destroy())])?;
        (report, down)
    } else {
        let qp = Qp::<Uc>::builder(&pd, &cq, &cq)
            .max_send_wr(2 * WINDOW as u32 + 2)
            .max_recv_wr(RECVS as u32)
            .build()
            .map_err(err("QP"))?;
        let me = qp.endpoint(1, o.gid_index).map_err(err("endpoint"))?;
        let mine = PeerInfo {
            ep: me,
            addr: 0,
            len: 0,
            rkey: 0,
        };
        let (peer, stream) = exchange(o, &mine)?;
        let qp = qp
            .connect(&me, &peer.ep, AccessFlags::LOCAL_WRITE)
            .map_err(err("bringing the UC QP up"))?;
        t.post_recvs(|slot| {
            qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
        })?;
        println!(
            "survivor: uc-process: UC QP {} to QP {}; traffic",
            qp.qp_num(),
            peer.ep.qp_num
        );
        let report = lossy_loop(
            &mut t,
            &cq,
            &mr,
            |seq| {
                let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
                qp.post_send(&SendWr::send(seq, &msg).signaled())?;
                Ok(1)
            },
            |slot| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]),
        )?;
        let qp = qp.to_error().map_err(err("moving the QP to ERR"))?;
        t.drain(&cq, &mr, DRAIN)?;
        drop(stream);
        (report, teardown_line(&[("QP", qp.destroy())])?)
    };
    println!("survivor: completions: {}; {}", t.errors_line(), t.ledger());
    if !t.all_done() {
        return Err(format!("lost: requests never completed ({})", t.ledger()));
    }
    let flushed_recvs = t.count(WcStatus::WR_FLUSH_ERR, true);
    if t.sends_ok != t.sends_posted || flushed_recvs + t.answered != t.recvs_done {
        return Err(format!(
            "expected every send to succeed and the receives to be flushed: {}",
            t.errors_line()
        ));
    }
    let rest = teardown_line(&[
        ("MR", mr.destroy().map(drop)),
        ("CQ", cq.destroy()),
        ("PD", pd.destroy()),
        ("context", ctx.close()),
    ])?;
    println!(
        "crash: {}: {} mid-traffic; {report}; every send completed successfully ({} sends, no ACKs in {}); \
         {flushed_recvs} receives flushed on the move to ERR; {down} and {}",
        o.case.name(),
        o.case.killed(),
        t.sends_ok,
        if ud { "UD" } else { "UC" },
        rest.trim_start_matches("teardown clean (").trim_end_matches(')'),
    );
    Ok(())
}

/// A UD QP's [`Endpoint`] (`Qp::endpoint` is RC's and UC's): its number, port 1's LID and
/// MTU, the GID at `gid_index`, and the PSN of its first send.
fn ud_endpoint(ctx: &Context, qp_num: u32, gid_index: u8) -> Result<Endpoint, String> {
    let port = ctx.query_port(1).map_err(err("query port"))?;
    let gid = ctx
        .query_gid(1, gid_index.into())
        .map_err(err("query GID"))?;
    Ok(Endpoint {
        qp_num,
        port_num: 1,
        lid: port.lid,
        gid,
        gid_index,
        psn: qp_num.wrapping_mul(0x9e37_79b9) & 0x00ff_ffff,
        mtu: Mtu::from_raw(port.active_mtu).unwrap_or(Mtu::Mtu1024),
    })
}

/// UD and UC: sends until the peer has been silent for `SILENCE` (messages unanswered for
/// `LOSS_AFTER` count as lost); the loss report.
fn lossy_loop(
    t: &mut Traffic,
    cq: &Cq<'_>,
    mr: &Mr<'_, Vec<u8>>,
    mut post: impl FnMut(u64) -> typed_verbs::Result<u64>,
    mut repost: impl FnMut(usize) -> typed_verbs::Result<()>,
) -> Result<String, String> {
    let start = Instant::now();
    loop {
        t.fill(&mut post)?;
        if t.poll(cq, mr, &mut repost)? == 0 {
            std::thread::yield_now();
        }
        if let Some((s, recv, _, _)) = t.first_error {
            return Err(format!(
                "an error completion ({s:?} on a {}) before any loss",
                if recv { "receive" } else { "send" }
            ));
        }
        t.expire();
        let silent = t.last_answer.elapsed();
        if t.answered > 0 && silent >= SILENCE {
            break;
        }
        if start.elapsed() > HANG {
            return Err(format!("no answer at all within {HANG:?}: {}", t.ledger()));
        }
    }
    let detected = t.last_answer.elapsed();
    t.stopped = true;
    let bound = SILENCE + Duration::from_millis(500);
    if detected > bound {
        return Err(format!(
            "the loss was detected {:.3} s after the last answer, past {:.3} s",
            detected.as_secs_f64(),
            bound.as_secs_f64()
        ));
    }
    // The sends still in flight complete (no ACKs: at once).
    let wait = Instant::now();
    while t.sends_done < t.sends_posted && wait.elapsed() < DRAIN {
        if t.poll(cq, mr, |_| Ok(()))? == 0 {
            std::thread::yield_now();
        }
    }
    let sent = t.next_seq;
    Ok(format!(
        "loss detected: {sent} sent, {} answered ({} unanswered, {} of them lost before the end); \
         {} sends completed after the last answer; the peer declared gone {:.2} s after its last \
         answer (silence limit {:.1} s, bound {:.1} s)",
        t.answered,
        sent - t.answered,
        t.lost,
        t.sends_ok_after_last_answer,
        detected.as_secs_f64(),
        SILENCE.as_secs_f64(),
        bound.as_secs_f64()
    ))
}

// ---- The victim. ----

fn victim(o: &Opts) -> Result<(), String> {
    let ctx = open(o)?;
    let pd = Pd::new(&ctx).map_err(err("PD"))?;
    let cq = Cq::builder(&ctx)
        .cqe(4 * WINDOW as u32 + RECVS as u32)
        .build()
        .map_err(err("CQ"))?;
    let mr = Mr::new(&pd, vec![0u8; BUF], Access::LOCAL_WRITE).map_err(err("MR"))?;
    let target = Mr::new(
        &pd,
        vec![0u8; TARGET],
        Access::LOCAL_WRITE | Access::REMOTE_WRITE,
    )
    .map_err(err("target MR"))?;
    let region = |ep: Endpoint| PeerInfo {
        ep,
        addr: target.remote().addr(),
        len: target.remote().len(),
        rkey: target.remote().rkey(),
    };
    let sq = 2 * WINDOW as u32 + 2;
    // An RC or UC victim: its QP connected (`Qp::connect`'s bounded defaults), answering.
    macro_rules! connected {
        ($t:ty, $access:expr) => {{
            let qp = Qp::<$t>::builder(&pd, &cq, &cq)
                .max_send_wr(sq)
                .max_recv_wr(RECVS as u32)
                .build()
                .map_err(err("QP"))?;
            let me = qp.endpoint(1, o.gid_index).map_err(err("endpoint"))?;
            let (peer, _s) = exchange(o, &region(me))?;
            let qp = qp
                .connect(&me, &peer.ep, $access)
                .map_err(err("bringing the QP up"))?;
            answer(
                o,
                &cq,
                &mr,
                false,
                |slot| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]),
                |seq| {
                    let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
                    qp.post_send(&SendWr::send(seq, &msg).signaled())
                },
            )
        }};
    }
    match o.case {
        Case::RcProcess | Case::RcVm => {
            connected!(Rc, AccessFlags::LOCAL_WRITE | AccessFlags::REMOTE_WRITE)
        }
        Case::UcProcess => connected!(Uc, AccessFlags::LOCAL_WRITE),
        Case::UdProcess => {
            let qp = Qp::<Ud>::builder(&pd, &cq, &cq)
                .max_send_wr(sq)
                .max_recv_wr(RECVS as u32)
                .build()
                .map_err(err("QP"))?;
            let me = ud_endpoint(&ctx, qp.qp_num(), o.gid_index)?;
            let qp = qp
                .to_init(UdInit {
                    port_num: 1,
                    pkey_index: 0,
                    qkey: QKEY,
                })
                .map_err(err("UD INIT"))?;
            for slot in 0..RECVS {
                qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])
                    .map_err(err("posting a receive"))?;
            }
            let (peer, _s) = exchange(o, &region(me))?;
            let qp = qp
                .to_rtr(())
                .and_then(|q| q.to_rts(SqPsn { sq_psn: me.psn }))
                .map_err(err("UD RTR/RTS"))?;
            let ah = AddressHandle::new(&pd, av(&me, &peer.ep, 64)).map_err(err("AH"))?;
            answer_posted(
                o,
                &cq,
                &mr,
                true,
                |slot| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]),
                |seq| {
                    let msg = [mr.sge(send_slot(&mr, seq)).unwrap()];
                    qp.post_send(
                        &SendWr::send_to(seq, &msg, UdDest::new(&ah, peer.ep.qp_num, QKEY))
                            .signaled(),
                    )
                },
            )
        }
        Case::CmProcess | Case::CmVm => victim_cm(o, &ctx, &pd, &cq, &mr, &target),
    }
}

/// The victim's region, which the survivor writes into.
type Target<'p> = Mr<'p, Vec<u8>, typed_verbs::access!(LOCAL_WRITE | REMOTE_WRITE)>;

fn victim_cm(
    o: &Opts,
    ctx: &Context,
    pd: &Pd<'_>,
    cq: &Cq<'_>,
    mr: &Mr<'_, Vec<u8>>,
    target: &Target<'_>,
) -> Result<(), String> {
    let ch = EventChannel::new(ctx).map_err(err("CM event channel"))?;
    let to = SocketAddr::new(o.server.expect("the victim's server"), o.port);
    let mine = PeerInfo {
        ep: Endpoint {
            qp_num: 0,
            port_num: 1,
            lid: 0,
            gid: Gid::default(),
            gid_index: 0,
            psn: 0,
            mtu: Mtu::Mtu1024,
        },
        addr: target.remote().addr(),
        len: target.remote().len(),
        rkey: target.remote().rkey(),
    }
    .to_bytes();
    let param = ConnParam {
        private_data: &mine,
        ..ConnParam::default()
    };
    let start = Instant::now();
    let conn = loop {
        let r = CmId::<Tcp>::new(&ch)
            .and_then(|id| id.resolve_addr(None, to, Duration::from_secs(2)))
            .and_then(|id| id.resolve_route(Duration::from_secs(2)))
            .and_then(|id| {
                let qp = Qp::<Rc>::builder(pd, cq, cq)
                    .max_send_wr(2 * WINDOW as u32 + 2)
                    .max_recv_wr(RECVS as u32)
                    .build()?;
                let qp = id.init_qp(qp)?;
                for slot in 0..RECVS {
                    qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()])?;
                }
                id.connect(qp, &param, T)
            });
        match r {
            Ok(c) => break c,
            Err(e)
                if start.elapsed() < T
                    && matches!(
                        e.kind,
                        ErrorKind::Rejected { status: 8, .. }
                            | ErrorKind::CmEvent { .. }
                            | ErrorKind::CmTimedOut(_)
                    ) =>
            {
                std::thread::sleep(Duration::from_millis(200))
            }
            Err(e) => return Err(format!("connecting to {to}: {e}")),
        }
    };
    let qp = conn.qp();
    answer_posted(
        o,
        cq,
        mr,
        false,
        |slot| qp.post_recv(RECV_TAG | slot as u64, &[mr.sge(recv_range(slot)).unwrap()]),
        |seq| {
            let msg = [mr.sge(send_slot(mr, seq)).unwrap()];
            qp.post_send(&SendWr::send(seq, &msg).signaled())
        },
    )
}

/// The victim's loop: posts its receives, then answers every message with a send of its
/// number, until it is killed (120 s at most).
fn answer(
    o: &Opts,
    cq: &Cq<'_>,
    mr: &Mr<'_, Vec<u8>>,
    ud: bool,
    mut post_recv: impl FnMut(usize) -> typed_verbs::Result<()>,
    reply: impl FnMut(u64) -> typed_verbs::Result<()>,
) -> Result<(), String> {
    for slot in 0..RECVS {
        post_recv(slot).map_err(err("posting a receive"))?;
    }
    answer_posted(o, cq, mr, ud, post_recv, reply)
}

fn answer_posted(
    o: &Opts,
    cq: &Cq<'_>,
    mr: &Mr<'_, Vec<u8>>,
    ud: bool,
    mut post_recv: impl FnMut(usize) -> typed_verbs::Result<()>,
    mut reply: impl FnMut(u64) -> typed_verbs::Result<()>,
) -> Result<(), String> {
    println!("victim: {}: up; answering", o.case.name());
    let start = Instant::now();
    let mut answered = 0u64;
    let mut in_flight = 0u64;
    let mut backlog: VecDeque<u64> = VecDeque::new();
    let mut wc: [WorkCompletion; 16] = std::array::from_fn(|_| WorkCompletion::new());
    loop {
        let polled = cq.poll(&mut wc).map_err(err("polling the CQ"))?;
        for w in polled.iter() {
            if w.status() != WcStatus::SUCCESS {
                return Err(format!(
                    "an error completion: {:?} (wr_id {:#x})",
                    w.status(),
                    w.wr_id()
                ));
            }
            if w.wr_id() & RECV_TAG == 0 {
                in_flight -= 1;
                continue;
            }
            let slot = (w.wr_id() & !RECV_TAG) as usize;
            backlog.push_back(slot_seq(mr, slot, ud));
            post_recv(slot).map_err(err("reposting a receive"))?;
        }
        while in_flight < 2 * WINDOW as u64 {
            let Some(seq) = backlog.pop_front() else {
                break;
            };
            reply(seq).map_err(err("answering"))?;
            in_flight += 1;
            answered += 1;
            if answered == o.answers {
                println!("victim: traffic running ({answered} answered)");
            }
        }
        if polled.is_empty() {
            std::thread::yield_now();
        }
        if start.elapsed() > Duration::from_secs(120) {
            return Err(format!("not killed within 120 s ({answered} answered)"));
        }
    }
}
