//! The program scripts/bench.sh runs under callgrind for the post_send benchmark:
//! `callgrind_post <opcode> <typed|c> <n>` posts `n` requests of `<opcode>` on an RC pair on sw0,
//! each through the variant's `#[no_mangle]` function, which `--toggle-collect` counts alone.
//! `callgrind_post throughput <seconds>` measures 64-byte RC send/receive completions per second
//! on one core, without callgrind.

use std::time::{Duration, Instant};
use typed_verbs::{Access, Cq, Mr, PageBuf, Pd, SendWr};
use typed_verbs_bench::open;
use typed_verbs_bench::post::{drain, rc_pair, run};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let ctx = open().expect("open sw0");
    let pd = Pd::new(&ctx).unwrap();
    let cq = Cq::builder(&ctx).cqe(256).build().unwrap();
    let pair = rc_pair(&ctx, &pd, &cq);
    let buf = || PageBuf::new(64).unwrap();
    let local = Mr::new(&pd, buf(), Access::LOCAL_WRITE).unwrap();
    let remote = Mr::new(&pd, buf(), typed_verbs_bench::post::ALL_REMOTE).unwrap();
    let recv = Mr::new(&pd, buf(), Access::LOCAL_WRITE).unwrap();
    match args
        .iter()
        .map(String::as_str)
        .collect::<Vec<_>>()
        .as_slice()
    {
        ["throughput", secs] => {
            let secs: f64 = secs.parse().expect("seconds");
            let sge = [local.sge(0..64).unwrap()];
            let rsge = [recv.sge(0..64).unwrap()];
            let (mut done, mut i) = (0u64, 0u64);
            let start = Instant::now();
            while start.elapsed() < Duration::from_secs_f64(secs) {
                for _ in 0..32 {
                    pair.b.post_recv(i, &rsge).unwrap();
                    pair.a.post_send(&SendWr::send(i, &sge).signaled()).unwrap();
                    i += 1;
                }
                done += drain(&cq) as u64;
            }
            let rate = done as f64 / start.elapsed().as_secs_f64();
            println!("throughput: {done} completions in {:.2} s = {:.2} M completions/s (send and receive, one core)", start.elapsed().as_secs_f64(), rate / 1e6);
        }
        [opcode, variant, n] => {
            let n: u64 = n.parse().expect("count");
            run(
                &pair,
                &local,
                &remote,
                &recv,
                opcode,
                *variant == "typed",
                n,
            );
            println!("{opcode} {variant}: {n} posts");
        }
        _ => {
            eprintln!("usage: callgrind_post <opcode> <typed|c> <n> | callgrind_post throughput <seconds>");
            std::process::exit(2);
        }
    }
}
