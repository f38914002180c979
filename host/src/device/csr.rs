//! [`DeviceCsr`]: a CSR matrix on the device with 32-bit indices, its row statistics, the count of
//! updates of its values, and the data of the kernel strategies that cut its rows, built the first
//! time a strategy needs it, and its transpose for the transposed product, its ELL copy for
//! `Kernel::CsrEllCopy` and its compressed columns for `Kernel::CsrCompressedCopy`, each built (on
//! the device) the first time a plan needs it.

use super::Gpu;
use super::compressed::CompressedColumns;
use super::compressed_ell::DeviceCompressedEll;
use super::dia::DeviceDia;
use super::ell::DeviceEll;
use super::long_rows::{DeviceLongRows, LongRowSplit};
use super::memory::{Plain, Unfilled, addr};
use super::merge_path::DeviceMergeTiles;
use super::row_tasks::DeviceRowTasks;
use super::stream_windows::DeviceStreamWindows;
use super::transpose::BuiltTranspose;
use crate::formats::convert::{check_u32_dims, index32, narrow};
use crate::formats::csr::{CsrRef, RowStats};
use crate::formats::reorder::Permutation;
use crate::formats::{IndexFaults, copy_checked};
use crate::formats::{STAGE_BYTES, Shape, first_decrease, offsets_copy, offsets_stats};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::CsrArgs;
use kernels_gpu::abi::DevicePtr as AbiPtr;
use nalgebra_sparse::CsrMatrix;
use rayon::prelude::*;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock, PoisonError};
use std::thread::{Scope, ScopedJoinHandle};

/// The copy of a [`DeviceCsr`] that `Kernel::CsrEllCopy` multiplies with, the most compact of three
/// forms the matrix takes: DIA where its entries lie on at most 128 diagonals (no column stored at
/// all), else ELL with its columns as 16-bit offsets from the row where every column lies that
/// close (2 bytes a slot fewer), else plain ELL. The sums are ELL's, bit for bit (DIA is taken only
/// where every row's columns increase).
#[derive(Debug)]
pub(crate) enum EllCopy<T> {
    Dia(DeviceDia<T>),
    Deltas(DeviceCompressedEll<T>),
    Plain(DeviceEll<T>),
}

impl<T: Scalar> EllCopy<T> {
    /// Bytes of the copy on the device.
    pub(crate) fn device_bytes(&self) -> usize {
        match self {
            EllCopy::Dia(dia) => dia.device_bytes(),
            EllCopy::Deltas(ell) => ell.device_bytes(),
            EllCopy::Plain(ell) => ell.device_bytes(),
        }
    }
}

/// What attempts at a [`DeviceCopy`] found out, so that none is made twice.
#[derive(Debug, Default)]
struct CopyAttempts {
    /// The bytes of a copy the device had no memory for.
    no_memory: Option<usize>,
    /// Auto looked at the copy ([`DeviceCopy::look`]) and the matrix took none.
    declined: bool,
}

impl CopyAttempts {
    /// `build`, refused at once where `remember_memory` and the device had no memory for the copy
    /// before; with `remember_memory`, a lack of memory now is remembered, so that a fallback costs
    /// no failed allocation per product.
    fn attempt<R>(&mut self, remember_memory: bool, build: impl FnOnce() -> Result<R>) -> Result<R> {
        if let Some(bytes) = self.no_memory.filter(|_| remember_memory) {
            return Err(Error::DeviceMemory { bytes });
        }
        build().inspect_err(|e| {
            if let (true, Error::DeviceMemory { bytes }) = (remember_memory, e) {
                self.no_memory = Some(*bytes);
            }
        })
    }
}

/// A copy of a [`DeviceCsr`] in another form (the ELL copy, the compressed columns) that a plan
/// builds on the device the first time it is asked for, once: built and published under a lock,
/// which a refresh of its values holds too, so that an update cannot miss a copy being built. The
/// lock keeps what earlier attempts found, so that none is tried again.
#[derive(Debug)]
struct DeviceCopy<C> {
    built: OnceLock<C>,
    attempts: Mutex<CopyAttempts>,
}

impl<C> DeviceCopy<C> {
    fn new() -> Self {
        Self { built: OnceLock::new(), attempts: Mutex::new(CopyAttempts::default()) }
    }

