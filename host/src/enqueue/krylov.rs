//! The launches of the Krylov solvers' kernels (`kernels-gpu/src/krylov.rs`, whose module doc gives
//! the scheme): [`KrylovDevice`] owns a solve's device state, scalars and partial sums, and enqueues
//! the vector ops, the dot products and the scalar programs on them, each checked (lengths, slots,
//! contexts) so that the solver tier above calls them safely. [`DeviceBasis`] is a GMRES basis: its
//! columns separate vectors of the solve (a product writes one; over several GPUs, a part on each),
//! with each GPU's device table of the addresses of its parts.

use super::launch::{copy, launch, prefetch_l2};
use crate::device::{DeviceVector, Gpu, VectorMut, VectorRef, addr};
use crate::formats::convert::{index32, narrow};
use crate::iterative::SolveError;
use crate::reference::ilu::{IluFactors, Levels};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, CudaViewMut, DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{
    self as abi, BLOCK_JACOBI_MAX, BlockJacobiParams, Coef, DevicePtr as AbiPtr, ILU_RUN_ROWS,
    IluSolveParams, KRYLOV_AXPY, KRYLOV_BLOCK_THREADS, KRYLOV_DIAG, KRYLOV_MAX_DOTS, KRYLOV_MAX_OPS,
    KRYLOV_MAX_RESTART, KRYLOV_NO_SLOT, KRYLOV_OP_ADD_RANGE, KRYLOV_OP_BACKSOLVE, KRYLOV_OP_COLUMNS,
    KRYLOV_OP_CONVERGED, KRYLOV_OP_COPY, KRYLOV_OP_COPY_RANGE, KRYLOV_OP_COUNT, KRYLOV_OP_DIV,
    KRYLOV_OP_END_CYCLE, KRYLOV_OP_FINITE, KRYLOV_OP_GIVENS, KRYLOV_OP_LIMIT, KRYLOV_OP_MUL,
    KRYLOV_OP_NONZERO, KRYLOV_OP_POSITIVE, KRYLOV_OP_RECORD, KRYLOV_OP_SET, KRYLOV_OP_SQRT, KRYLOV_OP_START,
    KRYLOV_P_UPDATE, KRYLOV_SCALE, KRYLOV_SLOT_RESIDUAL, KRYLOV_STATE_COLUMNS, KRYLOV_UNGATED,
    KrylovBasisParams, KrylovCgUpdateParams, KrylovCommon, KrylovDotsParams, KrylovScalarParams, KrylovState,
    KrylovVectorParams, L2PrefetchParams, PrefetchSpan, ScalarOp, WARP_SIZE, gmres_scalars,
    krylov_combine_shared_bytes, krylov_partials, krylov_shared_bytes,
};
use kernels_gpu::index::{cg_blocks, grid_blocks};
use std::marker::PhantomData;

/// A [`KrylovState`] as a device buffer's element.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceKrylovState(pub KrylovState);

// SAFETY: `KrylovState` is `#[repr(C)]` of `u32` fields, the layout the kernels declare: every bit
// pattern is a valid value, and it holds no pointer.
unsafe impl DeviceRepr for DeviceKrylovState {}
// SAFETY: all zeros is `KRYLOV_NOT_STARTED` with no iterations, which the start programs expect.
unsafe impl ValidAsZeroBits for DeviceKrylovState {}

/// A coefficient: `scale` times the scalar in `slot`.
pub(crate) fn coef<T>(scale: T, slot: u32) -> Coef<T> {
    Coef { scale, slot }
}

/// A constant coefficient.
pub(crate) fn constant<T>(scale: T) -> Coef<T> {
    Coef { scale, slot: KRYLOV_NO_SLOT }
}

/// The device side of one Krylov solve over vectors of `n` elements.
#[derive(Debug)]
pub(crate) struct KrylovDevice<T> {
    state: CudaSlice<DeviceKrylovState>,
    scalars: CudaSlice<T>,
    partials: CudaSlice<T>,
    n: u32,
    /// The basis columns the partials have room for.
    columns: u32,
}

/// What a solve reads back at a convergence check.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Snapshot<T> {
    pub state: KrylovState,
    /// The residual the status was decided on ([`KRYLOV_SLOT_RESIDUAL`]).
    pub residual: T,
    /// The value in the slot of a breakdown ([`KrylovState::breakdown_slot`]).
    pub breakdown_value: T,
}

impl<T: Scalar> KrylovDevice<T> {
    /// The state, `scalars` slots and room for the sums of a basis of `columns` columns, for vectors
    /// of `n` elements.
    pub fn new(gpu: &Gpu, n: usize, scalars: u32, columns: u32) -> Result<Self> {
        let n = narrow("the unknowns", n)?;
        Ok(Self {
            state: gpu.alloc_zeros(1)?,
            scalars: gpu.alloc_zeros(scalars as usize)?,
            partials: gpu.alloc_zeros(krylov_partials(columns) as usize)?,
            n,
            columns,
        })
    }

    /// Enqueues the reset of the state to not started, before a solve's start program.
    pub fn reset(&mut self, gpu: &Gpu) -> Result<()> {
        Ok(gpu.stream().memset_zeros(&mut self.state)?)
    }

    /// Reads the state and the scalars an outcome needs; waits for the stream.
    pub fn snapshot(&self, gpu: &Gpu) -> Result<Snapshot<T>> {
        let DeviceKrylovState(state) = gpu.stream().clone_dtoh(&self.state)?[0];
        let residual = self.scalar(gpu, KRYLOV_SLOT_RESIDUAL)?;
        let breakdown_value = match state.breakdown_slot {
            slot if (slot as usize) < self.scalars.len() => self.scalar(gpu, slot)?,
            _ => T::ZERO,
        };
        Ok(Snapshot { state, residual, breakdown_value })
    }

    /// Reads scalar `slot` (waits for the stream).
    pub fn scalar(&self, gpu: &Gpu, slot: u32) -> Result<T> {
        self.check_slots(slot, 1)?;
        let view = self.scalars.slice(slot as usize..slot as usize + 1);
        Ok(gpu.stream().clone_dtoh(&view)?[0])
    }

    /// Reads `len` scalars from `first` (waits for the stream).
    pub fn scalars(&self, gpu: &Gpu, first: u32, len: u32) -> Result<Vec<T>> {
        if len == 0 {
            return Ok(Vec::new());
        }
        self.check_slots(first, len)?;
        let view = self.scalars.slice(first as usize..first as usize + len as usize);
        Ok(gpu.stream().clone_dtoh(&view)?)
    }

