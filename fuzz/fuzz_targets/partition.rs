//! A CSR matrix split by `RowPartition::balanced` and `Split::new`: refused as documented, or parts
//! that cover the rows and columns in order and give every row back from their blocks and ghosts.
#![no_main]

use gpu_spmv_fuzz::properties::partition::check_partition;
use gpu_spmv_fuzz::{Matrix, Param};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Matrix, Param)| {
    let (m, parts) = input;
    m.for_each_precision(|a| check_partition(a, parts.value()), |a| check_partition(a, parts.value()));
});
