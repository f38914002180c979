//! A [`DeviceCsr`] from CSR arrays already on the device (assembled there, or a cuSPARSE user's),
//! taken without a copy: checked by a kernel (`kernels-gpu/src/check.rs`) that finds the first
//! position of each fault, which [`IndexFaults::verdict`] turns into the error the host check
//! ([`CsrRef::try_new`](crate::CsrRef::try_new)) gives the same arrays; or, `unsafe`, unchecked.
//! Either way the row offsets come back to the host once (4 bytes a row), for the row statistics
//! and the strategies that cut rows, as after an upload.
//!
//! Also the upload of arrays the caller keeps in page-locked host memory ([`Gpu::upload_csr_pinned`]):
//! copied by the copy engine straight from it, then checked here as arrays from the device are. It
//! is the one upload at the link's rate: a staged upload from pageable memory passes every byte
//! through the host's cores while the copy engine reads the stages, and on the GPU machines the two
//! slow each other down by a quarter or more (docs/PERF.md, section 20).

use super::launch::launch;
use crate::device::{DeviceCsr, Gpu, addr, nonnegative_as_u32};
use crate::formats::convert::narrow;
use crate::formats::{CsrIndex, IndexFaults, offsets_copy, offsets_stats};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, PinnedHostSlice};
use kernels_gpu::abi::{
    self as abi, CHECK_BLOCK_SIZE, CHECK_COLUMN, CHECK_DECREASE, CHECK_NEGATIVE_COLUMN,
    CHECK_NEGATIVE_OFFSET, CHECK_NONE, CHECK_SLOTS, CsrCheckParams, DevicePtr as AbiPtr,
};
use kernels_gpu::index::grid_blocks;

impl<T: Scalar> DeviceCsr<T> {
    /// The matrix of `nrows` rows and `ncols` columns whose CSR arrays are already on `gpu`: taken
    /// as they are (no copy; the matrix owns them from now on), once a kernel has checked them.
    ///
    /// Refused, with the arrays handed back untouched in the [`FromDeviceError`]: any of them of
    /// another [`Gpu`] ([`Error::ForeignBuffer`]); a
    /// dimension or the entry count over the kernels' 32-bit indices ([`Error::TooLarge`]); arrays
    /// that are not CSR, with the [`CsrError`](crate::CsrError) that
    /// [`CsrRef::try_new`](crate::CsrRef::try_new) gives the same arrays on the host, naming the same
    /// row or entry; a stream that is capturing a graph ([`Error::Unsupported`]). The arrays are
    /// read in the order of `gpu`'s stream: one written on another stream must be ordered before.
    /// Waits for the stream (the check's verdict and the row offsets come back to the host).
    pub fn try_from_device(
        gpu: &Gpu,
        dims: (usize, usize),
        row_offsets: CudaSlice<u32>,
        col_indices: CudaSlice<u32>,
        values: CudaSlice<T>,
    ) -> std::result::Result<Self, FromDeviceError<u32, T>> {
        from_arrays(gpu, dims, [row_offsets, col_indices], values, true)
    }

    /// As [`DeviceCsr::try_from_device`], for cuSPARSE's `i32` indices: a negative one is refused
    /// first, as [`CsrError::IndexNotUsize`](crate::CsrError::IndexNotUsize) naming its array
    /// (`row_offsets`, then `col_indices`) and position, as the conversions from signed indices of
    /// other crates refuse it. The arrays then serve as `u32`s, without a copy.
    pub fn try_from_device_i32(
        gpu: &Gpu,
        dims: (usize, usize),
        row_offsets: CudaSlice<i32>,
        col_indices: CudaSlice<i32>,
        values: CudaSlice<T>,
    ) -> std::result::Result<Self, FromDeviceError<i32, T>> {
        from_arrays(gpu, dims, [row_offsets, col_indices], values, true)
    }

    /// As [`DeviceCsr::try_from_device`] without the check of the arrays (the sizes and contexts
    /// are still checked): for arrays valid by construction, which a kernel of the caller's made.
    ///
    /// # Safety
    /// The arrays are a CSR matrix of `nrows` rows and `ncols` columns: `row_offsets` has
    /// `nrows + 1` elements, starts at 0, never decreases and ends at the length of `col_indices`,
    /// which is that of `values`; every column index is below `ncols`. The product kernels read
    /// `x` at the column indices and write `y` at the rows the offsets delimit without a bounds
    /// check: arrays that break this make them read and write out of bounds.
    pub unsafe fn from_device_unchecked(
        gpu: &Gpu,
        dims: (usize, usize),
        row_offsets: CudaSlice<u32>,
        col_indices: CudaSlice<u32>,
        values: CudaSlice<T>,
    ) -> std::result::Result<Self, FromDeviceError<u32, T>> {
        from_arrays(gpu, dims, [row_offsets, col_indices], values, false)
    }

