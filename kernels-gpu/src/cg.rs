//! The vector kernels of conjugate gradients (Hestenes & Stiefel 1952; the preconditioned form as in
//! Saad, "Iterative Methods for Sparse Linear Systems", 2nd ed., algorithm 9.1) with a Jacobi
//! preconditioner `z = D⁻¹ r`, for the finite element study of Reguly & Giles (2012), section 8.
//!
//! Every scalar of the recurrence stays on the device, in a [`CgState`], so an iteration is a fixed
//! sequence of two launches with fixed parameters: no host synchronisation, capturable into a CUDA
//! graph and replayable. The host reads the state back when it wants to know whether to go on.
//!
//! # One iteration
//! With `n` unknowns, `s`-byte elements, and `jacobi` the preconditioned variant, the library's
//! product `q = A p`, then `cg_iterate_{plain,jacobi}_*` in three passes with a grid-wide barrier
//! between them:
//!
//! | pass | reads | writes | vector bytes |
//! |---|---|---|---|
//! | `pᵀq`, `alpha = rz / pq` | `p`, `q` | | `2ns` |
//! | `r -= alpha q`, `rᵀz`, `rᵀr`, `beta` | `r`, `q`, (`D⁻¹`) | `r` | `3ns` (`4ns`) |
//! | `x += alpha p`, `p = z + beta p` | `x`, `p`, `r`, (`D⁻¹`) | `x`, `p` | `5ns` (`6ns`) |
//!
//! so `10ns` (`12ns`) of vector traffic beside the product: 80 (96) bytes per unknown in f64. That is
//! the least this recurrence allows: its three grid-wide dependencies (`alpha` needs all of `pᵀq`,
//! `beta` all of `rᵀz`, and the next product all of `p`) split it into three passes, and each pass
//! must read every vector it combines: `p` and `q` for `pᵀq`; `q` again and `r` (`D⁻¹`) once `alpha`
//! is known; `r` (`D⁻¹`) again with `p` once `beta` is known. `x` moves to the last pass, where `p`
//! is read anyway, which saves the read of `p` a separate `x += alpha p` costs. Storing `z` instead of
//! recomputing it from `r` and `D⁻¹` would move the same bytes. The same iteration on cuBLAS (dot,
//! two axpys, the preconditioner, two dots, a scal-and-axpy for `p`) moves `12ns` (`17ns`), and waits
//! for the host at each dot.
//!
//! The passes share one cooperative launch (every block resident at once, so blocks may wait for
//! each other) rather than a launch each: on a small, L2-resident problem each launch costs a
//! dependent start of a few microseconds, far more than its bytes, and a grid barrier costs about
//! one. The grid holds at most what the GPU keeps resident; a block takes the elements of several of
//! the `index::cg_blocks(n)` blocks in turn where `n` needs more.
//!
//! Before the first iteration the host computes `r = b - A x0` with the library's product (copy `b`
//! to `r`, then `alpha = -1`, `beta = 1`), then launches `cg_init_*`, which sets `p = z` and the
//! state. `x` is complete after every `cg_iterate_*`.
//!
//! # Dot products
//! Deterministic, in two stages, fused into the passes that produce their operands. Stage 1: each of
//! the `index::cg_blocks(n)` blocks of elements (a grid stride fixed by `n`) is summed by one block
//! of threads, a butterfly over each warp's lanes and then warp 0, 1, ... in turn, into its slot of
//! `partials`. Stage 2 sums the slots in block order, the same way: in `cg_init_*`, by the block that
//! arrives last on the state's counter (Harris' "threadfence reduction", the release and acquire
//! pattern of `csr/long_rows.rs`); in `cg_iterate_*`, by every block after the barrier, each getting
//! the same totals. Every rounding is then fixed by `n`: the same sums on every run and every GPU,
//! whatever grid the GPU's residency allows.
//!
//! # Stopping on the device
//! `cg_iterate_*` sets `status` when the solve stops (convergence, breakdown, the iteration limit)
//! and does nothing unless it is `CG_RUNNING`: an iteration whose `pᵀq` breaks down stops before it
//! touches a vector, and one that updates `r` also updates `x` and `p`. A graph of `k` iterations
//! replayed past the end of the solve leaves `x` and the state as they were when it stopped, so the
//! host may check only every `k` iterations and still report the exact iteration count. (The product
//! keeps running on the unchanged `p`: wasted, harmless.) Every block reads the state when it starts,
//! and the state changes only after the barriers (in block 0) or in the last block of `cg_init_*`,
//! so all blocks of a launch see the same state.
//!
//! # On several GPUs
//! These kernels are one GPU's: a sum over a GPU's rows is not the sum over the unknowns, and the
//! cooperative `cg_iterate_*` has no point between its passes at which sums could cross the GPUs. A
//! distributed solve instead runs the solver tier's `solve::Pcg` (or `solve::PipelinedCg`) over the
//! distributed space (`host/src/distributed/space.rs`), whose passes leave their sums for one NCCL
//! all-reduce each.
//!
//! Thread mapping: [`CG_BLOCK_THREADS`] threads per block, one element per thread per grid-stride
//! step.

