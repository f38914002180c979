//! The benchmark suite of gpu-spmv: matrices, measurement against cuSPARSE and the bandwidth floor,
//! and the report. The `spmv-bench` binary (`cargo xtask bench`) drives it.

pub mod cg_baseline;
pub mod cg_study;
pub mod cublas;
pub mod cusparse;
pub mod device_info;
pub mod fem;
pub mod fit;
pub mod formats;
pub mod matrices;
pub mod measure;
pub mod misses;
pub mod multi_gpu;
pub mod ops;
pub mod plot;
pub mod precision;
pub mod regimes;
pub mod reordering;
pub mod report;
pub mod run;
pub mod solve_baseline;
pub mod solve_study;
pub mod staging;
pub mod suite;
pub mod summary;
pub mod variants;
