//! `ud_pingpong`: rdma-core's `ibv_ud_pingpong` on the typed API. Datagrams of `-s` bytes (at
//! most the port's MTU) go back and forth between two UD QPs, `-n` times, and the bandwidth and
//! latency are printed. It takes the same main options and speaks the same TCP exchange of
//! addresses as rdma-core's program, so either can be the server (no host) and the other the
//! client (the server's host).
//!
//! ```text
//! cargo run --release --example ud_pingpong -- --self           # both sides, software device
//! ud_pingpong -d rxe0 -g 1                # server
//! ibv_ud_pingpong -d rxe0 -g 1 127.0.0.1  # client
//! ```
//!
//! As in rdma-core, the buffer has 40 bytes in front for the GRH a UD receive starts with:
//! receives take `size + 40` bytes from the start, sends go from byte 40. The default size is
//! 1024, what rdma-core's code sets (its usage text says 2048).

#[path = "common/pingpong.rs"]
mod pingpong;

use pingpong::{because, Opts, Out, Role, UdSide, GRH_LEN, RECV_WRID, UD_PROGRAM, UD_QKEY};
use std::process::ExitCode;
use typed_verbs::{Access, AddressHandle, Mr, PageBuf, Pd, Qp, SqPsn, Ud, UdInit};

fn main() -> ExitCode {
    pingpong::main(&UD_PROGRAM, run)
}

fn run(o: &Opts, role: Role, out: &Out) -> Result<(), String> {
    let size = o.size as usize;
    let ctx = pingpong::open_device(o)?;
    let port = ctx
        .query_port(o.ib_port)
        .map_err(|e| format!("Unable to query port info for port {}: {e}", o.ib_port))?;
    let mtu = 1usize << (port.active_mtu + 7);
    if size > mtu {
        return Err(format!("Requested size larger than port MTU ({mtu})"));
    }
    let pd = Pd::new(&ctx).map_err(because("Couldn't allocate PD"))?;
    // Page-aligned, as rdma-core's memalign(page_size, size).
    let mut buf = PageBuf::new(size + GRH_LEN).map_err(because("Couldn't allocate work buf."))?;
    buf.fill(0x7b);
    let mr = Mr::new(&pd, buf, Access::LOCAL_WRITE).map_err(because("Couldn't register MR"))?;
    let (recv, send) = pingpong::ud_sges(&mr, size);
    let channel = pingpong::channel(&ctx, o)?;
    let cq = pingpong::create_cq(&ctx, o.rx_depth + 1, channel.as_ref())?;
    let qp = pingpong::pp_caps(Qp::<Ud>::builder(&pd, &cq, &cq), o)
        .build()
        .map_err(because("Couldn't create QP"))?
        .to_init(UdInit {
            port_num: o.ib_port,
            pkey_index: 0,
            qkey: UD_QKEY,
        })
        .map_err(because("Failed to modify QP to INIT"))?;
    let posted = pingpong::post_first_recvs(o, || qp.post_recv(RECV_WRID, &[recv]).is_ok())?;
    pingpong::arm(&cq, o)?;

    let local = pingpong::local(&ctx, o, out)?;
    let me = local.dest(qp.qp_num(), pingpong::random_psn());
    out.say(me.line("local address: "));
    let client = role.is_client();
    let (rem, (qp, ah)) = pingpong::exchange(role, o.port, &[me], |rem| {
        let qp = qp
            .to_rtr(())
            .map_err(because("Failed to modify QP to RTR"))?
            .to_rts(SqPsn { sq_psn: me.psn })
            .map_err(because("Failed to modify QP to RTS"))?;
        // rdma-core's current ud_pingpong uses hop limit 64 (rdma-core 44: 1).
        let ah = AddressHandle::new(&pd, local.av(o, &rem[0], 64))
            .map_err(because("Failed to create AH"))?;
        Ok((qp, ah))
    })?;
    out.say(rem[0].line("remote address:"));

    let side = UdSide {
        qp,
        ah,
        remote_qpn: rem[0].qpn,
        recv,
        send,
    };
    pingpong::run_loop(&cq, channel.as_ref(), &side, o, client, posted, out)
}