    fn get(&self) -> Option<&C> {
        self.built.get()
    }

    /// The lock, and the copy if it is built (checked again under the lock).
    fn locked(&self) -> (MutexGuard<'_, CopyAttempts>, Option<&C>) {
        let attempts = self.attempts.lock().unwrap_or_else(PoisonError::into_inner);
        (attempts, self.built.get())
    }

    /// The copy: built by `build` on the first call, the same for every later one. Refused for lack
    /// of device memory once, it is refused from then on without trying again
    /// ([`CopyAttempts::attempt`]).
    fn or_build(&self, build: impl FnOnce() -> Result<C>) -> Result<&C> {
        if let Some(built) = self.get() {
            return Ok(built);
        }
        let (mut attempts, built) = self.locked();
        if let Some(built) = built {
            return Ok(built);
        }
        let built = attempts.attempt(true, build)?;
        Ok(self.built.get_or_init(|| built))
    }

    /// Auto's look: the copy built before, or the one `look` builds on the first call that finds
    /// none; `None` where `look` declines (the matrix does not take the form Auto looks for), which
    /// is remembered, so that the look runs once per matrix. With `remember_memory`, a lack of
    /// device memory is remembered as [`DeviceCopy::or_build`] remembers it; without, it is an
    /// error of this call alone, and the look may be made again.
    fn look(&self, remember_memory: bool, look: impl FnOnce() -> Result<Option<C>>) -> Result<Option<&C>> {
        if let Some(built) = self.get() {
            return Ok(Some(built));
        }
        let (mut attempts, built) = self.locked();
        if let Some(built) = built {
            return Ok(Some(built));
        }
        if attempts.declined {
            return Ok(None);
        }
        match attempts.attempt(remember_memory, look)? {
            Some(built) => Ok(Some(self.built.get_or_init(|| built))),
            None => {
                attempts.declined = true;
                Ok(None)
            }
        }
    }

    /// Calls `refresh` with the copy, if a plan has built it, holding the lock its construction
    /// holds: a copy being built is published before, or built from values after, the refresh.
    fn refresh_with(&self, refresh: impl FnOnce(&C) -> Result<()>) -> Result<()> {
        let (_building, built) = self.locked();
        built.map_or(Ok(()), refresh)
    }
}

/// A CSR matrix on the device, with 32-bit row offsets and column indices, and the statistics of its
/// rows (kept for kernel selection, which then runs in constant time).
///
/// An upload copies the three arrays and nothing else. The strategies that cut rows (the
/// parametrised kernel's long-row split, the balanced kernel's row tasks, the merge-path kernel's tiles,
/// the streaming engine's windows) build their data from the
/// row offsets, which the matrix also keeps on the host (4 bytes a row), the first time they are
/// planned for it ([`Gpu::plan`](crate::Gpu::plan), or a first product), and keep it for later ones.
///
/// The values may be replaced, keeping the pattern ([`DeviceCsr::update_values`]): everything built
/// from the pattern alone stays valid, and so does every plan of the CSR kernels and SpMM, which read
/// the values in place; the transpose and the ELL copy, which copy them, are refreshed on the stream
/// by the update; the compressed columns share the matrix's values.
/// What holds values derived outside the matrix (a solver's Jacobi diagonal) compares
/// [`DeviceCsr::values_generation`] with the one it was derived at, and refuses to run on a
/// difference ([`Error::StaleValues`](crate::Error::StaleValues)).
#[derive(Debug)]
pub struct DeviceCsr<T> {
    row_offsets: CudaSlice<u32>,
    col_indices: CudaSlice<u32>,
    values: CudaSlice<T>,
    stats: RowStats,
    /// The kernels' view of the arrays above, built once here rather than at every product.
    args: CsrArgs<T>,
    host_offsets: Vec<u32>,
    /// Updates of the values since the matrix was made: enqueued on the stream, counted here.
    generation: AtomicU64,
    long_rows: OnceLock<DeviceLongRows<T>>,
    row_tasks: OnceLock<DeviceRowTasks<T>>,
    merge_tiles: OnceLock<DeviceMergeTiles<T>>,
    stream_windows: OnceLock<DeviceStreamWindows<T>>,
    /// `Aᵀ` in CSR, for the deterministic transposed product: boxed, a `DeviceCsr` in a `DeviceCsr`.
    transpose: OnceLock<Box<BuiltTranspose<T>>>,
    /// The matrix in ELL, for `Kernel::CsrEllCopy`.
    ell_copy: DeviceCopy<EllCopy<T>>,
    /// The columns compressed, for `Kernel::CsrCompressedCopy`.
    compressed_columns: DeviceCopy<CompressedColumns<T>>,
}

