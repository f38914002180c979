//! The transposed product `y = alpha * Aᵀ * x + beta * y` of a [`DeviceCsr`]: the view
//! [`Transposed`], a [`DeviceMatrix`] of `A`'s columns by its rows, so it takes the one checked
//! product path, plans and CUDA-graph capture like any format; its strategy [`TransposeKernel`]; and
//! the construction of `Aᵀ` on the device.

use super::csr::{CsrLaunch, auto_coop};
use super::launch::{Prepared, launch, unset_accumulate};
use super::sealed::{Enqueue, Product};
use super::{DeviceMatrix, Kernel};
use crate::device::{BuiltTranspose, DeviceCsr, Gpu, TransposeBuffers};
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    self as abi, Accumulate, BLOCK_SIZE, CSRT_ATOMIC_COOPS, CsrTransposeParams, RADIX_BITS,
    RADIX_BLOCK_THREADS, RADIX_DIGITS, RADIX_SHARED_BYTES, RadixParams, SCAN_BLOCK_THREADS,
    SCAN_SHARED_BYTES, ScanParams, TransposeGatherParams, TransposeInitParams, TransposeOffsetsParams,
    WARP_SIZE,
};
use kernels_gpu::index::{coop_threads, grid_blocks, radix_passes, radix_tiles};

super::launch::with_operands!(CsrTransposeParams: Accumulate);

/// How a transposed product runs: the strategy of [`Transposed`].
///
/// The default is [`TransposeKernel::Explicit`], the deterministic one: the same `y` on every run,
/// and after its one-time construction the product is an ordinary CSR product, with coalesced
/// writes and no atomics. [`TransposeKernel::Atomic`] needs no memory and no construction, so it
/// wins for a few products (the benchmark reports the break-even count), but its result varies in
/// the last bits from run to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum TransposeKernel {
    /// `Aᵀ` in CSR, built on the device the first time a plan asks for it (a stable radix sort of
    /// `A`'s entries by column, `kernels-gpu/src/transpose/build.rs`) and kept with the matrix, then
    /// the CSR product [`Kernel::Auto`] chooses for it. Costs `Aᵀ`'s arrays (as much as `A`'s, plus
    /// one offset per column of `A`) and the entry of `A` each of its entries copies (4 bytes an
    /// entry), through which [`DeviceCsr::update_values`] refreshes `Aᵀ`'s values on the stream.
    #[default]
    Explicit,
    /// `y = beta * y`, then each row `i` of `A` adds `alpha * x_i * a_ij` to `y_j` with atomic adds
    /// (`kernels-gpu/src/transpose/atomic.rs`), `coop` threads per row by [`Kernel::Auto`]'s rule of
    /// 8 entries per lane.
    Atomic,
}

/// `Aᵀ` for a [`DeviceCsr`] `A`: a view, got from [`DeviceCsr::transposed`], with `A`'s column
/// count as its rows and its row count as its columns. Products take it like any device matrix:
///
/// ```no_run
/// use gpu_spmv::Gpu;
/// use gpu_spmv::transpose::TransposeKernel;
/// use nalgebra_sparse::{CooMatrix, CsrMatrix};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// let mut coo = CooMatrix::new(2, 3);
/// coo.push(0, 2, 2.0f64);
/// coo.push(1, 0, -1.0);
/// let gpu = Gpu::new()?;
/// let a = gpu.upload_csr(&CsrMatrix::from(&coo))?;
/// let x = gpu.upload_vector(&[1.0, 2.0])?;
/// let mut y = gpu.zeros::<f64>(3)?;
/// gpu.spmv(1.0, a.transposed(), &x, 0.0, &mut y)?; // TransposeKernel::Explicit
/// let atomic = gpu.plan(a.transposed(), TransposeKernel::Atomic)?;
/// atomic.spmv(1.0, &x, 1.0, &mut y)?;
/// assert_eq!(y.to_host(&gpu)?, vec![-4.0, 0.0, 4.0]);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
#[repr(transparent)]
pub struct Transposed<T>(DeviceCsr<T>);

impl<T: Scalar> DeviceCsr<T> {
    /// The transposed view of this matrix, for `y = alpha * Aᵀ * x + beta * y`.
    pub fn transposed(&self) -> &Transposed<T> {
        // SAFETY: `Transposed<T>` is `repr(transparent)` over `DeviceCsr<T>`, so the two references
        // have the same layout, and the borrow keeps `self`'s lifetime.
        unsafe { &*std::ptr::from_ref(self).cast::<Transposed<T>>() }
    }
}

