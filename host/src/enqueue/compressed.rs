//! Products of the compressed formats: [`DeviceCompressed`] (its strategy, [`CompressedKernel`], and
//! its one launch), [`DeviceCompressedEll`] and [`DeviceDia`] (one launch each).

use super::DeviceMatrix;
use super::csr::auto_coop;
use super::launch::{Prepared, WithOperands, unset_axpby};
use super::sealed::{Enqueue, Product};
use crate::device::{DeviceCompressed, DeviceCompressedEll, DeviceDia, Gpu};
use crate::formats::Shape;
use crate::formats::compressed::{Storage, ValueStorage};
use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use kernels_gpu::abi::{
    self as abi, Axpby, BLOCK_SIZE, COMPRESSED_COOPS, CompressedArgs, CompressedEllParams, CompressedParams,
    DiaParams,
};
use kernels_gpu::index::{coop_threads, grid_blocks};

impl<V: Copy, T: Copy> WithOperands for CompressedParams<V, T> {
    type Operands = Axpby<T>;
    fn with(self, op: Axpby<T>) -> Self {
        Self { op, ..self }
    }
}

impl<V: Copy, T: Copy> WithOperands for DiaParams<V, T> {
    type Operands = Axpby<T>;
    fn with(self, op: Axpby<T>) -> Self {
        Self { op, ..self }
    }
}

impl<V: Copy, T: Copy> WithOperands for CompressedEllParams<V, T> {
    type Operands = Axpby<T>;
    fn with(self, op: Axpby<T>) -> Self {
        Self { op, ..self }
    }
}

/// How a [`DeviceCompressed`] product runs: `coop` threads per row, one of
/// [`CompressedKernel::COOPS`], 128 threads per block. With values in the matrix's type, its `y` is
/// bit-identical to that of [`Kernel::CsrVector`](crate::Kernel::CsrVector) with the same `coop` on
/// the same matrix in CSR, and to that of [`Kernel::CsrParam`](crate::Kernel::CsrParam) with the same
/// `coop`, `repeat = 1` and no long rows (the kernels share the row walk and the order of the sums).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
#[non_exhaustive]
pub enum CompressedKernel {
    /// The width [`Kernel::Auto`](crate::Kernel::Auto) gives the parametrised CSR kernel on a regular
    /// matrix: the smallest power of two at least a row's mean entries over 8.
    #[default]
    Auto,
    /// `coop` threads per row.
    Coop { coop: u32 },
}

impl CompressedKernel {
    /// The widths the kernel is compiled for.
    pub const COOPS: [u32; 6] = COMPRESSED_COOPS;
}

impl<T: Scalar, V: ValueStorage<T>> DeviceMatrix<T> for DeviceCompressed<T, V> {
    fn shape(&self) -> Shape {
        DeviceCompressed::shape(self)
    }
}

/// One launch of `spmv_compressed_c<coop>_<storage>_<type>`, `y = alpha * A * x + beta * y`.
impl<T: Scalar, V: ValueStorage<T>> Enqueue<T> for DeviceCompressed<T, V> {
    type Kernel = CompressedKernel;
    type Launch = Prepared<CompressedParams<V, T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceCompressed::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, kernel: CompressedKernel) -> Result<(CompressedKernel, Self::Launch)> {
        let coop = match kernel {
            CompressedKernel::Auto => auto_coop(self.stats()),
            CompressedKernel::Coop { coop } => coop,
        };
        Ok((CompressedKernel::Coop { coop }, prepare_compressed::<T, V>(gpu, self.args(), coop)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.axpby()) }
    }
}

impl<T: Scalar, V: ValueStorage<T>> DeviceMatrix<T> for DeviceCompressedEll<T, V> {
    fn shape(&self) -> Shape {
        DeviceCompressedEll::shape(self)
    }
}

/// The launch of `spmv_compressed_c<coop>_<storage>_<type>` over `a`: [`DeviceCompressed`]'s, and
/// `Kernel::CsrCompressedCopy`'s over a CSR matrix's compressed columns. Refused for a `coop` the
/// kernel is not compiled for.
pub(super) fn prepare_compressed<T: Scalar, V: ValueStorage<T>>(
    gpu: &Gpu,
    a: CompressedArgs<V>,
    coop: u32,
) -> Result<Prepared<CompressedParams<V, T>>> {
    let Some(variant) = COMPRESSED_COOPS.iter().position(|&c| c == coop) else {
        return Err(Error::InvalidKernel(format!(
            "coop {coop}: the compressed-index kernel is compiled for {COMPRESSED_COOPS:?} threads per row"
        )));
    };
    let family = of_storage::<T, V, _>([
        abi::COMPRESSED,
        abi::COMPRESSED_F32,
        abi::COMPRESSED_F16,
        abi::COMPRESSED_BF16,
    ]);
    let params = CompressedParams { a, op: unset_axpby() };
    let grid = grid_blocks(coop_threads(params.a.rows, coop), BLOCK_SIZE);
    let f = gpu.kernel::<T>(family[variant])?;
    // SAFETY: the entry is the one of storage `V` and type `T` (an f64 storage only exists for f64
    // matrices, whose `COMPRESSED` family it is). The kernel walks rows `0 .. rows` with a grid
    // stride, in blocks of whole warps; every entry's column lies inside `deltas` or `escapes` and
    // below the column count, the length of `x` (encoded by `CompressedCsr::try_from_csr`, or by
    // the device from a valid CSR matrix's columns by the same segment table), and the matrix's
    // rows are those of `y`.
    Ok(unsafe { Prepared::new(f, grid, BLOCK_SIZE, 0, params) })
}