use crate::abi::{
    CG_BLOCK_THREADS, CG_BREAKDOWN_PAP, CG_BREAKDOWN_RZ, CG_CONVERGED, CG_MAX_ITERATIONS, CG_RUNNING,
    CgParams, CgState,
};
use crate::arch::{
    atomic_inc_u32, block_idx, fence_acq_rel_gpu, global_thread, grid_dim, grid_threads, sync_threads,
    thread_idx,
};
use crate::index::cg_blocks;
use crate::real::Real;
use crate::reduce::{grid_sums, grid_totals, store_block_sums};
use core::ops::{Div, Neg};

/// An element type of the CG kernels: [`Real`] plus what the scalar updates need.
pub(crate) trait CgReal: Real + Div<Output = Self> + Neg<Output = Self> + PartialOrd {
    /// The machine epsilon, for the Krylov solvers' tests of a singular matrix.
    const EPSILON: Self;
    fn from_u32(v: u32) -> Self;
    fn is_finite(self) -> bool;
    /// The correctly rounded square root (`sqrt.rn`), for the Krylov solvers' norms.
    fn sqrt(self) -> Self;
}

impl CgReal for f32 {
    const EPSILON: Self = f32::EPSILON;

    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        v as f32
    }

    #[inline(always)]
    fn is_finite(self) -> bool {
        f32::is_finite(self)
    }

    #[inline(always)]
    fn sqrt(self) -> Self {
        core::f32::math::sqrt(self)
    }
}

impl CgReal for f64 {
    const EPSILON: Self = f64::EPSILON;

    #[inline(always)]
    fn from_u32(v: u32) -> Self {
        f64::from(v)
    }

    #[inline(always)]
    fn is_finite(self) -> bool {
        f64::is_finite(self)
    }

    #[inline(always)]
    fn sqrt(self) -> Self {
        core::f64::math::sqrt(self)
    }
}

/// Whether `v` is a positive finite number (false for NaN).
#[inline(always)]
fn positive<T: CgReal>(v: T) -> bool {
    v > T::ZERO && v.is_finite()
}

/// Reads field `field` of the state. Volatile: the last block of the running kernel may write the
/// state, so the read must not go through the read-only path or be cached across the launch.
macro_rules! load {
    ($s:expr, $field:ident) => {
        (&raw const (*$s).$field).read_volatile()
    };
}

/// Writes field `field` of the state (see [`load!`]).
macro_rules! store {
    ($s:expr, $field:ident, $v:expr) => {
        (&raw mut (*$s).$field).write_volatile($v)
    };
}

/// Waits until every block of the launch has called it: a grid-wide barrier, which a cooperative
/// launch (every block resident at once) makes safe. Thread 0 of each block reads the barrier's
/// epoch, arrives on `state.arrivals` (released by the fence before it); the last to arrive (the
/// counter wraps to 0 for the next barrier) advances the epoch, and the others spin until they see
/// it advance, then acquire. Everything any block wrote before the barrier is visible to every block
/// after it.
///
/// # Safety
/// Every thread of every block calls it (grid-uniform control flow), the launch is cooperative, and
/// `state.arrivals` is 0 at the first barrier of the launch.
#[inline(always)]
unsafe fn grid_barrier<T>(state: *mut CgState<T>) {
    // SAFETY: every thread reaches the barriers (caller); `state` is valid and its `arrivals` and
    // `epoch` are changed only here and atomically or by the last arrival, after every block read
    // `epoch`.
    unsafe {
        sync_threads();
        if thread_idx() == 0 {
            let epoch = load!(state, epoch);
            fence_acq_rel_gpu();
            let blocks = grid_dim();
            if atomic_inc_u32(&raw mut (*state).arrivals, blocks - 1) == blocks - 1 {
                fence_acq_rel_gpu();
                store!(state, epoch, epoch.wrapping_add(1));
            } else {
                while load!(state, epoch) == epoch {}
            }
            fence_acq_rel_gpu();
        }
        sync_threads();
    }
}

