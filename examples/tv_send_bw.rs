//! `tv_send_bw`: perftest's `ib_send_bw` on the typed API. Measures bandwidth: a stream of `-n` messages of `-s` bytes, `-t` outstanding, every `-Q`th signalled,
//! over one RC QP, and prints perftest's result table, computed as perftest computes it. The
//! server takes no host, the client the server's; `--self` runs both in one process (the
//! software device `sw0` exists only inside its process).
//!
//! ```text
//! cargo run --release --example tv_send_bw -- --self -d sw0 -n 1000   # both sides, software device
//! tv_send_bw -d rxe0 -x 1 -F                  # server
//! tv_send_bw -d rxe0 -x 1 -F 10.0.0.1         # client
//! ```
//!
//! Options: `-d` device, `-i` port, `-x` GID index, `-s` size, `-n` iterations, `-a` all
//! sizes (2 B to 8 MiB), `-F` (accepted), `-p` TCP port, `-t` tx depth, `-Q` CQ moderation, `-N` no peak, `-r` rx depth, `-R`
//! rdma_cm (not implemented: the tools connect over TCP); see `examples/common/perf.rs`.

#[path = "common/perf.rs"]
mod perf;

use perf::{Test, Tool, Verb};
use std::process::ExitCode;

const TOOL: Tool = Tool::new("tv_send_bw", "Send BW Test", Verb::Send, Test::Bw);

fn main() -> ExitCode {
    perf::main(&TOOL, perf::run_bw)
}
