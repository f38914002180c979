//! A CSR matrix through `Sell::try_from_csr` and back.
#![no_main]

use gpu_spmv_fuzz::Matrix;
use gpu_spmv_fuzz::properties::check_sell;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|m: Matrix| m.for_each_precision(check_sell, check_sell));
