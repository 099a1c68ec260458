//! `rc_pingpong`: rdma-core's `ibv_rc_pingpong` on the typed API. Sends of `-s` bytes go back
//! and forth over one RC QP pair, `-n` times, and the bandwidth and latency are printed. It
//! takes the same main options and speaks the same TCP exchange of addresses as rdma-core's
//! program, so either can be the server (no host) and the other the client (the server's host).
//!
//! ```text
//! cargo run --release --example rc_pingpong -- --self           # both sides, software device
//! rc_pingpong -d rxe0 -g 1                # server
//! ibv_rc_pingpong -d rxe0 -g 1 127.0.0.1  # client
//! ```
//!
//! `-N` (`--new_send`), as rdma-core's: the sends go through an extended QP (ibv_wr_post(3)),
//! created with `send_ops!(SEND)` and posted by `Qp::post_batch`, a batch of one send each,
//! instead of `ibv_post_send`. A message of at most the QP's `max_inline_data` bytes is sent
//! inline (`Wr::inline`: `ibv_wr_set_inline_data` with `IBV_SEND_INLINE`), a larger one from
//! the buffer (`Wr::sge`: `ibv_wr_set_sge`). rdma-core's `-N` sets `IBV_SEND_INLINE` for a
//! small message too, but then calls `ibv_wr_set_sge`; rxe sends such a request from the WQE's
//! inline area, which holds the SGE itself, not the message. Nothing more is printed with `-N`.
//!
//! On a device without extended QPs (rdma-core's siw, irdma, mlx4, qedr) `-N` fails, as
//! rdma-core's does: `Couldn't create QP: ` and the typed error
//! (`ErrorKind::SendOpsUnsupported`, which names the device). It does not fall back to
//! `ibv_post_send`: the option asks for the other path, and a run that quietly took the legacy
//! one would report the wrong thing.
//!
//! `-c` (`--chk`), as rdma-core's: the client sets the first byte of each page of its buffer to
//! 0, and the buffer is checked once the loop is done, printing `invalid data in page N` for
//! each bad page. rdma-core's server checks that one byte of each page and exits 0 anyway, and
//! its client checks nothing; this one checks every byte against the client's message (0 at
//! each page's start, 0x7b elsewhere) on both sides (every message goes there and back: the
//! server ends with the client's last message, the client with the server's echo of it) and
//! fails if any differs, naming it.

#[path = "common/pingpong.rs"]
mod pingpong;

use pingpong::Program;
use std::process::ExitCode;
use typed_verbs::Rc;

const PROGRAM: Program = Program {
    new_send: true,
    ..Program::connected("rc_pingpong")
};

fn main() -> ExitCode {
    pingpong::main(&PROGRAM, pingpong::run_connected::<Rc>)
}
