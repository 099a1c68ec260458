//! Wall time per completion of each variant: `cargo bench -p typed-verbs-bench`.
//!
//! Each iteration fills the CQ with the workload's N completions (the setup, not timed) and
//! drains it with one variant (timed); the throughput is N elements, so criterion reports
//! completions per second, and `time / N` is the time per completion. scripts/bench.sh reads
//! the results from target/criterion/poll/<variant>/new/estimates.json.

use criterion::{criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use std::cell::RefCell;
use std::hint::black_box;
use std::time::Duration;
use typed_verbs_bench::{check_all, create_cq, open, Variant, Workload, N};

fn poll(c: &mut Criterion) {
    let ctx = open().expect("open sw0");
    let cq = RefCell::new(create_cq(&ctx).expect("create the CQ"));
    let workload = Workload::new();
    // Every variant must drain a fill to the same checksum before any is timed.
    check_all(&mut cq.borrow_mut(), &workload);

    let mut group = c.benchmark_group("poll");
    group
        .throughput(Throughput::Elements(N as u64))
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(2));
    for v in Variant::ALL {
        group.bench_function(v.name(), |b| {
            b.iter_batched(
                || workload.fill(&cq.borrow()),
                |()| {
                    let sum = v.drain(&mut cq.borrow_mut());
                    assert_eq!(sum, workload.checksum());
                    black_box(sum)
                },
                BatchSize::PerIteration,
            )
        });
    }
    group.finish();
}

criterion_group!(benches, poll);
criterion_main!(benches);
