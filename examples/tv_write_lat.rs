//! `tv_write_lat`: perftest's `ib_write_lat` on the typed API. Measures latency: a ping-pong of `-n` messages of `-s` bytes, half the round trip each,
//! over one RC QP, and prints perftest's result table, computed as perftest computes it. The
//! server takes no host, the client the server's; `--self` runs both in one process (the
//! software device `sw0` exists only inside its process).
//!
//! ```text
//! cargo run --release --example tv_write_lat -- --self -d sw0 -n 1000   # both sides, software device
//! tv_write_lat -d rxe0 -x 1 -F                  # server
//! tv_write_lat -d rxe0 -x 1 -F 10.0.0.1         # client
//! ```
//!
//! Options: `-d` device, `-i` port, `-x` GID index, `-s` size, `-n` iterations, `-a` all
//! sizes (2 B to 8 MiB), `-F` (accepted), `-p` TCP port, `-t` tx depth, `-R`
//! rdma_cm (not implemented: the tools connect over TCP); see `examples/common/perf.rs`.

#[path = "common/perf.rs"]
mod perf;

use perf::{Test, Tool, Verb};
use std::process::ExitCode;

const TOOL: Tool = Tool::new(
    "tv_write_lat",
    "RDMA_Write Latency Test",
    Verb::Write,
    Test::Lat,
);

fn main() -> ExitCode {
    perf::main(&TOOL, perf::run_lat)
}
