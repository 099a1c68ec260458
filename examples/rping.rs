//! rping: rdma-core's RDMA CM connection and RDMA ping-pong test (librdmacm/examples/rping.c,
//! rping(1)) on the crate's typed API: the connection through `typed_verbs::cm`, a typed RC QP,
//! typed memory regions and work requests. Same options, same output, same wire protocol, so
//! that it works against rdma-core's `rping` both ways.
//!
//! ```text
//! rping -s [-vVd] [-S size] [-C count] [-a addr] [-p port] [-P]
//! rping -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]
//! rping --self [-vVd] [-S size] [-C count] [-a addr] [-p port]
//! ```
//!
//! `--self` runs the server and the client on two threads of this process (over 127.0.0.1
//! unless `-a` says otherwise), so that the program runs on the software device `sw0` too.
//! The device is `TYPED_VERBS_DEVICE`, else the first real device, else `sw0`: the QP must be on
//! the device the address resolves to.
//!
//! # The ping-pong (rping.c's comment)
//!
//! The client sends the address, rkey and length of its source buffer (`struct
//! rping_rdma_info`: be64 buf, be32 rkey, be32 size); the server RDMA-reads the "ping" data from
//! it and, once the read completed, sends a "go ahead"; the client sends its sink buffer's
//! address, rkey and length; the server RDMA-writes the "pong" data to the sink and sends "go
//! ahead" once the write completed; the loop repeats `-C` times (for ever without it), then the
//! client disconnects. Every send is signaled; the QP has 16 send and 2 receive slots, the CQ 32
//! entries; the connection asks for one RDMA read each way and 7 retries (`rping_init_conn_param`).
//!
//! One thread per side drives the state machine of rping.c (`enum test_state`): where rping's
//! CQ and CM threads post a semaphore, this program polls the CQ one completion at a time and
//! reads the connection's CM events in between, so the same states are reached in the same
//! order.
#![allow(clippy::too_many_arguments)]

#[path = "common/cmex.rs"]
mod cmex;

use cmex::{cm_event_of, create_id, exit_code, getopt, lookup, next_request, open, Out, Side};
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::time::Duration;
use typed_verbs::cm::{CmId, ConnEvent, ConnParam, ConnectRequest, Connection, Listening, Tcp};
use typed_verbs::qp_state::Init;
use typed_verbs::{
    access, access::Rights, Access, Context, Cq, Mr, OwnRq, PageBuf, Pd, Qp, Rc, RemoteAddr,
    SendWr, Shared, WcOpcode, WcStatus, WorkCompletion,
};

/// `RPING_BUFSIZE`: the largest ping (less one).
const RPING_BUFSIZE: i32 = 64 * 1024;
/// `RPING_SQ_DEPTH`.
const RPING_SQ_DEPTH: u32 = 16;
/// `RPING_MIN_BUFSIZE`: `sizeof(stringify(INT_MAX)) + sizeof(RPING_MSG_FMT)`.
const RPING_MIN_BUFSIZE: i32 = 11 + 15;
/// `sizeof(struct rping_rdma_info)`.
const INFO_LEN: usize = 16;
/// rping's `rdma_resolve_addr` and `rdma_resolve_route` timeouts (2000 ms).
const RESOLVE_TIMEOUT: Duration = Duration::from_millis(2000);
/// How long a connect or accept waits for the peer (rping waits for ever).
const CONNECT_TIMEOUT: Duration = Duration::from_secs(60);
/// How long the client waits for its own disconnect's event before it goes.
const DISCONNECT_WAIT: Duration = Duration::from_secs(2);

/// `enum test_state`, with rping's numbers (its messages print them; the resolution states
/// are the typed CM's own, so this program never sets them).
#[allow(dead_code)]
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Debug)]
enum State {
    Idle = 1,
    ConnectRequest,
    AddrResolved,
    RouteResolved,
    Connected,
    RdmaReadAdv,
    RdmaReadComplete,
    RdmaWriteAdv,
    RdmaWriteComplete,
    Disconnected,
    Error,
}

