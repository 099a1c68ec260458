//! What `rping`, `ucmatose` and `udaddy` share: getopt(3) as rdma-core's programs call it, C's
//! `atoi` and `strtoul`, address lookup as `getaddrinfo` does it, where a side's lines go, and
//! `--self` (server and client on two threads of one process).
//!
//! Each example includes this file with `#[path = "common/cmex.rs"] mod cmex;` and uses part
//! of it.
#![allow(dead_code)] // each example uses part of this module

use std::fmt::Display;
use std::net::{IpAddr, Ipv4Addr, SocketAddr, ToSocketAddrs};
use std::process::ExitCode;
use std::sync::mpsc;
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnectRequest, EventChannel, Listening, PortSpace};
use typed_verbs::{Context, Error, ErrorKind};

/// What [`getopt`] found: each option with its argument, in order, and the operands.
pub type Parsed = (Vec<(char, Option<String>)>, Vec<String>);

/// `getopt(argc, argv, optstring)` with `opterr = 0`, plus the long option `--self` (reported
/// as `('\0', None)`): every option in order with its argument, and the operands. `Err` names
/// the option that is unknown or lacks its argument (getopt's `'?'`).
pub fn getopt(args: impl IntoIterator<Item = String>, optstring: &str) -> Result<Parsed, char> {
    let takes_arg = |c: char| -> Option<bool> {
        let i = optstring.find(c)?;
        Some(optstring[i + c.len_utf8()..].starts_with(':'))
    };
    let mut seen = Vec::new();
    let mut operands = Vec::new();
    let mut it = args.into_iter().skip(1);
    while let Some(a) = it.next() {
        if a == "--" {
            operands.extend(it.by_ref());
            break;
        }
        if a == "--self" {
            seen.push(('\0', None));
            continue;
        }
        if a.len() < 2 || !a.starts_with('-') || a.starts_with("--") {
            // GNU getopt permutes: operands may come between options.
            if a.starts_with("--") {
                return Err('-');
            }
            operands.push(a);
            continue;
        }
        for (i, c) in a[1..].char_indices() {
            if c == ':' {
                return Err(c);
            }
            match takes_arg(c) {
                None => return Err(c),
                Some(false) => seen.push((c, None)),
                Some(true) => {
                    let rest = &a[1 + i + c.len_utf8()..];
                    let v = if rest.is_empty() {
                        it.next().ok_or(c)?
                    } else {
                        rest.to_owned()
                    };
                    seen.push((c, Some(v)));
                    break;
                }
            }
        }
    }
    Ok((seen, operands))
}

/// What `cmatose` and `udaddy` (`prog`) take that the typed CM leaves out: refused, with a
/// failure status.
pub fn unsupported(prog: &str, what: &str) -> ! {
    eprintln!("{prog}: {what} is not supported by this program");
    std::process::exit(1);
}

/// `-f` of `cmatose` and `udaddy` (`prog`), the address format `v`: `ip` and `name` are taken,
/// `gid` (AF_IB addresses) is refused, anything else is warned about.
pub fn address_format(prog: &str, v: &str) {
    let l = v.to_ascii_lowercase();
    if l.starts_with("gid") {
        unsupported(prog, "-f gid (AF_IB addresses)");
    } else if !l.starts_with("ip") && !l.starts_with("name") {
        eprintln!("Warning: unknown address format");
    }
}

/// `-P` of `cmatose` and `udaddy` (`prog`), the port space `v`: the program's own (`ours`) is
/// taken, the other one it knows (`refused`) is refused as `what`, anything else is warned about.
pub fn port_space_format(prog: &str, v: &str, ours: &str, refused: &str, what: &str) {
    let l = v.to_ascii_lowercase();
    if l.starts_with(refused) {
        unsupported(prog, what);
    } else if !l.starts_with(ours) {
        eprintln!("Warning: unknown port space format");
    }
}

/// `create_message` of `cmatose` and `udaddy`: no size, no messages; and no count below zero.
pub fn message_counts(connections: &mut i32, message_count: &mut i32, message_size: i32) {
    if message_size <= 0 {
        *message_count = 0;
    }
    *connections = (*connections).max(0);
    *message_count = (*message_count).max(0);
}

/// C's `atoi`: leading blanks, a sign, then digits as far as they go; 0 when there are none.
pub fn atoi(s: &str) -> i32 {
    let t = s.trim_start();
    let (neg, digits) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let mut v: i64 = 0;
    for b in digits.bytes().take_while(u8::is_ascii_digit) {
        v = (v * 10 + i64::from(b - b'0')).min(i64::from(i32::MAX) + 1);
    }
    let v = if neg { -v } else { v };
    v.clamp(i64::from(i32::MIN), i64::from(i32::MAX)) as i32
}

