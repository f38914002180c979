//! The suite's generators: `cargo bench --bench generate`, at the small size (one twentieth of the
//! full one, whose times scale about linearly). Under `cargo test`, criterion's test mode builds each
//! tiny matrix once as a smoke test.

mod common;

use common::size;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use spmv_bench::suite;
use std::hint::black_box;

fn generators(c: &mut Criterion) {
    let size = size();
    let mut group = c.benchmark_group(format!("generate-{}", size.name()));
    group.sample_size(10);
    for m in suite::suite() {
        let nnz = (m.build)(size, 1).nnz();
        group.throughput(Throughput::Elements(nnz as u64));
        group.bench_function(BenchmarkId::from_parameter(m.name), |b| {
            b.iter(|| black_box((m.build)(size, black_box(1))))
        });
    }
    group.finish();
}

criterion_group!(benches, generators);
criterion_main!(benches);
