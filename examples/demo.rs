//! A tour of typed-verbs: opens a device, creates one of every object the crate wraps, prints what
//! was asked for and what the device gave, polls injected completions on the software device,
//! and tears everything down in order.
//!
//! ```text
//! cargo run --example demo            # $TYPED_VERBS_DEVICE, else the first device (sw0 without one)
//! cargo run --example demo -- rxe0    # a named device
//! ```
// Without the software device, the injection part and its helpers are not built.
#![cfg_attr(not(feature = "software-device"), allow(dead_code, unused_mut))]

use std::os::fd::AsRawFd;
use std::process::ExitCode;
#[cfg(feature = "software-device")]
use typed_verbs::{software, InjectedCompletion, WcOpcode, WcStatus};
use typed_verbs::{
    wc_flags, CompChannel, Context, Cq, CqEx, Error, ErrorKind, Gid, Pd, Poller, Qp, QpCap, Rc,
    Srq, Uc, Ud,
};

/// The objects a software context holds (`None` on a real device, and in a build without the
/// software device).
fn live_objects(ctx: &Context) -> Option<String> {
    #[cfg(feature = "software-device")]
    return software::live_objects(ctx).map(|live| format!("{live:?}"));
    #[cfg(not(feature = "software-device"))]
    {
        let _ = ctx;
        None
    }
}

/// The extended CQ's `wc_flags`: the fields its completions expose.
type DemoFlags = wc_flags!(BYTE_LEN | IMM | QP_NUM | SRC_QP);

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.len() > 1 || args.first().is_some_and(|a| a.starts_with('-')) {
        eprintln!(
            "usage: demo [DEVICE]   (default: ${DEVICE_ENV}, else the first device, sw0 without one)",
            DEVICE_ENV = typed_verbs::DEVICE_ENV
        );
        return ExitCode::from(2);
    }
    match run(args.first().map(String::as_str)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("demo: error: {e}");
            if let ErrorKind::NoSuchDevice(_) = e.kind {
                match typed_verbs::devices() {
                    Ok(devs) => {
                        let names: Vec<&str> = devs.iter().map(|d| d.name()).collect();
                        eprintln!("demo: devices present: {}", names.join(", "));
                    }
                    Err(e) => eprintln!("demo: cannot list devices: {e}"),
                }
            }
            ExitCode::FAILURE
        }
    }
}

/// Reports an explicit destroy; a failed one is the demo's error (`?`).
fn gone(r: Result<(), Error>, what: &str) -> Result<(), Error> {
    r?;
    println!("  destroyed {what}");
    Ok(())
}

fn port_state(state: u32) -> &'static str {
    match state {
        0 => "NOP",
        1 => "DOWN",
        2 => "INIT",
        3 => "ARMED",
        4 => "ACTIVE",
        5 => "ACTIVE_DEFER",
        _ => "unknown",
    }
}

fn show_caps(name: &str, qp_num: u32, asked: QpCap, got: QpCap) {
    println!("  {name}: qp_num {qp_num:#x}");
    println!(
        "    requested send_wr {} recv_wr {} send_sge {} recv_sge {} inline {}",
        asked.max_send_wr,
        asked.max_recv_wr,
        asked.max_send_sge,
        asked.max_recv_sge,
        asked.max_inline_data
    );
    println!(
        "    actual    send_wr {} recv_wr {} send_sge {} recv_sge {} inline {}",
        got.max_send_wr, got.max_recv_wr, got.max_send_sge, got.max_recv_sge, got.max_inline_data
    );
}

typed_verbs::completion_record! {
    /// What the demo reads of each completion: a poll loop generated for exactly these fields
    /// (each needs its flag in `DemoFlags`), at most 3 completions per batch.
    struct DemoRecord { wr_id, opcode, byte_len, imm_data, qp_num, src_qp }
    /// A failed work request.
    struct DemoFailure { wr_id, status, vendor_err }
    max_batch = 3;
}

/// Prints one completion as the generated loop hands it over.
fn show(r: Result<DemoRecord, DemoFailure>) {
    match r {
        Ok(ok) => println!(
            "    wr_id {:<2} opcode {:?} byte_len {} imm_data {} qp_num {:#x} src_qp {:#x}",
            ok.wr_id,
            ok.opcode,
            ok.byte_len,
            hex(ok.imm_data),
            ok.qp_num,
            ok.src_qp
        ),
        Err(failed) => println!(
            "    wr_id {:<2} {:?} vendor_err {:#x}",
            failed.wr_id, failed.status, failed.vendor_err
        ),
    }
}