/// `z_i = D⁻¹_i r_i`, or `r_i` without the preconditioner.
///
/// # Safety
/// With `JACOBI`, `inv_diag` holds more than `i` elements no thread writes during the kernel.
#[inline(always)]
unsafe fn precondition<T: Real, const JACOBI: bool>(inv_diag: *const T, i: usize, r: T) -> T {
    // SAFETY: guaranteed by the caller.
    if JACOBI { unsafe { T::load_nc(inv_diag.add(i)) * r } } else { r }
}

/// `cg_init_*`: `p = z = D⁻¹ r` and the state: `rz`, `rr`, `bb`, `tol_rr`, the status.
///
/// # Safety
/// `p` describes one solve: vectors of `n` elements (`r = b - A x0`), scratch and a zeroed state;
/// launched as [`CgParams`] says.
#[inline(always)]
unsafe fn init<T: CgReal, const JACOBI: bool>(p: CgParams<T>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let (mut rz, mut rr, mut bb) = (T::ZERO, T::ZERO, T::ZERO);
    while i < p.n as u64 {
        let i_ = i as usize;
        // SAFETY: `i < n`; `b`, `r` and `inv_diag` are read-only here, and `p[i]` is this thread's.
        unsafe {
            let r = T::load_nc(p.r.as_ptr().add(i_));
            let b = T::load_nc(p.b.as_ptr().add(i_));
            let z = precondition::<T, JACOBI>(p.inv_diag.as_ptr(), i_, r);
            *p.p.as_mut_ptr().add(i_) = z;
            rz = r.fma(z, rz);
            rr = r.fma(r, rr);
            bb = b.fma(b, bb);
        }
        i += stride;
    }
    let s = p.state.as_mut_ptr();
    // SAFETY: launched as `CgParams` says, with a zeroed state.
    if let Some(totals) = unsafe { grid_sums([rz, rr, bb], p.partials.as_mut_ptr(), &raw mut (*s).arrivals) }
        && thread_idx() == 0
    {
        // SAFETY: `state` is valid; only this thread writes it in this launch.
        unsafe { init_scalars(&p, totals) };
    }
}

/// The state from `rz`, `rr`, `bb` over all unknowns, and the history's first entry.
///
/// # Safety
/// `p.state` is valid and no other thread touches it during the call; `p.history` holds
/// `p.history_capacity` elements.
#[inline(always)]
unsafe fn init_scalars<T: CgReal>(p: &CgParams<T>, [rz, rr, bb]: [T; 3]) {
    let s = p.state.as_mut_ptr();
    let tol_rr = p.rel_tol * p.rel_tol * bb;
    // A residual that is not finite is a breakdown before anything else: where `bb` overflowed,
    // `tol_rr` is infinite too and would pass it as converged.
    let status = if !rr.is_finite() {
        CG_BREAKDOWN_RZ
    } else if rr <= tol_rr {
        CG_CONVERGED
    } else if !positive(rz) {
        CG_BREAKDOWN_RZ
    } else if p.max_iterations == 0 {
        CG_MAX_ITERATIONS
    } else {
        CG_RUNNING
    };
    // SAFETY: `state` is valid; only this thread writes it in this launch.
    unsafe {
        store!(s, tol_rr, tol_rr);
        store!(s, rz, rz);
        store!(s, rr, rr);
        store!(s, bb, bb);
        store!(s, iterations, 0);
        store!(s, status, status);
        record(p, 0, rr);
    }
}

/// `history[k] = rr` where `k` is below the history's capacity.
///
/// # Safety
/// `p.history` holds `p.history_capacity` elements; one thread of the launch calls it.
#[inline(always)]
unsafe fn record<T: CgReal>(p: &CgParams<T>, k: u32, rr: T) {
    if k < p.history_capacity {
        // SAFETY: the caller's contract, `k` below the capacity.
        unsafe { *p.history.as_mut_ptr().add(k as usize) = rr };
    }
}

