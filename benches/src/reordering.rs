//! Reverse Cuthill–McKee on one matrix (Reguly & Giles, section 5.6): its host cost, the bandwidth
//! before and after, Auto's and the merge-path kernel's time on the reordered matrix against the
//! original, and the products after which the reordering has paid for itself.

use crate::measure::time_gpu;
use crate::precision::Precision;
use anyhow::Result;
use gpu_spmv::formats::{Permutation, bandwidth};
use gpu_spmv::reference::max_relative_error;
use gpu_spmv::{CsrRef, Gpu, Kernel, Scalar};
use serde::{Deserialize, Serialize};

/// What reordering one matrix in one precision cost and saved, for one kernel.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Reordering {
    pub matrix: String,
    pub precision: Precision,
    pub kernel: String,
    /// Host time of the permutation and of permuting the arrays (the upload is not counted: the
    /// original would be uploaded too).
    pub rcm_ms: f64,
    pub bandwidth_before: usize,
    pub bandwidth_after: usize,
    pub before_us: f64,
    pub after_us: f64,
    /// `rcm_ms` over the time a product saves; `None` when it saves none.
    pub break_even_products: Option<f64>,
    /// Of the reordered product, brought back to the caller's order, against the f64 reference.
    pub max_rel_error: f64,
}

/// The kernels timed before and after: Auto, and the merge-path kernel (its tiles do not care how
/// rows are ordered, so what changes is the `x` gathers alone).
pub const REORDERED_KERNELS: [Kernel; 2] = [Kernel::Auto, Kernel::CsrMerge { block_size: 128 }];

/// Reorders `view` (square) and times `kernel` on both matrices with the same `x`, permuted for
/// the reordered one. `reference` and `scale` are those of `y = A x` in the original order.
pub fn bench_reordering<T: Scalar>(
    gpu: &Gpu,
    name: &str,
    view: CsrRef<'_, T>,
    x: &[T],
    (reference, scale): (&[f64], &[f64]),
) -> Result<Vec<Reordering>> {
    let start = std::time::Instant::now();
    let p = Permutation::rcm(view)?;
    let permuted = p.permute(view)?;
    let rcm_ms = start.elapsed().as_secs_f64() * 1e3;
    let (one, zero) = (T::from_f64(1.0), T::ZERO);
    let original = gpu.upload_csr_ref(view)?;
    let reordered = gpu.upload_csr_ref(permuted.view())?;
    let dx = gpu.upload_vector(x)?;
    let dx_new = gpu.upload_vector(&p.to_new(x)?)?;
    let mut dy = gpu.zeros::<T>(view.nrows())?;
    let mut out = Vec::new();
    for kernel in REORDERED_KERNELS {
        let before = gpu.plan(&original, kernel)?;
        let after = gpu.plan(&reordered, kernel)?;
        let before_us = time_gpu(gpu, |_| Ok(before.spmv(one, &dx, zero, &mut dy)?))?.median_us;
        let after_us = time_gpu(gpu, |_| Ok(after.spmv(one, &dx_new, zero, &mut dy)?))?.median_us;
        dy.copy_from_host(gpu, &vec![T::from_f64(f64::NAN); view.nrows()])?;
        after.spmv(one, &dx_new, zero, &mut dy)?;
        let y = p.to_old(&dy.to_host(gpu)?)?;
        let saved_us = before_us - after_us;
        out.push(Reordering {
            matrix: name.to_owned(),
            precision: Precision::of::<T>(),
            kernel: kernel.to_string(),
            rcm_ms,
            bandwidth_before: bandwidth(view),
            bandwidth_after: bandwidth(permuted.view()),
            before_us,
            after_us,
            break_even_products: (saved_us > 0.0).then(|| rcm_ms * 1e3 / saved_us),
            max_rel_error: max_relative_error(&y, reference, scale),
        });
    }
    Ok(out)
}
