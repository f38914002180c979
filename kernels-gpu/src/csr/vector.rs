//! CSR vector: `COOP` threads per row (Bell & Garland, NVIDIA TR 2008, section 4.3, where `COOP` is a
//! full warp; the cooperative width is the generalisation of Reguly & Giles, 2012).
//!
//! A warp holds `32 / COOP` groups, one row each. The lanes of a group stride through the row's entries
//! together, so their loads of values and column indices are contiguous, then sum their partial
//! products with a butterfly of shuffles. Rows go to warps in order (see `index::coop_slot`), and the
//! warp's loop bound is uniform, so every lane reaches the shuffles.

use super::{entry_product, rows_by_groups};
use crate::abi::CsrParams;
use crate::real::Real;

/// # Safety
/// `p` describes a validated CSR matrix and vectors of matching lengths; the block size is a multiple
/// of 32.
#[inline(always)]
unsafe fn csr_vector<T: Real, const COOP: u32>(p: CsrParams<T>) {
    let lane_sum = |start: usize, end: usize, lane: usize| {
        let mut sum = T::ZERO;
        let mut k = start + lane;
        while k < end {
            // SAFETY: `k < end`, inside the row; columns are in range (host validation).
            sum = unsafe { entry_product::<T, COOP>(&p.a, p.op.x.as_ptr(), k, sum) };
            k += COOP as usize;
        }
        sum
    };
    // SAFETY: forwarded from the caller.
    unsafe { rows_by_groups::<T, COOP>(&p, lane_sum) }
}

// In both modules: the sm_90 module's, which the host takes on Hopper (`abi::SM90_ENTRIES`), wait
// for the grids ahead of them first, so that they can be launched before those end (`ptx_entry!`).
crate::ptx_entry!(both spmv_csr_vector_c2_f32, CsrParams<f32>, csr_vector::<f32, 2>);
crate::ptx_entry!(both spmv_csr_vector_c4_f32, CsrParams<f32>, csr_vector::<f32, 4>);
crate::ptx_entry!(both spmv_csr_vector_c8_f32, CsrParams<f32>, csr_vector::<f32, 8>);
crate::ptx_entry!(both spmv_csr_vector_c16_f32, CsrParams<f32>, csr_vector::<f32, 16>);
crate::ptx_entry!(both spmv_csr_vector_c32_f32, CsrParams<f32>, csr_vector::<f32, 32>);
crate::ptx_entry!(both spmv_csr_vector_c2_f64, CsrParams<f64>, csr_vector::<f64, 2>);
crate::ptx_entry!(both spmv_csr_vector_c4_f64, CsrParams<f64>, csr_vector::<f64, 4>);
crate::ptx_entry!(both spmv_csr_vector_c8_f64, CsrParams<f64>, csr_vector::<f64, 8>);
crate::ptx_entry!(both spmv_csr_vector_c16_f64, CsrParams<f64>, csr_vector::<f64, 16>);
crate::ptx_entry!(both spmv_csr_vector_c32_f64, CsrParams<f64>, csr_vector::<f64, 32>);
