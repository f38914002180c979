//! The kernels of the Krylov solvers (`host/src/solve/`): BiCGSTAB and GMRES(m) are written once,
//! on the host, as a fixed sequence of these launches and the library's products, with every
//! scalar of the recurrence on the device. Nothing waits for the host between two convergence
//! checks, so a batch of iterations can be captured into a CUDA graph and replayed.
//!
//! # The state and the scalars
//! A solve owns a [`KrylovState`] (status, iteration count, GMRES's column count) and an array of
//! scalars, addressed by slot: the dot products write their sums into slots, the vector ops take
//! their coefficients from slots ([`Coef`]), and `krylov_scalars_*` runs a short program of ops
//! ([`ScalarOp`]) over them in one thread: the divisions of the recurrence, its breakdown tests,
//! the convergence test and the iteration count, GMRES's Givens rotations and back-substitution.
//! Solver-specific code is on the host, in the order of the ops; the kernels know no solver.
//!
//! # Gates and stopping
//! Every launch carries a gate, the statuses in which it runs, and reads the status when it
//! starts. The status changes only in `krylov_scalars_*`, which is never concurrent with another
//! launch of the solve on the stream, so every block of a launch sees one status. Once a program
//! stops the solve (converged, the limit, a breakdown), every later launch of the iteration does
//! nothing, and so do those of the batches after it: `x` keeps the iterate the solve stopped at and
//! the count is exact however many iterations the host enqueued. (The products and a caller's
//! preconditioner run ungated; they write only the solver's scratch vectors.)
//!
//! # Dot products
//! Deterministic as CG's (`cg.rs`, "Dot products"): a grid of `index::cg_blocks(n)` blocks, each
//! summing its grid-stride share into a partial by a fixed tree, and the last block to arrive
//! summing the partials in block order. `krylov_dots_*` sums up to [`KRYLOV_MAX_DOTS`] pairs in one
//! pass (BiCGSTAB's `tᵀs` and `tᵀt` share the reads of `t`); `krylov_basis_dots_*` sums a vector
//! against every column of a basis, [`KRYLOV_BASIS_GROUP`] columns per pass of a block, which is
//! classical Gram-Schmidt's one reduction for all columns instead of modified Gram-Schmidt's one per
//! column.
//!
//! # GMRES
//! The scalars of a cycle of `m` steps sit from a base slot ([`gmres_scalars`](crate::abi::gmres_scalars)): the Hessenberg
//! matrix `H` by columns of `m + 1` (`H[i][j]` at `base + j (m + 1) + i`), the cosines and sines of
//! the Givens rotations (`m` each), the right-hand side `g` of the least-squares problem (`m + 1`)
//! and its solution `y` (`m`). Step `j` builds column `j` of `H` (the two Gram-Schmidt passes, the
//! norm), [`KRYLOV_OP_GIVENS`] rotates it and updates `g`, whose last entry is the residual norm of
//! the least-squares problem, so the convergence test needs no residual. When a step converges or
//! reaches the limit before the cycle's last, the status becomes [`KRYLOV_CYCLE_END`]: the
//! remaining steps are gated off, the update of `x` (gated to run then too) uses
//! [`KrylovState::columns`], and [`KRYLOV_OP_END_CYCLE`] settles the status.

