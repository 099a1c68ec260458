//! Two programs that know each other only through a TCP stream, over which they send JSON lines
//! (the `serde` feature): each its RC QP's `Endpoint`, the server also the region the client may
//! RDMA-write into (its `RemoteMr`). Both connect their QPs from what they read; the client sends
//! a message and RDMA-writes another into the region; the server checks both bytes for byte,
//! says so on the stream, and both exit.
//!
//! ```text
//! endpoint_tcp --self [-d DEVICE] [-g GID_INDEX]               both sides in one process
//! endpoint_tcp --server PORT [-d DEVICE] [-g GID_INDEX]        waits for one client
//! endpoint_tcp --client HOST:PORT [-d DEVICE] [-g GID_INDEX]
//! ```
//!
//! `--self` runs the server and the client on two threads, each with a context of its own, over
//! a stream on 127.0.0.1 (a port the system picks), on sw0 unless `-d` names a device. Otherwise
//! the device is `-d`, else `Context::open_from_env()`'s choice (`TYPED_VERBS_DEVICE`, else the
//! first real device, else sw0); sw0 is in-process, so two processes need a real device (rxe
//! will do). Port 1; the GID at `-g` (0 unless given: a RoCE v2 GID's index across a routed
//! network). Build with the feature:
//! `cargo run --features serde --example endpoint_tcp -- --self`.
//!
//! What goes over the stream, one JSON object a line:
//!
//! ```text
//! server -> client  {"endpoint":{"qp_num":..,"gid":"fe80::..",..,"mtu":1024},"region":{"addr":..,"len":4096,"rkey":..,"access":["LOCAL_WRITE","REMOTE_WRITE"]}}
//! client -> server  {"endpoint":{..},"region":null}
//! server -> client  "Ready"                            (connected, its receive posted)
//! client -> server  {"Done":{"sent":..,"wrote":..,"at":1024}}   (both completed)
//! server -> client  "Verified"
//! ```

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::ExitCode;
use std::time::{Duration, Instant};
use typed_verbs::{
    access, Access, AccessFlags, Context, Cq, Endpoint, Mr, PageBuf, Pd, Qp, Rc, RemoteMr, SendWr,
    WorkCompletion,
};

/// What the client sends.
const MESSAGE: &[u8] = b"a send, to the receive the server posted";
/// What the client RDMA-writes into the server's region, at `WRITE_AT`.
const WRITTEN: &[u8] = b"an RDMA write, into the region the server described";
const WRITE_AT: u64 = 1024;
/// How long a read or write of the TCP stream may wait for the peer.
const IO_TIMEOUT: Duration = Duration::from_secs(30);
/// The longest line a peer may send.
const MAX_LINE: u64 = 64 * 1024;

/// The region the server lets the client write: its rights are the type, and reading it
/// checks that the server registered it with them.
type Inbox = RemoteMr<access!(REMOTE_WRITE)>;

/// Each side's first line: its QP's endpoint, and the region the peer may write (the server's).
#[derive(Serialize, Deserialize)]
struct Hello {
    endpoint: Endpoint,
    region: Option<Inbox>,
}

/// The lines after it.
#[derive(Serialize, Deserialize, Debug, PartialEq)]
enum Step {
    /// The server is connected and its receive is posted.
    Ready,
    /// The client's send and write completed: `sent` bytes, `wrote` bytes at `at`.
    Done { sent: usize, wrote: usize, at: u64 },
    /// The server found both in its region.
    Verified,
}

struct Opts {
    selftest: bool,
    server: Option<u16>,
    client: Option<String>,
    device: Option<String>,
    gid_index: u8,
}

fn parse() -> Result<Opts, String> {
    let mut o = Opts {
        selftest: false,
        server: None,
        client: None,
        device: None,
        gid_index: 0,
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |what: &str| args.next().ok_or(format!("{what} needs a value"));
        match a.as_str() {
            "--self" => o.selftest = true,
            "--server" => {
                let port = value("--server")?;
                o.server = Some(port.parse().map_err(|e| format!("--server {port}: {e}"))?)
            }
            "--client" => o.client = Some(value("--client")?),
            "-d" => o.device = Some(value("-d")?),
            "-g" => {
                let g = value("-g")?;
                o.gid_index = g.parse().map_err(|e| format!("-g {g}: {e}"))?
            }
            _ => return Err(format!("unknown argument {a}")),
        }
    }
    let modes = usize::from(o.selftest) + usize::from(o.server.is_some()) + o.client.iter().len();
    if modes != 1 {
        return Err("one of --self, --server PORT or --client HOST:PORT".into());
    }
    Ok(o)
}

fn open(o: &Opts) -> typed_verbs::Result<Context> {
    match (&o.device, o.selftest) {
        (Some(d), _) => Context::open(d),
        (None, true) => Context::open("sw0"),
        (None, false) => Context::open_from_env(),
    }
}

/// The stream, one JSON value a line each way.
struct Lines {
    reader: BufReader<TcpStream>,
    writer: TcpStream,
}