/// `alpha` from `pq` over all unknowns, or the breakdown status.
///
/// # Safety
/// As [`init_scalars`].
#[inline(always)]
unsafe fn pq_scalars<T: CgReal>(p: &CgParams<T>, pq: T) {
    let s = p.state.as_mut_ptr();
    // SAFETY: the caller's contract.
    unsafe {
        let alpha = load!(s, rz) / pq;
        store!(s, pq, pq);
        if positive(pq) && alpha.is_finite() {
            store!(s, alpha, alpha);
        } else {
            store!(s, status, CG_BREAKDOWN_PAP);
        }
    }
}

/// `rz`, `rr`, `beta`, the iteration count and the status from `rz` and `rr` over all unknowns,
/// and the history's entry of the iteration.
///
/// # Safety
/// As [`init_scalars`].
#[inline(always)]
unsafe fn update_scalars<T: CgReal>(p: &CgParams<T>, [rz, rr]: [T; 2]) {
    let s = p.state.as_mut_ptr();
    // SAFETY: the caller's contract.
    unsafe {
        let iterations = load!(s, iterations) + 1;
        let status = if !rr.is_finite() {
            CG_BREAKDOWN_RZ
        } else if rr <= load!(s, tol_rr) {
            CG_CONVERGED
        } else if !positive(rz) {
            CG_BREAKDOWN_RZ
        } else if iterations >= p.max_iterations {
            CG_MAX_ITERATIONS
        } else {
            CG_RUNNING
        };
        store!(s, beta, rz / load!(s, rz));
        store!(s, rz, rz);
        store!(s, rr, rr);
        store!(s, iterations, iterations);
        store!(s, status, status);
        record(p, iterations, rr);
    }
}

/// The partials slot of `pᵀq` in [`iterate`]: apart from the slots of `rᵀz` and `rᵀr` (0 and 1),
/// because a block may store its update's sums while another still reads the `pᵀq` partials.
const PQ_SLOT: usize = 2;