#[derive(Clone, Debug)]
struct Opts {
    /// `-s` (true) or `-c` (false); `--self` runs both.
    server: Option<bool>,
    /// `-a`.
    addr: Option<IpAddr>,
    /// `-I`.
    src: Option<IpAddr>,
    /// `-p`.
    port: u16,
    /// `-C` (0: for ever).
    count: i32,
    /// `-S`.
    size: i32,
    verbose: bool,
    validate: bool,
    debug: bool,
    /// `-P`.
    persistent: bool,
    /// `--self`.
    self_test: bool,
}

fn usage(name: &str) {
    println!("{name} -s [-vVd] [-S size] [-C count] [-a addr] [-p port]");
    println!("{name} -c [-vVd] [-S size] [-C count] [-I addr] -a addr [-p port]");
    println!("{name} --self [-vVd] [-S size] [-C count] [-a addr] [-p port]");
    println!("\t-c\t\tclient side");
    println!("\t-I\t\tSource address to bind to for client.");
    println!("\t-s\t\tserver side.  To bind to any address with IPv6 use -a ::0");
    println!("\t-v\t\tdisplay ping data to stdout");
    println!("\t-V\t\tvalidate ping data");
    println!("\t-d\t\tdebug printfs");
    println!("\t-S size \tping data size");
    println!("\t-C count\tping count times");
    println!("\t-a addr\t\taddress");
    println!("\t-p port\t\tport");
    println!("\t-P\t\tpersistent server mode allowing multiple connections");
    println!("\t-q\t\tuse self-created, self-modified QP");
    println!("\t--self\t\tserver and client on two threads of this process");
}

/// rping's `main` up to the run: `Err` is the exit status.
fn parse() -> Result<Opts, i32> {
    let mut o = Opts {
        server: None,
        addr: None,
        src: None,
        port: 7174,
        count: 0,
        size: 64,
        verbose: false,
        validate: false,
        debug: false,
        persistent: false,
        self_test: false,
    };
    let Ok((seen, _operands)) = getopt(std::env::args(), "a:I:Pp:C:S:t:scvVdq") else {
        usage("rping");
        return Err(libc_einval());
    };
    let mut ret = 0;
    for (c, v) in seen {
        let v = v.unwrap_or_default();
        match c {
            'a' => match lookup(&v) {
                Ok(a) => o.addr = Some(a),
                Err(e) => {
                    println!("{e}");
                    ret = -1;
                }
            },
            'I' => match lookup(&v) {
                Ok(a) => o.src = Some(a),
                Err(e) => {
                    println!("{e}");
                    ret = -1;
                }
            },
            'P' => o.persistent = true,
            'p' => o.port = cmex::atoi(&v) as u16, // htobe16(atoi(optarg))
            's' => o.server = Some(true),
            'c' => o.server = Some(false),
            'S' => {
                o.size = cmex::atoi(&v);
                if o.size < RPING_MIN_BUFSIZE || o.size > RPING_BUFSIZE - 1 {
                    eprintln!(
                        "Invalid size {} (valid range is {RPING_MIN_BUFSIZE} to {RPING_BUFSIZE})",
                        o.size
                    );
                    ret = libc_einval();
                }
            }
            'C' => {
                o.count = cmex::atoi(&v);
                if o.count < 0 {
                    eprintln!("Invalid count {}", o.count);
                    ret = libc_einval();
                }
            }
            'v' => o.verbose = true,
            'V' => o.validate = true,
            'd' => o.debug = true,
            // The crate always makes and moves the QP itself (the CM never owns one): -q is
            // what this program does anyway.
            'q' => {}
            '\0' => o.self_test = true,
            // 't' is in rping's optstring but has no case: usage.
            _ => {
                usage("rping");
                return Err(libc_einval());
            }
        }
    }
    if ret != 0 {
        return Err(ret);
    }
    if o.server.is_none() && !o.self_test {
        usage("rping");
        return Err(libc_einval());
    }
    Ok(o)
}

fn libc_einval() -> i32 {
    22 // EINVAL
}

fn main() -> ExitCode {
    let o = match parse() {
        Ok(o) => o,
        Err(ret) => return exit_code(ret),
    };
    if o.self_test {
        let o = Opts {
            addr: Some(o.addr.unwrap_or(IpAddr::V4(Ipv4Addr::LOCALHOST))),
            ..o
        };
        return cmex::self_test(
            |side, out| match side {
                Side::Server(ready) => run_server(&o, out, ready),
                Side::Client => run_client(&o, out),
            },
            o.debug,
        );
    }
    let out = Out::plain(o.debug);
    exit_code(if o.server == Some(true) {
        run_server(&o, &out, None)
    } else {
        run_client(&o, &out)
    })
}

