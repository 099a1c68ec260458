//! `cm_pingpong`: rdma-core's `ibv_rc_pingpong` over rdma_cm on the typed API. The server (no
//! host) listens on `-p`; the client (the server's address) resolves, connects and sends `-s`
//! bytes, which the server sends back, `-n` times; both print the bandwidth and latency as
//! `ibv_rc_pingpong` does. The connection is made with `typed_verbs::cm` (an RC QP built with the
//! crate's builder, brought to RTS by the CM's attributes), not a TCP exchange.
//!
//! ```text
//! cargo run --example cm_pingpong -- --self               # both sides, software device
//! cm_pingpong -d rxe0 -p 18515                            # server
//! cm_pingpong -d rxe0 -p 18515 10.0.0.1                   # client
//! ```

use std::net::{IpAddr, SocketAddr};
use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant};
use typed_verbs::cm::{CmId, ConnParam, Connection, EventChannel, Tcp};
use typed_verbs::qp_state::Init;
use typed_verbs::{
    Access, Context, Cq, Mr, OwnRq, PageBuf, Pd, Qp, Rc, SendWr, Shared, WorkCompletion,
};

const TIMEOUT: Duration = Duration::from_secs(30);

/// A QP in INIT, before its connection.
type InitQp = Qp<'static, Rc, OwnRq, Shared, (), Init>;

struct Opts {
    port: u16,
    size: usize,
    iters: u32,
    device: Option<String>,
    host: Option<IpAddr>,
    both: bool,
}

fn usage() -> String {
    "Usage:\n  cm_pingpong            start a server and wait for connection\n  cm_pingpong <host>     connect to server at <host>\n  cm_pingpong --self     both sides in one process (software device)\n\nOptions:\n  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n  -d, --ib-dev=<dev>     use IB device <dev> (default sw0 with --self, else TYPED_VERBS_DEVICE or the first)\n  -s, --size=<size>      size of message to exchange (default 4096)\n  -n, --iters=<iters>    number of exchanges (default 1000)".into()
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        port: 18515,
        size: 4096,
        iters: 1000,
        device: None,
        host: None,
        both: false,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let (flag, inline) = match a.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_owned(), Some(v.to_owned())),
            _ => (a.clone(), None),
        };
        let mut value = |name: &str| {
            inline
                .clone()
                .or_else(|| args.next())
                .ok_or(format!("{name} needs a value\n{}", usage()))
        };
        match flag.as_str() {
            "-p" | "--port" => o.port = value("-p")?.parse().map_err(|e| format!("-p: {e}"))?,
            "-s" | "--size" => o.size = value("-s")?.parse().map_err(|e| format!("-s: {e}"))?,
            "-n" | "--iters" => o.iters = value("-n")?.parse().map_err(|e| format!("-n: {e}"))?,
            "-d" | "--ib-dev" => o.device = Some(value("-d")?),
            "--self" => o.both = true,
            "-h" | "--help" => return Err(usage()),
            h if !h.starts_with('-') && o.host.is_none() => {
                o.host = Some(h.parse().map_err(|e| format!("{h}: {e}"))?)
            }
            other => return Err(format!("unknown option {other}\n{}", usage())),
        }
    }
    if o.size == 0 || o.iters == 0 {
        return Err("-s and -n must be at least 1".into());
    }
    Ok(o)
}

fn open(o: &Opts) -> Result<Arc<Context>, String> {
    let ctx = match (&o.device, o.both) {
        (Some(d), _) => Context::open(d),
        (None, true) => Context::open("sw0"),
        (None, false) => Context::open_from_env(),
    };
    ctx.map(Arc::new)
        .map_err(|e| format!("Couldn't open the device: {e}"))
}

