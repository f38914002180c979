//! A CSR matrix through `Permutation::rcm`: refused when not square, else a permutation under which
//! `permute` gives `A` renumbered and vectors go there and back unchanged.
#![no_main]

use gpu_spmv_fuzz::Matrix;
use gpu_spmv_fuzz::properties::reorder::check_rcm;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|m: Matrix| m.for_each_precision(check_rcm, check_rcm));
