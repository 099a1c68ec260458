//! A service that survives its peer restarting: an RC QP that sends requests to a peer and
//! reads its echoes, and when the peer dies (its process exits: its QP is gone) sees the failed
//! completion in bounded time, takes every posted slot back from the flush, moves its QP
//! ERR → RESET, waits for the peer to come back and connects again, on the same context, CQ,
//! QP and slots.
//!
//! ```text
//! reconnect [--self] [--restarts N] [--port P] [-d DEVICE]   the service (listens on P)
//! reconnect --peer HOST [--port P] [--echoes M] [-d DEVICE]  one peer life: echoes M, then dies
//! ```
//!
//! `--self` runs the service and its peer's lives (N restarts: N + 1 lives) in one process, the
//! peer on a thread of its own that opens its own context for each life, as a new process would.
//! The device is `-d`, else `TYPED_VERBS_DEVICE`, else sw0. The peer's death is seen only through
//! the transport: the service gets RETRY_EXC_ERR after its ACK timeout and retries
//! (`Qp::connect`'s defaults, `timeout` 14 and `retry_cnt` 6: 0.47 s), never through the side
//! channel.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::qp_state::Reset;
use typed_verbs::slots::{SlotPoller, SlotSends};
use typed_verbs::{
    wc_flags, Access, AccessFlags, Context, CqEx, Endpoint, Gid, Mtu, PageBuf, Pd, Qp, Rc, Shared,
    Slot, SlotRq, WcOpcode, WcStatus,
};

type Flags = wc_flags!(BYTE_LEN | QP_NUM);

/// Receives each side keeps posted.
const RECVS: usize = 4;
/// Bytes a slot holds.
const SLOT: usize = 64;

struct Opts {
    selftest: bool,
    peer: Option<String>,
    restarts: u32,
    echoes: u32,
    port: u16,
    device: Option<String>,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        selftest: false,
        peer: None,
        restarts: 2,
        echoes: 20,
        port: 18_617,
        device: None,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().ok_or(format!("{what} needs a value"));
        match a.as_str() {
            "--self" => o.selftest = true,
            "--peer" => o.peer = Some(value("--peer")?),
            "--restarts" => {
                o.restarts = value("--restarts")?
                    .parse()
                    .map_err(|e| format!("--restarts: {e}"))?
            }
            "--echoes" => {
                o.echoes = value("--echoes")?
                    .parse()
                    .map_err(|e| format!("--echoes: {e}"))?
            }
            "--port" => {
                o.port = value("--port")?
                    .parse()
                    .map_err(|e| format!("--port: {e}"))?
            }
            "-d" => o.device = Some(value("-d")?),
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    Ok(o)
}

fn open(device: Option<&str>) -> typed_verbs::Result<Context> {
    match device {
        Some(d) => Context::open(d),
        None => match std::env::var(typed_verbs::DEVICE_ENV) {
            Ok(d) if !d.is_empty() => Context::open(&d),
            _ => Context::open("sw0"),
        },
    }
}

/// An endpoint as one line of text: qp_num lid gid(hex) gid_index psn mtu.
fn send_endpoint(s: &mut TcpStream, e: &Endpoint) -> Result<(), String> {
    let gid: String = e.gid.0.iter().map(|b| format!("{b:02x}")).collect();
    let line = format!(
        "{} {} {gid} {} {} {}\n",
        e.qp_num, e.lid, e.gid_index, e.psn, e.mtu as u32
    );
    s.write_all(line.as_bytes())
        .map_err(|e| format!("side channel: {e}"))
}

fn read_endpoint(s: &TcpStream, port_num: u8) -> Result<Endpoint, String> {
    let mut line = String::new();
    BufReader::new(s)
        .read_line(&mut line)
        .map_err(|e| format!("side channel: {e}"))?;
    let f: Vec<&str> = line.split_whitespace().collect();
    let bad = || format!("side channel: not an endpoint: {line:?}");
    if f.len() != 6 || f[2].len() != 32 {
        return Err(bad());
    }
    let mut gid = [0u8; 16];
    for (i, b) in gid.iter_mut().enumerate() {
        *b = u8::from_str_radix(&f[2][2 * i..2 * i + 2], 16).map_err(|_| bad())?;
    }
    let num = |i: usize| f[i].parse::<u32>().map_err(|_| bad());
    Ok(Endpoint {
        qp_num: num(0)?,
        port_num,
        lid: num(1)? as u16,
        gid: Gid(gid),
        gid_index: num(3)? as u8,
        psn: num(4)?,
        mtu: Mtu::from_raw(num(5)?).ok_or_else(bad)?,
    })
}

/// A completion as this program looks at it: status, opcode (on success), slot, byte count.
type Got<'s> = (WcStatus, Option<WcOpcode>, Slot<'s>, u32);