impl<T: Scalar> DeviceCsr<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.stats.rows, ncols: self.stats.cols, nnz: self.stats.nnz }
    }

    crate::formats::shape_accessors!();

    /// Row-length statistics, computed at upload.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    /// The `nrows + 1` row offsets on the device.
    pub fn row_offsets(&self) -> &CudaSlice<u32> {
        &self.row_offsets
    }

    /// The `nnz` column indices on the device.
    pub fn col_indices(&self) -> &CudaSlice<u32> {
        &self.col_indices
    }

    /// The `nnz` values on the device.
    pub fn values(&self) -> &CudaSlice<T> {
        &self.values
    }

    /// Bytes of the matrix on the device, with the data its strategies have built so far.
    pub fn device_bytes(&self) -> usize {
        let arrays =
            (self.row_offsets.len() + self.col_indices.len()) * 4 + self.values.len() * size_of::<T>();
        arrays
            + self.long_rows.get().map_or(0, DeviceLongRows::device_bytes)
            + self.row_tasks.get().map_or(0, DeviceRowTasks::device_bytes)
            + self.merge_tiles.get().map_or(0, DeviceMergeTiles::device_bytes)
            + self.stream_windows.get().map_or(0, DeviceStreamWindows::device_bytes)
            + self.transpose.get().map_or(0, |t| t.device_bytes())
            + self.ell_copy.get().map_or(0, EllCopy::device_bytes)
            + self.compressed_columns.get().map_or(0, CompressedColumns::device_bytes)
    }

    /// How many times the values were replaced ([`DeviceCsr::update_values`]) since the matrix was
    /// made: data derived from them records it, and is stale once it differs.
    pub fn values_generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// Counts an update of the values, once its copies are enqueued.
    pub(crate) fn values_updated(&self) {
        self.generation.fetch_add(1, Ordering::AcqRel);
    }

    pub(crate) fn args(&self) -> CsrArgs<T> {
        self.args
    }

    /// The row offsets, as the matrix keeps them on the host: what a plan that owns its own data
    /// (the column-panel kernel's row groups) or a device factorisation's pattern builds it from.
    pub(crate) fn host_offsets(&self) -> &[u32] {
        &self.host_offsets
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }

    /// The rows of at least `min_len` entries, split into chunks for the parametrised kernel, with its
    /// scratch: built on the first call, the same for every later one. `min_len` is a function of the
    /// matrix's statistics and the GPU alone (the caller's contract), so later calls ask the same.
    pub(crate) fn long_rows(&self, gpu: &Gpu, min_len: u32) -> Result<&DeviceLongRows<T>> {
        if let Some(built) = self.long_rows.get() {
            debug_assert_eq!(built.min_len(), min_len.max(1));
            return Ok(built);
        }
        let built = DeviceLongRows::upload(gpu, &LongRowSplit::new(&self.host_offsets, min_len)?)?;
        Ok(self.long_rows.get_or_init(|| built))
    }

    /// The balanced kernel's row tasks and long-row split: built on the first call.
    pub(crate) fn row_tasks(&self, gpu: &Gpu) -> Result<&DeviceRowTasks<T>> {
        if let Some(built) = self.row_tasks.get() {
            return Ok(built);
        }
        let built = DeviceRowTasks::upload(gpu, &self.host_offsets)?;
        Ok(self.row_tasks.get_or_init(|| built))
    }

    /// The merge-path kernel's tiles, split rows and slots: built on the first call.
    pub(crate) fn merge_tiles(&self, gpu: &Gpu) -> Result<&DeviceMergeTiles<T>> {
        if let Some(built) = self.merge_tiles.get() {
            return Ok(built);
        }
        let built = DeviceMergeTiles::upload(gpu, &self.host_offsets)?;
        Ok(self.merge_tiles.get_or_init(|| built))
    }

    /// The streaming engine's windows and long-row split: built on the first call.
    pub(crate) fn stream_windows(&self, gpu: &Gpu) -> Result<&DeviceStreamWindows<T>> {
        if let Some(built) = self.stream_windows.get() {
            return Ok(built);
        }
        let built = DeviceStreamWindows::upload(gpu, &self.host_offsets)?;
        Ok(self.stream_windows.get_or_init(|| built))
    }

    /// `Aᵀ`: built by `build` on the first call (the launches are the enqueue tier's), the same for
    /// every later one.
    pub(crate) fn transpose_or_build(
        &self,
        build: impl FnOnce() -> Result<BuiltTranspose<T>>,
    ) -> Result<&Self> {
        if let Some(built) = self.transpose.get() {
            return Ok(&built.csr);
        }
        let built = Box::new(build()?);
        Ok(&self.transpose.get_or_init(|| built).csr)
    }

    /// The ELL copy: built by `build` on the first call (the launches are the enqueue tier's), the
    /// same for every later one ([`DeviceCopy::or_build`]).
    pub(crate) fn ell_copy_or_build(
        &self,
        build: impl FnOnce() -> Result<EllCopy<T>>,
    ) -> Result<&EllCopy<T>> {
        self.ell_copy.or_build(build)
    }

    /// The ELL copy where it is DIA: built by `build_dia` on the first call that finds no copy
    /// (`None` where the matrix does not take DIA as `build_dia` asks), published as the copy when
    /// it is; `None` where the copy is of another form, and from then on where `build_dia` found
    /// none, without trying again. Auto's look for a DIA copy, which is not to build another form;
    /// a lack of memory for it is not a finding (the smaller forms may still fit).
    pub(crate) fn dia_copy_or_build(
        &self,
        build_dia: impl FnOnce() -> Result<Option<DeviceDia<T>>>,
    ) -> Result<Option<&DeviceDia<T>>> {
        let copy = self.ell_copy.look(false, || Ok(build_dia()?.map(EllCopy::Dia)))?;
        Ok(copy.and_then(|copy| match copy {
            EllCopy::Dia(dia) => Some(dia),
            EllCopy::Deltas(_) | EllCopy::Plain(_) => None,
        }))
    }

    /// The compressed columns: built by `build` on the first call, the same for every later one
    /// ([`DeviceCopy::or_build`]).
    pub(crate) fn compressed_columns_or_build(
        &self,
        build: impl FnOnce() -> Result<CompressedColumns<T>>,
    ) -> Result<&CompressedColumns<T>> {
        self.compressed_columns.or_build(build)
    }

    /// Auto's look at the compressed columns ([`DeviceCopy::look`]): those built before, or those
    /// `look` builds; `None` where `look` declines them (they save too little), once per matrix. A
    /// lack of memory for them is remembered, as for a build.
    pub(crate) fn compressed_columns_if(
        &self,
        look: impl FnOnce() -> Result<Option<CompressedColumns<T>>>,
    ) -> Result<Option<&CompressedColumns<T>>> {
        self.compressed_columns.look(true, look)
    }

    /// Calls `refresh` with the ELL copy, if a plan has built it ([`DeviceCopy::refresh_with`]).
    pub(crate) fn refresh_ell_copy_with(
        &self,
        refresh: impl FnOnce(&EllCopy<T>) -> Result<()>,
    ) -> Result<()> {
        self.ell_copy.refresh_with(refresh)
    }

    /// `Aᵀ`, if a plan has built it.
    pub(crate) fn built_transpose(&self) -> Option<&Self> {
        self.transpose.get().map(|t| &t.csr)
    }

    /// `Aᵀ`, if a plan has built it, with the entry of this matrix each of its entries copies
    /// (`nnz` indices): what an update of the values gathers anew.
    pub(crate) fn built_transpose_sources(&self) -> Option<(&Self, AbiPtr<u32>)> {
        self.transpose.get().map(|t| (&t.csr, t.sources))
    }

    /// A matrix of `rows` rows and `ncols` columns from arrays already on the device
    /// (`[row_offsets, col_indices]` and `values`, a valid CSR matrix: the caller's contract) and its
    /// `rows + 1` row offsets on the host.
    pub(crate) fn from_device_parts(
        gpu: &Gpu,
        (rows, ncols): (u32, usize),
        host_offsets: Vec<u32>,
        indices: [CudaSlice<u32>; 2],
        values: CudaSlice<T>,
    ) -> Self {
        let stats = RowStats::from_u32_offsets(&host_offsets, ncols);
        Self::from_device_parts_with_stats(gpu, rows, stats, host_offsets, indices, values)
    }

    /// [`DeviceCsr::from_device_parts`] with the statistics of its rows computed by the caller (from
    /// `host_offsets`, while the copies ran).
    pub(crate) fn from_device_parts_with_stats(
        gpu: &Gpu,
        rows: u32,
        stats: RowStats,
        host_offsets: Vec<u32>,
        indices: [CudaSlice<u32>; 2],
        values: CudaSlice<T>,
    ) -> Self {
        Self::assemble(gpu, rows, stats, host_offsets, indices, values)
    }

    /// The matrix of `rows` rows on its device arrays (`[row_offsets, col_indices]` and `values`),
    /// with its statistics and host offsets, and no strategy data built yet.
    fn assemble(
        gpu: &Gpu,
        rows: u32,
        stats: RowStats,
        host_offsets: Vec<u32>,
        [row_offsets, col_indices]: [CudaSlice<u32>; 2],
        values: CudaSlice<T>,
    ) -> Self {
        let args = CsrArgs {
            row_offsets: addr(&row_offsets, gpu),
            col_indices: addr(&col_indices, gpu),
            values: addr(&values, gpu),
            rows,
        };
        DeviceCsr {
            row_offsets,
            col_indices,
            values,
            stats,
            args,
            host_offsets,
            generation: AtomicU64::new(0),
            long_rows: OnceLock::new(),
            row_tasks: OnceLock::new(),
            merge_tiles: OnceLock::new(),
            stream_windows: OnceLock::new(),
            ell_copy: DeviceCopy::new(),
            compressed_columns: DeviceCopy::new(),
            transpose: OnceLock::new(),
        }
    }
}

