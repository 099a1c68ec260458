//! The program scripts/bench.sh runs under callgrind for the receive benchmark:
//! `callgrind_recv <slot|copy|c> <rounds>` runs `rounds` rounds of the variant
//! (`typed_verbs_bench::recv`), each posting and draining `DEPTH` receives through the
//! variant's two `#[no_mangle]` functions, which `--toggle-collect` counts alone.

use typed_verbs_bench::recv::{run, DEPTH, VARIANTS};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(v), Some(Ok(rounds))) = (args.first(), args.get(1).map(|r| r.parse::<usize>()))
    else {
        eprintln!("usage: callgrind_recv <{}> <rounds>", VARIANTS.join("|"));
        std::process::exit(2);
    };
    let h = run(v, rounds);
    // Every variant reads the same bytes: the same checksum.
    let mut want = 0u64;
    for _ in 0..rounds * DEPTH {
        want = typed_verbs_bench::mix(
            typed_verbs_bench::mix(want, 64),
            u64::from_le_bytes(*b"received"),
        );
    }
    assert_eq!(h, want, "{v}: wrong checksum");
    println!("{v}: {rounds} rounds of {DEPTH} receives, checksum {h:#018x}");
}
