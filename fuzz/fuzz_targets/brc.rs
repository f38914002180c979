//! A CSR matrix through `Brc::try_from_csr` with a fuzzed B2, and back.
#![no_main]

use gpu_spmv_fuzz::properties::check_brc;
use gpu_spmv_fuzz::{Matrix, Param};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Matrix, Param)| {
    let (m, b2) = (input.0, input.1.value());
    m.for_each_precision(|a| check_brc(a, b2), |a| check_brc(a, b2));
});
