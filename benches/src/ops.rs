//! The transposed product and SpMM against cuSPARSE (`--transpose`, `--spmm`): time per product,
//! GB/s against the bytes of one pass over `A` plus `X` and `Y`, the transpose's one-time cost and
//! its break-even count against the atomic path, and SpMM's speedup over `k` separate products of
//! ours. One copy of the operands (no rotation through several copies as the SpMV records do), so
//! matrices that fit in L2 read faster than HBM allows.

use crate::cusparse::{self, PreparedSpmm, SpmmAlgorithm};
use crate::measure::{Timing, time_gpu};
use crate::precision::Precision;
use crate::run::csr_bytes;
use anyhow::Result;
use gpu_spmv::spmm::{Layout, SpmmKernel};
use gpu_spmv::transpose::TransposeKernel;
use gpu_spmv::{CsrRef, DeviceCsr, Gpu, Scalar};
use nalgebra_sparse::CsrMatrix;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// The column counts of the SpMM measurements.
pub const SPMM_KS: [usize; 6] = [1, 4, 8, 16, 32, 64];

/// One transposed product `y = Aᵀ x`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TransposeRecord {
    pub matrix: String,
    pub precision: Precision,
    /// `explicit`, `atomic`, or a cuSPARSE algorithm with `CUSPARSE_OPERATION_TRANSPOSE`.
    pub variant: String,
    pub time_us: f64,
    pub gbps: f64,
    /// The explicit transpose's construction (plan time), milliseconds; absent for the others.
    pub build_ms: Option<f64>,
    /// Products after which the explicit path (build + products) beats the atomic one; absent when
    /// it never does or for the other variants.
    pub break_even_products: Option<f64>,
}

/// One product `Y = A X` with `k` columns.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SpmmRecord {
    pub matrix: String,
    pub precision: Precision,
    /// `row-major` or `column-major`.
    pub layout: String,
    pub k: usize,
    /// `ours` (the rule's kernel, named in `kernel`) or a cuSPARSE SpMM algorithm.
    pub variant: String,
    pub kernel: String,
    pub time_us: f64,
    pub gbps: f64,
    /// `k` separate SpMV products of ours (`Kernel::Auto`) over this time; ours only.
    pub speedup_vs_k_spmv: Option<f64>,
}

/// What `--transpose` and `--spmm` measured on one matrix in one precision, and what failed.
#[derive(Debug, Default)]
pub struct OpsRun {
    pub transpose: Vec<TransposeRecord>,
    pub spmm: Vec<SpmmRecord>,
    pub notes: Vec<String>,
}

/// `a` in precision `T` on the device.
fn upload<T: Scalar>(gpu: &Gpu, a: &CsrMatrix<f64>) -> Result<DeviceCsr<T>> {
    let vals: Vec<T> = a.values().iter().map(|&v| T::from_f64(v)).collect();
    let view = CsrRef::try_new(a.nrows(), a.ncols(), a.row_offsets(), a.col_indices(), &vals)?;
    Ok(gpu.upload_csr_ref(view)?)
}

/// The transposed product: ours (explicit after its build, atomic) and cuSPARSE's CSR algorithms.
pub fn bench_transpose<T: Scalar>(
    gpu: &Gpu,
    handle: &cusparse::Handle,
    name: &str,
    a: &CsrMatrix<f64>,
    out: &mut OpsRun,
) -> Result<()> {
    let da = upload::<T>(gpu, a)?;
    let x = gpu.upload_vector(&vec![T::from_f64(0.5); a.nrows()])?;
    let mut y = gpu.zeros::<T>(a.ncols())?;
    let bytes = csr_bytes(a.ncols(), a.nrows(), a.nnz(), size_of::<T>());
    let record = |variant: &str, t: Timing, build_ms| TransposeRecord {
        matrix: name.to_owned(),
        precision: Precision::of::<T>(),
        variant: variant.to_owned(),
        time_us: t.median_us,
        gbps: bytes / (t.median_us * 1e3),
        build_ms,
        break_even_products: None,
    };
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let started = Instant::now();
    let explicit = gpu.plan(da.transposed(), TransposeKernel::Explicit)?;
    gpu.synchronize()?;
    let build_ms = started.elapsed().as_secs_f64() * 1e3;
    let t_explicit = time_gpu(gpu, |_| Ok(explicit.spmv(one, &x, zero, &mut y)?))?;
    let atomic = gpu.plan(da.transposed(), TransposeKernel::Atomic)?;
    let t_atomic = time_gpu(gpu, |_| Ok(atomic.spmv(one, &x, zero, &mut y)?))?;
    let saved_us = t_atomic.median_us - t_explicit.median_us;
    let mut explicit_record = record("explicit", t_explicit, Some(build_ms));
    explicit_record.break_even_products = (saved_us > 0.0).then(|| build_ms * 1e3 / saved_us);
    out.transpose.push(explicit_record);
    out.transpose.push(record("atomic", t_atomic, None));
    for alg in [cusparse::Algorithm::CsrAlg1, cusparse::Algorithm::CsrAlg2] {
        match cusparse::Prepared::transposed(gpu, handle, alg, &da, &x, &y) {
            Ok(p) => {
                let t = time_gpu(gpu, |_| p.run(gpu, one, zero))?;
                out.transpose.push(record(&format!("{}-transpose", alg.name()), t, None));
            }
            Err(e) => out.notes.push(format!("{name} {}: {} transpose: {e}", T::NAME, alg.name())),
        }
    }
    Ok(())
}