/// Polls until a completion comes or `limit` passes.
fn next<'s>(
    poller: &mut SlotPoller<'_, 's, Flags>,
    limit: Duration,
) -> Result<Option<Got<'s>>, String> {
    let start = Instant::now();
    loop {
        let got = poller
            .poll_batch(|mut batch| {
                let slot = batch
                    .take_slot()
                    .expect("a slot CQ's completion carries its slot");
                match batch.completion().result() {
                    Ok(c) => (c.status(), Some(c.opcode()), slot, c.byte_len()),
                    Err(c) => (c.status(), None, slot, 0),
                }
            })
            .map_err(|e| e.to_string())?;
        if got.is_some() || start.elapsed() > limit {
            return Ok(got);
        }
        std::thread::yield_now();
    }
}

/// What each side makes once and keeps: a context of its own, a PD, a slot CQ (its poller), a
/// pool of slots and an RC slot QP in RESET, for `f`.
fn with_side<R>(
    o: &Opts,
    f: impl for<'c> FnOnce(
        &mut SlotPoller<'c, 'static, Flags>,
        Vec<Slot<'static>>,
        Qp<'c, Rc, SlotRq<SlotSends>, Shared, (), Reset>,
    ) -> Result<R, String>,
) -> Result<R, String> {
    let ctx = Arc::new(open(o.device.as_deref()).map_err(|e| e.to_string())?);
    let pd = Arc::new(Pd::new(&ctx).map_err(|e| e.to_string())?);
    let mut cq = CqEx::<Flags>::builder(&ctx)
        .cqe(64)
        .slots()
        .build()
        .map_err(|e| e.to_string())?;
    let (cq, mut poller) = cq.split();
    let pool = Slot::register(
        &pd,
        PageBuf::new(2 * RECVS * SLOT).map_err(|e| e.to_string())?,
        Access::LOCAL_WRITE,
        SLOT,
    )
    .map_err(|e| e.to_string())?;
    let qp = Qp::<Rc>::slot_builder(&pd, cq, cq)
        .max_send_wr(RECVS as u32)
        .max_recv_wr(RECVS as u32)
        .build()
        .map_err(|e| e.to_string())?;
    f(&mut poller, pool, qp)
}

/// The service: one QP, one CQ, one pool of slots for all of the peer's lives.
fn service(o: &Opts, listener: TcpListener) -> Result<(), String> {
    with_side(o, |poller, mut pool, mut qp| {
        let total = pool.len();
        let bound = Duration::from_secs(5); // 7 × 67 ms, and room for a slow machine
        let mut echoed = 0u64;
        for life in 0..=o.restarts {
            let (mut side, _) = listener.accept().map_err(|e| format!("accept: {e}"))?;
            let me = qp.endpoint(1, 0).map_err(|e| e.to_string())?;
            let peer = read_endpoint(&side, 1)?;
            send_endpoint(&mut side, &me)?;
            // `connect`'s defaults report a dead peer in bounded time on every device: an ACK
            // timeout of 67 ms (`timeout` 14) and 6 retries, 0.47 s (docs/connection-parameters.md).
            let up = qp
                .connect(&me, &peer, AccessFlags::LOCAL_WRITE)
                .map_err(|e| e.to_string())?;
            println!(
                "service: life {life} of the peer: connected to QP {}",
                peer.qp_num
            );
            let mut posted = 0;
            for _ in 0..RECVS {
                up.post_recv_slot(pool.pop().expect("a slot"))
                    .map_err(|e| e.error.to_string())?;
                posted += 1;
            }
            // Requests and their echoes until a completion fails: the peer is gone. An echo that
            // does not come within `patience` (the peer died after the request reached it) is not
            // waited for: the next request finds out.
            let patience = Duration::from_millis(200);
            let mut seq = 0u64;
            let echoed_before = echoed;
            let started = Instant::now();
            let failure = 'life: loop {
                let mut s = pool.pop().expect("a slot");
                s[..8].copy_from_slice(&seq.to_le_bytes());
                up.post_send_slot(s, 8).map_err(|e| e.error.to_string())?;
                posted += 1;
                let since = Instant::now();
                let (mut sent, mut echo) = (false, false);
                while !(sent && echo) {
                    let limit = if sent { patience } else { bound };
                    let Some((status, opcode, slot, len)) = next(poller, limit)? else {
                        if sent {
                            break; // no echo: the next request will tell
                        }
                        return Err(format!("no completion within {bound:?}: a hang"));
                    };
                    posted -= 1;
                    if status != WcStatus::SUCCESS {
                        pool.push(slot);
                        break 'life (status, since.elapsed());
                    }
                    if opcode == Some(WcOpcode::RECV) {
                        let got =
                            (len == 8).then(|| u64::from_le_bytes(slot[..8].try_into().unwrap()));
                        match got {
                            Some(n) if n == seq => {
                                echoed += 1;
                                echo = true;
                            }
                            // The echo of a request not waited for (`patience`): late, not wrong.
                            Some(n) if n < seq => echoed += 1,
                            _ => {
                                return Err(format!(
                                    "echo {seq}: got {:?}",
                                    &slot[..len.min(8) as usize]
                                ))
                            }
                        }
                        up.post_recv_slot(slot).map_err(|e| e.error.to_string())?;
                        posted += 1;
                    } else {
                        sent = true;
                        pool.push(slot);
                    }
                }
                seq += 1;
            };
            println!(
            "service: peer gone after {} requests, {} echoed ({:.2?}): {:?} {:.2?} after the request",
            seq + 1,
            echoed - echoed_before,
            started.elapsed(),
            failure.0,
            failure.1
        );
            // Back into service: the type follows the device to ERR, every slot still posted
            // comes back flushed, and RESET makes the QP new for the next peer.
            let err = up.to_error().map_err(|e| e.to_string())?;
            while posted > 0 {
                let Some((status, _, slot, _)) = next(poller, bound)? else {
                    return Err(format!("{posted} slots not flushed within {bound:?}"));
                };
                debug_assert_ne!(status, WcStatus::SUCCESS);
                pool.push(slot);
                posted -= 1;
            }
            assert_eq!(pool.len(), total, "every slot is back");
            qp = err.to_reset().map_err(|e| e.to_string())?;
            println!("service: every slot back ({total}), QP reset, waiting for the peer");
        }
        println!("service: survived {} restarts of its peer; {echoed} echoes; same CQ, QP and slots throughout", o.restarts);
        Ok(())
    })
}