/// `cg_iterate_*`: the three vector passes of an iteration in one cooperative launch, with a
/// grid-wide barrier where the recurrence needs a whole sum (see the module doc): `pᵀq` and
/// `alpha`; `r -= alpha q`, `rᵀz`, `rᵀr` and `beta`; `x += alpha p` and `p = z + beta p`. The grid
/// may be smaller than [`cg_blocks`]`(n)`: each block then takes the elements and the partial-sum
/// slot of several of those blocks in turn, so every sum is rounded the same whatever the grid.
/// Every block computes the totals itself, in block order, so they are the same in every block;
/// block 0 writes the state once every block has read it.
///
/// # Safety
/// As [`init`], after it and the product `q = A p`; a cooperative launch of at most `cg_blocks(n)`
/// blocks of [`CG_BLOCK_THREADS`] threads with the dynamic shared memory [`CgParams`] states.
#[inline(always)]
unsafe fn iterate<T: CgReal, const JACOBI: bool>(p: CgParams<T>) {
    let s = p.state.as_mut_ptr();
    // SAFETY: `state` is valid; block 0 writes it only after the last barrier, once every block has
    // read it here.
    let (status, rz_old) = unsafe { (load!(s, status), load!(s, rz)) };
    if status != CG_RUNNING {
        return;
    }
    let (n, virtual_blocks) = (u64::from(p.n), cg_blocks(p.n));
    let stride = u64::from(virtual_blocks) * u64::from(CG_BLOCK_THREADS);
    let partials = p.partials.as_mut_ptr();
    // The elements of virtual block `vb`, as the launch of `cg_blocks(n)` blocks gives them.
    let first = |vb: u32| u64::from(vb) * u64::from(CG_BLOCK_THREADS) + u64::from(thread_idx());
    let (px, pp, pr) = (p.x.as_mut_ptr(), p.p.as_mut_ptr(), p.r.as_mut_ptr());

    // `pᵀq`. `p` is written in the last pass, so it is read through the coherent path throughout.
    let mut vb = block_idx();
    while vb < virtual_blocks {
        let (mut i, mut pq) = (first(vb), T::ZERO);
        while i < n {
            // SAFETY: `i < n`; `q` is read-only in this launch.
            unsafe { pq = (*pp.add(i as usize)).fma(T::load_nc(p.q.as_ptr().add(i as usize)), pq) };
            i += stride;
        }
        // SAFETY: block-uniform (`vb` is); slot `vb < cg_blocks(n) <= CG_MAX_BLOCKS`, this block's.
        unsafe { store_block_sums([pq], partials, PQ_SLOT, vb) };
        vb += grid_dim();
    }
    // SAFETY: grid-uniform (every block passed the status test); a cooperative launch (caller).
    unsafe { grid_barrier(s) };
    // SAFETY: every block stored its `pᵀq` slots before the barrier.
    let [pq] = unsafe { grid_totals::<T, 1>(partials, PQ_SLOT, virtual_blocks) };
    let alpha = rz_old / pq;
    if block_idx() == 0 && thread_idx() == 0 {
        // SAFETY: every block read the state before the barrier, and reads it no more.
        unsafe { pq_scalars(&p, pq) };
    }
    // The same test as `pq_scalars`', in every block.
    if !(positive(pq) && alpha.is_finite()) {
        return;
    }

    // `r -= alpha q`, `rᵀz`, `rᵀr`.
    let mut vb = block_idx();
    while vb < virtual_blocks {
        let (mut i, mut rz, mut rr) = (first(vb), T::ZERO, T::ZERO);
        while i < n {
            let i_ = i as usize;
            // SAFETY: `i < n`; `r[i]` is this thread's in every pass; `q` and `inv_diag` are read-only.
            unsafe {
                let r = (-alpha).fma(T::load_nc(p.q.as_ptr().add(i_)), *pr.add(i_));
                *pr.add(i_) = r;
                rz = r.fma(precondition::<T, JACOBI>(p.inv_diag.as_ptr(), i_, r), rz);
                rr = r.fma(r, rr);
            }
            i += stride;
        }
        // Without the preconditioner `rz` and `rr` are the same sum: reduce it once.
        // SAFETY: as for `pᵀq`, in the slots of `rᵀz` and `rᵀr`.
        unsafe {
            if JACOBI {
                store_block_sums([rz, rr], partials, 0, vb);
            } else {
                store_block_sums([rr], partials, 0, vb);
            }
        }
        vb += grid_dim();
    }
    // SAFETY: grid-uniform: every block took the same `alpha` branch.
    unsafe { grid_barrier(s) };
    // SAFETY: every block stored its slots before the barrier.
    let [rz, rr] = unsafe {
        if JACOBI {
            grid_totals::<T, 2>(partials, 0, virtual_blocks)
        } else {
            let [rr] = grid_totals::<T, 1>(partials, 0, virtual_blocks);
            [rr, rr]
        }
    };
    let beta = rz / rz_old;

    // `x += alpha p`, `p = z + beta p`: the step completes the iteration whatever the new status.
    let mut vb = block_idx();
    while vb < virtual_blocks {
        let mut i = first(vb);
        while i < n {
            let i_ = i as usize;
            // SAFETY: `i < n`; `x[i]`, `p[i]` and `r[i]` are this thread's; `inv_diag` is read-only.
            unsafe {
                let old_p = *pp.add(i_);
                *px.add(i_) = alpha.fma(old_p, *px.add(i_));
                *pp.add(i_) =
                    beta.fma(old_p, precondition::<T, JACOBI>(p.inv_diag.as_ptr(), i_, *pr.add(i_)));
            }
            i += stride;
        }
        vb += grid_dim();
    }
    if block_idx() == 0 && thread_idx() == 0 {
        // SAFETY: as for `pq_scalars` above.
        unsafe { update_scalars(&p, [rz, rr]) };
    }
}

crate::ptx_entry!(cg_init_plain_f32, CgParams<f32>, init::<f32, false>);
crate::ptx_entry!(cg_init_jacobi_f32, CgParams<f32>, init::<f32, true>);
crate::ptx_entry!(cg_iterate_plain_f32, CgParams<f32>, iterate::<f32, false>);
crate::ptx_entry!(cg_iterate_jacobi_f32, CgParams<f32>, iterate::<f32, true>);
crate::ptx_entry!(cg_init_plain_f64, CgParams<f64>, init::<f64, false>);
crate::ptx_entry!(cg_init_jacobi_f64, CgParams<f64>, init::<f64, true>);
crate::ptx_entry!(cg_iterate_plain_f64, CgParams<f64>, iterate::<f64, false>);
crate::ptx_entry!(cg_iterate_jacobi_f64, CgParams<f64>, iterate::<f64, true>);