impl Gpu {
    /// Uploads a [`CsrMatrix`] (valid by construction), as [`Gpu::upload_csr_ref`] does: the
    /// arrays are ready in the order of [`Gpu::stream`] when this returns.
    pub fn upload_csr<T: Scalar>(&self, a: &CsrMatrix<T>) -> Result<DeviceCsr<T>> {
        self.upload_csr_ref(CsrRef::from(a))
    }

    /// Checks raw CSR arrays (see [`CsrRef::try_new`]) and uploads them, as
    /// [`Gpu::upload_csr_ref`] does: the arrays are ready in the order of [`Gpu::stream`] when this
    /// returns.
    pub fn upload_csr_parts<T: Scalar>(
        &self,
        nrows: usize,
        ncols: usize,
        row_offsets: &[usize],
        col_indices: &[usize],
        values: &[T],
    ) -> Result<DeviceCsr<T>> {
        self.upload_csr_ref(CsrRef::try_new(nrows, ncols, row_offsets, col_indices, values)?)
    }

    /// Reorders the square matrix `a` by reverse Cuthill–McKee ([`Permutation::rcm`], on the host)
    /// and uploads `P A Pᵀ` ([`Gpu::upload_csr_ref`]: ready in the order of [`Gpu::stream`]). Its
    /// products run in the permuted order: `P y = (P A Pᵀ)(P x)`, so permute `x` in with
    /// [`Permutation::to_new`] and `y` out with [`Permutation::to_old`], once around a sequence of
    /// products (see `formats/reorder.rs` for why not around each).
    pub fn upload_csr_rcm<T: Scalar>(&self, a: CsrRef<'_, T>) -> Result<(DeviceCsr<T>, Permutation)> {
        let p = Permutation::rcm(a)?;
        let permuted = p.permute(a)?;
        Ok((self.upload_csr_ref(permuted.view())?, p))
    }