use crate::abi::{
    CG_MAX_BLOCKS, Coef, KRYLOV_AXPY, KRYLOV_BASIS_GROUP, KRYLOV_BREAKDOWN, KRYLOV_CONVERGED,
    KRYLOV_CYCLE_END, KRYLOV_DIAG, KRYLOV_FLAG_COUNT, KRYLOV_FLAG_CYCLE, KRYLOV_MAX_DOTS,
    KRYLOV_MAX_ITERATIONS, KRYLOV_NO_SLOT, KRYLOV_NO_TAG, KRYLOV_OP_ADD_RANGE, KRYLOV_OP_BACKSOLVE,
    KRYLOV_OP_COLUMNS, KRYLOV_OP_CONVERGED, KRYLOV_OP_COPY, KRYLOV_OP_COPY_RANGE, KRYLOV_OP_COUNT,
    KRYLOV_OP_DIV, KRYLOV_OP_END_CYCLE, KRYLOV_OP_FINITE, KRYLOV_OP_GIVENS, KRYLOV_OP_LIMIT, KRYLOV_OP_MUL,
    KRYLOV_OP_NONZERO, KRYLOV_OP_POSITIVE, KRYLOV_OP_RECORD, KRYLOV_OP_SET, KRYLOV_OP_SQRT, KRYLOV_OP_START,
    KRYLOV_P_UPDATE, KRYLOV_RUNNING, KRYLOV_SCALE, KRYLOV_SLOT_RESIDUAL, KRYLOV_STATE_COLUMNS,
    KRYLOV_UNGATED, KrylovBasisParams, KrylovCgUpdateParams, KrylovCommon, KrylovDotsParams,
    KrylovScalarParams, KrylovState, KrylovVectorParams, ScalarOp, WARP_SIZE,
};
use crate::arch::{
    block_dim, dynamic_shared, fence_acq_rel_gpu, global_thread, grid_dim, grid_threads, sync_threads,
    thread_idx,
};
use crate::cg::CgReal;
use crate::real::Real;
use crate::reduce::{grid_sums, group_sum};

/// Reads field `field` of the state, volatile: a scalar program of an earlier launch wrote it.
macro_rules! load {
    ($s:expr, $field:ident) => {
        (&raw const (*$s).$field).read_volatile()
    };
}

/// Writes field `field` of the state (one thread of `krylov_scalars_*`).
macro_rules! store {
    ($s:expr, $field:ident, $v:expr) => {
        (&raw mut (*$s).$field).write_volatile($v)
    };
}

/// Whether the launch's gate lets it run in the solve's current status.
///
/// # Safety
/// The gate is [`KRYLOV_UNGATED`], or `c.state` is a valid state no thread writes during the launch (only `krylov_scalars_*` writes
/// it, and its own thread reads it through this before writing).
#[inline(always)]
unsafe fn open<T>(c: &KrylovCommon<T>) -> bool {
    if c.gate == KRYLOV_UNGATED {
        return true;
    }
    // SAFETY: the caller's contract.
    let status = unsafe { load!(c.state.as_ptr(), status) };
    c.gate & (1 << status) != 0
}

/// The value of a coefficient.
///
/// # Safety
/// `k.slot` is [`KRYLOV_NO_SLOT`] or a slot of `c.scalars` no thread writes during the launch.
#[inline(always)]
unsafe fn coef<T: Real>(c: &KrylovCommon<T>, k: Coef<T>) -> T {
    if k.slot == KRYLOV_NO_SLOT {
        k.scale
    } else {
        // SAFETY: the caller's contract.
        k.scale * unsafe { c.scalars.as_ptr().add(k.slot as usize).read_volatile() }
    }
}

/// `krylov_vector_*`: one vector op over `n` elements, a grid stride of one element per thread.
///
/// # Safety
/// The vectors the op names hold `n` elements; `out` is one of them or overlaps none; the slots of
/// the coefficients are in the scalars.
#[inline(always)]
unsafe fn vector<T: Real>(p: KrylovVectorParams<T>) {
    let c = &p.common;
    // SAFETY: the caller's contract.
    if !unsafe { open(c) } {
        return;
    }
    // SAFETY: the caller's contract.
    let (a, b) = unsafe { (coef(c, p.a), coef(c, p.b)) };
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(c.n) {
        let i_ = i as usize;
        // SAFETY: `i < n`; each element is read and written by this thread only, so `out` may be
        // an input.
        unsafe {
            let out = p.out.as_mut_ptr().add(i_);
            let x = *p.x.as_ptr().add(i_);
            *out = match p.op {
                KRYLOV_AXPY => a.fma(x, *p.y.as_ptr().add(i_)),
                KRYLOV_P_UPDATE => a.fma(b.fma(x, *out), *p.y.as_ptr().add(i_)),
                KRYLOV_SCALE => a * x,
                KRYLOV_DIAG => *p.y.as_ptr().add(i_) * x,
                _ => x,
            };
        }
        i += stride;
    }
}

