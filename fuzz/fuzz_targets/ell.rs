//! A CSR matrix through `Ell::try_from_csr` and back.
#![no_main]

use gpu_spmv_fuzz::Matrix;
use gpu_spmv_fuzz::properties::check_ell;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|m: Matrix| m.for_each_precision(check_ell, check_ell));
