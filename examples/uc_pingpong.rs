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

use pingpong::Program;
use std::process::ExitCode;
use typed_verbs::Uc;

const PROGRAM: Program = Program::connected("uc_pingpong");

fn main() -> ExitCode {
    pingpong::main(&PROGRAM, pingpong::run_connected::<Uc>)
}