/// The buffers of one side (`rping_setup_buffers`): the receive and send buffers of the
/// `rping_rdma_info` messages, the RDMA buffer (the server's read sink and write source; the
/// client's write sink), and the client's start buffer (the server's read source).
/// The rights of the buffers a peer reads and writes (rping.c's `IBV_ACCESS_LOCAL_WRITE |
/// IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_WRITE`).
type Remote = access!(LOCAL_WRITE | REMOTE_READ | REMOTE_WRITE);
const REMOTE: Remote = Access::LOCAL_WRITE
    .union(Access::REMOTE_READ)
    .union(Access::REMOTE_WRITE);

struct Bufs<'a> {
    recv: Mr<'a>,
    send: Mr<'a, PageBuf, access!(NONE)>,
    rdma: Mr<'a, PageBuf, Remote>,
    start: Option<Mr<'a, PageBuf, Remote>>,
}

fn setup_buffers<'a>(
    pd: &'a Pd<'a>,
    o: &Opts,
    server: bool,
    out: &Out,
) -> Result<Bufs<'a>, String> {
    out.debug("rping_setup_buffers called on cb");
    let size = o.size as usize;
    fn reg<'a, A: Rights>(
        pd: &'a Pd<'a>,
        len: usize,
        access: A,
        what: &str,
    ) -> Result<Mr<'a, PageBuf, A>, String> {
        PageBuf::new(len)
            .and_then(|b| Mr::new(pd, b, access))
            .map_err(|e| format!("{what} reg_mr failed: {e}"))
    }
    let bufs = Bufs {
        recv: reg(pd, INFO_LEN, Access::LOCAL_WRITE, "recv_buf")?,
        send: reg(pd, INFO_LEN, Access::NONE, "send_buf")?,
        rdma: reg(pd, size, REMOTE, "rdma_buf")?,
        start: if server {
            None
        } else {
            Some(reg(pd, size, REMOTE, "start_buf")?)
        },
    };
    out.debug("allocated & registered buffers...");
    Ok(bufs)
}

/// `rping_setup_qp` and `rping_create_qp`: the PD, a CQ of `RPING_SQ_DEPTH * 2` entries and an
/// RC QP with 16 send and 2 receive slots of one SGE each (in RESET; the CM's attributes move it).
fn create_qp<'a>(pd: &'a Pd<'a>, cq: &'a Cq<'a>, out: &Out) -> Result<Qp<'a, Rc>, String> {
    let qp = Qp::<Rc>::builder(pd, cq, cq)
        .max_send_wr(RPING_SQ_DEPTH)
        .max_recv_wr(2)
        .max_send_sge(1)
        .max_recv_sge(1)
        .build()
        .map_err(|e| format!("ibv_create_qp: {e}"))?;
    out.debug(format!("created qp {:#x}", qp.qp_num()));
    Ok(qp)
}

/// `rping_init_conn_param`.
///
/// Its values: no private data, one outstanding RDMA read or atomic each way, 7 retries and 7
/// RNR retries, as rping's; the crate's `ConnParam::default()` but for `retry_count` (the
/// crate's 6 reports a dead peer on rxe too, which counts 7 as unlimited).
fn conn_param() -> ConnParam<'static> {
    ConnParam {
        retry_count: 7,
        ..ConnParam::default()
    }
}

/// One connection's control block (`struct rping_cb`, the part the ping-pong uses).
struct Cb<'c, 'a> {
    server: bool,
    o: &'c Opts,
    out: &'c Out,
    conn: &'c Connection<'a, Tcp>,
    cq: &'c Cq<'a>,
    bufs: &'c Bufs<'a>,
    state: State,
    /// The posts of rping's semaphore not yet waited for.
    sem: u32,
    remote_rkey: u32,
    remote_addr: u64,
    remote_len: u32,
}

impl Cb<'_, '_> {
    /// `sem_post(&cb->sem)`.
    fn post(&mut self) {
        self.sem += 1;
    }