/// SpMM for every `k` of [`SPMM_KS`] in both layouts: ours, cuSPARSE's CSR algorithms, and `k`
/// separate SpMV products of ours as the baseline of the speedup.
pub fn bench_spmm<T: Scalar>(
    gpu: &Gpu,
    handle: &cusparse::Handle,
    name: &str,
    a: &CsrMatrix<f64>,
    out: &mut OpsRun,
) -> Result<()> {
    let da = upload::<T>(gpu, a)?;
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let xv = gpu.upload_vector(&vec![T::from_f64(0.5); a.ncols()])?;
    let mut yv = gpu.zeros::<T>(a.nrows())?;
    let spmv = gpu.plan(&da, gpu_spmv::Kernel::Auto)?;
    let t_spmv = time_gpu(gpu, |_| Ok(spmv.spmv(one, &xv, zero, &mut yv)?))?;
    for layout in [Layout::RowMajor, Layout::ColMajor] {
        let layout_name = match layout {
            Layout::RowMajor => "row-major",
            Layout::ColMajor => "column-major",
        };
        for k in SPMM_KS {
            let x = gpu.upload_dense(
                a.ncols(),
                k,
                layout,
                packed_ld(layout, a.ncols(), k),
                &vec![T::from_f64(0.5); a.ncols() * k],
            )?;
            let mut y = gpu.dense_zeros::<T>(a.nrows(), k, layout)?;
            let bytes = csr_bytes(a.nrows(), 0, a.nnz(), size_of::<T>())
                + ((a.ncols() + a.nrows()) * k * size_of::<T>()) as f64;
            let record = |variant: &str, kernel: String, t: Timing, speedup| SpmmRecord {
                matrix: name.to_owned(),
                precision: Precision::of::<T>(),
                layout: layout_name.to_owned(),
                k,
                variant: variant.to_owned(),
                kernel,
                time_us: t.median_us,
                gbps: bytes / (t.median_us * 1e3),
                speedup_vs_k_spmv: speedup,
            };
            let plan = gpu.plan_spmm(&da, layout, k, SpmmKernel::Auto)?;
            let t = time_gpu(gpu, |_| Ok(plan.spmm(one, &x, zero, &mut y)?))?;
            let speedup = k as f64 * t_spmv.median_us / t.median_us;
            out.spmm.push(record("ours", format!("{:?}", plan.kernel()), t, Some(speedup)));
            for alg in SpmmAlgorithm::ALL {
                match PreparedSpmm::new(gpu, handle, alg, &da, &x, &y) {
                    Ok(p) => {
                        let t = time_gpu(gpu, |_| p.run(gpu, one, zero))?;
                        out.spmm.push(record(alg.name(), String::new(), t, None));
                    }
                    Err(e) => {
                        out.notes.push(format!("{name} {} {layout_name} k {k}: {}: {e}", T::NAME, alg.name()))
                    }
                }
            }
        }
    }
    Ok(())
}

fn packed_ld(layout: Layout, rows: usize, cols: usize) -> usize {
    match layout {
        Layout::RowMajor => cols,
        Layout::ColMajor => rows,
    }
}
