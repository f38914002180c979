//! CSR vector: `COOP` threads per row (Bell & Garland, NVIDIA TR 2008, section 4.3, where `COOP` is a
//! full warp; the cooperative width is the generalisation of Reguly & Giles, 2012).
//!
//! A warp holds `32 / COOP` groups, one row each. The lanes of a group stride through the row's entries
//! together, so their loads of values and column indices are contiguous, then sum their partial
//! products with a butterfly of shuffles. Rows go to warps in order (see `index::coop_slot`), and the
//! warp's loop bound is uniform, so every lane reaches the shuffles.

use super::{entry_product, row_range};
use crate::abi::CsrParams;
use crate::arch::{global_thread, grid_threads};
use crate::index::coop_slot;
use crate::real::{Real, store_axpby};
use crate::reduce::group_sum;

/// # Safety
/// `p` describes a validated CSR matrix and vectors of matching lengths; the block size is a multiple
/// of 32.
#[inline(always)]
unsafe fn csr_vector<T: Real, const COOP: u32>(p: CsrParams<T>) {
    let slot = coop_slot(global_thread(), grid_threads(), COOP);
    let rows = p.a.rows as u64;
    let mut first = slot.warp_first_row;
    while first < rows {
        let row = first + slot.group_in_warp as u64;
        let mut sum = T::ZERO;
        if row < rows {
            // SAFETY: `row < rows`; entries and columns are in range (host validation).
            unsafe {
                let (start, end) = row_range(&p.a, row as usize);
                let mut k = start + slot.lane as usize;
                while k < end {
                    sum = entry_product(&p.a, p.op.x.as_ptr(), k, sum);
                    k += COOP as usize;
                }
            }
        }
        let total = group_sum::<T, COOP>(sum);
        if row < rows && slot.lane == 0 {
            // SAFETY: `row < rows`, written by lane 0 of its group only.
            unsafe { store_axpby(p.op.y.as_mut_ptr(), row as usize, p.op.alpha, total, p.op.beta) };
        }
        first += slot.row_stride;
    }
}

crate::ptx_entry!(spmv_csr_vector_c2_f32, CsrParams<f32>, csr_vector::<f32, 2>);
crate::ptx_entry!(spmv_csr_vector_c4_f32, CsrParams<f32>, csr_vector::<f32, 4>);
crate::ptx_entry!(spmv_csr_vector_c8_f32, CsrParams<f32>, csr_vector::<f32, 8>);
crate::ptx_entry!(spmv_csr_vector_c16_f32, CsrParams<f32>, csr_vector::<f32, 16>);
crate::ptx_entry!(spmv_csr_vector_c32_f32, CsrParams<f32>, csr_vector::<f32, 32>);
crate::ptx_entry!(spmv_csr_vector_c2_f64, CsrParams<f64>, csr_vector::<f64, 2>);
crate::ptx_entry!(spmv_csr_vector_c4_f64, CsrParams<f64>, csr_vector::<f64, 4>);
crate::ptx_entry!(spmv_csr_vector_c8_f64, CsrParams<f64>, csr_vector::<f64, 8>);
crate::ptx_entry!(spmv_csr_vector_c16_f64, CsrParams<f64>, csr_vector::<f64, 16>);
crate::ptx_entry!(spmv_csr_vector_c32_f64, CsrParams<f64>, csr_vector::<f64, 32>);