    /// `cb->state = state; sem_post(&cb->sem);`, as rping's handlers end.
    fn post_state(&mut self, state: State) {
        self.state = state;
        self.post();
    }

    /// `sem_wait(&cb->sem)`: runs the CQ and CM handlers until one posts, then the state.
    fn wait(&mut self) -> State {
        let mut wc = [const { WorkCompletion::new() }; 1];
        while self.sem == 0 {
            match self.cq.poll(&mut wc) {
                Ok([w]) => {
                    self.cq_event(w);
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    self.out.warn(format!("poll error {e}"));
                    self.post_state(State::Error);
                    continue;
                }
            }
            // No completion waiting: the connection's CM events, for a moment.
            match self.conn.next_event(Duration::from_millis(1)) {
                Ok(None) => {}
                Ok(Some(ev)) => self.cma_event(ev),
                Err(e) => {
                    self.out.warn(format!("rdma_get_cm_event: {e}"));
                    self.post_state(State::Error);
                }
            }
        }
        self.sem -= 1;
        self.state
    }

    /// `rping_cma_event_handler`, for the events of an established connection.
    fn cma_event(&mut self, ev: ConnEvent) {
        match ev {
            ConnEvent::Disconnected => {
                self.out.warn(format!(
                    "{} DISCONNECT EVENT...",
                    if self.server { "server" } else { "client" }
                ));
                self.post_state(State::Disconnected);
            }
            ConnEvent::DeviceRemoval => {
                self.out.warn("cma detected device removal!!!!");
                self.post_state(State::Error);
            }
            ConnEvent::TimewaitExit => self
                .out
                .warn("unhandled event: RDMA_CM_EVENT_TIMEWAIT_EXIT, ignoring"),
            ConnEvent::AddrChange => self
                .out
                .warn("unhandled event: RDMA_CM_EVENT_ADDR_CHANGE, ignoring"),
            ConnEvent::Other { event, .. } => {
                self.out.warn(format!("unhandled event: {event}, ignoring"))
            }
            other => self
                .out
                .warn(format!("unhandled event: {other:?}, ignoring")),
        }
    }

    /// `rping_cq_event_handler`, for one completion.
    fn cq_event(&mut self, wc: &WorkCompletion) {
        let Some(ok) = wc.success() else {
            if wc.status() == WcStatus::WR_FLUSH_ERR {
                return; // flushed
            }
            self.out
                .warn(format!("cq completion failed status {}", wc.status().raw()));
            self.post_state(State::Error);
            return;
        };
        match ok.opcode() {
            WcOpcode::SEND => self.out.debug("send completion"),
            WcOpcode::RDMA_WRITE => {
                self.out.debug("rdma write completion");
                self.post_state(State::RdmaWriteComplete);
            }
            WcOpcode::RDMA_READ => {
                self.out.debug("rdma read completion");
                self.post_state(State::RdmaReadComplete);
            }
            WcOpcode::RECV => {
                self.out.debug("recv completion");
                if ok.byte_len() as usize != INFO_LEN {
                    self.out
                        .warn(format!("Received bogus data, size {}", ok.byte_len()));
                    self.out.warn("recv wc error: -1");
                    self.post_state(State::Error);
                    return;
                }
                if self.server {
                    self.server_recv();
                } else {
                    self.client_recv();
                }
                if let Err(e) = self.post_recv() {
                    self.out.warn(format!("post recv error: {e}"));
                    self.state = State::Error;
                }
                self.post();
            }
            _ => {
                self.out.debug("unknown!!!!! completion");
                self.post_state(State::Error);
            }
        }
    }

    fn post_recv(&self) -> typed_verbs::Result<()> {
        let sge = self.bufs.recv.sge(0..INFO_LEN).expect("the whole buffer");
        self.conn.qp().post_recv(0, &[sge])
    }

    /// `server_recv`: the client's buffer advertisement.
    fn server_recv(&mut self) {
        let mut info = [0u8; INFO_LEN];
        self.bufs.recv.read(0, &mut info).expect("16 bytes");
        self.remote_addr = u64::from_be_bytes(info[0..8].try_into().unwrap());
        self.remote_rkey = u32::from_be_bytes(info[8..12].try_into().unwrap());
        self.remote_len = u32::from_be_bytes(info[12..16].try_into().unwrap());
        self.out.debug(format!(
            "Received rkey {:x} addr {:x} len {} from peer",
            self.remote_rkey, self.remote_addr, self.remote_len
        ));
        self.state = if self.state <= State::Connected || self.state == State::RdmaWriteComplete {
            State::RdmaReadAdv
        } else {
            State::RdmaWriteAdv
        };
    }