/// `krylov_dots_*`: `count` dot products in one pass, into their slots.
///
/// # Safety
/// `x[k]` and `y[k]` hold `n` elements for `k < count <= KRYLOV_MAX_DOTS`; the out slots are in the
/// scalars; `partials` as [`KrylovDotsParams`] says; launched on `cg_blocks(n)` blocks of
/// `KRYLOV_BLOCK_THREADS` with `krylov_shared_bytes`; the state's `arrivals` is 0.
#[inline(always)]
unsafe fn dots<T: Real>(p: KrylovDotsParams<T>) {
    let c = &p.common;
    // SAFETY: the caller's contract.
    if !unsafe { open(c) } {
        return;
    }
    let count = p.count.min(KRYLOV_MAX_DOTS) as usize;
    let mut sums = [T::ZERO; KRYLOV_MAX_DOTS as usize];
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(c.n) {
        for k in 0..count {
            // SAFETY: `i < n`; the vectors are read-only here.
            unsafe {
                let (x, y) = (
                    T::load_nc(p.x[k].as_ptr().add(i as usize)),
                    T::load_nc(p.y[k].as_ptr().add(i as usize)),
                );
                sums[k] = x.fma(y, sums[k]);
            }
        }
        i += stride;
    }
    let arrivals = c.state.as_mut_ptr().cast::<u32>().wrapping_add(ARRIVALS);
    // SAFETY: the caller's contract; the gate test above is uniform across the grid.
    if let Some(totals) = unsafe { grid_sums(sums, p.partials.as_mut_ptr(), arrivals) }
        && thread_idx() == 0
    {
        for k in 0..count {
            // SAFETY: the out slots are in the scalars; only this thread writes them.
            unsafe { c.scalars.as_mut_ptr().add(p.out[k] as usize).write_volatile(totals[k]) };
        }
    }
}

/// `krylov_cg_update_*`: preconditioned CG's update after `α` ([`KrylovCgUpdateParams`]): what
/// `krylov_vector_*` (`r -= α q`, Jacobi's `z = d r`, `x += α p`) and `krylov_dots_*` (`rᵀz`,
/// `rᵀr`) do in four launches, in one, each element read and written once. The same operations in
/// the same order on the same grid, so the results equal the four launches' bit for bit; it saves
/// three launches and the re-reads of `r`, `z` and the second pass over `r` (`docs/PERF.md`,
/// section 24).
///
/// # Safety
/// `p`, `q`, `x`, `r` and, unless null, `inv_diag` and `z` hold `n` elements; `r`, `x` and `z`
/// overlap no other vector; the slots of `alpha`, `minus_alpha` and `out` are in the scalars;
/// launched as [`dots`] is.
#[inline(always)]
unsafe fn cg_update<T: Real>(p: KrylovCgUpdateParams<T>) {
    let c = &p.common;
    // SAFETY: the caller's contract.
    if !unsafe { open(c) } {
        return;
    }
    // SAFETY: the caller's contract.
    let (alpha, minus_alpha) = unsafe { (coef(c, p.alpha), coef(c, p.minus_alpha)) };
    let jacobi = p.inv_diag.addr() != 0;
    let mut sums = [T::ZERO; KRYLOV_MAX_DOTS as usize];
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(c.n) {
        let i_ = i as usize;
        // SAFETY: `i < n`; element `i` of every vector is this thread's alone.
        unsafe {
            let r = p.r.as_mut_ptr().add(i_);
            let residual = minus_alpha.fma(T::load_nc(p.q.as_ptr().add(i_)), *r);
            *r = residual;
            let z = if jacobi {
                let z = T::load_nc(p.inv_diag.as_ptr().add(i_)) * residual;
                *p.z.as_mut_ptr().add(i_) = z;
                z
            } else {
                residual
            };
            let x = p.x.as_mut_ptr().add(i_);
            *x = alpha.fma(T::load_nc(p.p.as_ptr().add(i_)), *x);
            sums[0] = residual.fma(z, sums[0]);
            sums[1] = residual.fma(residual, sums[1]);
        }
        i += stride;
    }
    let arrivals = c.state.as_mut_ptr().cast::<u32>().wrapping_add(ARRIVALS);
    // SAFETY: the caller's contract; the gate test above is uniform across the grid.
    if let Some(totals) = unsafe { grid_sums(sums, p.partials.as_mut_ptr(), arrivals) }
        && thread_idx() == 0
    {
        for (k, &slot) in p.out.iter().enumerate() {
            // SAFETY: the out slots are in the scalars; only this thread writes them.
            unsafe { c.scalars.as_mut_ptr().add(slot as usize).write_volatile(totals[k]) };
        }
    }
}

