//! `uc_pingpong`: rdma-core's `ibv_uc_pingpong` on the typed API. Sends of `-s` bytes go back
//! and forth over one UC QP pair, `-n` times, and the bandwidth and latency are printed. It
//! takes the same main options and speaks the same TCP exchange of addresses as rdma-core's
//! program, so either can be the server (no host) and the other the client (the server's host).
//!
//! ```text
//! cargo run --release --example uc_pingpong -- --self           # both sides, software device
//! uc_pingpong -d rxe0 -g 1                # server
//! ibv_uc_pingpong -d rxe0 -g 1 127.0.0.1  # client
//! ```

#[path = "common/pingpong.rs"]
mod pingpong;

use pingpong::{because, Opts, Out, Program, Role, Side, RECV_WRID, SEND_WRID};
use std::process::ExitCode;
use typed_verbs::qp_state::Rts;
use typed_verbs::{
    AccessFlags, ConnectedInit, Mr, OwnRq, Pd, Qp, SendWr, Sge, Shared, SqPsn, Uc, UcRtr,
};

const PROGRAM: Program = Program {
    name: "uc_pingpong",
    default_size: 4096,
    mtu: true,
    num_qp: false,
};

fn main() -> ExitCode {
    pingpong::main(&PROGRAM, run)
}

/// The connected QP and the one buffer every send and receive uses, as in rdma-core.
struct UcSide<'a> {
    qp: Qp<'a, Uc, OwnRq, Shared, (), Rts>,
    sge: Sge,
}

impl Side for UcSide<'_> {
    fn post_recv(&self, n: u32) -> u32 {
        (0..n)
            .take_while(|_| self.qp.post_recv(RECV_WRID, &[self.sge]).is_ok())
            .count() as u32
    }

    fn post_send(&self, _: usize) -> typed_verbs::Result<()> {
        self.qp
            .post_send(&SendWr::send(SEND_WRID, &[self.sge]).signaled())
    }
}

fn run(o: &Opts, role: Role, out: &Out) -> Result<(), String> {
    let ctx = pingpong::open_device(o)?;
    let pd = Pd::new(&ctx).map_err(because("Couldn't allocate PD"))?;
    let mut buf = vec![0x7b_u8; o.size as usize];
    let mr = Mr::new(&pd, &mut buf, AccessFlags::LOCAL_WRITE)
        .map_err(because("Couldn't register MR"))?;
    let sge = mr.sge(0..o.size as usize).expect("the whole region");
    let channel = pingpong::channel(&ctx, o)?;
    let cq = pingpong::create_cq(&ctx, o.rx_depth + 1, channel.as_ref())?;
    let qp = Qp::<Uc>::builder(&pd, &cq, &cq)
        .max_send_wr(1)
        .max_recv_wr(o.rx_depth)
        .max_send_sge(1)
        .max_recv_sge(1)
        .build()
        .map_err(because("Couldn't create QP"))?
        .to_init(ConnectedInit {
            port_num: o.ib_port,
            pkey_index: 0,
            access: AccessFlags::NONE,
        })
        .map_err(because("Failed to modify QP to INIT"))?;
    // Receives may be posted from INIT on: all of them before the exchange, as rdma-core does.
    let posted = (0..o.rx_depth)
        .take_while(|_| qp.post_recv(RECV_WRID, &[sge]).is_ok())
        .count() as u32;
    if posted < o.rx_depth {
        return Err(format!("Couldn't post receive ({posted})"));
    }
    pingpong::arm(&cq, o)?;

    let local = pingpong::local(&ctx, o, out)?;
    let me = local.dest(qp.qp_num(), pingpong::random_psn());
    out.say(me.line("local address: "));
    let client = role.is_client();
    let (rem, qp) = pingpong::exchange(role, o.port, &[me], |rem| {
        let rem = &rem[0];
        qp.to_rtr(UcRtr {
            av: local.av(o, rem, 1),
            path_mtu: o.mtu,
            dest_qp_num: rem.qpn,
            rq_psn: rem.psn,
        })
        .map_err(because("Failed to modify QP to RTR"))?
        .to_rts(SqPsn { sq_psn: me.psn })
        .map_err(because("Failed to modify QP to RTS"))
    })?;
    out.say(rem[0].line("remote address:"));

    let side = UcSide { qp, sge };
    pingpong::run_loop(&cq, channel.as_ref(), &side, o, client, posted, out)
}
