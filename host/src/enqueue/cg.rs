//! The launches of a conjugate-gradient solve (`kernels-gpu/src/cg.rs`, whose module doc gives the
//! iteration): the state the kernels keep on the device, the prepared launch of the solve's start,
//! and the one cooperative launch of an iteration besides its product. The solver itself (`crate::solve`) owns the buffers and decides
//! when to read the state.

use super::launch::{Prepared, WithOperands, copy};
use crate::Result;
use crate::device::Gpu;
use crate::scalar::Scalar;
use cudarc::driver::{DeviceRepr, ValidAsZeroBits};
use kernels_gpu::abi::{CG_BLOCK_THREADS, CgParams, CgState, DevicePtr as AbiPtr, cg_shared_bytes};
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
        let table = &gpu.kernels::<T>().cg;
        let pick = |plain, preconditioned| if jacobi { preconditioned } else { plain };
        let grid = cg_blocks(params.n);
        #[allow(clippy::cast_possible_truncation)] // 4 or 8 bytes
        let shared = cg_shared_bytes(size_of::<T>() as u32);
        let iterate = pick(&table.iterate_plain, &table.iterate_jacobi);
        // The iteration's blocks wait for each other: no more than the GPU keeps resident.
        let per_sm = iterate.occupancy_max_active_blocks_per_multiprocessor(
            CG_BLOCK_THREADS,
            shared as usize,
            None,
        )?;
        let resident = per_sm.saturating_mul(gpu.sm_count()).max(1);
        // SAFETY: the caller's contract for the buffers; the CG kernels take `CG_BLOCK_THREADS`
        // threads with `cg_shared_bytes` of dynamic shared memory, `cg_init_*` `cg_blocks(n)` blocks
        // and `cg_iterate_*` at most that many, all resident (a cooperative launch); `b` and `x`
        // are set at each launch (`init`, `after_product`), under their contract.
        unsafe {
            Ok(Self {
                init: Prepared::new(
                    pick(&table.init_plain, &table.init_jacobi),
                    grid,
                    CG_BLOCK_THREADS,
                    shared,
                    params,
                ),
                iterate: Prepared::cooperative(iterate, grid.min(resident), CG_BLOCK_THREADS, shared, params),
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
    /// `x` holds `n` elements of `gpu`'s context, and `init` ran before with it.
    pub unsafe fn after_product(&self, gpu: &Gpu, x: AbiPtr<T>) -> Result<()> {
        // SAFETY: the caller's contract; only `cg_init_*` reads `b`.
        unsafe { self.iterate.enqueue(gpu, (AbiPtr::new(0), x)) }
    }
}
