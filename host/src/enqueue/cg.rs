//! The launches of a conjugate-gradient solve (`kernels-gpu/src/cg.rs`, whose module doc gives the
//! iteration): the state the kernels keep on the device, the prepared launch of the solve's start and
//! the one cooperative launch of an iteration besides its product ([`CgLaunches`]). The solver itself
//! (`crate::solve::Cg`) owns the buffers and decides when to read the state.

use super::launch::{Prepared, WithOperands, copy};
use crate::Result;
use crate::device::Gpu;
use crate::scalar::Scalar;
use cudarc::driver::{CudaFunction, DeviceRepr, ValidAsZeroBits, sys};
use kernels_gpu::abi::{
    self as abi, CG_BLOCK_THREADS, CgParams, CgState, DevicePtr as AbiPtr, cg_shared_bytes,
};
use kernels_gpu::index::cg_blocks;

/// A [`CgState`] as a device buffer's element.
#[repr(transparent)]
#[derive(Debug, Clone, Copy)]
pub(crate) struct DeviceCgState<T>(pub CgState<T>);

// SAFETY: `CgState` is `#[repr(C)]` of `f32`/`f64` and `u32` fields, with the layout the kernels
// declare: any bit pattern the device writes is a valid value, and it holds no pointer.
unsafe impl<T: Scalar> DeviceRepr for DeviceCgState<T> {}
// SAFETY: all zeros is a valid `CgState`: zero scalars and `CG_NOT_STARTED`, which `cg_init_*`
// expects.
unsafe impl<T: Scalar> ValidAsZeroBits for DeviceCgState<T> {}

/// The right-hand side and the iterate: what a solve sets in the prepared launches.
impl<T: Copy> WithOperands for CgParams<T> {
    type Operands = (AbiPtr<T>, AbiPtr<T>);
    fn with(self, (b, x): (AbiPtr<T>, AbiPtr<T>)) -> Self {
        Self { b, x, ..self }
    }
}

/// The vectors an iteration streams: `x`, `r`, `p`, `q` and the inverse diagonal.
const ITERATION_VECTORS: u64 = 5;

/// Blocks of the cooperative `cg_iterate_*` over `n` unknowns: at most `cg_blocks(n)` (each block
/// takes the elements of one or more of those) and at most what the GPU keeps resident (the blocks
/// wait for each other at the grid barriers). Where the iteration's vectors fit in half the L2
/// cache, a pass moves a microsecond or two of bytes and the two barriers dominate; each costs an
/// atomic per block on one address, so one block per SM is best: on the H100, 100 k unknowns (391
/// blocks' worth of elements) took 17.5 µs per iteration in a graph with 391 blocks, 15.6 with 264,
/// 14.8 with 132 and 17.8 with 66 (`docs/PERF.md`, section 14). Larger problems stream from DRAM and
/// need every resident block's loads in flight.
fn iterate_blocks<T: Scalar>(gpu: &Gpu, f: &CudaFunction, n: u32, shared: u32) -> Result<u32> {
    let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(CG_BLOCK_THREADS, shared as usize, None)?;
    let l2 = gpu.context().attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
    let vector_bytes = ITERATION_VECTORS * u64::from(n) * size_of::<T>() as u64;
    let per_sm = if vector_bytes <= u64::try_from(l2).unwrap_or(0) / 2 { per_sm.min(1) } else { per_sm };
    Ok(cg_blocks(n).min(per_sm.saturating_mul(gpu.sm_count())).max(1))
}

/// The CG kernels of one solve, prepared once.
#[derive(Debug)]
pub(crate) struct CgLaunches<T> {
    init: Prepared<CgParams<T>>,
    iterate: Prepared<CgParams<T>>,
    r: AbiPtr<T>,
    n: u32,
}

impl<T: Scalar> CgLaunches<T> {
    /// The launches of a solve over `params` (its `b` and `x` unset), Jacobi-preconditioned when
    /// `jacobi`.
    ///
    /// # Safety
    /// `params.r`, `p`, `q` (and `inv_diag` when `jacobi`) hold `params.n` elements of `gpu`'s
    /// context, `partials` holds `CG_PARTIALS`, `state` one [`DeviceCgState`] zeroed before every
    /// [`CgLaunches::init`], and all of them live as long as the launches.
    pub unsafe fn new(gpu: &Gpu, params: CgParams<T>, jacobi: bool) -> Result<Self> {
        let pick = |plain, preconditioned| gpu.kernel::<T>(if jacobi { preconditioned } else { plain });
        let grid = cg_blocks(params.n);
        #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
        let shared = cg_shared_bytes(size_of::<T>() as u32);
        let iterate = pick(abi::CG_ITERATE_PLAIN, abi::CG_ITERATE_JACOBI)?;
        let iterate_grid = iterate_blocks::<T>(gpu, iterate, params.n, shared)?;
        // SAFETY: the caller's contract for the buffers; the CG kernels take `CG_BLOCK_THREADS`
        // threads with `cg_shared_bytes` of dynamic shared memory, `cg_init_*` `cg_blocks(n)` blocks
        // and `cg_iterate_*` at most that many, all resident (a cooperative launch); `b` and `x`
        // are set at each launch (`init`, `after_product`), under their contract.
        unsafe {
            Ok(Self {
                init: Prepared::new(
                    pick(abi::CG_INIT_PLAIN, abi::CG_INIT_JACOBI)?,
                    grid,
                    CG_BLOCK_THREADS,
                    shared,
                    params,
                ),
                iterate: Prepared::cooperative(iterate, iterate_grid, CG_BLOCK_THREADS, shared, params),
                r: params.r,
                n: params.n,
            })
        }
    }

    /// Enqueues the copy of `b` into `r`, the first half of `r = b - A x0`.
    ///
    /// # Safety
    /// `b` holds `n` elements of `gpu`'s context.
    pub unsafe fn copy_b_to_r(&self, gpu: &Gpu, b: AbiPtr<T>) -> Result<()> {
        // SAFETY: `r` holds `n` elements (`new`'s contract), `b` too (the caller's).
        unsafe { copy(gpu, self.r, b, self.n) }
    }

    /// Enqueues `cg_init_*`: `p = z`, and the state from `r = b - A x0`.
    ///
    /// # Safety
    /// `b` and `x` hold `n` elements of `gpu`'s context; `r` holds `b - A x`; the state is zeroed.
    pub unsafe fn init(&self, gpu: &Gpu, b: AbiPtr<T>, x: AbiPtr<T>) -> Result<()> {
        // SAFETY: the caller's contract.
        unsafe { self.init.enqueue(gpu, (b, x)) }
    }

    /// Enqueues the vector passes of an iteration, after its product `q = A p`.
    ///
    /// # Safety
    /// `x` holds `n` elements of `gpu`'s context. (The kernels act only while the state says a solve
    /// runs, which only `init` sets.)
    pub unsafe fn after_product(&self, gpu: &Gpu, x: AbiPtr<T>) -> Result<()> {
        // SAFETY: the caller's contract; only `cg_init_*` reads `b`.
        unsafe { self.iterate.enqueue(gpu, (AbiPtr::new(0), x)) }
    }
}