/// `strtoul(s, NULL, 0)`: decimal, `0x` hex or `0` octal, as far as the digits go.
pub fn strtoul(s: &str) -> u64 {
    let t = s.trim_start();
    let t = t.strip_prefix('+').unwrap_or(t);
    let (radix, digits) = if let Some(h) = t.strip_prefix("0x").or_else(|| t.strip_prefix("0X")) {
        (16, h)
    } else if t.len() > 1 && t.starts_with('0') {
        (8, &t[1..])
    } else {
        (10, t)
    };
    let end = digits
        .char_indices()
        .find(|(_, c)| !c.is_digit(radix))
        .map_or(digits.len(), |(i, _)| i);
    u64::from_str_radix(&digits[..end], radix).unwrap_or(0)
}

/// The first address `getaddrinfo(host, NULL, ...)` gives (a numeric address or a name).
pub fn lookup(host: &str) -> Result<IpAddr, String> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    (host, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .map(|a| a.ip())
        .ok_or_else(|| format!("getaddrinfo failed - invalid hostname or IP address: {host}"))
}

/// The device and its CM event channel (`rdma_create_event_channel`); what failed is said as
/// rdma-core's programs say it, and the exit status is -1.
pub fn open(out: &Out) -> Result<(Context, EventChannel), i32> {
    let ctx = Context::open_from_env().map_err(|e| {
        out.warn(format!("no RDMA device: {e}"));
        -1
    })?;
    let ch = EventChannel::new(&ctx).map_err(|e| {
        out.warn(format!("rdma_create_event_channel: {e}"));
        -1
    })?;
    Ok((ctx, ch))
}

/// `rdma_create_id` on `ch`; a failure is said as `what: error`, with -1 as the exit status.
pub fn create_id<P: PortSpace>(ch: &EventChannel, what: &str, out: &Out) -> Result<CmId<P>, i32> {
    CmId::<P>::new(ch).map_err(|e| {
        out.warn(format!("{what}: {e}"));
        -1
    })
}

/// The listening id of `run_server` in `cmatose` and `udaddy` (`prog`): an id of port space `P`
/// on `ch` (`rdma_create_id`), bound to `addr`, listening with the default backlog
/// (`rdma_listen(id, 0)`); `ready` gets its address (under `--self`, for the client). A failure
/// is said as the program says it, with -1 as the exit status.
pub fn listen<P: PortSpace>(
    prog: &str,
    ch: &EventChannel,
    addr: SocketAddr,
    ready: Option<mpsc::Sender<SocketAddr>>,
    out: &Out,
) -> Result<CmId<P, Listening>, i32> {
    let listener = create_id::<P>(ch, &format!("{prog}: listen request failed"), out)?;
    let listener = listener.bind(addr).map_err(|e| {
        out.warn(format!("{prog}: bind address failed: {e}"));
        -1
    })?;
    let listener = listener.listen(0).map_err(|e| {
        out.warn(format!("{prog}: failure trying to listen: {e}"));
        -1
    })?;
    if let Some(tx) = ready {
        let _ = tx.send(listener.local_addr().unwrap_or(addr));
    }
    Ok(listener)
}

/// `rdma_getaddrinfo` of `host` (none: any address) at `port` in `cmatose` and `udaddy`, the
/// error said as they say it, with `EAI_NONAME` (-2) as the exit status.
pub fn getaddrinfo(host: Option<&str>, port: u16, out: &Out) -> Result<SocketAddr, i32> {
    let ip = match host {
        None => IpAddr::V4(Ipv4Addr::UNSPECIFIED),
        Some(h) => lookup(h).map_err(|e| {
            out.say(format!("rdma_getaddrinfo error: {e}"));
            -2 // EAI_NONAME
        })?,
    };
    Ok(SocketAddr::new(ip, port))
}

/// Where a side's lines go: stdout (or stderr), with `server: ` or `client: ` in front under
/// `--self`.
#[derive(Clone, Copy)]
pub struct Out {
    /// The prefix of every line.
    pub prefix: &'static str,
    /// `-d`: debug lines (rping).
    pub debug: bool,
}

impl Out {
    /// The lines of a program run on its own.
    pub fn plain(debug: bool) -> Out {
        Out { prefix: "", debug }
    }
    /// A line on stdout.
    pub fn say(&self, line: impl Display) {
        println!("{}{line}", self.prefix);
    }
    /// A line on stderr.
    pub fn warn(&self, line: impl Display) {
        eprintln!("{}{line}", self.prefix);
    }
    /// A debug line on stdout (`DEBUG_LOG`), with `-d` only.
    pub fn debug(&self, line: impl Display) {
        if self.debug {
            println!("{}{line}", self.prefix);
        }
    }
}