    /// Uploads a checked CSR matrix, narrowing its indices to `u32`: refused with
    /// [`Error::TooLarge`](crate::Error::TooLarge) when a dimension or the entry count does not fit.
    ///
    /// The column indices and the values go through pinned staging buffers a chunk at a time
    /// (`Gpu::upload_staged`), narrowed and copied in by all cores while the previous chunk is on
    /// the link; the row offsets are narrowed in parallel too, and their statistics computed
    /// meanwhile, while the device buffers are allocated (on a thread of their own for a large
    /// matrix, `allocate_apart`).
    ///
    /// Returns once the copies are enqueued, not done: the arrays are ready in the order of
    /// [`Gpu::stream`], so that products and copies enqueued on it afterwards see them, while work on
    /// another stream must first wait for this one (an event recorded on it, or
    /// [`Gpu::synchronize`]); `a`'s arrays are no longer read.
    pub fn upload_csr_ref<T: Scalar>(&self, a: CsrRef<'_, T>) -> Result<DeviceCsr<T>> {
        check_u32_dims(&a)?;
        let rows = index32(a.nrows());
        let (cols, nnz) = (a.col_indices(), a.nnz());
        let apart = allocate_apart::<T>(nnz);
        std::thread::scope(|scope| {
            let indices = Soon::start(scope, apart, || self.alloc_indices(a.nrows(), nnz));
            // Offsets are at most nnz and column indices below ncols, both within `u32` after the
            // check above.
            let (host_offsets, stats) = rayon::join(
                || a.row_offsets().par_iter().with_min_len(PAR_MIN).map(|&o| index32(o)).collect::<Vec<_>>(),
                || a.stats(),
            );
            let [offsets_buffer, cols_buffer] = indices.finish()?;
            let values_buffer = Soon::start(scope, apart, || self.alloc_unfilled::<T>(nnz));
            let row_offsets = self.upload_copied(offsets_buffer, &host_offsets)?;
            let col_indices = self.upload_staged(cols_buffer, |first, chunk: &mut [u32]| {
                let source = &cols[first..first + chunk.len()];
                chunk.par_iter_mut().with_min_len(PAR_MIN).zip(source).for_each(|(c, &s)| *c = index32(s));
                Ok(())
            })?;
            let values = self.upload_copied(values_buffer.finish()?, a.values())?;
            Ok(DeviceCsr::assemble(self, rows, stats, host_offsets, [row_offsets, col_indices], values))
        })
    }

