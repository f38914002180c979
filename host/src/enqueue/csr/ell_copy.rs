//! [`Kernel::CsrEllCopy`](super::Kernel::CsrEllCopy): the matrix copied on the device into the most
//! compact form of the ELL family it takes (DIA, ELL with 16-bit column offsets, plain ELL) the first
//! time a plan asks for it, kept by the [`DeviceCsr`] beside its other strategies' data.
//!
//! Why a copy: on matrices whose rows all have about the same length (stencils, finite elements of
//! one kind) ELL's padding costs almost nothing, it reads no row offsets, and its batched,
//! column-major walk (`kernels-gpu/src/formats/slots.rs`) took Auto on an H100 from 84-92% to
//! 91-100% of the CSR floor on the stencils and from 80-82% to 83-88% on fem3d-27 (docs/PERF.md,
//! sections 27 and 28). Then fewer bytes and fewer waits (section 30): where every column lies
//! within `i16::MAX` of its row, the columns take 2 bytes (`formats/compressed_ell.rs`); where the
//! entries lie on at most 128 diagonals, none at all, and a row's gathers of `x` wait on no load of
//! the matrix (`formats/dia.rs`): 123-145% of the CSR floor on those matrices. The sums stay ELL's,
//! bit for bit (DIA is taken only where every row's columns increase). The host keeps no columns, so each form's build
//! kernel finds out on the device whether the matrix takes it. The copy costs device memory (at
//! most about the matrix's entries again) and a kernel pass or two to build; new values of the CSR
//! matrix reach it by the same kernel, values only, on the stream.

use super::super::launch::launch;
use crate::device::{DeviceCompressedEll, DeviceCsr, DeviceDia, DeviceEll, EllCopy, Gpu, addr};
use crate::formats::convert::narrow;
use crate::formats::dia::{DIA_MAX_DIAGONALS, check_dia_padding, dia_bytes, presence_words};
use crate::formats::ell::{check_padding_of, csr_bytes};
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::{
    self, BLOCK_SIZE, CompressedEllFromCsrParams, DIA_EMPTY_SLOT, DIA_OFFSET_TABLE, DevicePtr,
    DiaFromCsrParams, DiaOffsetsParams, EllFromCsrParams,
};
use kernels_gpu::index::grid_blocks;

/// The ELL copy of `a`, built on the first call (refused as [`Ell`](crate::formats::Ell) refuses
/// padding past [`ELL_MAX_PADDING_RATIO`](crate::formats::ELL_MAX_PADDING_RATIO) times the CSR
/// bytes, before allocating; and while the stream captures a graph, which cannot allocate).
pub(super) fn ell_copy<'a, T: Scalar>(a: &'a DeviceCsr<T>, gpu: &Gpu) -> Result<&'a EllCopy<T>> {
    a.ell_copy_or_build(|| build(a, gpu))
}

/// Builds the copy and waits for it: published to the matrix, it may be read on any stream. DIA is
/// tried first, then the offsets, then plain columns; only the device sees the columns (the host
/// keeps none), so each form's build finds out whether the matrix takes it.
fn build<T: Scalar>(a: &DeviceCsr<T>, gpu: &Gpu) -> Result<EllCopy<T>> {
    let (rows, width) = (a.nrows(), a.stats().max);
    let lengths = a.host_offsets().windows(2).map(|w| (w[1] - w[0]) as usize);
    check_padding_of::<T>(rows, a.nnz(), width, lengths)?;
    let shape = (narrow("the row count", rows)?, narrow("the ELL width", width)?);
    let slots = rows.checked_mul(width).ok_or(Error::TooLarge {
        what: "the ELL copy's slots per row",
        value: width,
        limit: usize::MAX / rows.max(1),
    })?;
    if let Some(dia) = build_dia(a, gpu)? {
        return Ok(EllCopy::Dia(dia));
    }
    let sizes = (a.ncols(), a.nnz());
    let misfit = gpu.alloc_zeros::<u32>(1)?;
    let deltas = gpu.alloc_zeros::<i16>(slots)?;
    let values = gpu.alloc_zeros::<T>(slots)?;
    let ell = DeviceCompressedEll::from_device_parts(gpu, deltas, values, shape, sizes, 0.0);
    fill_deltas(a, &ell, gpu, Some(addr(&misfit, gpu)))?;
    if gpu.stream().clone_dtoh(&misfit)? == [0] {
        return Ok(EllCopy::Deltas(ell));
    }
    drop(ell);
    let cols = gpu.alloc_zeros::<u32>(slots)?;
    let values = gpu.alloc_zeros::<T>(slots)?;
    let ell = DeviceEll::from_device_parts(gpu, cols, values, shape, sizes);
    fill_plain(a, &ell, gpu, true)?;
    gpu.synchronize()?;
    Ok(EllCopy::Plain(ell))
}