impl<T: Scalar> Transposed<T> {
    /// The matrix `A` whose transpose this is.
    pub fn matrix(&self) -> &DeviceCsr<T> {
        &self.0
    }
}

/// The prepared launches of a transposed product.
#[derive(Debug)]
pub enum TransposeLaunch<T> {
    /// The CSR product on `Aᵀ` (kept with `A`).
    Explicit(CsrLaunch<T>),
    /// The atomic scatter, after `y = beta * y`.
    Atomic(Prepared<CsrTransposeParams<T>>),
}

impl<T: Scalar> Enqueue<T> for Transposed<T> {
    type Kernel = TransposeKernel;
    type Launch = TransposeLaunch<T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        self.0.belongs_to(gpu)
    }

    fn values_generation(&self) -> u64 {
        self.0.values_generation()
    }

    fn prepare(&self, gpu: &Gpu, kernel: TransposeKernel) -> Result<(TransposeKernel, TransposeLaunch<T>)> {
        let a = &self.0;
        let launch = match kernel {
            TransposeKernel::Explicit => {
                let t = a.transpose_or_build(|| build_transpose(gpu, a))?;
                TransposeLaunch::Explicit(t.prepare(gpu, Kernel::Auto)?.1)
            }
            TransposeKernel::Atomic => {
                let coop = auto_coop(a.stats());
                let f = gpu.kernel::<T>(abi::CSRT_ATOMIC[atomic_variant(coop)])?;
                let grid = grid_blocks(coop_threads(a.args().rows, coop), BLOCK_SIZE);
                let params = CsrTransposeParams { a: a.args(), op: unset_accumulate() };
                // SAFETY: the kernel walks the rows of `A` (valid CSR by construction of `DeviceCsr`)
                // with a grid stride, reading `x` at `A`'s rows (the view's columns) and adding to `y`
                // at `A`'s columns (the view's rows) atomically; no other launch of the product
                // writes `y` while it runs (the stream orders the scaling before it).
                TransposeLaunch::Atomic(unsafe { Prepared::new(f, grid, BLOCK_SIZE, 0, params) })
            }
        };
        Ok((kernel, launch))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &TransposeLaunch<T>, p: &Product<T>) -> Result<()> {
        match launch {
            TransposeLaunch::Explicit(l) => {
                // `prepare` built the transpose before it made an `Explicit` launch.
                let t = self.0.built_transpose().ok_or(Error::InvalidKernel(
                    "the transposed product was not planned with its transpose".into(),
                ))?;
                // `Aᵀ` has the view's shape, which `p` was checked against.
                t.enqueue(gpu, l, p)
            }
            TransposeLaunch::Atomic(l) => {
                p.scale_y(gpu)?;
                // SAFETY: `p` was checked against this view (`x` one element per row of `A`, `y` one
                // per column), for which `prepare` made `l`.
                unsafe { l.enqueue(gpu, p.accumulate()) }
            }
        }
    }
}

impl<T: Scalar> DeviceMatrix<T> for Transposed<T> {
    /// `Aᵀ`'s: `A`'s rows and columns swapped.
    fn shape(&self) -> Shape {
        let a = self.0.shape();
        Shape { nrows: a.ncols, ncols: a.nrows, nnz: a.nnz }
    }
}

/// The index of `coop` in [`CSRT_ATOMIC_COOPS`] (`auto_coop` answers one of them: the lists are
/// asserted equal in `abi`).
fn atomic_variant(coop: u32) -> usize {
    CSRT_ATOMIC_COOPS.iter().position(|&c| c == coop).unwrap_or(CSRT_ATOMIC_COOPS.len() - 1)
}