/// The index of [`KrylovState::arrivals`] among the state's `u32` fields.
const ARRIVALS: usize = core::mem::offset_of!(KrylovState, arrivals) / size_of::<u32>();

/// The basis' column count of a launch: its own, or the state's, at most `most`.
///
/// # Safety
/// As [`open`].
#[inline(always)]
unsafe fn columns<T>(p: &KrylovBasisParams<T>) -> u32 {
    // SAFETY: the caller's contract.
    let count = if p.columns == KRYLOV_STATE_COLUMNS {
        unsafe { load!(p.common.state.as_ptr(), columns) }
    } else {
        p.columns
    };
    count.min(p.most)
}

/// Column `j` of the basis.
///
/// # Safety
/// `j` is below the basis' columns.
#[inline(always)]
unsafe fn column<T>(p: &KrylovBasisParams<T>, j: usize) -> *const T {
    // SAFETY: the caller's contract; the address table is read-only during the launch.
    unsafe { (*p.basis.as_ptr().add(j)).as_ptr() }
}

/// `krylov_basis_dots_*`: `scalars[slot + j] = V[:, j]ᵀ w` for every column `j`, a warp per column,
/// [`KRYLOV_BASIS_GROUP`] columns (a block's warps) per pass.
///
/// A warp sums its column's products over windows of 32 consecutive elements, one window per block
/// and sweep of the grid, eight windows' loads in flight, with one running sum per thread; the
/// block's 8 warps read the same window of `w`, from L1 after the first. A thread needs 32
/// registers, so the SMs hold the whole grid: 80% of the DRAM bandwidth at 4 M unknowns, 347 µs for
/// 29 columns (Nsight Compute, PERF.md section 19). Summing the group's 8 columns in every thread,
/// each with its own sum, took 154 registers a thread (one block an SM, 12.5% of the warps, 59%);
/// with four windows in flight a warp per column reached only 55%.
///
/// # Safety
/// `basis` holds the addresses of the columns, each of `n` elements, and `w` `n` elements (not a
/// column written in the launch); the slots and `partials`
/// ([`krylov_partials`](crate::abi::krylov_partials) of at least the columns) fit them; launched as
/// [`dots`].
#[inline(always)]
unsafe fn basis_dots<T: Real>(p: KrylovBasisParams<T>) {
    const G: usize = KRYLOV_BASIS_GROUP as usize;
    const WARP: u64 = WARP_SIZE as u64;
    const UNROLL: u64 = 8;
    let c = &p.common;
    // SAFETY: the caller's contract.
    if !unsafe { open(c) } {
        return;
    }
    // SAFETY: as `open`.
    let cols = unsafe { columns(&p) } as usize;
    let (block, n) = (crate::arch::block_idx(), u64::from(c.n));
    let (warp, lane) = ((thread_idx() / WARP_SIZE) as usize, u64::from(thread_idx() % WARP_SIZE));
    let stride = u64::from(grid_dim()) * WARP;
    let mut first = 0;
    while first < cols {
        let k = first + warp;
        // `k` is the same in every lane of the warp, so the whole warp sums or none of it.
        if k < cols {
            // SAFETY: `k < cols`.
            let column = unsafe { column(&p, k) };
            // SAFETY: called with indices below `n` only (both loops below); `w` and the basis are
            // read-only here.
            let product = |i: u64| unsafe {
                (T::load_nc(column.add(i as usize)), T::load_nc(p.w.as_ptr().add(i as usize)))
            };
            let (mut sum, mut i) = (T::ZERO, u64::from(block) * WARP + lane);
            // `UNROLL` elements' loads issued before their fmas, which keep the order of the
            // elements: a warp keeps `UNROLL` windows of its column in flight.
            while i + (UNROLL - 1) * stride < n {
                let loaded: [(T, T); UNROLL as usize] =
                    core::array::from_fn(|u| product(i + u as u64 * stride));
                sum = loaded.iter().fold(sum, |sum, &(v, w)| v.fma(w, sum));
                i += UNROLL * stride;
            }
            while i < n {
                let (v, w) = product(i);
                sum = v.fma(w, sum);
                i += stride;
            }
            let sum = group_sum::<T, WARP_SIZE>(sum);
            if lane == 0 {
                // SAFETY: slot `k * CG_MAX_BLOCKS + block` is inside `partials` (the caller's
                // contract: `k` below the columns, `block` below the grid) and this warp's alone.
                // The fence makes the store visible at the GPU's scope before the block arrives
                // (`grid_sums`), whichever warp wrote it.
                unsafe {
                    p.partials
                        .as_mut_ptr()
                        .add(k * CG_MAX_BLOCKS as usize + block as usize)
                        .write_volatile(sum);
                    fence_acq_rel_gpu();
                }
            }
        }
        first += G;
    }
    let arrivals = c.state.as_mut_ptr().cast::<u32>().wrapping_add(ARRIVALS);
    // SAFETY: every block stored its partials before arriving (`grid_sums` releases and acquires).
    if unsafe { grid_sums::<T, 0>([], p.partials.as_mut_ptr(), arrivals) }.is_none() {
        return;
    }
    // The last block adds the partials as the first stage summed the products: a warp per column,
    // each lane every 32nd block's partial in block order, then the lanes' butterfly; the same order
    // whichever block arrives last. (A block-wide sum of all 8 columns at once cost the kernel 142
    // registers a thread, which the first stage then paid in occupancy.)
    let blocks = u64::from(grid_dim());
    let mut first = 0;
    while first < cols {
        let k = first + warp;
        if k < cols {
            let (mut total, mut b) = (T::ZERO, lane);
            while b < blocks {
                // SAFETY: the partials were stored and made visible before the last block's arrival;
                // slot `k * CG_MAX_BLOCKS + b` is inside them (`b` below the grid).
                total = total
                    + unsafe {
                        p.partials.as_ptr().add(k * CG_MAX_BLOCKS as usize + b as usize).read_volatile()
                    };
                b += WARP;
            }
            let total = group_sum::<T, WARP_SIZE>(total);
            if lane == 0 {
                // SAFETY: the slots fit the columns (the caller's contract).
                unsafe { c.scalars.as_mut_ptr().add(p.slot as usize + k).write_volatile(total) };
            }
        }
        first += G;
    }
}