/// The ELL copy of `a` where it is DIA of at most `max_bytes_over_csr` times the CSR matrix's bytes
/// (DIA reads every slot of its diagonals, present or not): [`Kernel::Auto`](super::Kernel::Auto)'s
/// look, which builds no other form (`None` then, once and for all; see
/// [`DeviceCsr::dia_copy_or_build`]).
///
/// A copy a plan of [`Kernel::CsrEllCopy`](super::Kernel::CsrEllCopy) built before, whose DIA may be
/// larger, is answered by the same bound. The device's lack of memory is an error here (Auto falls
/// back on it), not a finding: the look may be made again.
pub(super) fn dia_copy<'a, T: Scalar>(
    a: &'a DeviceCsr<T>,
    gpu: &Gpu,
    max_bytes_over_csr: f64,
) -> Result<Option<&'a DeviceDia<T>>> {
    let dia = a.dia_copy_or_build(|| try_build_dia(a, gpu, Some(max_bytes_over_csr)))?;
    Ok(dia.filter(|dia| within(a, dia.diagonals(), Some(max_bytes_over_csr))))
}

/// Whether a DIA copy of `diagonals` diagonals of `a` takes at most `max_bytes_over_csr` times its
/// CSR bytes (any size without a bound).
fn within<T: Scalar>(a: &DeviceCsr<T>, diagonals: usize, max_bytes_over_csr: Option<f64>) -> bool {
    let dia = dia_bytes(a.nrows(), diagonals, size_of::<T>()) as f64;
    max_bytes_over_csr.is_none_or(|most| dia <= most * csr_bytes(a.nrows(), a.nnz(), size_of::<T>()) as f64)
}

/// The DIA copy of `a` as [`try_build_dia`] builds it without a bound on its bytes, and `None`
/// where the device has no memory for it (the smaller forms may still fit).
fn build_dia<T: Scalar>(a: &DeviceCsr<T>, gpu: &Gpu) -> Result<Option<DeviceDia<T>>> {
    match try_build_dia(a, gpu, None) {
        Err(Error::DeviceMemory { .. }) => Ok(None),
        built => built,
    }
}

/// The DIA copy of `a`, built and waited for, where its entries lie on at most
/// [`DIA_MAX_DIAGONALS`] diagonals, DIA's padding limit allows them (and, with `max_bytes_over_csr`,
/// they take at most that times the CSR bytes) and every row's columns increase (so that DIA sums
/// in CSR's order); `None` elsewhere. The buffers of an attempt are freed.
fn try_build_dia<T: Scalar>(
    a: &DeviceCsr<T>,
    gpu: &Gpu,
    max_bytes_over_csr: Option<f64>,
) -> Result<Option<DeviceDia<T>>> {
    let rows = narrow("the row count", a.nrows())?;
    let table = gpu.upload(&[DIA_EMPTY_SLOT; DIA_OFFSET_TABLE as usize])?;
    let (claimed, overflow) = (gpu.alloc_zeros::<u32>(1)?, gpu.alloc_zeros::<u32>(1)?);
    let params = DiaOffsetsParams {
        csr: a.args(),
        table: addr(&table, gpu),
        claimed: addr(&claimed, gpu),
        overflow: addr(&overflow, gpu),
    };
    let grid = grid_blocks(u64::from(rows), BLOCK_SIZE);
    // SAFETY: `a` is valid CSR of `rows` rows of `gpu`'s context; `table` holds `DIA_OFFSET_TABLE`
    // empty slots, and `claimed` and `overflow` one zeroed word each, all changed by this kernel
    // alone, atomically. The kernel grid-strides over the rows.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::DIA_OFFSETS_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params)? };
    if gpu.stream().clone_dtoh(&overflow)? != [0] {
        return Ok(None);
    }
    let mut offsets: Vec<i64> =
        gpu.stream().clone_dtoh(&table)?.into_iter().filter(|&o| o != DIA_EMPTY_SLOT).collect();
    offsets.sort_unstable();
    let diagonals = offsets.len();
    // The kernel raised the overflow past `DIA_MAX_DIAGONALS` claims; the count is checked here too,
    // since the DIA kernels' presence words hold no more.
    if diagonals > DIA_MAX_DIAGONALS
        || !within(a, diagonals, max_bytes_over_csr)
        || check_dia_padding::<T>(a.nrows(), a.nnz(), diagonals, size_of::<T>()).is_err()
    {
        return Ok(None);
    }
    let shape = (rows, narrow("the column count", a.ncols())?, narrow("the diagonal count", diagonals)?);
    let values = gpu.alloc_zeros::<T>(a.nrows() * diagonals)?;
    let words = gpu.alloc_zeros::<u32>(a.nrows() * presence_words(diagonals))?;
    let parts = (gpu.upload(&offsets)?, words, values);
    let dia = DeviceDia::from_device_parts(gpu, parts, shape, a.nnz(), 0.0);
    let disordered = gpu.alloc_zeros::<u32>(1)?;
    fill_dia(a, &dia, gpu, Some(addr(&disordered, gpu)))?;
    Ok((gpu.stream().clone_dtoh(&disordered)? == [0]).then_some(dia))
}