    /// `client_recv`: the server's go-ahead.
    fn client_recv(&mut self) {
        self.state = if self.state == State::RdmaReadAdv {
            State::RdmaWriteAdv
        } else {
            State::RdmaWriteComplete
        };
    }

    /// `ibv_post_send(cb->qp, &cb->sq_wr, ...)`: the signaled send of the send buffer.
    fn post_info_send(&self) -> typed_verbs::Result<()> {
        let sge = self.bufs.send.sge(0..INFO_LEN).expect("the whole buffer");
        self.conn
            .qp()
            .post_send(&SendWr::send(0, &[sge]).signaled())
    }

    /// `rping_format_send`: the address, rkey and length of `mr` into the send buffer.
    fn format_send(&self, mr: &Mr<'_, PageBuf, Remote>) {
        let r = mr.remote();
        let mut info = [0u8; INFO_LEN];
        info[0..8].copy_from_slice(&r.addr().to_be_bytes());
        info[8..12].copy_from_slice(&r.rkey().to_be_bytes());
        info[12..16].copy_from_slice(&(self.o.size as u32).to_be_bytes());
        self.bufs.send.write(0, &info).expect("16 bytes");
        self.out.debug(format!(
            "RDMA addr {:x} rkey {:x} len {}",
            r.addr(),
            r.rkey(),
            self.o.size
        ));
    }

    /// The RDMA read (server) or write of `len` bytes of the RDMA buffer, to or from the
    /// peer's advertised buffer.
    fn post_rdma(&self, read: bool, len: u32) -> Result<(), String> {
        let sge =
            self.bufs.rdma.sge(0..len as usize).ok_or_else(|| {
                format!("{len} bytes do not fit the {}-byte rdma_buf", self.o.size)
            })?;
        // The peer's buffer, registered as ours is (the peer's word, sent in its info).
        let remote = RemoteAddr::from_peer(self.remote_addr, self.remote_rkey, REMOTE);
        let sgl = [sge];
        let wr = if read {
            SendWr::rdma_read(0, &sgl, remote)
        } else {
            SendWr::rdma_write(0, &sgl, remote)
        };
        self.conn
            .qp()
            .post_send(&wr.signaled())
            .map_err(|e| e.to_string())
    }

    /// The RDMA buffer up to its first NUL, as `printf("%s")` prints it.
    fn rdma_string(&self) -> Vec<u8> {
        let mut buf = vec![0u8; self.o.size as usize];
        self.bufs.rdma.read(0, &mut buf).expect("the whole buffer");
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        buf.truncate(end);
        buf
    }

    /// Waits for the next state: an error (rping's "wait for `name` state N" and -1) unless it
    /// is `want`.
    fn wait_for(&mut self, want: State, name: &str) -> Result<(), i32> {
        let st = self.wait();
        if st != want {
            self.out
                .warn(format!("wait for {name} state {}", st as i32));
            return Err(-1);
        }
        Ok(())
    }

    /// A post's failure as rping reports it ("post send error", -1).
    fn posted<E: std::fmt::Display>(&self, r: Result<(), E>) -> Result<(), i32> {
        r.map_err(|e| {
            self.out.warn(format!("post send error {e}"));
            -1
        })
    }

    /// The status of `rping_test_server` and `rping_test_client` once their loop ended with
    /// `ret`: 0 after the peer disconnected.
    fn test_status(&self, ret: i32) -> i32 {
        if self.state == State::Disconnected {
            0
        } else {
            ret
        }
    }

    /// `rping_test_server`.
    fn test_server(&mut self) -> i32 {
        let ret = loop {
            if let Err(r) = self.server_round() {
                break r;
            }
        };
        self.test_status(ret)
    }

