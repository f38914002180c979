//! The library's GPU tests, one module per area, in one test binary: `cargo test --test gpu` runs them
//! all, `cargo test --test gpu dia::` one module's, `cargo test --test gpu dia::gpu_dia_f64` one
//! test. Without a GPU they print why and pass (`common::gpu_or_skip`), unless `SPMV_REQUIRE_GPU=1`
//! (`=2` for the multi-GPU tests of `distributed`), which makes them fail instead.
//!
//! One binary rather than a test crate per file: each crate compiles the library's generic code again
//! and links the whole dependency tree (cudarc, nalgebra, faer, ...), which made building the tests
//! most of CI's time. The tests of every module run side by side on the threads of one process, on the
//! same GPUs; the few that must have the GPUs to themselves say so (`common::alone_on_the_gpus`).

#[path = "../common/mod.rs"]
mod common;

mod assemble;
mod chebyshev;
mod compressed;
mod compressed_ell;
mod csr_merge;
mod csr_panels;
mod csr_stream;
mod csr_variants;
mod dia;
mod distributed;
mod formats;
mod from_device;
mod graphs;
mod ilu;
mod ilu_device;
mod interop;
mod kernels;
mod krylov;
mod lma;
mod pcg;
mod reliability;
mod reorder;
mod select;
mod solve;
mod transpose_spmm;
mod update;