/// Carries `a`'s values (after an update) into its ELL copy, if a plan has built it.
pub(crate) fn refresh_ell_copy<T: Scalar>(a: &DeviceCsr<T>, gpu: &Gpu) -> Result<()> {
    a.refresh_ell_copy_with(|copy| match copy {
        EllCopy::Dia(dia) => fill_dia(a, dia, gpu, None),
        EllCopy::Deltas(ell) => fill_deltas(a, ell, gpu, None),
        EllCopy::Plain(ell) => fill_plain(a, ell, gpu, false),
    })
}

/// Writes `dia`'s values from `a` on the stream: with `disordered`, its presence words too (raising
/// `*disordered` if a row's columns do not increase), else the values alone (the missing entries'
/// zeros stay).
fn fill_dia<T: Scalar>(
    a: &DeviceCsr<T>,
    dia: &DeviceDia<T>,
    gpu: &Gpu,
    disordered: Option<DevicePtr<u32>>,
) -> Result<()> {
    let params = DiaFromCsrParams {
        csr: a.args(),
        dia: dia.args(),
        disordered: disordered.unwrap_or(DevicePtr::new(0)),
        pattern: u32::from(disordered.is_some()),
    };
    let grid = grid_blocks(u64::from(params.dia.rows), BLOCK_SIZE);
    // SAFETY: `a` is valid CSR of `dia`'s rows, in `gpu`'s context with `dia`; `dia`'s offsets are
    // every `column - row` of `a`, increasing (collected by `dia_offsets_from_csr` before), its
    // values zeroed at allocation, and it holds `diagonals * rows` values and the rows' presence
    // words;
    // `disordered`, read only with `pattern`, is then a zeroed word the kernel alone changes,
    // atomically. A refresh is ordered as `fill_plain`'s. The kernel grid-strides over the rows.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::DIA_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params) }
}

/// Writes `ell`'s slots from `a` on the stream: with `misfit`, every offset and value (raising
/// `*misfit` if a column lies too far from its row), else the values of the entries alone (the
/// padding's zeros stay).
fn fill_deltas<T: Scalar>(
    a: &DeviceCsr<T>,
    ell: &DeviceCompressedEll<T>,
    gpu: &Gpu,
    misfit: Option<DevicePtr<u32>>,
) -> Result<()> {
    let params = CompressedEllFromCsrParams {
        csr: a.args(),
        ell: ell.args(),
        misfit: misfit.unwrap_or(DevicePtr::new(0)),
        pattern: u32::from(misfit.is_some()),
    };
    let grid = grid_blocks(u64::from(params.ell.rows), BLOCK_SIZE);
    // SAFETY: as `fill_plain`'s; and `misfit`, read by the kernel only with `pattern`, is then a
    // zeroed `u32` of `gpu`'s context that the kernel alone changes, atomically.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::COMPRESSED_ELL_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params) }
}

/// Writes `ell`'s slots from `a` on the stream: every column and value when `pattern`, else the
/// values of the entries alone (the padding's zeros stay).
fn fill_plain<T: Scalar>(a: &DeviceCsr<T>, ell: &DeviceEll<T>, gpu: &Gpu, pattern: bool) -> Result<()> {
    let params = EllFromCsrParams { csr: a.args(), ell: ell.args(), pattern: u32::from(pattern) };
    let grid = grid_blocks(u64::from(params.ell.rows), BLOCK_SIZE);
    // SAFETY: `a` is valid CSR (by construction of `DeviceCsr`) of `ell`'s rows, none longer than
    // its width (the longest row, `stats().max`); `ell` holds `rows * width` slots of `gpu`'s
    // context, which owns `a` (checked by the caller). A refresh is ordered after the copy's
    // construction (waited for before the copy was published) and, on the stream, with the
    // products that read it. The kernel grid-strides over the rows.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::ELL_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params) }
}
