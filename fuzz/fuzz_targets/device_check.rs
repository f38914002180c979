//! Raw CSR index arrays, `i32` and `u32`, valid or not: the verdict of the device check's model
//! (`IndexFaults::find`, then `verdict`) is the error `CsrRef::try_new` gives the arrays widened to
//! `usize`, a negative index refused first. The model is what `DeviceCsr::try_from_device` and
//! `Gpu::upload_csr_pinned` run (the kernel finds the faults, the host gives the verdict); the GPU
//! tests (`host/tests/gpu/from_device.rs`) hold the kernel to the model on fuzzed arrays.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::{CsrIndex, IndexFaults};
use gpu_spmv::{CsrError, CsrRef};
use libfuzzer_sys::fuzz_target;

/// Small arrays, the row count near the offsets' length and the entry count near the columns'.
#[derive(Debug, Arbitrary)]
struct Arrays {
    rows_off_by: i8,
    values_off_by: i8,
    ncols: u8,
    offsets: Vec<i8>,
    cols: Vec<i8>,
}

/// `CsrRef::try_new` on the arrays widened to `usize`, after the first negative index.
fn host_check<I: CsrIndex>(
    nrows: usize,
    ncols: usize,
    offsets: &[I],
    cols: &[I],
    nnz: usize,
) -> Result<(), CsrError> {
    let widen = |what, a: &[I]| -> Result<Vec<usize>, CsrError> {
        a.iter()
            .enumerate()
            .map(|(position, &i)| i.to_usize().ok_or(CsrError::IndexNotUsize { what, position }))
            .collect()
    };
    let (offsets, cols) = (widen("row_offsets", offsets)?, widen("col_indices", cols)?);
    CsrRef::try_new(nrows, ncols, &offsets, &cols, &vec![0.0f32; nnz]).map(|_| ())
}

fn check<I: CsrIndex + std::fmt::Debug>(nrows: usize, ncols: usize, offsets: &[I], cols: &[I], nnz: usize) {
    let faults = IndexFaults::find(offsets, cols, ncols);
    let model = faults.verdict((nrows, ncols), offsets, (cols.len(), nnz), |k| cols[k]);
    assert_eq!(model, host_check(nrows, ncols, offsets, cols, nnz), "{offsets:?} {cols:?}");
}

fuzz_target!(|a: Arrays| {
    let nrows = a.offsets.len().saturating_sub(1).saturating_add_signed(isize::from(a.rows_off_by % 3));
    let nnz = a.cols.len().saturating_add_signed(isize::from(a.values_off_by % 2));
    let ncols = usize::from(a.ncols);
    let signed = |v: &[i8]| v.iter().map(|&i| i32::from(i)).collect::<Vec<_>>();
    check(nrows, ncols, &signed(&a.offsets), &signed(&a.cols), nnz);
    let unsigned = |v: &[i8]| v.iter().map(|&i| u32::from(i.unsigned_abs())).collect::<Vec<_>>();
    check(nrows, ncols, &unsigned(&a.offsets), &unsigned(&a.cols), nnz);
});
