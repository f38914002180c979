//! A CSR matrix through `DenseBlocks::try_from_csr` with a fuzzed window, and back.
#![no_main]

use gpu_spmv_fuzz::properties::check_dense_blocks;
use gpu_spmv_fuzz::{Matrix, Param};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Matrix, Param)| {
    let (m, window) = (input.0, input.1.value());
    m.for_each_precision(|a| check_dense_blocks(a, window), |a| check_dense_blocks(a, window));
});
