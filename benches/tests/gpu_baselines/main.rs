//! The benchmark's GPU tests, one module per baseline, in one test binary: the cuSPARSE and cuBLAS
//! baselines of the CG and solver studies against the library's solvers and the CPU oracles, and
//! cuSPARSE's ILU(0)/IC(0) factorisation and SpSV apply against the oracle's.
//! `cargo test -p spmv-bench --test gpu_baselines` runs them all, `... gpu_baselines ilu02::` one
//! module's. Without a GPU they say why they skip (`skip.rs`, the library tests' own).
//!
//! One binary rather than a test crate per file: each crate links the whole dependency tree again.
//! Their tests run side by side on the threads of one process, as each file's did.

#[path = "../../../host/tests/common/skip.rs"]
#[allow(dead_code)] // the helpers of every GPU test; these use a part
mod skip;
mod spsv_apply;

mod cg_baseline;
mod ilu02;
mod ilu_spsv;
mod solve_baseline;