/// One side's resources: the PD, the CQs and the buffer its QP uses. Sends and receives complete
/// on CQs of their own: a receive may complete before the send that preceded it (the peer's answer
/// can overtake the ACK of our send, as it does on rxe), so neither wait may take the other's
/// completion for its own.
struct Side {
    pd: Arc<Pd<'static>>,
    send_cq: Arc<Cq<'static>>,
    recv_cq: Arc<Cq<'static>>,
    mr: Mr<'static, PageBuf>,
}

impl Side {
    fn new(ctx: &Arc<Context>, size: usize) -> Result<Side, String> {
        let pd = Arc::new(Pd::new(ctx).map_err(|e| format!("Couldn't allocate PD: {e}"))?);
        let cq = || {
            Cq::builder(ctx)
                .cqe(2)
                .build()
                .map(Arc::new)
                .map_err(|e| format!("Couldn't create CQ: {e}"))
        };
        let (send_cq, recv_cq) = (cq()?, cq()?);
        let buf =
            PageBuf::new(size.max(64)).map_err(|e| format!("Couldn't allocate work buf: {e}"))?;
        let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE)
            .map_err(|e| format!("Couldn't register MR: {e}"))?;
        Ok(Side {
            pd,
            send_cq,
            recv_cq,
            mr,
        })
    }

    fn qp(&self) -> Result<Qp<'static, Rc>, String> {
        Qp::<Rc>::builder(&self.pd, &self.send_cq, &self.recv_cq)
            .max_send_wr(1)
            .max_recv_wr(1)
            .build()
            .map_err(|e| format!("Couldn't create QP: {e}"))
    }

    /// A QP brought to INIT by `init` (the request's or the CM id's `init_qp`), with the receive
    /// of the peer's first message posted, so that it is ready before the connection is.
    fn init_qp(
        &self,
        o: &Opts,
        init: impl FnOnce(Qp<'static, Rc>) -> typed_verbs::Result<InitQp>,
    ) -> Result<InitQp, String> {
        let qp = init(self.qp()?).map_err(|e| format!("Couldn't modify QP to INIT: {e}"))?;
        let sge = [self.mr.sge(0..o.size).ok_or("size beyond the buffer")?];
        qp.post_recv(1, &sge)
            .map_err(|e| format!("Couldn't post receive: {e}"))?;
        Ok(qp)
    }

    /// Waits for one successful completion on `cq` and returns its `wr_id`.
    fn wait(cq: &Cq<'static>) -> Result<u64, String> {
        let mut wc: [WorkCompletion; 1] = [WorkCompletion::new()];
        let start = Instant::now();
        loop {
            if let Some(w) = cq
                .poll(&mut wc)
                .map_err(|e| format!("poll CQ failed: {e}"))?
                .first()
            {
                return match w.success() {
                    Some(ok) => Ok(ok.wr_id()),
                    None => Err(format!(
                        "Failed status {:?} for wr_id {}",
                        w.status(),
                        w.wr_id()
                    )),
                };
            }
            if start.elapsed() > TIMEOUT {
                return Err("no completion within 30 s".into());
            }
        }
    }

    /// Waits for the send's completion (`wr_id` 2).
    fn wait_send(&self) -> Result<(), String> {
        match Side::wait(&self.send_cq)? {
            2 => Ok(()),
            id => Err(format!("Send completion for unknown wr_id {id}")),
        }
    }

    /// Waits for the receive's completion (`wr_id` 1).
    fn wait_recv(&self) -> Result<(), String> {
        match Side::wait(&self.recv_cq)? {
            1 => Ok(()),
            id => Err(format!("Receive completion for unknown wr_id {id}")),
        }
    }
}

fn report(conn: &Connection<'static, Tcp>, who: &str) {
    println!(
        "  local address:  {:?}, QPN {:#08x}\n  remote address: {:?}, QPN {:#08x} ({who})",
        conn.local_addr(),
        conn.qp().qp_num(),
        conn.peer_addr(),
        conn.peer_param().qp_num
    );
}