impl Lines {
    /// Every read and write on the stream waits at most `IO_TIMEOUT`: a peer that dies without
    /// closing it, or stops answering, is an error, not a wait for ever.
    fn new(s: TcpStream) -> Result<Lines, String> {
        s.set_read_timeout(Some(IO_TIMEOUT))
            .and_then(|()| s.set_write_timeout(Some(IO_TIMEOUT)))
            .map_err(|e| format!("stream: {e}"))?;
        let writer = s.try_clone().map_err(|e| format!("stream: {e}"))?;
        Ok(Lines {
            reader: BufReader::new(s),
            writer,
        })
    }

    fn send<T: Serialize>(&mut self, v: &T) -> Result<(), String> {
        let mut line = serde_json::to_string(v).map_err(|e| e.to_string())?;
        line.push('\n');
        self.writer
            .write_all(line.as_bytes())
            .map_err(|e| format!("stream: {e}"))
    }

    /// The next line as a `T`: what the peer sent is checked here (ranges, the region's rights),
    /// and an error says which line was wrong and why.
    /// A line is at most `MAX_LINE` bytes: a peer that never sends a newline is an error, not
    /// an allocation without bound.
    fn recv<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, String> {
        let mut line = String::new();
        match (&mut self.reader).take(MAX_LINE).read_line(&mut line) {
            Ok(0) => Err("stream: the peer closed it".into()),
            Ok(_) if !line.ends_with('\n') => Err(format!(
                "stream: no line within {MAX_LINE} bytes, or the peer closed it mid-line"
            )),
            Ok(_) => {
                serde_json::from_str(&line).map_err(|e| format!("from the peer {line:?}: {e}"))
            }
            Err(e) => Err(format!("stream: {e}")),
        }
    }
}

/// Polls `cq` until `n` completions came, each successful, within 10 s.
fn complete(cq: &Cq<'_>, n: usize, what: &str) -> Result<(), String> {
    let mut wc: [WorkCompletion; 4] = std::array::from_fn(|_| WorkCompletion::new());
    let (mut got, start) = (0, Instant::now());
    while got < n {
        for w in cq.poll(&mut wc).map_err(|e| e.to_string())? {
            if w.success().is_none() {
                return Err(format!(
                    "{what}: work request {} {:?}",
                    w.wr_id(),
                    w.status()
                ));
            }
            got += 1;
        }
        if start.elapsed() > Duration::from_secs(10) {
            return Err(format!("{what}: {got} of {n} completions within 10 s"));
        }
        std::thread::yield_now();
    }
    Ok(())
}

/// The server: describes its QP and its region, connects, takes the send and the write, checks.
fn server(o: &Opts, stream: TcpStream) -> Result<(), String> {
    let mut lines = Lines::new(stream)?;
    let ctx = open(o).map_err(|e| e.to_string())?;
    let pd = Pd::new(&ctx).map_err(|e| e.to_string())?;
    let cq = Cq::builder(&ctx)
        .cqe(8)
        .build()
        .map_err(|e| e.to_string())?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .build()
        .map_err(|e| e.to_string())?;
    let inbox = Mr::new(
        &pd,
        PageBuf::new(4096).map_err(|e| e.to_string())?,
        Access::REMOTE_WRITE,
    )
    .map_err(|e| e.to_string())?;
    let me = qp.endpoint(1, o.gid_index).map_err(|e| e.to_string())?;
    lines.send(&Hello {
        endpoint: me,
        region: Some(inbox.remote()),
    })?;
    let peer: Hello = lines.recv()?;
    // The client may write (REMOTE_WRITE): into regions with the right, like `inbox`.
    let qp = qp
        .connect(&me, &peer.endpoint, AccessFlags::REMOTE_WRITE)
        .map_err(|e| e.to_string())?;
    println!(
        "server: QP {} connected to QP {} ({} on {})",
        me.qp_num,
        peer.endpoint.qp_num,
        std::net::Ipv6Addr::from(peer.endpoint.gid.0),
        ctx.device_name()
    );
    qp.post_recv(1, &[inbox.sge(0..256).expect("in the region")])
        .map_err(|e| e.to_string())?;
    lines.send(&Step::Ready)?;
    complete(&cq, 1, "server: the receive")?;
    let Step::Done { sent, wrote, at } = lines.recv()? else {
        return Err("server: expected Done".into());
    };
    // What the peer says it did is checked against what this side expects, never trusted as an
    // index.
    if (sent, wrote, at) != (MESSAGE.len(), WRITTEN.len(), WRITE_AT) {
        return Err(format!(
            "server: the client says it sent {sent} bytes and wrote {wrote} at {at}; expected \
             {} bytes and {} at {WRITE_AT}",
            MESSAGE.len(),
            WRITTEN.len()
        ));
    }
    let mut got = vec![0u8; 4096];
    inbox.read(0, &mut got).map_err(|e| e.to_string())?;
    let at = WRITE_AT as usize;
    let (head, written) = (&got[..MESSAGE.len()], &got[at..at + WRITTEN.len()]);
    if (head, written) != (MESSAGE, WRITTEN) {
        return Err(format!(
            "server: the region holds {:?} and at {at} {:?}",
            String::from_utf8_lossy(head),
            String::from_utf8_lossy(written)
        ));
    }
    println!(
        "server: received {sent} bytes {:?}, and {wrote} bytes at {at} {:?}",
        String::from_utf8_lossy(MESSAGE),
        String::from_utf8_lossy(WRITTEN)
    );
    lines.send(&Step::Verified)
}

