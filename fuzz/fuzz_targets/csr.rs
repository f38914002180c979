//! Raw CSR arrays, valid or not, through `CsrRef::try_new`.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv_fuzz::properties::check_csr_try_new;
use libfuzzer_sys::fuzz_target;

/// Arrays small enough to be many, with the row count near the offsets' length most of the time.
#[derive(Debug, Arbitrary)]
struct Arrays {
    rows_off_by: i8,
    ncols: u16,
    offsets: Vec<u8>,
    cols: Vec<u16>,
    values: Vec<f32>,
}

fuzz_target!(|a: Arrays| {
    let nrows = a.offsets.len().saturating_sub(1).saturating_add_signed(isize::from(a.rows_off_by % 3));
    let offsets: Vec<usize> = a.offsets.iter().map(|&o| usize::from(o)).collect();
    let cols: Vec<usize> = a.cols.iter().map(|&c| usize::from(c)).collect();
    check_csr_try_new(nrows, usize::from(a.ncols), &offsets, &cols, &a.values);
});