/// `krylov_basis_combine_*`: `w = (accumulate ? w : 0) + scale Σ_j scalars[slot + j] V[:, j]`, as
/// fmas in the order of `j`.
///
/// # Safety
/// As [`basis_dots`], without the partials, with
/// [`krylov_combine_shared_bytes`](crate::abi::krylov_combine_shared_bytes) of dynamic shared
/// memory for `most` columns.
#[inline(always)]
unsafe fn basis_combine<T: Real>(p: KrylovBasisParams<T>) {
    let c = &p.common;
    // SAFETY: the caller's contract.
    if !unsafe { open(c) } {
        return;
    }
    // SAFETY: as `open`.
    let cols = unsafe { columns(&p) } as usize;
    // The columns' addresses and scaled coefficients, read once per block into shared memory rather
    // than once per element: a volatile load of each coefficient for every element cost more than
    // the columns themselves (GMRES(30) at 4 M unknowns ran at 0.6x the cuBLAS baseline).
    let addresses = dynamic_shared::<*const T>();
    // SAFETY: the block has `most` addresses and `most` elements of dynamic shared memory, addresses
    // first (the caller's contract), `cols <= most`.
    let coefficients = unsafe { addresses.add(p.most as usize).cast::<T>() };
    let mut k = thread_idx() as usize;
    while k < cols {
        // SAFETY: `k < cols`, inside both arrays; the scalars are read-only during the launch.
        unsafe {
            *addresses.add(k) = column(&p, k);
            *coefficients.add(k) = p.scale * c.scalars.as_ptr().add(p.slot as usize + k).read_volatile();
        }
        k += block_dim() as usize;
    }
    // SAFETY: every thread of the block reaches it (the gate test is uniform across the launch).
    unsafe { sync_threads() };
    let (mut i, stride) = (global_thread(), grid_threads());
    while i < u64::from(c.n) {
        // SAFETY: `i < n`; shared memory and the basis are read-only here, `w[i]` is this thread's.
        unsafe {
            let w = p.w.as_mut_ptr().add(i as usize);
            let mut acc = if p.accumulate != 0 { *w } else { T::ZERO };
            for j in 0..cols {
                acc = (*coefficients.add(j)).fma(T::load_nc((*addresses.add(j)).add(i as usize)), acc);
            }
            *w = acc;
        }
        i += stride;
    }
}

