//! `srq_pingpong`: rdma-core's `ibv_srq_pingpong` on the typed API. `-q` RC QP pairs (default
//! 16) take their receives from one shared receive queue; sends of `-s` bytes go back and forth
//! on every pair until `-n` sends and receives completed in all, and the bandwidth and latency
//! are printed. It takes the same main options and speaks the same TCP exchange of addresses as
//! rdma-core's program (always 256 addresses each way, the unused ones zero), so either can be
//! the server (no host) and the other the client (the server's host).
//!
//! ```text
//! cargo run --release --example srq_pingpong -- --self           # both sides, software device
//! srq_pingpong -d rxe0 -g 1                # server
//! ibv_srq_pingpong -d rxe0 -g 1 127.0.0.1  # client
//! ```

#[path = "common/pingpong.rs"]
mod pingpong;

use pingpong::{because, Dest, Opts, Out, Program, Role, Side, MAX_QP, RECV_WRID, SEND_WRID};
use std::process::ExitCode;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    Access, AccessFlags, ConnectedInit, Mr, PageBuf, Pd, Qp, Rc, RcRtr, RcRts, SendWr, Sge, Shared,
    Srq, UsesSrq,
};

const PROGRAM: Program = Program {
    num_qp: true,
    ..Program::connected("srq_pingpong")
};

fn main() -> ExitCode {
    pingpong::main(&PROGRAM, run)
}

/// The connected QPs, the SRQ they take receives from, and the one buffer of every request.
struct SrqSide<'a> {
    qps: Vec<Qp<'a, Rc, UsesSrq, Shared, (), Rts>>,
    srq: &'a Srq<'a>,
    sge: Sge<'a>,
}

impl Side for SrqSide<'_> {
    fn post_recv(&self, n: u32) -> u32 {
        pingpong::post_recvs(n, || self.srq.post_recv(RECV_WRID, &[self.sge]).is_ok())
    }

    fn post_send(&self, i: usize) -> typed_verbs::Result<()> {
        self.qps[i].post_send(&SendWr::send(SEND_WRID, &[self.sge]).signaled())
    }

    fn num_qp(&self) -> usize {
        self.qps.len()
    }

    fn qp_index(&self, qp_num: u32) -> Option<usize> {
        self.qps.iter().position(|qp| qp.qp_num() == qp_num)
    }
}

fn run(o: &Opts, role: Role, out: &Out) -> Result<(), String> {
    let ctx = pingpong::open_device(o)?;
    let pd = Pd::new(&ctx).map_err(because("Couldn't allocate PD"))?;
    // Page-aligned, as rdma-core's memalign(page_size, size).
    let buf = PageBuf::new(o.size as usize).map_err(because("Couldn't allocate work buf."))?;
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE).map_err(because("Couldn't register MR"))?;
    let sge = mr.sge(0..o.size as usize).expect("the whole region");
    let channel = pingpong::channel(&ctx, o)?;
    let cq = pingpong::create_cq(&ctx, o.rx_depth + o.num_qp, channel.as_ref())?;
    let srq = Srq::builder(&pd)
        .max_wr(o.rx_depth)
        .max_sge(1)
        .build()
        .map_err(because("Couldn't create SRQ"))?;
    let qps = (0..o.num_qp)
        .map(|i| {
            Qp::<Rc>::builder_with_srq(&pd, &cq, &cq, &srq)
                .max_send_wr(1)
                .max_send_sge(1)
                .build()
                .map_err(|e| format!("Couldn't create QP[{i}]: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let init = ConnectedInit {
        port_num: o.ib_port,
        pkey_index: 0,
        access: AccessFlags::NONE,
    };
    let qps = qps
        .into_iter()
        .enumerate()
        .map(|(i, qp)| {
            qp.to_init(init)
                .map_err(|e| format!("Failed to modify QP[{i}] to INIT: {e}"))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let posted = pingpong::post_first_recvs(o, || srq.post_recv(RECV_WRID, &[sge]).is_ok())?;
    pingpong::arm(&cq, o)?;

    let local = pingpong::local(&ctx, o, out)?;
    // MAX_QP addresses go each way; those past the QPs are zero, as rdma-core's memset leaves them.
    let mut mine = vec![Dest::default(); MAX_QP];
    for (d, qp) in mine.iter_mut().zip(&qps) {
        *d = local.dest(qp.qp_num(), pingpong::random_psn());
        out.say(d.line("local address: "));
    }
    let client = role.is_client();
    let (rem, qps) = pingpong::exchange(role, o.port, &mine, |rem| {
        qps.into_iter()
            .enumerate()
            .map(|(i, qp)| {
                // pp_connect_ctx routes every QP with the first remote address's GID.
                let to = Dest {
                    gid: rem[0].gid,
                    ..rem[i]
                };
                qp.to_rtr(RcRtr {
                    av: local.av(o, &to, 1),
                    path_mtu: o.mtu,
                    dest_qp_num: rem[i].qpn,
                    rq_psn: rem[i].psn,
                    max_dest_rd_atomic: 1,
                    min_rnr_timer: 12,
                })
                .map_err(|e| format!("Failed to modify QP[{i}] to RTR: {e}"))?
                .to_rts(RcRts {
                    sq_psn: mine[i].psn,
                    timeout: 14,
                    retry_cnt: 7,
                    rnr_retry: 7,
                    max_rd_atomic: 1,
                })
                .map_err(|e| format!("Failed to modify QP[{i}] to RTS: {e}"))
            })
            .collect::<Result<Vec<_>, _>>()
    })?;
    for d in &rem[..qps.len()] {
        out.say(d.line("remote address:"));
    }

    let side = SrqSide {
        qps,
        srq: &srq,
        sge,
    };
    pingpong::run_loop(&cq, channel.as_ref(), &side, o, client, posted, out)
}