/// The ping-pong: the client sends first; each side answers the other's message.
fn pingpong(
    side: &Side,
    conn: &Connection<'static, Tcp>,
    o: &Opts,
    client: bool,
) -> Result<(), String> {
    let sge = [side.mr.sge(0..o.size).ok_or("size beyond the buffer")?];
    let qp = conn.qp();
    let post_recv = || {
        qp.post_recv(1, &sge)
            .map_err(|e| format!("Couldn't post receive: {e}"))
    };
    let send = || -> Result<(), String> {
        qp.post_send(&SendWr::send(2, &sge).signaled())
            .map_err(|e| format!("Couldn't post send: {e}"))?;
        side.wait_send()
    };
    let start = Instant::now();
    for _ in 0..o.iters {
        if client {
            send()?;
            side.wait_recv()?;
            post_recv()?;
        } else {
            side.wait_recv()?;
            post_recv()?;
            send()?;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let bytes = o.size as u64 * u64::from(o.iters) * 2;
    println!(
        "{bytes} bytes in {secs:.2} seconds = {:.2} Mbit/sec",
        bytes as f64 * 8.0 / secs / 1e6
    );
    println!(
        "{} iters in {secs:.2} seconds = {:.2} usec/iter",
        o.iters,
        secs * 1e6 / f64::from(o.iters)
    );
    Ok(())
}

fn server(
    ctx: &Arc<Context>,
    ch: &EventChannel,
    listener: CmId<Tcp, typed_verbs::cm::Listening>,
    o: &Opts,
) -> Result<(), String> {
    let _ = ch;
    let side = Side::new(ctx, o.size)?;
    let req = listener
        .get_request(TIMEOUT)
        .map_err(|e| format!("No connect request: {e}"))?;
    let qp = side.init_qp(o, |qp| req.init_qp(qp))?;
    let conn = req
        .accept(qp, &ConnParam::default(), TIMEOUT)
        .map_err(|e| format!("Couldn't accept: {e}"))?;
    report(&conn, "server");
    pingpong(&side, &conn, o, false)
}

fn client(ctx: &Arc<Context>, ch: &EventChannel, host: IpAddr, o: &Opts) -> Result<(), String> {
    let side = Side::new(ctx, o.size)?;
    let dst = SocketAddr::new(host, o.port);
    let id = CmId::<Tcp>::new(ch)
        .and_then(|id| id.resolve_addr(None, dst, Duration::from_secs(2)))
        .and_then(|id| id.resolve_route(Duration::from_secs(2)))
        .map_err(|e| format!("Couldn't resolve {dst}: {e}"))?;
    let qp = side.init_qp(o, |qp| id.init_qp(qp))?;
    let conn = id
        .connect(qp, &ConnParam::default(), TIMEOUT)
        .map_err(|e| format!("Couldn't connect to {dst}: {e}"))?;
    report(&conn, "client");
    pingpong(&side, &conn, o, true)
}

fn run(o: &Opts) -> Result<(), String> {
    let ctx = open(o)?;
    let ch =
        EventChannel::new(&ctx).map_err(|e| format!("Couldn't create the event channel: {e}"))?;
    let listen = |ip: IpAddr| {
        CmId::<Tcp>::new(&ch)
            .and_then(|id| id.bind(SocketAddr::new(ip, o.port)))
            .and_then(|id| id.listen(1))
            .map_err(|e| format!("Couldn't listen to port {}: {e}", o.port))
    };
    if o.both {
        let ip: IpAddr = "127.0.0.1".parse().unwrap();
        let l = listen(ip)?;
        return std::thread::scope(|s| {
            let srv = s.spawn(|| server(&ctx, &ch, l, o));
            let c = client(&ctx, &ch, ip, o);
            srv.join()
                .unwrap_or_else(|_| Err("the server panicked".into()))
                .and(c)
        });
    }
    match o.host {
        None => server(&ctx, &ch, listen("0.0.0.0".parse().unwrap())?, o),
        Some(h) => client(&ctx, &ch, h, o),
    }
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::FAILURE;
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("{e}");
            ExitCode::FAILURE
        }
    }
}