    /// One turn of `rping_test_server`'s loop.
    fn server_round(&mut self) -> Result<(), i32> {
        // Wait for client's Start STAG/TO/Len.
        self.wait_for(State::RdmaReadAdv, "RDMA_READ_ADV")?;
        self.out.debug("server received sink adv");
        // Issue RDMA Read.
        self.posted(self.post_rdma(true, self.remote_len))?;
        self.out.debug("server posted rdma read req ");
        // Wait for read completion.
        self.wait_for(State::RdmaReadComplete, "RDMA_READ_COMPLETE")?;
        self.out.debug("server received read complete");
        // Display data in recv buf.
        if self.o.verbose {
            self.out.say(format!(
                "server ping data: {}",
                String::from_utf8_lossy(&self.rdma_string())
            ));
        }
        // Tell client to continue.
        self.posted(self.post_info_send())?;
        self.out.debug("server posted go ahead");
        // Wait for client's RDMA STAG/TO/Len.
        self.wait_for(State::RdmaWriteAdv, "RDMA_WRITE_ADV")?;
        self.out.debug("server received sink adv");
        // RDMA Write echo data.
        let len = self.rdma_string().len() as u32 + 1;
        self.out.debug(format!(
            "rdma write from lkey {:x} laddr {:x} len {len}",
            self.bufs.rdma.lkey(),
            self.bufs.rdma.remote().addr()
        ));
        self.posted(self.post_rdma(false, len))?;
        // Wait for completion.
        self.wait_for(State::RdmaWriteComplete, "RDMA_WRITE_COMPLETE")?;
        self.out.debug("server rdma write complete ");
        // Tell client to begin again.
        self.posted(self.post_info_send())?;
        self.out.debug("server posted go ahead");
        Ok(())
    }

    /// `rping_test_client`.
    fn test_client(&mut self) -> i32 {
        let mut ret = 0;
        let mut start: u8 = 65;
        let mut ping: i32 = 0;
        while self.o.count == 0 || ping < self.o.count {
            if let Err(r) = self.client_ping(ping, &mut start) {
                ret = r;
                break;
            }
            ping += 1;
        }
        self.test_status(ret)
    }

    /// One ping of `rping_test_client`'s loop: its text (from the letter `start`, which moves
    /// on) to the server, which reads it and writes it back.
    fn client_ping(&mut self, ping: i32, start: &mut u8) -> Result<(), i32> {
        let start_mr = self.bufs.start.as_ref().expect("the client's start buffer");
        let size = self.o.size as usize;
        self.state = State::RdmaReadAdv;
        // Put some ascii text in the buffer.
        let mut text = format!("rdma-ping-{ping}: ").into_bytes();
        text.truncate(size - 1); // snprintf(cb->start_buf, cb->size, ...)
        let mut c = *start;
        while text.len() < size {
            text.push(c);
            c += 1;
            if c > 122 {
                c = 65;
            }
        }
        *start += 1;
        if *start > 122 {
            *start = 65;
        }
        text[size - 1] = 0;
        start_mr.write(0, &text).expect("the whole buffer");

        self.format_send(start_mr);
        self.posted(self.post_info_send())?;
        // Wait for server to ACK.
        self.wait_for(State::RdmaWriteAdv, "RDMA_WRITE_ADV")?;
        self.format_send(&self.bufs.rdma);
        self.posted(self.post_info_send())?;
        // Wait for the server to say the RDMA Write is complete.
        self.wait_for(State::RdmaWriteComplete, "RDMA_WRITE_COMPLETE")?;
        if self.o.validate {
            let mut got = vec![0u8; size];
            self.bufs.rdma.read(0, &mut got).expect("the whole buffer");
            if got != text {
                self.out.warn("data mismatch!");
                return Err(-1);
            }
        }
        if self.o.verbose {
            self.out.say(format!(
                "ping data: {}",
                String::from_utf8_lossy(&self.rdma_string())
            ));
        }
        Ok(())
    }
}