    /// The scalars `first..first + len`, writable in place by another stream's work: a reduction
    /// over GPUs (an NCCL all-reduce) between the pass of dot products that left a GPU's sums
    /// there and the program that reads the whole ones.
    pub fn slots_mut(&mut self, first: u32, len: u32) -> Result<CudaViewMut<'_, T>> {
        self.check_slots(first, len)?;
        Ok(self.scalars.slice_mut(first as usize..first as usize + len as usize))
    }

    /// The basis columns the partial sums have room for.
    pub fn columns(&self) -> u32 {
        self.columns
    }

    fn common(&self, gpu: &Gpu, gate: u32) -> KrylovCommon<T> {
        let state = addr(&self.state, gpu);
        KrylovCommon { state: AbiPtr::new(state.addr()), scalars: addr(&self.scalars, gpu), gate, n: self.n }
    }

    /// Refuses slots `first..first + len` not all among the scalars ([`check_slots`]).
    fn check_slots(&self, first: u32, len: u32) -> Result<()> {
        check_slots(first, len, self.scalars.len())
    }

    /// Refuses a coefficient whose slot is not among the scalars; [`KRYLOV_NO_SLOT`] is a constant,
    /// the one place where it names no slot rather than slot `u32::MAX`.
    fn check_coef(&self, k: Coef<T>) -> Result<()> {
        if k.slot == KRYLOV_NO_SLOT { Ok(()) } else { self.check_slots(k.slot, 1) }
    }

    fn check_vector(&self, gpu: &Gpu, v: &DeviceVector<T>) -> Result<AbiPtr<T>> {
        gpu.check_operand("a solver vector", v, self.n as usize)?;
        Ok(addr(v.as_slice(), gpu))
    }

    /// Enqueues a vector op whose output is `out`; `x` and `y` as the op reads them (the address of
    /// `out` where the op reads its output, [`KRYLOV_AXPY`]'s `y`, [`KRYLOV_P_UPDATE`]'s `out`).
    fn vector_op(
        &self,
        gpu: &Gpu,
        gate: u32,
        op: u32,
        (a, b): (Coef<T>, Coef<T>),
        (x, y, out): (AbiPtr<T>, AbiPtr<T>, AbiPtr<T>),
    ) -> Result<()> {
        self.check_coef(a)?;
        self.check_coef(b)?;
        let params = KrylovVectorParams { common: self.common(gpu, gate), op, a, b, x, y, out };
        // SAFETY: every vector was checked to hold `n` elements of `gpu`'s context, each element is
        // read and written by one thread, and the slots are inside the scalars.
        unsafe {
            launch(
                gpu,
                gpu.kernel::<T>(abi::KRYLOV_VECTOR)?,
                cg_blocks(self.n),
                KRYLOV_BLOCK_THREADS,
                0,
                &params,
            )
        }
    }

    /// `y = fma(a, x, y)`.
    pub fn axpy(
        &self,
        gpu: &Gpu,
        gate: u32,
        a: Coef<T>,
        x: &DeviceVector<T>,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        let (x, y) = (self.check_vector(gpu, x)?, self.check_vector(gpu, y)?);
        self.vector_op(gpu, gate, KRYLOV_AXPY, (a, constant(T::ZERO)), (x, y, y))
    }

    /// `p = fma(a, fma(b, v, p), r)`: BiCGSTAB's new search direction.
    pub fn p_update(
        &self,
        gpu: &Gpu,
        gate: u32,
        (a, b): (Coef<T>, Coef<T>),
        v: &DeviceVector<T>,
        r: &DeviceVector<T>,
        p: &mut DeviceVector<T>,
    ) -> Result<()> {
        let (v, r, p) = (self.check_vector(gpu, v)?, self.check_vector(gpu, r)?, self.check_vector(gpu, p)?);
        self.vector_op(gpu, gate, KRYLOV_P_UPDATE, (a, b), (v, r, p))
    }

    /// `out = a * x`; `x` may be `out` (`None`).
    pub fn scale(
        &self,
        gpu: &Gpu,
        gate: u32,
        a: Coef<T>,
        x: Option<&DeviceVector<T>>,
        out: &mut DeviceVector<T>,
    ) -> Result<()> {
        let out = self.check_vector(gpu, out)?;
        let x = x.map_or(Ok(out), |x| self.check_vector(gpu, x))?;
        self.vector_op(gpu, gate, KRYLOV_SCALE, (a, constant(T::ZERO)), (x, out, out))
    }

    /// `basis[j] = a * x` on this GPU's part `i` of column `j` (`(j, i)`): the one write of a basis
    /// column, which leaves its buffer the one the basis' table holds ([`DeviceBasis`]).
    pub fn scale_to_column<V: GpuParts<T>>(
        &self,
        gpu: &Gpu,
        gate: u32,
        a: Coef<T>,
        x: &DeviceVector<T>,
        basis: &mut DeviceBasis<T, V>,
        (j, i): (usize, usize),
    ) -> Result<()> {
        self.scale(gpu, gate, a, Some(x), basis.part_mut(j, i)?)
    }

    /// `scalars[slot] = xᵀy` for each `(x, y, slot)`, in one pass.
    pub fn dots(
        &self,
        gpu: &Gpu,
        gate: u32,
        pairs: &[(&DeviceVector<T>, &DeviceVector<T>, u32)],
    ) -> Result<()> {
        if pairs.is_empty() || pairs.len() > KRYLOV_MAX_DOTS as usize {
            return Err(Error::InvalidKernel(format!("{} dot products in one pass", pairs.len())));
        }
        let unset = AbiPtr::new(0);
        let mut params = KrylovDotsParams {
            common: self.common(gpu, gate),
            count: 0,
            out: [KRYLOV_NO_SLOT; KRYLOV_MAX_DOTS as usize],
            x: [unset; KRYLOV_MAX_DOTS as usize],
            y: [unset; KRYLOV_MAX_DOTS as usize],
            partials: addr(&self.partials, gpu),
        };
        for (k, &(x, y, slot)) in pairs.iter().enumerate() {
            self.check_slots(slot, 1)?;
            params.x[k] = self.check_vector(gpu, x)?;
            params.y[k] = self.check_vector(gpu, y)?;
            params.out[k] = slot;
            params.count += 1;
        }
        self.sums(gpu, gpu.kernel::<T>(abi::KRYLOV_DOTS)?, &params)
    }

    /// Preconditioned CG's update after `α` (slot `alpha`) in one launch: `r -= α q`, `z = d r`
    /// with Jacobi's inverse diagonal `d` (`jacobi`, `d` and `z`) or `z = r` (`None`), `x += α p`,
    /// then `scalars[out.0] = rᵀz`, `scalars[out.1] = rᵀr`: bit for bit what [`Self::axpy`],
    /// [`diag_scale`], [`Self::dots`] and [`Self::axpy`] give in four (`krylov_cg_update_*`).
    #[allow(clippy::too_many_arguments)] // CG's six vectors and its slots, each named
    pub fn cg_update(
        &self,
        gpu: &Gpu,
        gate: u32,
        alpha: u32,
        (p, q): (&DeviceVector<T>, &DeviceVector<T>),
        x: &mut DeviceVector<T>,
        r: &mut DeviceVector<T>,
        jacobi: Option<(&CudaSlice<T>, &mut DeviceVector<T>)>,
        out: (u32, u32),
    ) -> Result<()> {
        for slot in [alpha, out.0, out.1] {
            self.check_slots(slot, 1)?;
        }
        let (p, q) = (self.check_vector(gpu, p)?, self.check_vector(gpu, q)?);
        let (x, r) = (self.check_vector(gpu, x)?, self.check_vector(gpu, r)?);
        let (inv_diag, z) = match jacobi {
            Some((d, z)) => {
                if d.len() != self.n as usize {
                    let (expected, got) = (self.n as usize, d.len());
                    return Err(Error::DimensionMismatch { what: "the inverse diagonal", expected, got });
                }
                gpu.check_context("the inverse diagonal", d)?;
                (addr(d, gpu), self.check_vector(gpu, z)?)
            }
            None => (AbiPtr::new(0), AbiPtr::new(0)),
        };
        let params = KrylovCgUpdateParams {
            common: self.common(gpu, gate),
            alpha: coef(T::from_f64(1.0), alpha),
            minus_alpha: coef(T::from_f64(-1.0), alpha),
            p,
            q,
            x,
            r,
            inv_diag,
            z,
            out: [out.0, out.1],
            partials: addr(&self.partials, gpu),
        };
        self.sums(gpu, gpu.kernel::<T>(abi::KRYLOV_CG_UPDATE)?, &params)
    }

    /// Launches a kernel of two-stage sums on `cg_blocks(n)` blocks.
    fn sums<P>(&self, gpu: &Gpu, f: &cudarc::driver::CudaFunction, params: &P) -> Result<()> {
        #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
        let shared = krylov_shared_bytes(size_of::<T>() as u32);
        // SAFETY: the vectors hold `n` elements of `gpu`'s context, the slots are inside the scalars,
        // the partials hold `krylov_partials` of at least the sums; the state's arrivals counter
        // ends every launch at 0 (it wraps) and starts at 0 (zeroed).
        unsafe { launch(gpu, f, cg_blocks(self.n), KRYLOV_BLOCK_THREADS, shared, params) }
    }

    /// `scalars[slot + j] = basis[j]ᵀ w` for the `columns`.
    pub fn basis_dots(
        &self,
        gpu: &Gpu,
        gate: u32,
        basis: BasisPart<'_, T>,
        columns: Columns,
        slot: u32,
        w: &DeviceVector<T>,
    ) -> Result<()> {
        let params = self.basis_params(gpu, gate, basis, columns, slot, T::ZERO, false, w)?;
        self.sums(gpu, gpu.kernel::<T>(abi::KRYLOV_BASIS_DOTS)?, &params)
    }

    /// `w = (accumulate ? w : 0) + scale Σ_j scalars[slot + j] basis[j]` over the `columns`.
    #[allow(clippy::too_many_arguments)]
    pub fn basis_combine(
        &self,
        gpu: &Gpu,
        gate: u32,
        basis: BasisPart<'_, T>,
        columns: Columns,
        slot: u32,
        scale: T,
        accumulate: bool,
        w: &mut DeviceVector<T>,
    ) -> Result<()> {
        let params = self.basis_params(gpu, gate, basis, columns, slot, scale, accumulate, w)?;
        #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
        let shared = krylov_combine_shared_bytes(params.most, size_of::<T>() as u32);
        let f = gpu.kernel::<T>(abi::KRYLOV_BASIS_COMBINE)?;
        // SAFETY: as `sums`, without the partials, with the shared memory of `most` columns (at most
        // 16.4 KB: `most` is checked against the basis, at most KRYLOV_MAX_RESTART + 1 columns); each
        // element of `w` is one thread's.
        unsafe { launch(gpu, f, cg_blocks(self.n), KRYLOV_BLOCK_THREADS, shared, &params) }
    }

    #[allow(clippy::too_many_arguments)]
    fn basis_params(
        &self,
        gpu: &Gpu,
        gate: u32,
        basis: BasisPart<'_, T>,
        columns: Columns,
        slot: u32,
        scale: T,
        accumulate: bool,
        w: &DeviceVector<T>,
    ) -> Result<KrylovBasisParams<T>> {
        let (count, most) = match columns {
            Columns::First(count) => (count, count),
            Columns::State { most } => (KRYLOV_STATE_COLUMNS, most),
        };
        if basis.n != self.n || most > basis.columns || most > self.columns {
            return Err(Error::InvalidKernel(format!("{most} columns of a basis of {}", basis.columns)));
        }
        gpu.check_context("the basis", basis.addresses)?;
        self.check_slots(slot, most)?;
        Ok(KrylovBasisParams {
            common: self.common(gpu, gate),
            basis: AbiPtr::new(addr(basis.addresses, gpu).addr()),
            columns: count,
            most,
            slot,
            scale,
            accumulate: u32::from(accumulate),
            w: self.check_vector(gpu, w)?,
            partials: addr(&self.partials, gpu),
        })
    }

    /// Enqueues a scalar program, refused as [`check_program`] says, with nothing enqueued.
    pub fn program(&self, gpu: &Gpu, gate: u32, ops: &[ScalarOp<T>]) -> Result<()> {
        check_program(ops, self.scalars.len())?;
        let mut params = KrylovScalarParams {
            common: self.common(gpu, gate),
            #[allow(clippy::cast_possible_truncation)] // at most KRYLOV_MAX_OPS
            count: ops.len() as u32,
            ops: [nop(); KRYLOV_MAX_OPS],
        };
        params.ops[..ops.len()].copy_from_slice(ops);
        // SAFETY: `check_program`: at most KRYLOV_MAX_OPS ops the kernel knows, and every slot and
        // range of slots they read or write inside the scalars.
        unsafe { launch(gpu, gpu.kernel::<T>(abi::KRYLOV_SCALARS)?, 1, WARP_SIZE, 0, &params) }
    }
}