/// `Aᵀ` in CSR, built on the device by the launches of `kernels-gpu/src/transpose/build.rs`, in
/// stream order; returns once its row offsets are back on the host.
fn build_transpose<T: Scalar>(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<BuiltTranspose<T>> {
    let nnz = narrow("the entry count", a.nnz())?;
    let ncols = narrow("the column count", a.ncols())?;
    let tiles = radix_tiles(nnz);
    let counts = narrow("the radix counts", RADIX_DIGITS as usize * tiles as usize)?;
    let buffers = TransposeBuffers::<T>::alloc(gpu, a.nnz(), a.ncols(), counts as usize)?;
    let b = buffers.addrs(gpu);
    let args = a.args();
    let last_perm = radix_passes(ncols) as usize % 2;
    let init = TransposeInitParams {
        row_offsets: args.row_offsets,
        rows: args.rows,
        entry_rows: b.entry_rows,
        perm: b.perm[0],
    };
    // SAFETY: every launch below gets buffers of the sizes its kernel's contract names: `A`'s
    // arrays (valid CSR), and `buffers`, allocated for `nnz` entries, `ncols + 1` offsets and
    // `RADIX_DIGITS * tiles` counts, alive until `finish` has waited for the launches. The radix
    // kernels get blocks of whole warps with their shared memory, the scan its one block.
    unsafe {
        launch(
            gpu,
            gpu.untyped_kernel(abi::CSRT_BUILD_INIT)?,
            grid_blocks(u64::from(args.rows), BLOCK_SIZE),
            BLOCK_SIZE,
            0,
            &init,
        )?;
        let mut keys = args.col_indices;
        for pass in 0..radix_passes(ncols) {
            let i = pass as usize % 2;
            let params = RadixParams {
                keys_in: keys,
                perm_in: b.perm[i],
                keys_out: b.keys[i],
                perm_out: b.perm[1 - i],
                counts: b.counts,
                n: nnz,
                tiles,
                shift: pass * RADIX_BITS,
            };
            radix_pass(gpu, &params)?;
            keys = b.keys[i];
        }
        let perm = b.perm[last_perm];
        let offsets = TransposeOffsetsParams { keys, nnz, offsets: b.row_offsets, cols: ncols };
        let offsets_grid = grid_blocks(u64::from(ncols) + 1, BLOCK_SIZE);
        launch(gpu, gpu.untyped_kernel(abi::CSRT_BUILD_OFFSETS)?, offsets_grid, BLOCK_SIZE, 0, &offsets)?;
        let gather = TransposeGatherParams {
            perm,
            entry_rows: b.entry_rows,
            values: args.values,
            out_cols: b.col_indices,
            out_values: b.values,
            nnz,
        };
        let gather_grid = grid_blocks(u64::from(nnz), BLOCK_SIZE);
        launch(gpu, gpu.kernel::<T>(abi::CSRT_BUILD_GATHER)?, gather_grid, BLOCK_SIZE, 0, &gather)?;
    }
    buffers.finish(gpu, a.nrows(), last_perm)
}

/// One stable radix pass of `kernels-gpu/src/transpose/build.rs`, in stream order: each tile's digit
/// counts, their exclusive scan, and the scatter of the keys and the permutation. The transpose's
/// construction and the assembly from COO triples sort with it.
///
/// # Safety
/// `params` names keys and permutations of `n` elements each, the outputs distinct buffers from the
/// inputs, and `counts` of `RADIX_DIGITS * tiles` elements, `tiles` covering `n`, all of `gpu`'s
/// context and alive until the launches have run.
pub(super) unsafe fn radix_pass(gpu: &Gpu, params: &RadixParams) -> Result<()> {
    let grid = grid_blocks(u64::from(params.tiles), RADIX_BLOCK_THREADS / WARP_SIZE);
    // `tiles <= 2^32 / RADIX_TILE`, so the counts fit a `u32`.
    let scan = ScanParams { data: params.counts, len: RADIX_DIGITS * params.tiles };
    // SAFETY: the caller's contract; the radix kernels get blocks of whole warps with their shared
    // memory, the scan its one block.
    unsafe {
        launch(
            gpu,
            gpu.untyped_kernel(abi::CSRT_BUILD_HISTOGRAM)?,
            grid,
            RADIX_BLOCK_THREADS,
            RADIX_SHARED_BYTES,
            params,
        )?;
        exclusive_scan(gpu, &scan)?;
        launch(
            gpu,
            gpu.untyped_kernel(abi::CSRT_BUILD_SCATTER)?,
            grid,
            RADIX_BLOCK_THREADS,
            RADIX_SHARED_BYTES,
            params,
        )
    }
}

/// `csrt_build_scan`: the exclusive scan of `params.data`, in place, by one block. The radix passes'
/// counts and the assembly's run heads are scanned with it.
///
/// # Safety
/// `params.data` holds `params.len` elements of `gpu`'s context, alive until the launch has run.
pub(super) unsafe fn exclusive_scan(gpu: &Gpu, params: &ScanParams) -> Result<()> {
    let f = gpu.untyped_kernel(abi::CSRT_BUILD_SCAN)?;
    // SAFETY: the caller's contract; the scan takes one block of `SCAN_BLOCK_THREADS` with its
    // shared memory.
    unsafe { launch(gpu, f, 1, SCAN_BLOCK_THREADS, SCAN_SHARED_BYTES, params) }
}