/// `rping_run_server` (and `rping_run_persistent_server` with `-P`).
fn run_server(o: &Opts, out: &Out, ready: Option<std::sync::mpsc::Sender<SocketAddr>>) -> i32 {
    let (ctx, ch) = match open(out) {
        Ok(x) => x,
        Err(r) => return r,
    };
    out.debug("created cm_id");
    let addr = SocketAddr::new(o.addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), o.port);
    let listener = match CmId::<Tcp>::new(&ch).and_then(|id| id.bind(addr)) {
        Ok(id) => id,
        Err(e) => {
            out.warn(format!("rdma_bind_addr: {e}"));
            return e.errno().max(1);
        }
    };
    out.debug("rdma_bind_addr successful");
    out.debug("rdma_listen");
    let listener = match listener.listen(3) {
        Ok(l) => l,
        Err(e) => {
            out.warn(format!("rdma_listen: {e}"));
            return e.errno().max(1);
        }
    };
    if let Some(tx) = ready {
        let _ = tx.send(listener.local_addr().unwrap_or(addr));
    }
    if o.persistent {
        return std::thread::scope(|s| loop {
            let req = match wait_request(&listener, out) {
                Ok(r) => r,
                Err(r) => return r,
            };
            let ctx = &ctx;
            s.spawn(move || serve(ctx, req, o, out));
        });
    }
    let req = match wait_request(&listener, out) {
        Ok(r) => r,
        Err(r) => return r,
    };
    let ret = serve(&ctx, req, o, out);
    out.debug("destroy cm_id");
    ret
}

/// The server's wait for the next connect request (rping's CM thread and `sem_wait` until the
/// state is CONNECT_REQUEST); rping's message and -1 if none came.
fn wait_request(listener: &CmId<Tcp, Listening>, out: &Out) -> Result<ConnectRequest<Tcp>, i32> {
    match next_request(listener) {
        Ok(req) => {
            out.debug("child cma");
            Ok(req)
        }
        Err(e) => {
            out.warn(format!(
                "wait for CONNECT_REQUEST state {}: {e}",
                State::Error as i32
            ));
            Err(-1)
        }
    }
}

/// One connection of the server: its QP and buffers, the accept, the ping-pong, the
/// disconnect.
fn serve(ctx: &Context, req: ConnectRequest<Tcp>, o: &Opts, out: &Out) -> i32 {
    with_qp_and_buffers(
        ctx,
        req,
        o,
        true,
        out,
        |req, qp| req.init_qp(qp),
        |req, qp, cq, bufs| {
            out.debug("accepting client connection request");
            let conn = match req.accept(qp, &conn_param(), CONNECT_TIMEOUT) {
                Ok(c) => c,
                Err(e) => {
                    warn_cm(&e, "rdma_accept", out);
                    out.warn("connect error -1");
                    return -1;
                }
            };
            let (ret, _) = ping_pong(true, o, out, &conn, cq, bufs);
            // rping_disconnect: the QP to ERR, then rdma_disconnect (its error ignored, as rping
            // does: the client disconnected first).
            let _ = conn.disconnect();
            ret
        },
    )
}

/// The ping-pong on a connection: `rping_test_server` or `rping_test_client` with a fresh
/// control block, and rping's message if it failed. Its status, and whether the peer
/// disconnected.
fn ping_pong(
    server: bool,
    o: &Opts,
    out: &Out,
    conn: &Connection<Tcp>,
    cq: &Cq,
    bufs: &Bufs,
) -> (i32, bool) {
    let mut cb = Cb {
        server,
        o,
        out,
        conn,
        cq,
        bufs,
        state: if server {
            State::ConnectRequest
        } else {
            State::Connected
        },
        sem: 0,
        remote_rkey: 0,
        remote_addr: 0,
        remote_len: 0,
    };
    let ret = if server {
        cb.test_server()
    } else {
        cb.test_client()
    };
    if ret != 0 {
        let side = if server { "server" } else { "client" };
        out.warn(format!("rping {side} failed: {ret}"));
    }
    (ret, cb.state == State::Disconnected)
}

/// The QP in INIT, with the CM id's attributes.
type InitQp<'a> = Qp<'a, Rc, OwnRq, Shared, (), Init>;