/// Drains the extended CQ with the generated loop (ibv_start_poll / ibv_next_poll /
/// ibv_end_poll, one batch per call).
fn poll_cq_ex(poller: &mut Poller<'_, DemoFlags>) -> Result<(), Error> {
    println!("  cq_ex: generated loop, ibv_start_poll / ibv_next_poll / ibv_end_poll");
    loop {
        let taken = DemoRecord::poll(poller, |r| show(r.map(|view| view.to_record())))?;
        println!("    batch of {taken}");
        if taken == 0 {
            break;
        }
    }
    Ok(())
}

fn gid_str(gid: Gid) -> String {
    let words: Vec<String> = gid
        .0
        .chunks(2)
        .map(|w| format!("{:x}", u16::from_be_bytes([w[0], w[1]])))
        .collect();
    words.join(":")
}

fn hex(v: Option<u32>) -> String {
    v.map_or_else(|| "None".to_owned(), |v| format!("Some({v:#x})"))
}

fn run(device: Option<&str>) -> Result<(), Error> {
    let ctx = match device {
        Some(name) => Context::open(name)?,
        None => Context::open_from_env()?,
    };
    let a = ctx.attr();
    let kind = if ctx.is_software() {
        "software device"
    } else {
        "rdma-core device"
    };
    println!(
        "device {} ({kind}), firmware {}",
        ctx.device_name(),
        a.fw_ver
    );
    println!(
        "  max_cqe {} max_qp_wr {} max_sge {} max_srq_wr {} max_srq_sge {} num_comp_vectors {}",
        a.max_cqe,
        a.max_qp_wr,
        a.max_sge,
        a.max_srq_wr,
        a.max_srq_sge,
        ctx.num_comp_vectors()
    );
    let port = ctx.query_port(1)?;
    println!(
        "  port 1: {} (state {}), active_mtu {}, link_layer {}",
        port_state(port.state),
        port.state,
        256u32 << port.active_mtu.saturating_sub(1).min(4),
        if port.link_layer == 2 {
            "Ethernet"
        } else {
            "InfiniBand"
        }
    );

    println!("create:");
    let pd = Pd::new(&ctx)?;
    println!("  pd");
    let channel = CompChannel::new(&ctx)?;
    println!("  comp channel: fd {}", channel.as_raw_fd());

    let cq = Cq::builder(&ctx)
        .cqe(100)
        .channel(&channel)
        .context("legacy cq")
        .build()?;
    println!(
        "  cq {:?} (ibv_create_cq, on the channel): requested cqe 100, actual {}",
        cq.user_context(),
        cq.cqe()
    );

    let last_vector = ctx.num_comp_vectors().saturating_sub(1);
    let mut cq_ex = CqEx::<DemoFlags>::builder(&ctx)
        .cqe(200)
        .comp_vector(last_vector)
        .build()?;
    println!(
        "  cq_ex (ibv_create_cq_ex, comp_vector {last_vector}, wc_flags {:#x} = BYTE_LEN|IMM|QP_NUM|SRC_QP): requested cqe 200, actual {}",
        cq_ex.wc_flags(),
        cq_ex.cqe()
    );

    // QPs share the extended CQ; the one poller polls it while they live (`split` hands out
    // the shared half and the single right to poll, for the thread that polls alone).
    let (cq_ex_shared, mut poller) = cq_ex.split();

    // Checked before any FFI call: a request over the device's limit is a typed error.
    let too_big = a.max_cqe.saturating_add(1);
    match Cq::builder(&ctx).cqe(too_big).build() {
        Err(e) => println!("  cq with cqe {too_big} refused before the call: {e}"),
        Ok(_) => println!("  cq with cqe {too_big}: unexpectedly created"),
    }

    let srq = Srq::builder(&pd).max_wr(100).max_sge(2).build()?;
    let s = srq.attr();
    println!(
        "  srq: requested max_wr 100 max_sge 2, actual max_wr {} max_sge {} (srq_limit {})",
        s.max_wr, s.max_sge, s.srq_limit
    );

    let asked = QpCap {
        max_send_wr: 64,
        max_recv_wr: 64,
        max_send_sge: 2,
        max_recv_sge: 2,
        max_inline_data: 64,
    };
    let rc = Qp::<Rc>::builder(&pd, cq_ex_shared, &cq)
        .max_send_wr(asked.max_send_wr)
        .max_recv_wr(asked.max_recv_wr)
        .max_send_sge(asked.max_send_sge)
        .max_recv_sge(asked.max_recv_sge)
        .max_inline_data(asked.max_inline_data)
        .build()?;
    show_caps(
        "rc qp (own RQ, send cq_ex, recv cq)",
        rc.qp_num(),
        asked,
        rc.caps(),
    );

    let srq_asked = QpCap {
        max_send_wr: 32,
        max_send_sge: 1,
        ..QpCap::default()
    };
    let rc_srq = Qp::<Rc>::builder_with_srq(&pd, cq_ex_shared, cq_ex_shared, &srq)
        .max_send_wr(srq_asked.max_send_wr)
        .max_send_sge(srq_asked.max_send_sge)
        .context("rc on srq")
        .build()?;
    show_caps(
        "rc qp (on the srq, cq_ex for both)",
        rc_srq.qp_num(),
        srq_asked,
        rc_srq.caps(),
    );

    let ud = Qp::<Ud>::builder_with_srq(&pd, &cq, cq_ex_shared, &srq)
        .max_send_wr(srq_asked.max_send_wr)
        .max_send_sge(srq_asked.max_send_sge)
        .build()?;
    show_caps(
        "ud qp (on the srq, send cq, recv cq_ex)",
        ud.qp_num(),
        srq_asked,
        ud.caps(),
    );

    let uc_asked = QpCap {
        max_send_wr: 16,
        max_recv_wr: 16,
        max_send_sge: 1,
        max_recv_sge: 1,
        max_inline_data: 0,
    };
    let uc = Qp::<Uc>::builder(&pd, &cq, &cq)
        .max_send_wr(uc_asked.max_send_wr)
        .max_recv_wr(uc_asked.max_recv_wr)
        .build()?;
    show_caps(
        "uc qp (own RQ, cq for both)",
        uc.qp_num(),
        uc_asked,
        uc.caps(),
    );

    let mut group = [0u8; 16];
    group[..2].copy_from_slice(&[0xff, 0x0e]);
    group[14..].copy_from_slice(&[0x12, 0x34]);
    ud.attach_mcast(Gid(group), 0xc001)?;
    println!(
        "  ud qp joined multicast group {} (ibv_attach_mcast, lid 0xc001)",
        gid_str(Gid(group))
    );
    if let Some(live) = live_objects(&ctx) {
        println!("  live objects: {live}");
    }
    ud.detach_mcast(Gid(group), 0xc001)?;
    println!("  ud qp left the group (ibv_detach_mcast)");

    #[cfg(not(feature = "software-device"))]
    println!("completion injection is a software-device hook; this build has no software device");
    #[cfg(feature = "software-device")]
    if ctx.is_software() {
        println!("inject completions (software device hook) and poll:");
        let injected = [
            InjectedCompletion::success(1, WcOpcode::RECV_RDMA_WITH_IMM)
                .byte_len(4096)
                .imm_data(0x1234_5678)
                .qp_num(rc.qp_num()),
            InjectedCompletion::success(2, WcOpcode::RECV)
                .byte_len(296)
                .imm_data(0xcafe)
                .qp_num(ud.qp_num())
                .src_qp(0x2a)
                .with_grh(),
            InjectedCompletion::success(3, WcOpcode::SEND)
                .byte_len(512)
                .qp_num(rc_srq.qp_num()),
            InjectedCompletion::error(4, WcStatus::REM_ACCESS_ERR, 0x88).qp_num(rc.qp_num()),
        ];
        for c in injected {
            software::inject(cq_ex_shared, c)?;
        }
        println!("  cq_ex: 4 injected");
        poll_cq_ex(&mut poller)?;
        let legacy = [
            InjectedCompletion::success(10, WcOpcode::RECV)
                .byte_len(128)
                .imm_data(7)
                .qp_num(uc.qp_num()),
            InjectedCompletion::success(11, WcOpcode::SEND).qp_num(uc.qp_num()),
            InjectedCompletion::error(12, WcStatus::REM_ACCESS_ERR, 0x42).qp_num(uc.qp_num()),
        ];
        for c in legacy {
            software::inject(&cq, c)?;
        }
        println!(
            "  cq: generated loop, ibv_poll_cq into a stack array of {}",
            DemoRecord::MAX_BATCH
        );
        // The same generated record, through ibv_poll_cq into a stack array.
        loop {
            let taken = DemoRecord::poll_legacy(&cq, show)?;
            println!("    ibv_poll_cq returned {taken}");
            if taken == 0 {
                break;
            }
        }
    } else {
        println!(
            "completion injection is a software-device hook; {} is a real device, so it is skipped",
            ctx.device_name()
        );
    }

    println!("destroy:");
    drop(poller); // the CQ's right to poll, given back
    gone(rc.destroy(), "rc qp")?;
    gone(rc_srq.destroy(), "rc qp on the srq")?;
    gone(ud.destroy(), "ud qp")?;
    gone(uc.destroy(), "uc qp")?;
    gone(srq.destroy(), "srq")?;
    gone(cq.destroy(), "cq")?;
    gone(cq_ex.destroy(), "cq_ex")?;
    gone(channel.destroy(), "comp channel")?;
    gone(pd.destroy(), "pd")?;
    if let Some(live) = live_objects(&ctx) {
        println!("  live objects: {live}");
    }
    gone(ctx.close(), "context (ibv_close_device)")?;
    Ok(())
}