/// `z = d * r` elementwise, outside any solve's state: a Jacobi preconditioner's apply.
pub(crate) fn diag_scale<T: Scalar>(
    gpu: &Gpu,
    d: &CudaSlice<T>,
    r: &DeviceVector<T>,
    z: &mut DeviceVector<T>,
) -> Result<()> {
    let n = d.len();
    gpu.check_operand("r", r, n)?;
    gpu.check_operand("z", z, n)?;
    let one = T::from_f64(1.0);
    let (r, d, z) = (addr(r.as_slice(), gpu), addr(d, gpu), addr(z.as_slice(), gpu));
    // SAFETY: `d`, `r` and `z` hold `n` elements of `gpu`'s context (checked above).
    unsafe { ungated(gpu, KRYLOV_DIAG, (one, one), (r, d, z), n) }
}

/// `out = fma(a, x, y)` elementwise, outside any solve's state (a preconditioner's), `y` being
/// `out` itself where `None`; `what` names the vectors in a refusal.
pub(crate) fn ungated_axpy<T: Scalar>(
    gpu: &Gpu,
    what: &'static str,
    a: T,
    x: &DeviceVector<T>,
    y: Option<&DeviceVector<T>>,
    out: &mut DeviceVector<T>,
) -> Result<()> {
    let n = out.len();
    gpu.check_context(what, out)?;
    gpu.check_operand(what, x, n)?;
    let y = y.unwrap_or(out);
    gpu.check_operand(what, y, n)?;
    let (x, y, out) = (addr(x.as_slice(), gpu), addr(y.as_slice(), gpu), addr(out.as_slice(), gpu));
    // SAFETY: the three hold `n` elements of `gpu`'s context (checked above).
    unsafe { ungated(gpu, KRYLOV_AXPY, (a, T::ZERO), (x, y, out), n) }
}

/// `out = a * x` elementwise, outside any solve's state (a preconditioner's), `x` being `out`
/// itself where `None`; `what` names the vectors in a refusal.
pub(crate) fn ungated_scale<T: Scalar>(
    gpu: &Gpu,
    what: &'static str,
    a: T,
    x: Option<&DeviceVector<T>>,
    out: &mut DeviceVector<T>,
) -> Result<()> {
    let n = out.len();
    gpu.check_context(what, out)?;
    let x = x.unwrap_or(out);
    gpu.check_operand(what, x, n)?;
    let (x, out) = (addr(x.as_slice(), gpu), addr(out.as_slice(), gpu));
    // SAFETY: both hold `n` elements of `gpu`'s context (checked above).
    unsafe { ungated(gpu, KRYLOV_SCALE, (a, T::ZERO), (x, out, out), n) }
}

/// Launches the vector op `op` with the constant coefficients `(a, b)` on `(x, y, out)`, ungated:
/// it reads no solve's state or scalars.
///
/// # Safety
/// `x`, `y` and `out` are addresses of `gpu`'s context holding `n` elements each.
unsafe fn ungated<T: Scalar>(
    gpu: &Gpu,
    op: u32,
    (a, b): (T, T),
    (x, y, out): (AbiPtr<T>, AbiPtr<T>, AbiPtr<T>),
    n: usize,
) -> Result<()> {
    let common = KrylovCommon {
        state: AbiPtr::new(0),
        scalars: AbiPtr::new(0),
        gate: KRYLOV_UNGATED,
        n: narrow("the unknowns", n)?,
    };
    let params = KrylovVectorParams { common, op, a: constant(a), b: constant(b), x, y, out };
    // SAFETY: the caller's contract; each element is read and written by one thread, an ungated
    // launch reads no state, and the coefficients name no slot.
    unsafe {
        launch(
            gpu,
            gpu.kernel::<T>(abi::KRYLOV_VECTOR)?,
            cg_blocks(common.n),
            KRYLOV_BLOCK_THREADS,
            0,
            &params,
        )
    }
}