/// What both sides do with their CM id (`id`: the connect request, or the client's resolved
/// id) before they accept or connect: `rping_setup_qp` (the PD, the CQ and the QP, which `init`
/// moves to INIT with the id's attributes), `rping_setup_buffers` and the first receive; then
/// `run` with the id, the QP, the CQ and the buffers. A failure is rping's message and -1.
fn with_qp_and_buffers<I>(
    ctx: &Context,
    id: I,
    o: &Opts,
    server: bool,
    out: &Out,
    init: impl for<'a> FnOnce(&I, Qp<'a, Rc>) -> typed_verbs::Result<InitQp<'a>>,
    run: impl for<'a> FnOnce(I, InitQp<'a>, &'a Cq<'a>, &'a Bufs<'a>) -> i32,
) -> i32 {
    let pd = match Pd::new(ctx) {
        Ok(pd) => pd,
        Err(e) => {
            out.warn(format!("ibv_alloc_pd failed: {e}"));
            return -1;
        }
    };
    out.debug("created pd");
    let cq = match Cq::builder(ctx).cqe(RPING_SQ_DEPTH * 2).build() {
        Ok(cq) => cq,
        Err(e) => {
            out.warn(format!("ibv_create_cq failed: {e}"));
            return -1;
        }
    };
    out.debug("created cq");
    let qp = match create_qp(&pd, &cq, out).and_then(|qp| init(&id, qp).map_err(|e| e.to_string()))
    {
        Ok(qp) => qp,
        Err(e) => {
            out.warn(format!("setup_qp failed: {e}"));
            return -1;
        }
    };
    let bufs = match setup_buffers(&pd, o, server, out) {
        Ok(b) => b,
        Err(e) => {
            out.warn(format!("rping_setup_buffers failed: {e}"));
            return -1;
        }
    };
    let recv = bufs.recv.sge(0..INFO_LEN).expect("the whole buffer");
    if let Err(e) = qp.post_recv(0, &[recv]) {
        out.warn(format!("ibv_post_recv failed: {e}"));
        return -1;
    }
    run(id, qp, &cq, &bufs)
}

/// rping's report of a failed CM call (`verb`): the error event the CM sent, if any, else the
/// call's error.
fn warn_cm(e: &typed_verbs::Error, verb: &str, out: &Out) {
    match cm_event_of(e) {
        Some((ev, status)) => out.warn(format!("cma event {ev}, error {status}")),
        None => out.warn(format!("{verb}: {e}")),
    }
}

/// `rping_run_client`.
fn run_client(o: &Opts, out: &Out) -> i32 {
    let (ctx, ch) = match open(out) {
        Ok(x) => x,
        Err(r) => return r,
    };
    let id = match create_id::<Tcp>(&ch, "rdma_create_id", out) {
        Ok(id) => id,
        Err(r) => return r,
    };
    out.debug("created cm_id");
    // rping_bind_client: both resolutions, 2000 ms each. An error event makes rping's CM thread
    // exit(-1) after printing it.
    let dst = SocketAddr::new(o.addr.unwrap_or(IpAddr::V4(Ipv4Addr::UNSPECIFIED)), o.port);
    let src = o.src.map(|a| SocketAddr::new(a, 0));
    let id = match id
        .resolve_addr(src, dst, RESOLVE_TIMEOUT)
        .and_then(|id| id.resolve_route(RESOLVE_TIMEOUT))
    {
        Ok(id) => id,
        Err(e) => {
            warn_cm(&e, "rdma_resolve_addr", out);
            return 255;
        }
    };
    out.debug("rdma_resolve_addr - rdma_resolve_route successful");
    with_qp_and_buffers(
        &ctx,
        id,
        o,
        false,
        out,
        |id, qp| id.init_qp(qp),
        |id, qp, cq, bufs| {
            // rping_connect_client.
            let conn = match id.connect(qp, &conn_param(), CONNECT_TIMEOUT) {
                Ok(c) => c,
                Err(e) => {
                    warn_cm(&e, "rdma_connect", out);
                    return 255;
                }
            };
            out.debug("rdma_connect successful");
            let (ret, disconnected) = ping_pong(false, o, out, &conn, cq, bufs);
            // rping_disconnect: the QP to ERR and rdma_disconnect; rping's CM thread reports the
            // disconnect's event if it comes before the id is destroyed.
            match conn.disconnect() {
                Ok((_qp, id)) if !disconnected => {
                    if let Ok(Some(ConnEvent::Disconnected)) = id.next_event(DISCONNECT_WAIT) {
                        out.warn("client DISCONNECT EVENT...");
                    }
                }
                _ => {}
            }
            ret
        },
    )
}