/// The machine that runs a scalar program: the scalars and the state, in one thread.
struct Program<T> {
    s: *mut T,
    state: *mut KrylovState,
}

impl<T: CgReal> Program<T> {
    /// Slot `k`.
    ///
    /// # Safety
    /// `k` is a slot of the scalars.
    #[inline(always)]
    unsafe fn get(&self, k: u32) -> T {
        // SAFETY: the caller's contract.
        unsafe { self.s.add(k as usize).read_volatile() }
    }

    /// # Safety
    /// As [`Program::get`].
    #[inline(always)]
    unsafe fn set(&self, k: u32, v: T) {
        // SAFETY: the caller's contract.
        unsafe { self.s.add(k as usize).write_volatile(v) }
    }

    /// Stops the solve: `status`, or in a GMRES cycle (`cycle`) the end of the cycle, to become
    /// `status` after its update; the residual slot keeps `residual`'s value.
    ///
    /// # Safety
    /// As [`Program::get`] for `residual`; the state is valid.
    #[inline(always)]
    unsafe fn finish(&self, status: u32, cycle: bool, residual: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            self.set(KRYLOV_SLOT_RESIDUAL, self.get(residual));
            if cycle {
                store!(self.state, pending, status);
                store!(self.state, status, KRYLOV_CYCLE_END);
            } else {
                store!(self.state, status, status);
            }
        }
    }

    /// A breakdown at the op tagged `tag`, on the value in `slot`.
    ///
    /// # Safety
    /// The state is valid.
    #[inline(always)]
    unsafe fn breakdown(&self, tag: u32, slot: u32) {
        // SAFETY: the caller's contract.
        unsafe {
            store!(self.state, breakdown, tag);
            store!(self.state, breakdown_slot, slot);
            store!(self.state, status, KRYLOV_BREAKDOWN);
        }
    }

    /// Runs one op (see the `KRYLOV_OP_*` constants and [`run`]).
    ///
    /// # Safety
    /// Every slot the op names is in the scalars; the state is valid.
    #[inline(always)]
    unsafe fn op(&self, op: &ScalarOp<T>) {
        let bad = |v: T| v == T::ZERO || !v.is_finite();
        let cycle = op.c & KRYLOV_FLAG_CYCLE != 0;
        // SAFETY: the caller's contract, for every slot and the state.
        unsafe {
            match op.code {
                KRYLOV_OP_SET => self.set(op.out, op.value),
                KRYLOV_OP_COPY => self.set(op.out, self.get(op.a)),
                KRYLOV_OP_MUL => self.set(op.out, self.get(op.a) * self.get(op.b)),
                KRYLOV_OP_DIV => {
                    let den = self.get(op.b);
                    if op.tag != KRYLOV_NO_TAG && bad(den) {
                        self.breakdown(op.tag, op.b);
                    } else {
                        self.set(op.out, self.get(op.a) / den);
                    }
                }
                KRYLOV_OP_SQRT => self.set(op.out, self.get(op.a).sqrt()),
                KRYLOV_OP_NONZERO if bad(self.get(op.a)) => self.breakdown(op.tag, op.a),
                KRYLOV_OP_FINITE if !self.get(op.a).is_finite() => self.breakdown(op.tag, op.a),
                KRYLOV_OP_POSITIVE if !(self.get(op.a) > T::ZERO && self.get(op.a).is_finite()) => {
                    self.breakdown(op.tag, op.a)
                }
                KRYLOV_OP_START => {
                    store!(self.state, iterations, 0);
                    store!(self.state, max_iterations, op.a);
                    store!(self.state, done, op.b);
                    store!(self.state, columns, 0);
                    store!(self.state, status, KRYLOV_RUNNING);
                }
                KRYLOV_OP_CONVERGED if self.get(op.a) <= self.get(op.b) => {
                    if op.c & KRYLOV_FLAG_COUNT != 0 {
                        store!(self.state, iterations, load!(self.state, iterations) + 1);
                    }
                    self.finish(KRYLOV_CONVERGED, cycle, op.a);
                }
                KRYLOV_OP_COUNT => store!(self.state, iterations, load!(self.state, iterations) + 1),
                KRYLOV_OP_RECORD => {
                    // In u64, so that the sum cannot wrap; below `b`, it fits a u32 again.
                    let k = u64::from(load!(self.state, done))
                        + u64::from(load!(self.state, iterations))
                        + u64::from(op.c);
                    if k < u64::from(op.b) {
                        self.set(op.out + k as u32, self.get(op.a));
                    }
                }
                KRYLOV_OP_LIMIT if load!(self.state, iterations) >= load!(self.state, max_iterations) => {
                    let status = if cycle { KRYLOV_RUNNING } else { KRYLOV_MAX_ITERATIONS };
                    self.finish(status, cycle, op.a);
                }
                // The two range ops loop forward over ranges the host keeps apart
                // (`check_program`, `host/src/enqueue/krylov.rs`): with the destination inside the
                // source, they would read slots they had written.
                KRYLOV_OP_ADD_RANGE => {
                    for k in 0..op.b {
                        self.set(op.out + k, self.get(op.out + k) + self.get(op.a + k));
                    }
                }
                KRYLOV_OP_COPY_RANGE => {
                    for k in 0..op.b {
                        self.set(op.out + k, self.get(op.a + k));
                    }
                }
                KRYLOV_OP_GIVENS => self.givens(op),
                KRYLOV_OP_COLUMNS => store!(self.state, columns, op.a),
                KRYLOV_OP_BACKSOLVE => self.backsolve(op.b, op.c),
                KRYLOV_OP_END_CYCLE if load!(self.state, status) == KRYLOV_CYCLE_END => {
                    store!(self.state, status, load!(self.state, pending));
                }
                _ => {}
            }
        }
    }

    /// [`KRYLOV_OP_GIVENS`]: step `a` of a cycle of `b` steps whose scalars start at slot `c`:
    /// applies the earlier rotations to column `a` of `H`, makes the rotation that zeroes
    /// `H[a + 1][a]`, applies it to `g`, and writes `g[a + 1]²` to slot `out`. A rotated diagonal `d`
    /// at most `(a + 1) ε` times the column's norm (`H` singular to working precision: the rounding of
    /// the rotations leaves `d` tiny rather than 0) breaks down with `tag`, `d` in `out`.
    ///
    /// # Safety
    /// As [`Program::op`].
    #[inline(always)]
    unsafe fn givens(&self, op: &ScalarOp<T>) {
        let (j, m, base) = (op.a, op.b, op.c);
        let h = base + j * (m + 1);
        let (cs, sn) = (base + m * (m + 1), base + m * (m + 1) + m);
        let g = sn + m;
        // SAFETY: every slot is inside the cycle's scalars (the caller's contract).
        unsafe {
            let below = self.get(h + j + 1);
            let mut norm2 = below * below;
            for i in 0..=j {
                let hi = self.get(h + i);
                norm2 = hi.fma(hi, norm2);
            }
            for i in 0..j {
                let (hi, hn, c, s) =
                    (self.get(h + i), self.get(h + i + 1), self.get(cs + i), self.get(sn + i));
                self.set(h + i, c.fma(hi, s * hn));
                self.set(h + i + 1, (-s).fma(hi, c * hn));
            }
            let a = self.get(h + j);
            let d = a.fma(a, below * below).sqrt();
            // `!(d > ...)`: a NaN breaks down too.
            if !(d > T::from_u32(j + 1) * T::EPSILON * norm2.sqrt()) {
                self.set(op.out, d);
                self.breakdown(op.tag, op.out);
                return;
            }
            let b = below;
            let (c, s) = (a / d, b / d);
            self.set(cs + j, c);
            self.set(sn + j, s);
            self.set(h + j, d);
            self.set(h + j + 1, T::ZERO);
            let gj = self.get(g + j);
            let next = -(s * gj);
            self.set(g + j + 1, next);
            self.set(g + j, c * gj);
            self.set(op.out, next * next);
        }
    }

    /// [`KRYLOV_OP_BACKSOLVE`]: `y = H⁻¹ g` over the cycle's columns so far (upper triangular after
    /// the rotations; its diagonal is non-zero, else [`Program::givens`] broke down), for a cycle of
    /// `m` steps whose scalars start at slot `base`.
    ///
    /// # Safety
    /// As [`Program::op`].
    #[inline(always)]
    unsafe fn backsolve(&self, m: u32, base: u32) {
        let g = base + m * (m + 1) + 2 * m;
        let y = g + m + 1;
        // SAFETY: every slot is inside the cycle's scalars (the caller's contract); the state is
        // valid.
        unsafe {
            let cols = load!(self.state, columns).min(m);
            let mut i = cols;
            while i > 0 {
                i -= 1;
                let mut acc = self.get(g + i);
                for k in i + 1..cols {
                    acc = (-self.get(base + k * (m + 1) + i)).fma(self.get(y + k), acc);
                }
                self.set(y + i, acc / self.get(base + i * (m + 1) + i));
            }
        }
    }
}