/// The client: describes its QP, connects to the server's, sends, and writes into its region.
fn client(o: &Opts, stream: TcpStream) -> Result<(), String> {
    let mut lines = Lines::new(stream)?;
    let ctx = open(o).map_err(|e| e.to_string())?;
    let pd = Pd::new(&ctx).map_err(|e| e.to_string())?;
    let cq = Cq::builder(&ctx)
        .cqe(8)
        .build()
        .map_err(|e| e.to_string())?;
    let qp = Qp::<Rc>::builder(&pd, &cq, &cq)
        .build()
        .map_err(|e| e.to_string())?;
    let me = qp.endpoint(1, o.gid_index).map_err(|e| e.to_string())?;
    let peer: Hello = lines.recv()?; // its endpoint's ranges and its region's rights checked
    let region = peer
        .region
        .ok_or("client: the server described no region")?;
    lines.send(&Hello {
        endpoint: me,
        region: None,
    })?;
    let qp = qp
        .connect(&me, &peer.endpoint, AccessFlags::LOCAL_WRITE)
        .map_err(|e| e.to_string())?;
    println!(
        "client: QP {} connected to QP {}; its region: {} bytes at {:#x}, rkey {:#x}",
        me.qp_num,
        peer.endpoint.qp_num,
        region.len(),
        region.addr(),
        region.rkey()
    );
    let out = Mr::new(&pd, [MESSAGE, WRITTEN].concat(), Access::NONE).map_err(|e| e.to_string())?;
    let message = [out.sge(0..MESSAGE.len()).expect("in the region")];
    let written = [out
        .sge(MESSAGE.len()..MESSAGE.len() + WRITTEN.len())
        .expect("in the region")];
    // Where the write lands, checked against the region's length.
    let at = region
        .at(WRITE_AT, WRITTEN.len() as u64)
        .ok_or("client: the server's region is too small")?;
    if lines.recv::<Step>()? != Step::Ready {
        return Err("client: expected Ready".into());
    }
    qp.post_send(&SendWr::<Rc>::send(1, &message).signaled())
        .map_err(|e| e.to_string())?;
    qp.post_send(&SendWr::<Rc>::rdma_write(2, &written, at).signaled())
        .map_err(|e| e.to_string())?;
    complete(&cq, 2, "client: the send and the write")?;
    lines.send(&Step::Done {
        sent: MESSAGE.len(),
        wrote: WRITTEN.len(),
        at: WRITE_AT,
    })?;
    match lines.recv::<Step>()? {
        Step::Verified => {
            println!("client: the server verified the send and the write");
            Ok(())
        }
        other => Err(format!("client: expected Verified, got {other:?}")),
    }
}

fn run(o: &Opts) -> Result<(), String> {
    if o.selftest {
        let listener = TcpListener::bind("127.0.0.1:0").map_err(|e| format!("listen: {e}"))?;
        let addr = listener.local_addr().map_err(|e| e.to_string())?;
        return std::thread::scope(|s| {
            let c = s.spawn(|| {
                let stream = TcpStream::connect(addr).map_err(|e| format!("connect: {e}"))?;
                client(o, stream)
            });
            let r = listener
                .accept()
                .map_err(|e| format!("accept: {e}"))
                .and_then(|(stream, _)| server(o, stream));
            let c = c
                .join()
                .unwrap_or_else(|_| Err("the client panicked".into()));
            r.and(c)
        });
    }
    if let Some(port) = o.server {
        let listener = TcpListener::bind(("0.0.0.0", port)).map_err(|e| format!("listen: {e}"))?;
        println!("server: waiting for a client on port {port}");
        let (stream, from) = listener.accept().map_err(|e| format!("accept: {e}"))?;
        println!("server: a client from {from}");
        return server(o, stream);
    }
    let to = o.client.as_deref().expect("parse checked the mode");
    // The server may not be listening yet: retry for 10 s.
    let start = Instant::now();
    let stream = loop {
        match TcpStream::connect(to) {
            Ok(s) => break s,
            Err(_) if start.elapsed() < Duration::from_secs(10) => {
                std::thread::sleep(Duration::from_millis(50))
            }
            Err(e) => return Err(format!("connect to {to}: {e}")),
        }
    };
    client(o, stream)
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(e) => {
            eprintln!("endpoint_tcp: {e}");
            return ExitCode::from(2);
        }
    };
    match run(&o) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("endpoint_tcp: {e}");
            ExitCode::FAILURE
        }
    }
}