/// `z = B⁻¹ r` with block-Jacobi's `inverses` of order `n` in blocks of `block` (the layout of
/// `reference::block_jacobi::BlockInverse`): a preconditioner's apply, outside any solve's state.
pub(crate) fn block_jacobi<T: Scalar>(
    gpu: &Gpu,
    inverses: &CudaSlice<T>,
    n: usize,
    block: u32,
    r: &DeviceVector<T>,
    z: &mut DeviceVector<T>,
) -> Result<()> {
    if block == 0 {
        return Err(SolveError::InvalidBlockSize { value: 0, limit: BLOCK_JACOBI_MAX as usize }.into());
    }
    gpu.check_operand("r", r, n)?;
    gpu.check_operand("z", z, n)?;
    let entries = n.saturating_mul(block as usize);
    gpu.check_operand("the block-Jacobi inverses", inverses, entries)?;
    let n = narrow("the unknowns", n)?;
    let (inverses, r, z) = (addr(inverses, gpu), addr(r.as_slice(), gpu), addr(z.as_slice(), gpu));
    let params = BlockJacobiParams { inverses, r, z, n, block };
    // SAFETY: `inverses` holds `block * n` elements, `r` and `z` hold `n`, all of `gpu`'s context
    // (checked above); `r` and `z` are two vectors, so they do not overlap; `block >= 1`.
    unsafe {
        launch(gpu, gpu.kernel::<T>(abi::BLOCK_JACOBI)?, cg_blocks(n), KRYLOV_BLOCK_THREADS, 0, &params)
    }
}

/// ILU(0)'s factors and level schedules on the device (`reference::ilu::IluFactors`): each solve's
/// triangle laid out in its schedule's order ([`Scheduled`]), what `kernels-gpu/src/ilu.rs` solves
/// with, valid by construction. The factors' CSR itself is not uploaded.
#[derive(Debug)]
pub(crate) struct DeviceIlu<T> {
    pub(super) lower: DeviceSchedule<T>,
    pub(super) upper: DeviceSchedule<T>,
    n: usize,
}

/// One triangular solve on the device: its rows by level, where each level starts in them, its
/// triangle in their order ([`Scheduled`]), and the launches that solve them ([`ilu_launches`]).
#[derive(Debug)]
pub(super) struct DeviceSchedule<T> {
    pub(super) rows: CudaSlice<u32>,
    pub(super) starts: CudaSlice<u32>,
    offsets: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    pub(super) values: CudaSlice<T>,
    pub(super) pivots: CudaSlice<T>,
    levels: usize,
    pub(super) launches: Vec<IluLaunch>,
    /// The arrays an apply brings into the L2 before the solve's launches, where they fit
    /// ([`DeviceSchedule::prefetch_params`]).
    prefetch: Option<L2PrefetchParams>,
}

impl<T> DeviceSchedule<T> {
    /// The `l2_prefetch` of the arrays this solve reads for every row, where they take at most half
    /// the L2 of `gpu`; `None` past that. A run of narrow levels waits on each level's loads, and
    /// those the product or the vector passes between two applies evicted would each cost the level
    /// a trip to DRAM (docs/PERF.md, section 26: BiCGSTAB + ILU(0) on fem-q2, 812 ms without the
    /// prefetch, 722 ms with it). Half is a margin chosen, not measured: arrays past the whole L2
    /// would evict their own first lines before the solve reached them, and below half they leave
    /// the vectors and part of the other solve's arrays their room (fem-q2's take about 10 MB a
    /// solve, a fifth of an H100's L2).
    fn prefetch_params(&self, gpu: &Gpu) -> Option<L2PrefetchParams> {
        fn span<E>(slice: &CudaSlice<E>, gpu: &Gpu) -> PrefetchSpan {
            let bytes = slice.len() as u64 * size_of::<E>() as u64;
            PrefetchSpan { start: AbiPtr::new(addr(slice, gpu).addr()), bytes }
        }
        let s = self;
        let spans = [
            span(&s.rows, gpu),
            span(&s.offsets, gpu),
            span(&s.cols, gpu),
            span(&s.values, gpu),
            span(&s.pivots, gpu),
        ];
        let bytes: u64 = spans.iter().map(|s| s.bytes).sum();
        (bytes <= gpu.l2_bytes() / 2).then_some(L2PrefetchParams { spans })
    }
}

/// One triangular solve's triangle in its schedule's order, as `IluSolveParams` states it: the row
/// at position `k` (`rows[k]`) has its entries, its diagonal left out, at `offsets[k] ..
/// offsets[k + 1]` in column order, and (`U` only; empty for `L`) its pivot at `pivots[k]`. The
/// threads of a level then read their rows' extents, columns and values at consecutive addresses,
/// and the extent without the row index first (a dependent load less a level), where the CSR put
/// each row's at its row, a line apart on a grid's anti-diagonal. The two solves' copies hold each
/// value of the factors once (the diagonal as `U`'s pivots) and replace the CSR on the device: the
/// diagonal's column indices and positions go (`8 n` bytes), a second offset array comes
/// (`4 (n + 1)`), so the factors take `4 (n - 1)` bytes less than the CSR did.
#[derive(Debug, Clone, PartialEq)]
struct Scheduled<T> {
    offsets: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
    pivots: Vec<T>,
}

impl<T: Scalar> Scheduled<T> {
    /// `L`'s entries (`upper` false) or `U`'s and its pivots, for the rows of `levels` in their order.
    /// The entry count fits `u32` (the caller's check).
    fn new(factors: &IluFactors<T>, levels: &Levels, upper: bool) -> Self {
        let ((offsets, cols, values), diagonal) = (factors.csr(), factors.diagonal_positions());
        let n = levels.rows.len();
        let mut out = Self {
            offsets: Vec::with_capacity(n + 1),
            cols: Vec::new(),
            values: Vec::new(),
            pivots: Vec::with_capacity(if upper { n } else { 0 }),
        };
        out.offsets.push(0);
        for &row in &levels.rows {
            let (row, d) = (row as usize, diagonal[row as usize]);
            let entries = if upper { d + 1..offsets[row + 1] } else { offsets[row]..d };
            out.cols.extend(cols[entries.clone()].iter().map(|&c| index32(c)));
            out.values.extend_from_slice(&values[entries]);
            out.offsets.push(index32(out.cols.len()));
            if upper {
                out.pivots.push(values[d]);
            }
        }
        out
    }
}

/// One launch of a triangular solve: `levels` levels from `first_level`, on `grid` blocks of
/// `block` threads (one block when `levels > 1`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IluLaunch {
    pub first_level: u32,
    pub levels: u32,
    pub grid: u32,
    pub block: u32,
}

/// The launches of a solve whose level `l` holds `starts[l + 1] - starts[l]` rows: each level wider
/// than `ILU_RUN_ROWS` alone, on as many blocks of `KRYLOV_BLOCK_THREADS` as its rows need; each run
/// of consecutive narrower levels in one block of `ILU_RUN_ROWS` threads (fewer for a run of narrower
/// ones, whole warps), so that the run costs a launch and a barrier a level.
pub(crate) fn ilu_launches(starts: &[u32]) -> Vec<IluLaunch> {
    let mut launches: Vec<IluLaunch> = Vec::new();
    let mut run: Option<(u32, u32, u32)> = None; // (first level, levels, widest)
    let close = |run: Option<(u32, u32, u32)>, launches: &mut Vec<IluLaunch>| {
        if let Some((first_level, levels, widest)) = run {
            let block = widest.next_multiple_of(WARP_SIZE).clamp(WARP_SIZE, ILU_RUN_ROWS);
            launches.push(IluLaunch { first_level, levels, grid: 1, block });
        }
    };
    for (level, w) in (0u32..).zip(starts.windows(2)) {
        let rows = w[1] - w[0];
        if rows > ILU_RUN_ROWS {
            close(run.take(), &mut launches);
            let grid = grid_blocks(u64::from(rows), KRYLOV_BLOCK_THREADS);
            launches.push(IluLaunch { first_level: level, levels: 1, grid, block: KRYLOV_BLOCK_THREADS });
        } else {
            run = Some(match run {
                Some((first, levels, widest)) => (first, levels + 1, widest.max(rows)),
                None => (level, 1, rows),
            });
        }
    }
    close(run, &mut launches);
    launches
}

