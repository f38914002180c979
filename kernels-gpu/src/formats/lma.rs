//! The local matrix approach (LMA, Reguly & Giles, "Efficient sparse matrix-vector multiplication on
//! cache-based GPUs", InPar 2012, section 8): the finite element operator applied from its element
//! matrices, `y += alpha * sum_e P_eᵀ K_e P_e x`, without assembling `A`.
//!
//! One thread per element: it gathers its `M` nodes' `x` into registers, multiplies by its dense
//! `M x M` matrix row by row and adds each row's result to its node's `y`. The element matrices and
//! the element-to-node map are stored entry-major (entry `n` of every element contiguous, as the paper
//! does), so the 32 lanes of a warp, on 32 consecutive elements, read 32 consecutive words at each
//! of the `M^2 + M` steps. `M` is a compile-time value, so `x` and the node indices stay in
//! registers. A slot without a node (`LMA_NO_NODE`, a Dirichlet node) reads no `x` and writes no
//! `y`; its row and column of `K_e` hold zeros (the host stores them so), so the inner loop has no
//! test.
//!
//! Two variants, both accumulating into a `y` already scaled by `beta` (`spmv_scale_*`):
//! - `spmv_lma_atomic_m<M>_*`: all elements in one launch, `y` updated with atomic adds (f64 ones
//!   included: Hopper has them, the paper's Fermi did not). The order of the adds, and so the
//!   rounding of `y`, varies from run to run.
//! - `spmv_lma_colour_m<M>_*`: one launch per colour, over that colour's elements, which share no
//!   node: a plain read-modify-write of `y`. The colours run in order and each node gets one add per
//!   element, so `y` is the same on every run.
//!
//! Thread mapping: thread `t` handles elements `first + t, first + t + grid, ...` below
//! `first + count`.

use super::FormatReal;
use crate::abi::{LMA_NO_NODE, LmaParams};
use crate::arch::{Load, global_thread, grid_threads};

/// Calls `f(0), f(1), ..., f(M - 1)` as straight-line code. LLVM unrolls a loop of `M` gathers only
/// partly for `M = 25`, which leaves `xs` indexed at run time and so in local memory; spelt out, every
/// index is a constant and `xs` stays in registers.
#[inline(always)]
fn each_slot<const M: usize>(mut f: impl FnMut(usize)) {
    const { assert!(M <= 25, "each_slot spells out 25 slots") };
    macro_rules! calls {
        ($($k:literal)*) => { $( if $k < M { f($k) } )* };
    }
    calls!(0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20 21 22 23 24);
}

/// # Safety
/// `p` describes a validated LMA operator (every node below the length of `x` and `y`, or
/// `LMA_NO_NODE`; `first + count <= elements`) with `M` nodes per element. Without `ATOMIC`, no two
/// elements of `first .. first + count` share a node.
#[inline(always)]
unsafe fn lma<T: FormatReal, const M: usize, const ATOMIC: bool>(p: LmaParams<T>) {
    let elements = p.a.elements as usize;
    let (x, y) = (p.op.x.as_ptr(), p.op.y.as_mut_ptr());
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < p.count as u64 {
        let e = p.first as usize + i as usize;
        let node_at = |k: usize| {
            // SAFETY: `k < M` and `e < elements`: `k * elements + e` is inside the map.
            unsafe { u32::load_nc(p.a.nodes.as_ptr().add(k * elements + e)) }
        };
        let mut xs = [T::ZERO; M];
        each_slot::<M>(|k| {
            let node = node_at(k);
            if node != LMA_NO_NODE {
                // SAFETY: a node that is not `LMA_NO_NODE` is below the length of `x`.
                xs[k] = unsafe { T::load_nc(x.add(node as usize)) };
            }
        });
        for row in 0..M {
            // Read again rather than kept from the gather: the row loop is not unrolled, and a
            // runtime index into an array would put it in local memory. The map's line is in L1.
            let node = node_at(row);
            if node == LMA_NO_NODE {
                continue;
            }
            let mut sum = T::ZERO;
            for (col, &xc) in xs.iter().enumerate() {
                // SAFETY: `(row * M + col) * elements + e < M^2 * elements`, the values' length.
                sum = unsafe { T::load_nc(p.a.values.as_ptr().add((row * M + col) * elements + e)) }
                    .fma(xc, sum);
            }
            // SAFETY: `node` is below the length of `y`. With `ATOMIC` every update is atomic;
            // without, this launch's elements share no node, so no other thread touches `y[node]`.
            unsafe {
                let out = y.add(node as usize);
                if ATOMIC {
                    T::atomic_add(out, p.op.alpha * sum);
                } else {
                    *out = p.op.alpha.fma(sum, *out);
                }
            }
        }
        i += stride;
    }
}

crate::ptx_entry!(spmv_lma_atomic_m4_f32, LmaParams<f32>, lma::<f32, 4, true>);
crate::ptx_entry!(spmv_lma_atomic_m9_f32, LmaParams<f32>, lma::<f32, 9, true>);
crate::ptx_entry!(spmv_lma_atomic_m16_f32, LmaParams<f32>, lma::<f32, 16, true>);
crate::ptx_entry!(spmv_lma_atomic_m25_f32, LmaParams<f32>, lma::<f32, 25, true>);
crate::ptx_entry!(spmv_lma_atomic_m4_f64, LmaParams<f64>, lma::<f64, 4, true>);
crate::ptx_entry!(spmv_lma_atomic_m9_f64, LmaParams<f64>, lma::<f64, 9, true>);
crate::ptx_entry!(spmv_lma_atomic_m16_f64, LmaParams<f64>, lma::<f64, 16, true>);
crate::ptx_entry!(spmv_lma_atomic_m25_f64, LmaParams<f64>, lma::<f64, 25, true>);
crate::ptx_entry!(spmv_lma_colour_m4_f32, LmaParams<f32>, lma::<f32, 4, false>);
crate::ptx_entry!(spmv_lma_colour_m9_f32, LmaParams<f32>, lma::<f32, 9, false>);
crate::ptx_entry!(spmv_lma_colour_m16_f32, LmaParams<f32>, lma::<f32, 16, false>);
crate::ptx_entry!(spmv_lma_colour_m25_f32, LmaParams<f32>, lma::<f32, 25, false>);
crate::ptx_entry!(spmv_lma_colour_m4_f64, LmaParams<f64>, lma::<f64, 4, false>);
crate::ptx_entry!(spmv_lma_colour_m9_f64, LmaParams<f64>, lma::<f64, 9, false>);
crate::ptx_entry!(spmv_lma_colour_m16_f64, LmaParams<f64>, lma::<f64, 16, false>);
crate::ptx_entry!(spmv_lma_colour_m25_f64, LmaParams<f64>, lma::<f64, 25, false>);