/// `krylov_scalars_*`: the program's ops in order, in thread 0, until one stops the solve or ends a
/// cycle (changes the status to another than the program started in, other than running: a start
/// goes on to its first tests).
///
/// # Safety
/// Every slot the ops name is in the scalars; the state is valid; launched as one block.
#[inline(always)]
unsafe fn run<T: CgReal>(p: KrylovScalarParams<T>) {
    let c = &p.common;
    // SAFETY: the caller's contract.
    if thread_idx() != 0 || !unsafe { open(c) } {
        return;
    }
    let program = Program { s: c.scalars.as_mut_ptr(), state: c.state.as_mut_ptr() };
    // SAFETY: the state is valid (the caller's contract).
    let status = unsafe { load!(program.state, status) };
    for op in &p.ops[..(p.count as usize).min(p.ops.len())] {
        // SAFETY: the caller's contract.
        unsafe { program.op(op) };
        // SAFETY: as above.
        let now = unsafe { load!(program.state, status) };
        if now != status && now != KRYLOV_RUNNING {
            return;
        }
    }
}

crate::ptx_entry!(krylov_vector_f32, KrylovVectorParams<f32>, vector::<f32>);
crate::ptx_entry!(krylov_vector_f64, KrylovVectorParams<f64>, vector::<f64>);
crate::ptx_entry!(krylov_dots_f32, KrylovDotsParams<f32>, dots::<f32>);
crate::ptx_entry!(krylov_dots_f64, KrylovDotsParams<f64>, dots::<f64>);
crate::ptx_entry!(krylov_basis_dots_f32, KrylovBasisParams<f32>, basis_dots::<f32>);
crate::ptx_entry!(krylov_basis_dots_f64, KrylovBasisParams<f64>, basis_dots::<f64>);
crate::ptx_entry!(krylov_basis_combine_f32, KrylovBasisParams<f32>, basis_combine::<f32>);
crate::ptx_entry!(krylov_basis_combine_f64, KrylovBasisParams<f64>, basis_combine::<f64>);
crate::ptx_entry!(krylov_scalars_f32, KrylovScalarParams<f32>, run::<f32>);
crate::ptx_entry!(krylov_scalars_f64, KrylovScalarParams<f64>, run::<f64>);
crate::ptx_entry!(krylov_cg_update_f32, KrylovCgUpdateParams<f32>, cg_update::<f32>);
crate::ptx_entry!(krylov_cg_update_f64, KrylovCgUpdateParams<f64>, cg_update::<f64>);
