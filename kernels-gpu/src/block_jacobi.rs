//! Block-Jacobi preconditioning: `z = B⁻¹ r`, `B` the block diagonal of `A` in blocks of `block`
//! consecutive rows and columns (the last block shorter when `block` does not divide `n`), its
//! blocks inverted on the host at setup (Saad, "Iterative Methods for Sparse Linear Systems", 2nd
//! ed., section 12.2; Anzt et al. 2017 invert them on the GPU instead, which pays only when the
//! setup is repeated far more often than here).
//!
//! Row `i` of `B⁻¹` has at most `block` entries, columns `base .. base + len` of its block, stored
//! column-major over the rows (`inverses[j * n + i]`, the block's local column `j`), so a warp's
//! threads read consecutive addresses at every `j`, and the `r` entries of a block, the same for
//! every thread of it, come once from the cache.

use crate::abi::BlockJacobiParams;
use crate::arch::{global_thread, grid_threads};
use crate::real::Real;

/// `block_jacobi_*`: one row of `z = B⁻¹ r` per thread, its products summed by `fma` in the
/// order of the block's columns (the CPU oracle's order, so the two agree bit for bit).
///
/// # Safety
/// `inverses` holds `block * n` elements, `r` and `z` hold `n` and do not overlap; `block >= 1`.
#[inline(always)]
unsafe fn apply<T: Real>(p: BlockJacobiParams<T>) {
    let (n, block) = (u64::from(p.n), u64::from(p.block));
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < n {
        let base = i / block * block;
        let len = block.min(n - base);
        let mut sum = T::ZERO;
        for j in 0..len {
            // SAFETY: `j < block` and `i < n`, so `j * n + i < block * n`; `base + j < n`.
            unsafe {
                let inverse = T::load_nc(p.inverses.as_ptr().add((j * n + i) as usize));
                sum = inverse.fma(T::load_nc(p.r.as_ptr().add((base + j) as usize)), sum);
            }
        }
        // SAFETY: `i < n`; each row is written by this thread only.
        unsafe { *p.z.as_mut_ptr().add(i as usize) = sum };
        i += stride;
    }
}

crate::ptx_entry!(block_jacobi_f32, BlockJacobiParams<f32>, apply::<f32>);
crate::ptx_entry!(block_jacobi_f64, BlockJacobiParams<f64>, apply::<f64>);