    /// Checks raw CSR arrays with the kernels' own `u32` indices and uploads them: nothing to narrow,
    /// so the three arrays are copied through the pinned staging buffers a chunk at a time, one
    /// array after the other with no pause between them, each chunk of columns checked by all cores
    /// in the same read that copies it in ([`copy_checked`]), while the chunks before it are on the
    /// link; the row offsets are checked before anything is copied, and their statistics and the
    /// matrix's host copy of them made while the device buffers are allocated (on a thread of their
    /// own for a large matrix, `allocate_apart`).
    ///
    /// Returns once the copies are enqueued, not done: the arrays are ready in the order of
    /// [`Gpu::stream`], so that products and copies enqueued on it afterwards see them, while work on
    /// another stream must first wait for this one (an event recorded on it, or
    /// [`Gpu::synchronize`]); the caller's arrays are no longer read.
    ///
    /// Refused with the [`CsrError`](crate::CsrError) that [`CsrRef::try_new`] gives the same arrays
    /// widened to `usize`, naming the same row or entry ([`Error::InvalidCsr`](crate::Error)), or with
    /// [`Error::TooLarge`](crate::Error::TooLarge) for a dimension past `u32`; a refused upload keeps
    /// nothing on the device.
    pub fn upload_csr_u32<T: Scalar>(
        &self,
        (nrows, ncols): (usize, usize),
        row_offsets: &[u32],
        col_indices: &[u32],
        values: &[T],
    ) -> Result<DeviceCsr<T>> {
        let rows = narrow("the row count", nrows)?;
        let columns = narrow("the column count", ncols)?;
        let decrease = first_decrease(row_offsets);
        let faults = IndexFaults { negative_offset: None, negative_column: None, decrease, column: None };
        let verdict = |faults: &IndexFaults| {
            faults.verdict((nrows, ncols), row_offsets, (col_indices.len(), values.len()), |e| col_indices[e])
        };
        // The offsets are valid CSR offsets of `values.len()` entries past this: the columns remain.
        verdict(&faults)?;
        let nnz = values.len();
        let apart = allocate_apart::<T>(nnz);
        std::thread::scope(|scope| {
            let indices = Soon::start(scope, apart, || self.alloc_indices(nrows, nnz));
            // Each by all cores while the buffers are allocated (the host copy's pages are faulted
            // in on first touch: 4 bytes a row, 17.6 MB for stencil2d-5).
            let (stats, host_offsets) =
                rayon::join(|| offsets_stats(row_offsets, ncols), || offsets_copy(row_offsets));
            let [offsets_buffer, cols_buffer] = indices.finish()?;
            let values_buffer = Soon::start(scope, apart, || self.alloc_unfilled::<T>(nnz));
            // Staged on this thread, not in a rayon task, so that the stages stay this upload's
            // from one array to the next (`Gpu::upload_staged`).
            let device_offsets = self.upload_copied(offsets_buffer, row_offsets)?;
            let device_cols = self.upload_staged(cols_buffer, |first, chunk: &mut [u32]| {
                let source = &col_indices[first..first + chunk.len()];
                match copy_checked(source, chunk, |c| c >= columns)? {
                    // The chunks go in order, so the first chunk with a column out of range holds
                    // the first one, and the other faults were ruled out above: the matrix's error,
                    // and no later chunk is copied.
                    Some(k) => Ok(verdict(&IndexFaults { column: Some(first + k), ..faults })?),
                    None => Ok(()),
                }
            })?;
            let device_values = self.upload_copied(values_buffer.finish()?, values)?;
            let indices = [device_offsets, device_cols];
            Ok(DeviceCsr::assemble(self, rows, stats, host_offsets, indices, device_values))
        })
    }