impl<T: Scalar> DeviceIlu<T> {
    /// The factors and their schedules, uploaded. Refused: an entry count past `u32`
    /// ([`Error::TooLarge`]), and while the stream captures a graph (it uploads).
    pub fn upload(gpu: &Gpu, factors: &IluFactors<T>) -> Result<Self> {
        Self::upload_scheduled(gpu, factors, factors.lower_levels(), factors.upper_levels())
    }

    /// [`DeviceIlu::upload`] with the factors' schedules, `lower` and `upper`, already computed
    /// (the device factorisation's pattern has them).
    pub fn upload_scheduled(
        gpu: &Gpu,
        factors: &IluFactors<T>,
        lower: Levels,
        upper: Levels,
    ) -> Result<Self> {
        narrow("the entries of the ILU(0) factors", factors.csr().1.len())?;
        // The order and the entry count fit `u32` (the factors' own check, and the line above).
        let schedule = |levels: Levels, upper: bool| -> Result<DeviceSchedule<T>> {
            let starts: Vec<u32> = levels.starts.iter().map(|&s| index32(s)).collect();
            let triangle = Scheduled::new(factors, &levels, upper);
            let mut schedule = DeviceSchedule {
                rows: gpu.upload(&levels.rows)?,
                starts: gpu.upload(&starts)?,
                offsets: gpu.upload(&triangle.offsets)?,
                cols: gpu.upload(&triangle.cols)?,
                values: gpu.upload(&triangle.values)?,
                pivots: gpu.upload(&triangle.pivots)?,
                levels: levels.count(),
                launches: ilu_launches(&starts),
                prefetch: None,
            };
            schedule.prefetch = schedule.prefetch_params(gpu);
            Ok(schedule)
        };
        Ok(Self { lower: schedule(lower, false)?, upper: schedule(upper, true)?, n: factors.n() })
    }

    /// The order.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The levels of the lower and the upper solve.
    pub fn levels(&self) -> (usize, usize) {
        (self.lower.levels, self.upper.levels)
    }

    /// The launches of the lower and the upper solve.
    pub fn launches(&self) -> (usize, usize) {
        (self.lower.launches.len(), self.upper.launches.len())
    }

    /// Enqueues `z = U⁻¹ L⁻¹ r`: each solve's arrays brought into the L2 where they fit
    /// ([`DeviceSchedule::prefetch_params`]), then its launches ([`ilu_launches`]). Refused before
    /// anything is enqueued: `r` or `z` of another length or context, or factors of another `Gpu`.
    pub fn apply(&self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        gpu.check_context("the ILU(0) factors", &self.lower.rows)?;
        gpu.check_operand("r", r, self.n)?;
        gpu.check_operand("z", z, self.n)?;
        let (r, z) = (addr(r.as_slice(), gpu), addr(z.as_slice(), gpu));
        for (entry, s) in [(abi::ILU_LOWER, &self.lower), (abi::ILU_UPPER, &self.upper)] {
            let kernel = gpu.kernel::<T>(entry)?;
            let most = largest_block(kernel)?;
            let base = IluSolveParams {
                rows: addr(&s.rows, gpu),
                starts: addr(&s.starts, gpu),
                offsets: addr(&s.offsets, gpu),
                cols: addr(&s.cols, gpu),
                values: addr(&s.values, gpu),
                pivots: addr(&s.pivots, gpu),
                first_level: 0,
                levels: 0,
                r,
                z,
            };
            if let Some(prefetch) = &s.prefetch {
                // SAFETY: the spans are this schedule's own allocations, in `gpu`'s context
                // (checked above).
                unsafe { prefetch_l2(gpu, prefetch)? };
            }
            for l in &s.launches {
                let params = IluSolveParams { first_level: l.first_level, levels: l.levels, ..base };
                // SAFETY: the schedule and the triangle of one `IluFactors` (this type's only maker,
                // through `Scheduled`): each level's rows distinct, below `n`, reading only rows of
                // the levels before (launched before it on the stream, or in this launch before a
                // barrier: `ilu_launches` gives a run of levels one block); `offsets` bound each
                // position's entries, columns below `n`, and the upper solve has a pivot a
                // position; `starts` holds the schedule's level starts; `r` and `z` hold `n`
                // elements of `gpu`'s context (checked above) and are two vectors, so they do not
                // overlap. Any block size serves: the threads stride over each level.
                unsafe { launch(gpu, kernel, l.grid, l.block.min(most), 0, &params)? };
            }
        }
        Ok(())
    }
}

/// The largest block, in whole warps, that `kernel` launches with. The driver's compiler sets the
/// registers a thread, and with them the largest block: 512 threads need at most 128 a thread, which
/// ptxas gives sm_90's ILU(0) solves (96) but no rule promises elsewhere. The level kernels' threads
/// stride over a level, so a smaller block only takes more passes.
pub(super) fn largest_block(kernel: &cudarc::driver::CudaFunction) -> Result<u32> {
    let most = u32::try_from(kernel.max_threads_per_block()?).unwrap_or(WARP_SIZE);
    Ok((most / WARP_SIZE * WARP_SIZE).max(WARP_SIZE))
}

/// Enqueues `dst = src`: a caller's vector into a solver's. Refused for a vector of another length
/// or context, with nothing enqueued.
pub(crate) fn copy_in<T: Scalar, V: VectorRef<T> + ?Sized>(
    gpu: &Gpu,
    what: &'static str,
    src: &V,
    dst: &mut DeviceVector<T>,
) -> Result<()> {
    gpu.check_operand(what, src, dst.len())?;
    let (src, _guard) = src.read(gpu.stream());
    let n = narrow("the unknowns", dst.len())?;
    // SAFETY: both hold `n` elements of `gpu`'s context (checked above; `dst` is the solver's).
    unsafe { copy(gpu, addr(dst.as_slice(), gpu), AbiPtr::new(src), n) }
}

/// Enqueues `dst = src`: a solver's vector out to a caller's, as [`copy_in`].
pub(crate) fn copy_out<T: Scalar, V: VectorMut<T> + ?Sized>(
    gpu: &Gpu,
    what: &'static str,
    src: &DeviceVector<T>,
    dst: &mut V,
) -> Result<()> {
    gpu.check_operand(what, dst, src.len())?;
    let n = narrow("the unknowns", src.len())?;
    let (dst, _guard) = dst.write(gpu.stream());
    // SAFETY: both hold `n` elements of `gpu`'s context (checked above; `src` is the solver's).
    unsafe { copy(gpu, AbiPtr::new(dst), addr(src.as_slice(), gpu), n) }
}

/// Refuses slots `first..first + len` unless all are among `scalars` slots: what every launch that
/// names slots checks, so that no kernel reads or writes past the scalars. No slot is exempt
/// ([`KRYLOV_NO_SLOT`] is slot `u32::MAX` here; only a [`Coef`] reads it as a constant).
fn check_slots(first: u32, len: u32, scalars: usize) -> Result<()> {
    // In u64: the sum of two u32 cannot wrap there.
    if u64::from(first) + u64::from(len) > scalars as u64 {
        return Err(Error::InvalidKernel(format!("scalar slots {first}+{len} of {scalars}")));
    }
    Ok(())
}

/// Refuses a scalar program that the kernel could not run safely or as written: more than
/// [`KRYLOV_MAX_OPS`] ops, an op it does not know or a GMRES step past its cycle ([`slots_of`]), a
/// slot or range of slots an op reads or writes outside the `scalars` slots ([`check_slots`]), and
/// a range op ([`KRYLOV_OP_COPY_RANGE`], [`KRYLOV_OP_ADD_RANGE`]) whose source and destination
/// overlap: its forward loop would read slots it has already written. A function of the program
/// alone, what [`KrylovDevice::program`] checks before it enqueues.
fn check_program<T>(ops: &[ScalarOp<T>], scalars: usize) -> Result<()> {
    if ops.len() > KRYLOV_MAX_OPS {
        return Err(Error::InvalidKernel(format!("a scalar program of {} ops", ops.len())));
    }
    for op in ops {
        for (first, len) in slots_of(op)? {
            if len > 0 {
                check_slots(first, len, scalars)?;
            }
        }
        let (src, dst, len) = (u64::from(op.a), u64::from(op.out), u64::from(op.b));
        let range = matches!(op.code, KRYLOV_OP_COPY_RANGE | KRYLOV_OP_ADD_RANGE);
        if range && len > 0 && src < dst + len && dst < src + len {
            let (code, a, out, b) = (op.code, op.a, op.out, op.b);
            return Err(Error::InvalidKernel(format!("scalar op {code}: slots {a}+{b} overlap {out}+{b}")));
        }
    }
    Ok(())
}

