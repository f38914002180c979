//! The CPU references on a CSR matrix (SpMV, the transposed product, SpMM, their error scales) held
//! to the GPU contract and to each other, and `DenseRef::try_new` on any shape and strides.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv_fuzz::properties::references::{check_dense_view, check_references};
use gpu_spmv_fuzz::{Matrix, Param};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    matrix: Matrix,
    /// alpha: 0, 1.5 or -2; beta: 0 or 0.5.
    alpha: u8,
    beta: bool,
    view: (u8, Param, Param, Param, Param),
}

fuzz_target!(|input: Input| {
    let alpha = [0.0, 1.5, -2.0][usize::from(input.alpha % 3)];
    let beta = if input.beta { 0.5 } else { 0.0 };
    input.matrix.for_each_precision(
        |a| check_references(a, alpha as f32, beta as f32),
        |a| check_references(a, alpha, beta),
    );
    let (len, rows, cols, rs, cs) = input.view;
    // Elements are read one by one: keep the views the fuzzer makes small unless refused.
    let (rows, cols) = (rows.value(), cols.value());
    if rows.saturating_mul(cols) <= 1 << 16 {
        check_dense_view(usize::from(len), rows, cols, rs.value(), cs.value());
    }
});