    /// As [`DeviceCsr::try_from_device_i32`] without the check of the arrays.
    ///
    /// # Safety
    /// As [`DeviceCsr::from_device_unchecked`], and no index is negative.
    pub unsafe fn from_device_i32_unchecked(
        gpu: &Gpu,
        dims: (usize, usize),
        row_offsets: CudaSlice<i32>,
        col_indices: CudaSlice<i32>,
        values: CudaSlice<T>,
    ) -> std::result::Result<Self, FromDeviceError<i32, T>> {
        from_arrays(gpu, dims, [row_offsets, col_indices], values, false)
    }
}

impl Gpu {
    /// Uploads CSR arrays with the kernels' own `u32` indices that the caller keeps in page-locked
    /// host memory of this `Gpu`'s context (cudarc's [`PinnedHostSlice`], made by
    /// [`Gpu::pinned_zeroed`]): the column indices and values are copied by the
    /// copy engine straight from where they lie, at the link's rate, while the host reads the row
    /// offsets for their statistics and the matrix's copy of them; then the offsets are copied and
    /// the arrays checked on the device as [`DeviceCsr::try_from_device`] checks arrays, with the
    /// errors [`CsrRef::try_new`] gives the same arrays widened to `usize`, naming the same row or
    /// entry. [`Gpu::upload_csr_u32`] takes the same arrays from pageable memory through the `Gpu`'s
    /// staging buffers, at the rate the host's memory leaves when its cores fill the stages while the
    /// copy engine reads them (docs/PERF.md, section 20): a caller that builds or reads its matrix
    /// into page-locked memory in the first place saves that pass.
    ///
    /// The row offsets are read by the host's cores: ordinary (cached) page-locked memory
    /// ([`Gpu::pinned_zeroed`], or cudarc's `alloc_pinned_with_flags(len, 0)`) reads fast,
    /// write-combined memory (cudarc's `alloc_pinned`) slowly. cudarc makes no page-locked slice of
    /// zero elements, so a matrix with no entries goes through [`Gpu::upload_csr_u32`].
    ///
    /// Refused before anything is allocated on the device: a dimension or array length past the
    /// kernels' 32-bit indices ([`Error::TooLarge`]), memory pinned by another context
    /// ([`Error::ForeignBuffer`]), a stream that captures a graph ([`Error::Unsupported`]); after
    /// the copies, arrays that are not CSR ([`Error::InvalidCsr`]), and the device copies are freed.
    /// Waits for the stream (the check's verdict comes back to the host), so the caller's arrays are
    /// no longer read when this returns.
    ///
    /// [`CsrRef::try_new`]: crate::CsrRef::try_new
    pub fn upload_csr_pinned<T: Scalar>(
        &self,
        dims: (usize, usize),
        row_offsets: &PinnedHostSlice<u32>,
        col_indices: &PinnedHostSlice<u32>,
        values: &PinnedHostSlice<T>,
    ) -> Result<DeviceCsr<T>> {
        narrow("the row count", dims.0)?;
        narrow("the row offset count", row_offsets.len())?;
        narrow("the column count", dims.1)?;
        narrow("the column index count", col_indices.len())?;
        narrow("the entry count", values.len())?;
        let names = ["the row offsets", "the column indices", "the values"];
        self.check_pinned(names[0], row_offsets)?;
        self.check_pinned(names[1], col_indices)?;
        self.check_pinned(names[2], values)?;
        self.not_capturing("an upload while the stream captures a graph")?;
        // The bulk first: the copy engine reads the columns and values while the host reads the
        // row offsets where they lie, before their own copy is enqueued (cudarc's view of them waits
        // for the work recorded on them, which is none of this upload's yet).
        let upload = || -> Result<DeviceCsr<T>> {
            let cols = self.upload_pinned(names[1], col_indices)?;
            let values = self.upload_pinned(names[2], values)?;
            let (host_offsets, stats) = {
                let host = row_offsets.as_slice()?;
                // Robust to offsets that are not CSR (saturating sums): the check below refuses them.
                rayon::join(|| offsets_copy(host), || offsets_stats(host, dims.1))
            };
            let offsets = self.upload_pinned(names[0], row_offsets)?;
            let arrays = Arrays { dims, row_offsets: &offsets, col_indices: &cols, values: &values };
            arrays.check_sizes(self)?;
            let faults = arrays.device_faults(self)?;
            arrays.judge(self, &faults, &host_offsets)?;
            let rows = narrow("the row count", host_offsets.len().saturating_sub(1))?;
            Ok(DeviceCsr::from_device_parts_with_stats(
                self,
                rows,
                stats,
                host_offsets,
                [offsets, cols],
                values,
            ))
        };
        // A failure after a copy was enqueued (a device allocation refused, say) returns once the
        // copies are done, as success does (the check's verdict waits for them): the caller may
        // then write or free its arrays, which the copy engine reads until then.
        upload().inspect_err(|_| {
            let _ = self.stream().synchronize();
        })
    }
}