/// The ranges of slots (first, count) an op reads or writes (a finish writes the residual slot);
/// refused for an op the kernel does not know or a GMRES step past its cycle.
fn slots_of<T>(op: &ScalarOp<T>) -> Result<Vec<(u32, u32)>> {
    let one = |s: u32| (s, 1);
    let residual = one(KRYLOV_SLOT_RESIDUAL);
    Ok(match op.code {
        KRYLOV_OP_SET => vec![one(op.out)],
        KRYLOV_OP_COPY | KRYLOV_OP_SQRT => vec![one(op.a), one(op.out)],
        KRYLOV_OP_MUL | KRYLOV_OP_DIV => vec![one(op.a), one(op.b), one(op.out)],
        KRYLOV_OP_NONZERO | KRYLOV_OP_FINITE | KRYLOV_OP_POSITIVE => vec![one(op.a)],
        KRYLOV_OP_LIMIT => vec![one(op.a), residual],
        KRYLOV_OP_CONVERGED => vec![one(op.a), one(op.b), residual],
        KRYLOV_OP_START | KRYLOV_OP_COUNT | KRYLOV_OP_COLUMNS | KRYLOV_OP_END_CYCLE => vec![],
        KRYLOV_OP_ADD_RANGE | KRYLOV_OP_COPY_RANGE => vec![(op.a, op.b), (op.out, op.b)],
        KRYLOV_OP_RECORD => vec![one(op.a), (op.out, op.b)],
        KRYLOV_OP_GIVENS | KRYLOV_OP_BACKSOLVE => {
            let m = op.b;
            if m == 0 || m > KRYLOV_MAX_RESTART || (op.code == KRYLOV_OP_GIVENS && op.a >= m) {
                return Err(Error::InvalidKernel(format!("GMRES step {} of {m}", op.a)));
            }
            let mut slots = vec![(op.c, gmres_scalars(m))];
            if op.code == KRYLOV_OP_GIVENS {
                slots.push(one(op.out));
            }
            slots
        }
        code => return Err(Error::InvalidKernel(format!("scalar op {code}"))),
    })
}

/// The filler of a program's unused tail (never run: the kernel runs `count` ops).
fn nop<T: Scalar>() -> ScalarOp<T> {
    ScalarOp {
        code: KRYLOV_OP_COUNT,
        a: KRYLOV_NO_SLOT,
        b: KRYLOV_NO_SLOT,
        c: 0,
        out: KRYLOV_NO_SLOT,
        tag: 0,
        value: T::ZERO,
    }
}

/// The columns of a basis a launch takes: the first `n`, or as many as the solve's state says (the
/// columns of a GMRES cycle that may end early), at most `most`.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Columns {
    First(u32),
    State { most: u32 },
}

/// A solve's vector as the basis kernels reach it: its part on each GPU of the solve (one GPU's
/// vector is its only part).
pub(crate) trait GpuParts<T> {
    fn parts(&self) -> &[DeviceVector<T>];
    /// The parts, to write in place: a slice, so that their count cannot change.
    fn parts_mut(&mut self) -> &mut [DeviceVector<T>];
}

impl<T> GpuParts<T> for DeviceVector<T> {
    fn parts(&self) -> &[DeviceVector<T>] {
        std::slice::from_ref(self)
    }

    fn parts_mut(&mut self) -> &mut [DeviceVector<T>] {
        std::slice::from_mut(self)
    }
}

impl<T> GpuParts<T> for Vec<DeviceVector<T>> {
    fn parts(&self) -> &[DeviceVector<T>] {
        self
    }

    fn parts_mut(&mut self) -> &mut [DeviceVector<T>] {
        self
    }
}

/// The basis of a GMRES cycle: vectors of the solve (`V`: one GPU's vector, or a part per GPU),
/// and on each GPU the device table of the addresses of its parts of them, which the basis kernels
/// read there. The tables hold the parts' addresses, so no part is ever replaced: the columns are
/// read through [`DeviceBasis::column`] and written only by [`KrylovDevice::scale_to_column`], in
/// this module; a `&mut` to a column, or to one of its parts, would let code elsewhere put another
/// buffer in its place (or push, truncate or swap parts) and leave a table pointing at the old one,
/// freed.
#[derive(Debug)]
pub(crate) struct DeviceBasis<T, V = DeviceVector<T>> {
    columns: Vec<V>,
    /// Each GPU's table, with the length of its parts.
    tables: Vec<(CudaSlice<u64>, u32)>,
    element: PhantomData<T>,
}

/// One GPU's part of a [`DeviceBasis`]: what a launch of the basis kernels on that GPU reads.
#[derive(Debug, Clone, Copy)]
pub(crate) struct BasisPart<'b, T> {
    addresses: &'b CudaSlice<u64>,
    /// The length of each column's part.
    n: u32,
    columns: u32,
    element: PhantomData<T>,
}

impl<T: Scalar, V: GpuParts<T>> DeviceBasis<T, V> {
    /// `columns` vectors made by `zeros` (the solve's zeroed vectors, a part on each of `gpus`, in
    /// order; the solver bounds `columns`). Refused: a column whose parts are not one a GPU, each of
    /// its GPU's context and of the first column's lengths.
    pub fn new(gpus: &[&Gpu], columns: u32, mut zeros: impl FnMut() -> Result<V>) -> Result<Self> {
        let columns = (0..columns).map(|_| zeros()).collect::<Result<Vec<V>>>()?;
        if let Some(c) = columns.iter().find(|c| c.parts().len() != gpus.len()) {
            let (expected, got) = (gpus.len(), c.parts().len());
            return Err(Error::DimensionMismatch { what: "a basis column (parts)", expected, got });
        }
        let mut tables = Vec::with_capacity(gpus.len());
        for (i, gpu) in gpus.iter().enumerate() {
            let n = columns.first().map_or(0, |c| c.parts()[i].len());
            let mut table = Vec::with_capacity(columns.len());
            for part in columns.iter().map(|c| &c.parts()[i]) {
                gpu.check_operand("a basis column", part, n)?;
                table.push(addr(part.as_slice(), gpu).addr());
            }
            tables.push((gpu.upload(&table)?, narrow("the unknowns", n)?));
        }
        Ok(Self { columns, tables, element: PhantomData })
    }

    #[allow(clippy::cast_possible_truncation)] // at most KRYLOV_MAX_RESTART + 1
    pub fn len(&self) -> u32 {
        self.columns.len() as u32
    }

    pub fn column(&self, j: usize) -> &V {
        &self.columns[j]
    }

    /// Part `i` of column `j`, to write in place: private to this module, which never replaces it
    /// (see the type's doc). Refused for a column or part the basis does not have.
    fn part_mut(&mut self, j: usize, i: usize) -> Result<&mut DeviceVector<T>> {
        let part = self.columns.get_mut(j).and_then(|c| c.parts_mut().get_mut(i));
        part.ok_or_else(|| Error::InvalidKernel(format!("part {i} of basis column {j}")))
    }

    /// The part on the `i`-th GPU of the solve.
    pub fn part(&self, i: usize) -> Result<BasisPart<'_, T>> {
        let (addresses, n) = self.tables.get(i).ok_or(Error::InvalidKernel(format!("basis part {i}")))?;
        Ok(BasisPart { addresses, n: *n, columns: self.len(), element: PhantomData })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::formats::csr::CsrRef;
    use crate::reference::problems::convection_diffusion;
    use crate::reference::{negative, quotient};
    use nalgebra_sparse::CsrMatrix;

