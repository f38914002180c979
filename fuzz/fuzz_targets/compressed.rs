//! A CSR matrix through `CompressedCsr::try_from_csr` (values in the matrix's type, bf16 and f16)
//! and its columns decoded back.
#![no_main]

use gpu_spmv_fuzz::Matrix;
use gpu_spmv_fuzz::properties::check_compressed;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|m: Matrix| m.for_each_precision(check_compressed, check_compressed));
