//! The program scripts/bench.sh runs under callgrind for the extended post benchmark:
//! `callgrind_post_ex <op> <typed|c> <session> <n>` posts `n` requests of `<op>` in sessions of
//! `<session>` (1 or 16) on an RC pair on sw0 whose sender is an extended QP, each session
//! through the variant's `#[no_mangle]` function, which `--toggle-collect` counts alone.

use typed_verbs_bench::open;
use typed_verbs_bench::post_ex::main_run;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [op, variant, k, n] = args.as_slice() else {
        eprintln!("usage: callgrind_post_ex <op> <typed|c> <session> <n>");
        std::process::exit(2);
    };
    let k: u64 = k.parse().expect("session size");
    let n: u64 = n.parse().expect("count");
    let ctx = open().expect("open sw0");
    if let Err(e) = main_run(&ctx, op, variant == "typed", k, n) {
        eprintln!("callgrind_post_ex: {e}");
        std::process::exit(1);
    }
    println!("{op} {variant} sessions of {k}: {n} posts");
}