    /// `z = U⁻¹ L⁻¹ r` over the [`Scheduled`] triangles, a level at a time as the kernels solve
    /// them: every row of a level computed from the values before the level, then all written.
    fn solve_scheduled<T: Scalar>(factors: &IluFactors<T>, r: &[T]) -> Vec<T> {
        let mut z = vec![T::from_f64(f64::NAN); r.len()];
        for (levels, upper) in [(factors.lower_levels(), false), (factors.upper_levels(), true)] {
            let t = Scheduled::new(factors, &levels, upper);
            for level in levels.starts.windows(2) {
                let solved: Vec<(usize, T)> = (level[0]..level[1])
                    .map(|k| {
                        let row = levels.rows[k] as usize;
                        let mut sum = if upper { z[row] } else { r[row] };
                        for e in t.offsets[k] as usize..t.offsets[k + 1] as usize {
                            sum = negative(t.values[e]).mul_add(z[t.cols[e] as usize], sum);
                        }
                        (row, if upper { quotient(sum, t.pivots[k]) } else { sum })
                    })
                    .collect();
                for (row, value) in solved {
                    z[row] = value;
                }
            }
        }
        z
    }

    #[test]
    fn the_device_factorisations_slots_are_the_scheduled_layout() {
        use crate::reference::ilu_pattern::{FactorKind, FactorPattern};
        let a = convection_diffusion::<f64>(13, 9, 0.0).unwrap();
        let a = CsrRef::from(&a);
        for kind in [FactorKind::Ilu0, FactorKind::Ic0] {
            let pattern = FactorPattern::new(kind, a).unwrap();
            let factors = pattern.factorise(a.values()).unwrap();
            let (lower, upper) = pattern.levels();
            let (l, u) = (Scheduled::new(&factors, lower, false), Scheduled::new(&factors, upper, true));
            assert_eq!(pattern.solve_lengths(), (l.values.len(), u.values.len()));
            let [.., lower_at, pivot_at, upper_slots] = pattern.device_arrays();
            let ((offsets, _, values), diagonal) = (factors.csr(), factors.diagonal_positions());
            for i in 0..factors.n() {
                let (begin, d, end) = (offsets[i], diagonal[i], offsets[i + 1]);
                assert_eq!(
                    l.values[lower_at[i] as usize..][..d - begin],
                    values[begin..d],
                    "{kind:?} row {i}"
                );
                assert_eq!(u.pivots[pivot_at[i] as usize], values[d]);
                if kind == FactorKind::Ilu0 {
                    assert_eq!(u.values[upper_slots[i] as usize..][..end - d - 1], values[d + 1..end]);
                }
            }
        }
    }

    fn scheduled_solve_is_the_oracles<T: Scalar>(a: &CsrMatrix<T>) {
        let a = CsrRef::from(a);
        for factors in [IluFactors::new(a).unwrap(), IluFactors::incomplete_cholesky(a).unwrap()] {
            let n = factors.n();
            let r: Vec<T> = (0..n).map(|i| T::from_f64((i * 7 % 11) as f64 - 4.5)).collect();
            let mut expected = vec![T::ZERO; n];
            factors.apply(&r, &mut expected).unwrap();
            let bits = |v: &[T]| v.iter().map(|x| x.to_f64().to_bits()).collect::<Vec<_>>();
            assert_eq!(bits(&solve_scheduled(&factors, &r)), bits(&expected), "{} order {n}", T::NAME);
            let (lower, upper) = (factors.lower_levels(), factors.upper_levels());
            let (l, u) = (Scheduled::new(&factors, &lower, false), Scheduled::new(&factors, &upper, true));
            // Each value once, the diagonal as the pivots: the CSR's entries, no more.
            assert_eq!(l.values.len() + u.values.len() + u.pivots.len(), factors.csr().0[n], "order {n}");
            assert_eq!((l.offsets.len(), l.pivots.len(), u.pivots.len()), (n + 1, 0, n));
        }
    }

    #[test]
    fn the_scheduled_triangles_solve_as_the_oracle_does() {
        // A grid (2 entries a row each side), a single row and unknown, and Pe 0, symmetric, so that
        // IC(0) exists too; convection only changes the values, the layout is the same.
        for (nx, ny) in [(13, 9), (1, 1), (40, 1), (3, 17)] {
            scheduled_solve_is_the_oracles(&convection_diffusion::<f64>(nx, ny, 0.0).unwrap());
            scheduled_solve_is_the_oracles(&convection_diffusion::<f32>(nx, ny, 0.0).unwrap());
        }
        // Rows longer than a thread stages (`STAGED` in the kernels): a dense symmetric,
        // diagonally dominant matrix of order 20.
        let n = 20;
        let dense = CsrMatrix::try_from_csr_data(
            n,
            n,
            (0..=n).map(|i| i * n).collect(),
            (0..n * n).map(|e| e % n).collect(),
            (0..n * n)
                .map(|e| if e / n == e % n { 4.0 * n as f64 } else { 1.0 / (1 + e / n + e % n) as f64 })
                .collect(),
        )
        .unwrap();
        scheduled_solve_is_the_oracles(&dense);
    }

    /// An op of `code` on the slots `(a, b, c, out)`.
    fn op(code: u32, (a, b, c, out): (u32, u32, u32, u32)) -> ScalarOp<f64> {
        ScalarOp { code, a, b, c, out, tag: 0, value: 0.0 }
    }

    /// The message of `check_program`'s refusal of `ops` over `scalars` slots.
    fn refusal(ops: &[ScalarOp<f64>], scalars: usize) -> String {
        match check_program(ops, scalars) {
            Err(Error::InvalidKernel(message)) => message,
            other => panic!("{ops:?} over {scalars} slots: {other:?}"),
        }
    }

