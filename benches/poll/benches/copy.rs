//! The safe copies into and out of registered memory against memcpy:
//! `cargo bench -p typed-verbs-bench --bench copy`.
//!
//! `Mr::write` and `Mr::read` copy byte-wise atomically (`typed_verbs::dma`: `rep movsb` on
//! x86-64); the baseline is `copy_from_slice` (memcpy) between two private buffers of the same
//! sizes and alignment. One region of 1 MiB on sw0 (a `PageBuf`), copies of 4 KiB and 1 MiB
//! at offset 0, from and to a page-aligned private buffer. Throughput is in bytes, so criterion
//! reports bytes per second; scripts/bench.sh reads
//! target/criterion/mr_copy/<case>/new/estimates.json and prints the ratios.

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use std::hint::black_box;
use std::time::Duration;
use typed_verbs::{Access, Mr, PageBuf, Pd};
use typed_verbs_bench::open;

const MIB: usize = 1 << 20;

fn copy(c: &mut Criterion) {
    let ctx = open().expect("open sw0");
    let pd = Pd::new(&ctx).expect("ibv_alloc_pd");
    let mr = Mr::new(&pd, PageBuf::new(MIB).unwrap(), Access::LOCAL_WRITE).unwrap();
    let mut private = PageBuf::new(MIB).unwrap();
    let mut other = PageBuf::new(MIB).unwrap();
    other.fill(0x5a);

    let mut group = c.benchmark_group("mr_copy");
    group
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    for (name, len) in [("4k", 4096), ("1m", MIB)] {
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_function(format!("write_{name}"), |b| {
            b.iter(|| mr.write(0, black_box(&other[..len])).unwrap())
        });
        group.bench_function(format!("memcpy_in_{name}"), |b| {
            b.iter(|| black_box(&mut private[..len]).copy_from_slice(black_box(&other[..len])))
        });
        group.bench_function(format!("read_{name}"), |b| {
            b.iter(|| mr.read(0, black_box(&mut other[..len])).unwrap())
        });
        group.bench_function(format!("memcpy_out_{name}"), |b| {
            b.iter(|| black_box(&mut other[..len]).copy_from_slice(&private[..len]))
        });
    }
    group.finish();
}

criterion_group!(benches, copy);
criterion_main!(benches);
