//! A CSR matrix through `Hyb::try_from_csr` (the model's width) or `try_from_csr_with_width`, and back.
#![no_main]

use gpu_spmv_fuzz::properties::check_hyb;
use gpu_spmv_fuzz::{Matrix, Param};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Matrix, Option<Param>)| {
    let (m, width) = input;
    let width = width.map(Param::value);
    m.for_each_precision(|a| check_hyb(a, width), |a| check_hyb(a, width));
});