    #[test]
    fn every_slot_a_program_names_is_inside_the_scalars_no_slot_included() {
        const S: u32 = 40;
        // Each op with `x` in one of the places where it names a slot or a range of `len` slots.
        type Shape = fn(u32) -> ScalarOp<f64>;
        let shapes: [(&str, u32, Shape); 26] = [
            ("SET out", 1, |x| op(KRYLOV_OP_SET, (KRYLOV_NO_SLOT, KRYLOV_NO_SLOT, 0, x))),
            ("COPY a", 1, |x| op(KRYLOV_OP_COPY, (x, KRYLOV_NO_SLOT, 0, 0))),
            ("COPY out", 1, |x| op(KRYLOV_OP_COPY, (0, KRYLOV_NO_SLOT, 0, x))),
            ("SQRT a", 1, |x| op(KRYLOV_OP_SQRT, (x, KRYLOV_NO_SLOT, 0, 0))),
            ("SQRT out", 1, |x| op(KRYLOV_OP_SQRT, (0, KRYLOV_NO_SLOT, 0, x))),
            ("MUL a", 1, |x| op(KRYLOV_OP_MUL, (x, 0, 0, 0))),
            ("MUL b", 1, |x| op(KRYLOV_OP_MUL, (0, x, 0, 0))),
            ("DIV out", 1, |x| op(KRYLOV_OP_DIV, (0, 0, 0, x))),
            ("NONZERO a", 1, |x| op(KRYLOV_OP_NONZERO, (x, KRYLOV_NO_SLOT, 0, KRYLOV_NO_SLOT))),
            ("FINITE a", 1, |x| op(KRYLOV_OP_FINITE, (x, KRYLOV_NO_SLOT, 0, KRYLOV_NO_SLOT))),
            ("POSITIVE a", 1, |x| op(KRYLOV_OP_POSITIVE, (x, KRYLOV_NO_SLOT, 0, KRYLOV_NO_SLOT))),
            ("LIMIT a", 1, |x| op(KRYLOV_OP_LIMIT, (x, KRYLOV_NO_SLOT, 0, KRYLOV_NO_SLOT))),
            ("CONVERGED a", 1, |x| op(KRYLOV_OP_CONVERGED, (x, 0, 0, KRYLOV_NO_SLOT))),
            ("CONVERGED b", 1, |x| op(KRYLOV_OP_CONVERGED, (0, x, 0, KRYLOV_NO_SLOT))),
            ("COPY_RANGE a, 1", 1, |x| op(KRYLOV_OP_COPY_RANGE, (x, 1, 0, 0))),
            ("COPY_RANGE out, 1", 1, |x| op(KRYLOV_OP_COPY_RANGE, (0, 1, 0, x))),
            ("COPY_RANGE a, 5", 5, |x| op(KRYLOV_OP_COPY_RANGE, (x, 5, 0, 0))),
            ("COPY_RANGE out, 5", 5, |x| op(KRYLOV_OP_COPY_RANGE, (0, 5, 0, x))),
            ("ADD_RANGE a, 1", 1, |x| op(KRYLOV_OP_ADD_RANGE, (x, 1, 0, 0))),
            ("ADD_RANGE out, 5", 5, |x| op(KRYLOV_OP_ADD_RANGE, (0, 5, 0, x))),
            ("RECORD a", 1, |x| op(KRYLOV_OP_RECORD, (x, 0, 0, 0))),
            ("RECORD out, 1", 1, |x| op(KRYLOV_OP_RECORD, (0, 1, 0, x))),
            ("RECORD out, 7", 7, |x| op(KRYLOV_OP_RECORD, (0, 7, 0, x))),
            ("GIVENS out", 1, |x| op(KRYLOV_OP_GIVENS, (0, 3, 0, x))),
            ("GIVENS base", gmres_scalars(3), |x| op(KRYLOV_OP_GIVENS, (1, 3, x, 0))),
            ("BACKSOLVE base", gmres_scalars(3), |x| op(KRYLOV_OP_BACKSOLVE, (KRYLOV_NO_SLOT, 3, x, 0))),
        ];
        for (what, len, shape) in shapes {
            // The last range that fits is taken; one slot further, KRYLOV_NO_SLOT (u32::MAX), and a
            // range whose last slot is u32::MAX (the one the old check let through) are refused.
            check_program(&[shape(S - len)], S as usize).unwrap_or_else(|e| panic!("{what}: {e}"));
            for x in [S - len + 1, KRYLOV_NO_SLOT, u32::MAX - (len - 1)] {
                let message = refusal(&[shape(x)], S as usize);
                assert!(message.starts_with("scalar slots"), "{what} at {x}: {message}");
            }
        }
        // A finish writes the residual slot: a test on slot 0 needs it, as every program does.
        check_program(&[op(KRYLOV_OP_CONVERGED, (0, 0, 0, KRYLOV_NO_SLOT))], 1).unwrap();
        assert!(refusal(&[op(KRYLOV_OP_LIMIT, (0, 0, 0, 0))], 0).starts_with("scalar slots"));
        // An empty range names no slot; ops that name none are taken on no scalars at all.
        let none = [
            op(KRYLOV_OP_RECORD, (0, 0, 0, S)),
            op(KRYLOV_OP_START, (10, 0, 0, KRYLOV_NO_SLOT)),
            op(KRYLOV_OP_COUNT, (KRYLOV_NO_SLOT, KRYLOV_NO_SLOT, 0, KRYLOV_NO_SLOT)),
        ];
        check_program(&none[..1], 1).unwrap();
        check_program(&none[1..], 0).unwrap();
        // The program's own refusals: too long, an unknown op, a GMRES step past its cycle.
        let set = op(KRYLOV_OP_SET, (KRYLOV_NO_SLOT, KRYLOV_NO_SLOT, 0, 0));
        check_program(&[set; KRYLOV_MAX_OPS], 1).unwrap();
        assert!(refusal(&[set; KRYLOV_MAX_OPS + 1], 1).contains("ops"));
        assert_eq!(refusal(&[op(99, (0, 0, 0, 0))], 1), "scalar op 99");
        assert!(refusal(&[op(KRYLOV_OP_GIVENS, (3, 3, 0, 0))], 100).starts_with("GMRES step"));
        // The slots alone, without wrapping in u32.
        check_slots(0, 0, 0).unwrap();
        check_slots(3, 4, 7).unwrap();
        check_slots(3, 5, 7).unwrap_err();
        check_slots(u32::MAX, u32::MAX, 10).unwrap_err();
    }

    #[test]
    fn a_range_op_whose_ranges_overlap_is_refused() {
        for code in [KRYLOV_OP_COPY_RANGE, KRYLOV_OP_ADD_RANGE] {
            let range = |src, dst, len| op(code, (src, len, 0, dst));
            // Apart, side by side either way round, or empty: taken.
            for (src, dst, len) in [(0, 10, 5), (10, 0, 5), (5, 8, 3), (8, 5, 3), (5, 5, 0), (0, 39, 1)] {
                check_program(&[range(src, dst, len)], 40)
                    .unwrap_or_else(|e| panic!("{code} {src} {dst} {len}: {e}"));
            }
            // A forward copy reading slots it wrote (dst inside src), the reverse, the same range, one
            // slot shared at either end: refused, with nothing else wrong.
            for (src, dst, len) in [(5, 6, 3), (6, 5, 3), (5, 5, 3), (5, 7, 3), (7, 5, 3), (5, 5, 1)] {
                let message = refusal(&[range(src, dst, len)], 40);
                assert!(message.contains("overlap"), "{code} {src} {dst} {len}: {message}");
            }
        }
    }

    #[test]
    fn a_basis_part_it_does_not_have_is_refused() {
        // A basis of no columns on no GPU needs no device.
        let mut basis = DeviceBasis::<f64>::new(&[], 0, || unreachable!("no column is made")).unwrap();
        assert_eq!(basis.len(), 0);
        assert!(matches!(basis.part(0), Err(Error::InvalidKernel(_))));
        assert!(matches!(basis.part_mut(0, 0), Err(Error::InvalidKernel(_))));
    }

    /// The starts of levels of `widths` rows.
    fn starts(widths: &[u32]) -> Vec<u32> {
        let mut starts = vec![0];
        for w in widths {
            starts.push(starts.last().unwrap() + w);
        }
        starts
    }

    #[test]
    fn narrow_levels_share_a_launch_and_wide_ones_have_their_own() {
        // A 2-D grid's anti-diagonals, 1 to 300 rows and back: one block for all of them.
        let grid: Vec<u32> = (1..=300).chain((1..300).rev()).collect();
        assert_eq!(
            ilu_launches(&starts(&grid)),
            [IluLaunch { first_level: 0, levels: 599, grid: 1, block: 320 }]
        );
        let mixed = starts(&[3, 40, ILU_RUN_ROWS + 1, 7, 1000, 2000, ILU_RUN_ROWS]);
        let wide = |first_level, rows| IluLaunch {
            first_level,
            levels: 1,
            grid: grid_blocks(u64::from(rows), KRYLOV_BLOCK_THREADS),
            block: KRYLOV_BLOCK_THREADS,
        };
        assert_eq!(
            ilu_launches(&mixed),
            [
                IluLaunch { first_level: 0, levels: 2, grid: 1, block: 64 },
                wide(2, ILU_RUN_ROWS + 1),
                IluLaunch { first_level: 3, levels: 1, grid: 1, block: WARP_SIZE },
                wide(4, 1000),
                wide(5, 2000),
                IluLaunch { first_level: 6, levels: 1, grid: 1, block: ILU_RUN_ROWS },
            ]
        );
        assert_eq!(ilu_launches(&[0]), []);
        // Every level in exactly one launch, in order.
        for widths in [&grid[..], &[ILU_RUN_ROWS; 5][..], &[0u32, 0, 9][..]] {
            let launches = ilu_launches(&starts(widths));
            let mut next = 0;
            for l in &launches {
                assert_eq!(l.first_level, next);
                assert!(l.levels == 1 || l.grid == 1, "{l:?}");
                next += l.levels;
            }
            assert_eq!(next as usize, widths.len());
        }
    }
}