/// The matrix on `[row_offsets, col_indices]` and `values`, after the device check when `check`
/// (else the sizes and contexts only: the unchecked constructors' callers vouch for the rest); on a
/// refusal, the arrays back with the error.
fn from_arrays<I: Checked, T: Scalar>(
    gpu: &Gpu,
    dims: (usize, usize),
    [row_offsets, col_indices]: [CudaSlice<I>; 2],
    values: CudaSlice<T>,
    check: bool,
) -> std::result::Result<DeviceCsr<T>, FromDeviceError<I, T>> {
    let arrays = Arrays { dims, row_offsets: &row_offsets, col_indices: &col_indices, values: &values };
    let verdict = if check { arrays.checked(gpu) } else { arrays.unchecked(gpu) };
    // `check_sizes` narrowed the row offsets' length, so the row count fits too.
    let verdict =
        verdict.and_then(|offsets| Ok((narrow("the row count", offsets.len().saturating_sub(1))?, offsets)));
    match verdict {
        Ok((rows, host_offsets)) => {
            let indices = [I::into_u32(row_offsets), I::into_u32(col_indices)];
            Ok(DeviceCsr::from_device_parts(gpu, (rows, dims.1), host_offsets, indices, values))
        }
        Err(error) => Err(FromDeviceError { error, arrays: Box::new((row_offsets, col_indices, values)) }),
    }
}

/// Why [`DeviceCsr::try_from_device`] or one of its siblings refused its arrays, and the arrays,
/// handed back untouched: the refusal does not free them, which would fail (and leak them) when the
/// refusal is that the stream captures a graph, and the caller may still need them (the way
/// `String::from_utf8`'s error hands back its bytes). Converts into the crate's [`Error`] with `?`,
/// dropping the arrays.
#[derive(Debug)]
pub struct FromDeviceError<I, T> {
    error: Error,
    /// Boxed, so that a `Result` of it stays small: row offsets, column indices, values.
    arrays: Box<(CudaSlice<I>, CudaSlice<I>, CudaSlice<T>)>,
}

impl<I, T> FromDeviceError<I, T> {
    /// Why the arrays were refused.
    pub fn error(&self) -> &Error {
        &self.error
    }

    /// The arrays, as they were passed: row offsets, column indices, values.
    pub fn into_arrays(self) -> (CudaSlice<I>, CudaSlice<I>, CudaSlice<T>) {
        *self.arrays
    }
}

impl<I, T> From<FromDeviceError<I, T>> for Error {
    fn from(refused: FromDeviceError<I, T>) -> Error {
        refused.error
    }
}

impl<I, T> std::fmt::Display for FromDeviceError<I, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl<I: std::fmt::Debug, T: std::fmt::Debug> std::error::Error for FromDeviceError<I, T> {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

/// An index type whose arrays the device check takes.
trait Checked: CsrIndex + DeviceRepr + Default {
    /// The check's entry for this index type (`abi::CSR_CHECK_*`).
    const CHECK: &'static str;
    /// An index known not to be negative, as the kernels' `u32`.
    fn to_u32(self) -> u32;
    /// A buffer of indices none of which is negative, as the kernels' `u32`s, without a copy.
    fn into_u32(indices: CudaSlice<Self>) -> CudaSlice<u32>;
}

impl Checked for u32 {
    const CHECK: &'static str = abi::CSR_CHECK_U32;

    fn to_u32(self) -> u32 {
        self
    }

    fn into_u32(indices: CudaSlice<u32>) -> CudaSlice<u32> {
        indices
    }
}

impl Checked for i32 {
    const CHECK: &'static str = abi::CSR_CHECK_I32;

    fn to_u32(self) -> u32 {
        self.unsigned_abs()
    }

