//! Any bytes as a Matrix Market file.
#![no_main]

use gpu_spmv_fuzz::properties::check_matrix_market;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| check_matrix_market(data));