/// What a CM error event is called in rdma-core's messages: `cma event NAME, error STATUS`
/// (`rping`) or `event: NAME, error: STATUS` (`cmatose`, `udaddy`), from the typed error.
pub fn cm_event_of(e: &Error) -> Option<(String, i32)> {
    match &e.kind {
        ErrorKind::CmEvent { event, status } => Some((event.to_string(), *status)),
        ErrorKind::Rejected { status, .. } => Some(("RDMA_CM_EVENT_REJECTED".into(), *status)),
        _ => None,
    }
}

/// How long a server waits for its next connect request in one call (it waits again after).
const REQUEST_SLICE: Duration = Duration::from_secs(3600);

/// Waits for the next connect request, as long as it takes (as rdma-core's servers do).
pub fn next_request<P: PortSpace>(
    listener: &CmId<P, Listening>,
) -> typed_verbs::Result<ConnectRequest<P>> {
    loop {
        match listener.get_request(REQUEST_SLICE) {
            Err(e) if matches!(e.kind, ErrorKind::CmTimedOut(_)) => continue,
            r => return r,
        }
    }
}

/// Which side a run is, and, under `--self`, how the server tells the client it listens.
pub enum Side {
    /// The server; under `--self` it sends its listening address once it listens.
    Server(Option<mpsc::Sender<SocketAddr>>),
    /// The client.
    Client,
}

/// `--self`: `run` as the server on one thread and as the client on another (the client starts
/// once the server listens). If either side fails the process exits at once with a failure
/// (the other side could wait for it for ever). `run` returns the program's exit status.
pub fn self_test<F>(run: F, debug: bool) -> ExitCode
where
    F: Fn(Side, &Out) -> i32 + Sync,
{
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    std::thread::scope(|s| {
        let run = &run;
        let done = done_tx.clone();
        s.spawn(move || {
            let out = Out {
                prefix: "server: ",
                debug,
            };
            let r = run(Side::Server(Some(ready_tx)), &out);
            let _ = done.send((out, r));
        });
        let done = done_tx;
        s.spawn(move || {
            let out = Out {
                prefix: "client: ",
                debug,
            };
            // The server listens, or failed (its sender is gone).
            let r = if ready_rx.recv().is_ok() {
                run(Side::Client, &out)
            } else {
                0
            };
            let _ = done.send((out, r));
        });
        for (out, r) in done_rx.iter() {
            if r != 0 {
                out.warn(format!("exit status {r}"));
                std::process::exit(1);
            }
        }
    });
    ExitCode::SUCCESS
}

/// `main` of `ucmatose` and `udaddy` with the parsed options `o`: the client when `-s` (the second
/// of `addrs`) names a server, else the server; either ends with `test complete` and its return
/// status. `both` (`--self`) runs the two on two threads, the server bound to `-b` (the first of
/// `addrs`; 127.0.0.1 by default) and the client connecting to it (or to `-s`) from any address.
pub fn cmatose_main<O: Clone + Sync>(
    mut o: O,
    both: bool,
    addrs: fn(&mut O) -> (&mut Option<String>, &mut Option<String>),
    run_server: fn(&O, &Out, Option<mpsc::Sender<SocketAddr>>) -> i32,
    run_client: fn(&O, &Out) -> i32,
) -> ExitCode {
    let finish = |out: &Out, ret: i32| {
        out.say("test complete");
        out.say(format!("return status {ret}"));
        ret
    };
    if !both {
        let out = Out::plain(false);
        let ret = if addrs(&mut o).1.is_some() {
            run_client(&o, &out)
        } else {
            run_server(&o, &out, None)
        };
        return exit_code(finish(&out, ret));
    }
    let bound = addrs(&mut o)
        .0
        .get_or_insert_with(|| Ipv4Addr::LOCALHOST.to_string())
        .clone();
    let mut client = o.clone();
    let (src, dst) = addrs(&mut client);
    *src = None;
    dst.get_or_insert(bound);
    self_test(
        |side, out| {
            let ret = match side {
                Side::Server(ready) => run_server(&o, out, ready),
                Side::Client => run_client(&client, out),
            };
            finish(out, ret)
        },
        false,
    )
}

/// A C exit status as the process's (`return ret` from `main`: the low byte).
pub fn exit_code(ret: i32) -> ExitCode {
    match ret as u8 {
        0 if ret != 0 => ExitCode::FAILURE,
        b => ExitCode::from(b),
    }
}