    /// The unwritten device buffers of `nrows + 1` row offsets and `nnz` column indices.
    fn alloc_indices(&self, nrows: usize, nnz: usize) -> Result<[Unfilled<u32>; 2]> {
        let offsets = nrows.checked_add(1).ok_or(Error::TooLarge {
            what: "the row count",
            value: nrows,
            limit: usize::MAX - 1,
        })?;
        Ok([self.alloc_unfilled(offsets)?, self.alloc_unfilled(nnz)?])
    }

    /// `buffer` written with `data`, copied through the pinned staging buffers by all cores.
    fn upload_copied<E: Plain>(&self, buffer: Unfilled<E>, data: &[E]) -> Result<CudaSlice<E>> {
        self.upload_staged(buffer, |first, chunk: &mut [E]| {
            copy_checked(&data[first..first + chunk.len()], chunk, |_| false).map(drop)
        })
    }
}

/// Work started on a thread of a scope when `apart`, so that it runs while the caller goes on
/// until [`Soon::finish`], else done at once: how an upload allocates its device buffers while it
/// does the host's work on the offsets and stages the arrays before (`Gpu::alloc_unfilled`).
/// Uploads whose values take more than one stage allocate apart ([`allocate_apart`]).
enum Soon<'s, R> {
    Ready(R),
    Running(ScopedJoinHandle<'s, R>),
}

impl<'s, R: Send + 's> Soon<'s, R> {
    fn start(scope: &'s Scope<'s, '_>, apart: bool, make: impl FnOnce() -> R + Send + 's) -> Self {
        if apart { Soon::Running(scope.spawn(make)) } else { Soon::Ready(make()) }
    }

    /// The work's result, once done; a panic in it goes on here.
    fn finish(self) -> R {
        match self {
            Soon::Ready(r) => r,
            Soon::Running(thread) => thread.join().unwrap_or_else(|panic| std::panic::resume_unwind(panic)),
        }
    }
}

/// Whether an upload of `nnz` values of `T` allocates its device buffers on a thread of their own:
/// from a pool the driver has trimmed (the default pool keeps nothing once the stream is
/// synchronised), an allocation maps fresh device memory, a host call whose cost grows with the
/// bytes, which, made between the arrays on the upload's thread, stalled the host's pass and the
/// link alike (docs/PERF.md, section 20). Below one stage of values a thread's start (tens of
/// microseconds) would cost more than it hides.
fn allocate_apart<T>(nnz: usize) -> bool {
    nnz.checked_mul(size_of::<T>()).is_none_or(|bytes| bytes > STAGE_BYTES)
}

/// Elements below which a rayon task is not split further: enough work to pay for a task.
const PAR_MIN: usize = 1 << 15;