/// One life of the peer: a context of its own, echoes `echoes` requests, then falls silent
/// without a word (its QP to ERR, then everything dropped, as when its process exits).
fn peer_life(o: &Opts, host: &str) -> Result<(), String> {
    with_side(o, |poller, mut pool, qp| {
        let total = pool.len();
        let me = qp.endpoint(1, 0).map_err(|e| e.to_string())?;
        let start = Instant::now();
        let mut side = loop {
            match TcpStream::connect((host, o.port)) {
                Ok(s) => break s,
                Err(_) if start.elapsed() < Duration::from_secs(10) => {
                    std::thread::sleep(Duration::from_millis(20))
                }
                Err(e) => return Err(format!("connect to {host}:{}: {e}", o.port)),
            }
        };
        send_endpoint(&mut side, &me)?;
        let service = read_endpoint(&side, 1)?;
        let up = qp
            .connect(&me, &service, AccessFlags::LOCAL_WRITE)
            .map_err(|e| e.to_string())?;
        // A request that comes before these are posted gets an RNR NAK and is sent again.
        for _ in 0..RECVS {
            up.post_recv_slot(pool.pop().expect("a slot"))
                .map_err(|e| e.error.to_string())?;
        }
        let mut n = 0;
        while n < o.echoes {
            let Some((status, opcode, slot, _)) = next(poller, Duration::from_secs(10))? else {
                return Err("peer: the service sent nothing for 10 s".into());
            };
            if status != WcStatus::SUCCESS {
                return Err(format!("peer: {status:?}"));
            }
            if opcode == Some(WcOpcode::RECV) {
                // A request: echo it from the same slot.
                up.post_send_slot(slot, 8)
                    .map_err(|e| e.error.to_string())?;
                n += 1;
            } else {
                // An echo's send completed: the slot takes the next request.
                up.post_recv_slot(slot).map_err(|e| e.error.to_string())?;
            }
        }
        println!("peer: echoed {n}, dying now");
        // The peer falls silent, as when its process exits: its QP goes to ERR, where it drops
        // every packet (nothing is sent to the service), its slots come back flushed, and then
        // everything is dropped. The service hears nothing but the silence of the transport.
        let _err = up.to_error().map_err(|e| e.to_string())?;
        while pool.len() < total {
            let Some((_, _, slot, _)) = next(poller, Duration::from_secs(5))? else {
                return Err(format!(
                    "peer: {} slots not flushed within 5 s",
                    total - pool.len()
                ));
            };
            pool.push(slot);
        }
        Ok(())
    })
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("reconnect: {e}");
            return ExitCode::from(2);
        }
    };
    let r = if let Some(host) = &o.peer {
        peer_life(&o, host)
    } else {
        match TcpListener::bind(("0.0.0.0", o.port)) {
            Err(e) => Err(format!("listen on {}: {e}", o.port)),
            Ok(l) if o.selftest => std::thread::scope(|s| {
                let lives = s.spawn(|| {
                    for _ in 0..=o.restarts {
                        peer_life(&o, "127.0.0.1")?;
                    }
                    Ok::<(), String>(())
                });
                let r = service(&o, l);
                let p = lives
                    .join()
                    .unwrap_or_else(|_| Err("the peer panicked".into()));
                r.and(p)
            }),
            Ok(l) => service(&o, l),
        }
    };
    match r {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("reconnect: {e}");
            ExitCode::FAILURE
        }
    }
}
