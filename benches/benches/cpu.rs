//! The CPU kernels of `gpu_spmv::reference` on matrices of the suite: `cargo bench --bench cpu`.
//!
//! Under `cargo bench` the matrices are the suite's small ones; under `cargo test` (criterion's test
//! mode, each benchmark run once as a smoke test) the tiny ones, so that the test stays quick.

mod common;

use common::size;
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use gpu_spmv::CsrRef;
use gpu_spmv::reference::{CpuKernel, spmv};
use spmv_bench::suite;
use std::hint::black_box;

/// Matrices of three kinds: regular short rows, heavy-tailed rows, few long rows.
const MATRICES: [&str; 3] = ["stencil3d-7", "powerlaw", "short-wide"];

const KERNELS: [(&str, CpuKernel); 3] = [
    ("serial", CpuKernel::Serial),
    ("rayon", CpuKernel::Rayon),
    // 4096 columns: 32 KB of f64 x per chunk, an L1 cache's worth.
    ("chunked-4096", CpuKernel::Chunked { chunk_cols: 4096 }),
];

fn cpu_kernels(c: &mut Criterion) {
    let size = size();
    for name in MATRICES {
        let generator = suite::find(name).expect("a matrix of the suite");
        let a = (generator.build)(size, 1);
        let x: Vec<f64> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f64 * 0.125).collect();
        let mut y = vec![0.0; a.nrows()];
        let mut group = c.benchmark_group(format!("cpu/{name}-{}", size.name()));
        group.throughput(Throughput::Elements(a.nnz() as u64));
        group.sample_size(20);
        for (kernel_name, kernel) in KERNELS {
            group.bench_function(BenchmarkId::from_parameter(kernel_name), |b| {
                b.iter(|| {
                    spmv(kernel, 1.0, CsrRef::from(&a), black_box(&x), 0.0, &mut y).expect("valid input");
                    black_box(&y);
                })
            });
        }
        group.finish();
    }
}

criterion_group!(benches, cpu_kernels);
criterion_main!(benches);