/// Of a format's entries by the storage type of its values, `[f64, f32, f16, bf16]`, those of `V`.
/// An f64 storage exists only for f64 matrices, and an f32 storage's entries for f32 products are
/// those of the matrix's own type.
fn of_storage<T: Scalar, V: ValueStorage<T>, E>([f64, f32, f16, bf16]: [E; 4]) -> E {
    match V::STORAGE {
        Storage::F64 => f64,
        Storage::F32 => f32,
        Storage::F16 => f16,
        Storage::Bf16 => bf16,
    }
}

/// The launch of `spmv_compressed_ell_*` over `a`: also `Kernel::CsrEllCopy`'s, over its copy.
pub(super) fn prepare_compressed_ell<T: Scalar, V: ValueStorage<T>>(
    gpu: &Gpu,
    a: &DeviceCompressedEll<T, V>,
) -> Result<Prepared<CompressedEllParams<V, T>>> {
    let params = CompressedEllParams { a: a.args(), op: unset_axpby() };
    let f = gpu.kernel::<T>(of_storage::<T, V, _>([
        abi::COMPRESSED_ELL,
        abi::COMPRESSED_ELL_F32,
        abi::COMPRESSED_ELL_F16,
        abi::COMPRESSED_ELL_BF16,
    ]))?;
    let mut grid = grid_blocks(u64::from(params.a.rows), BLOCK_SIZE);
    if T::PRECISION == Precision::Double {
        // One resident wave of blocks, each thread striding over rows, rather than a thread a row:
        // on an H200, 11% faster on stencil2d-5 in f64 (82.7 -> 73.2 µs, 87% -> 97% of the floor)
        // and 4% on stencil3d-7, but 5-20% slower in f32 (docs/PERF.md, section 30).
        let per_sm = f.occupancy_max_active_blocks_per_multiprocessor(BLOCK_SIZE, 0, None)?;
        grid = grid.min((gpu.sm_count() * per_sm).max(1));
    }
    // SAFETY: the entry is the one of storage `V` and type `T`. The matrix holds `width * rows`
    // slots, each `PAD_DELTA` or an offset that takes its row to a column of `x` (checked by
    // `CompressedEll::try_from_csr`, or by the copy's build, which discards a copy with a misfit);
    // `y` has `rows` elements. The kernel grid-strides over the rows, so any grid covers them.
    Ok(unsafe { Prepared::new(f, grid, BLOCK_SIZE, 0, params) })
}

/// Compressed ELL: one launch of `spmv_compressed_ell_*`, `y = alpha * A * x + beta * y`.
impl<T: Scalar, V: ValueStorage<T>> Enqueue<T> for DeviceCompressedEll<T, V> {
    type Kernel = ();
    type Launch = Prepared<CompressedEllParams<V, T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceCompressedEll::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, (): ()) -> Result<((), Self::Launch)> {
        Ok(((), prepare_compressed_ell(gpu, self)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.axpby()) }
    }
}

impl<T: Scalar, V: ValueStorage<T>> DeviceMatrix<T> for DeviceDia<T, V> {
    fn shape(&self) -> Shape {
        DeviceDia::shape(self)
    }
}

/// The launch of `spmv_dia_*` over `a`: also `Kernel::CsrEllCopy`'s, over its DIA copy.
pub(super) fn prepare_dia<T: Scalar, V: ValueStorage<T>>(
    gpu: &Gpu,
    a: &DeviceDia<T, V>,
) -> Result<Prepared<DiaParams<V, T>>> {
    let params = DiaParams { a: a.args(), op: unset_axpby() };
    let grid = grid_blocks(u64::from(params.a.rows), BLOCK_SIZE);
    // The wide walk for many diagonals (in an f64 product with f64 values, the narrow walk under a
    // register budget of its own; with narrower values, the narrow entries).
    let f = gpu.kernel::<T>(if params.a.diagonals >= abi::DIA_WIDE_MIN_DIAGONALS {
        of_storage::<T, V, _>([abi::DIA_WIDE, abi::DIA_WIDE_F32, abi::DIA_WIDE_F16, abi::DIA_WIDE_BF16])
    } else {
        of_storage::<T, V, _>([abi::DIA, abi::DIA_F32, abi::DIA_F16, abi::DIA_BF16])
    })?;
    // SAFETY: the entry is the one of storage `V` and type `T` (an f64 storage only exists for
    // f64 matrices). The matrix holds at most `DIA_MAX_DIAGONALS` increasing offsets, `diagonals *
    // rows` values and `dia_presence_words(diagonals) * rows` presence words with bits below
    // `diagonals` only (made so by `Dia::try_from_csr`, or by the DIA copy's build), and the kernel
    // clamps every column it forms into `cols`, the length of `x`; `y` has `rows` elements. The
    // kernel grid-strides over the rows.
    Ok(unsafe { Prepared::new(f, grid, BLOCK_SIZE, 0, params) })
}

/// DIA: one launch of `spmv_dia_*`, `y = alpha * A * x + beta * y`.
impl<T: Scalar, V: ValueStorage<T>> Enqueue<T> for DeviceDia<T, V> {
    type Kernel = ();
    type Launch = Prepared<DiaParams<V, T>>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        DeviceDia::belongs_to(self, gpu)
    }

    fn prepare(&self, gpu: &Gpu, (): ()) -> Result<((), Self::Launch)> {
        Ok(((), prepare_dia(gpu, self)?))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &Self::Launch, p: &Product<T>) -> Result<()> {
        // SAFETY: `p` was checked against this matrix, for which `prepare` made `launch`.
        unsafe { launch.enqueue(gpu, p.axpby()) }
    }
}