    fn into_u32(indices: CudaSlice<i32>) -> CudaSlice<u32> {
        nonnegative_as_u32(indices)
    }
}

/// The arrays of a matrix from the device: each of `gpu`'s context, their sizes within the
/// kernels' 32-bit indices.
struct Arrays<'a, I, T> {
    dims: (usize, usize),
    row_offsets: &'a CudaSlice<I>,
    col_indices: &'a CudaSlice<I>,
    values: &'a CudaSlice<T>,
}

impl<I: Checked, T> Arrays<'_, I, T> {
    /// Refuses arrays of another context, sizes past `u32`, and a stream that captures (the row
    /// offsets come back to the host).
    fn check_sizes(&self, gpu: &Gpu) -> Result<()> {
        gpu.check_context("the row offsets", self.row_offsets)?;
        gpu.check_context("the column indices", self.col_indices)?;
        gpu.check_context("the values", self.values)?;
        narrow("the row count", self.dims.0)?;
        narrow("the row offset count", self.row_offsets.len())?;
        narrow("the column count", self.dims.1)?;
        narrow("the entry count", self.values.len())?;
        gpu.not_capturing("a matrix from device arrays while the stream captures a graph")
    }

    /// The row offsets, copied to the host once the work before on the stream is done.
    fn host_offsets(&self, gpu: &Gpu) -> Result<Vec<I>> {
        if self.row_offsets.is_empty() {
            return Ok(Vec::new());
        }
        Ok(gpu.stream().clone_dtoh(self.row_offsets)?)
    }

    /// The sizes checked, the row offsets on the host as `u32`s.
    fn unchecked(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        self.check_sizes(gpu)?;
        Ok(self.host_offsets(gpu)?.into_iter().map(I::to_u32).collect())
    }

    /// The sizes checked and the arrays by the device check, with its verdict; the row offsets on
    /// the host as `u32`s if they pass.
    fn checked(&self, gpu: &Gpu) -> Result<Vec<u32>> {
        self.check_sizes(gpu)?;
        let faults = self.device_faults(gpu)?;
        let host = self.host_offsets(gpu)?;
        self.judge(gpu, &faults, &host)?;
        Ok(host.into_iter().map(I::to_u32).collect())
    }

    /// The first position of each fault in the arrays, found by the device check (its sizes
    /// checked first, [`Arrays::check_sizes`]); waits for the stream.
    fn device_faults(&self, gpu: &Gpu) -> Result<IndexFaults> {
        let (offsets_len, cols_len) = (self.row_offsets.len(), self.col_indices.len());
        let found = gpu.upload(&[CHECK_NONE; CHECK_SLOTS])?;
        let (offsets, _offsets_guard) = self.row_offsets.device_ptr(gpu.stream());
        let (cols, _cols_guard) = self.col_indices.device_ptr(gpu.stream());
        let params = CsrCheckParams::<I> {
            row_offsets: AbiPtr::new(offsets),
            offsets_len: offsets_len as u64,
            col_indices: AbiPtr::new(cols),
            cols_len: cols_len as u64,
            ncols: self.dims.1 as u64,
            found: addr(&found, gpu),
        };
        let grid = grid_blocks(offsets_len.max(cols_len) as u64, CHECK_BLOCK_SIZE);
        // SAFETY: the arrays hold the lengths `params` gives, `found` its `CHECK_SLOTS` positions,
        // all of `gpu`'s context (`check_sizes`); the kernel only reads the arrays and lowers
        // `found`'s slots atomically.
        unsafe { launch(gpu, gpu.untyped_kernel(I::CHECK)?, grid, CHECK_BLOCK_SIZE, 0, &params)? };
        let found = gpu.stream().clone_dtoh(&found)?;
        let slot =
            |s: usize| (found[s] != CHECK_NONE).then(|| usize::try_from(found[s]).unwrap_or(usize::MAX));
        Ok(IndexFaults {
            negative_offset: slot(CHECK_NEGATIVE_OFFSET),
            negative_column: slot(CHECK_NEGATIVE_COLUMN),
            decrease: slot(CHECK_DECREASE),
            column: slot(CHECK_COLUMN),
        })
    }

    /// The verdict on `faults` with the row offsets `host` (the device's, on the host): the error
    /// [`CsrRef::try_new`](crate::CsrRef::try_new) gives the same arrays, the one column index it may
    /// name read back first.
    fn judge(&self, gpu: &Gpu, faults: &IndexFaults, host: &[I]) -> Result<()> {
        let column = match faults.column {
            Some(entry) => gpu.stream().clone_dtoh(&self.col_indices.slice(entry..=entry))?[0],
            None => I::default(),
        };
        Ok(faults.verdict(self.dims, host, (self.col_indices.len(), self.values.len()), |_| column)?)
    }
}
