//! The program scripts/bench.sh runs under callgrind: `callgrind_poll <variant> <rounds>`.
//!
//! It creates the benchmark's CQ on `sw0`, then `rounds` times fills the CQ with the workload's
//! N completions and drains them with `<variant>`, checking each drain's checksum against the
//! workload's (which every variant must give), and prints the checksum. Run it with
//! `--toggle-collect=<the variant's drain function>` so that only the draining is counted: the
//! drain function runs exactly `rounds` times.

use std::process::ExitCode;
use typed_verbs_bench::{create_cq, open, Variant, Workload};

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let names: Vec<&str> = Variant::ALL.iter().map(|v| v.name()).collect();
    let usage = || {
        eprintln!(
            "usage: callgrind_poll <variant> <rounds>   (variants: {})",
            names.join(", ")
        );
        ExitCode::from(2)
    };
    let [name, rounds] = args.as_slice() else {
        return usage();
    };
    let (Some(variant), Ok(rounds)) = (Variant::from_name(name), rounds.parse::<u32>()) else {
        return usage();
    };

    let ctx = open().expect("open sw0");
    let mut cq = create_cq(&ctx).expect("create the CQ");
    let workload = Workload::new();

    let mut checksum = 0;
    for _ in 0..rounds {
        workload.fill(&cq);
        checksum = variant.drain(&mut cq);
        assert_eq!(checksum, workload.checksum(), "{name}: wrong checksum");
    }
    println!(
        "{name}: {rounds} rounds of {} completions, checksum {checksum:#018x}",
        typed_verbs_bench::N
    );
    ExitCode::SUCCESS
}
