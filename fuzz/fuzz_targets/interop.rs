//! A CSR matrix as sprs and faer make it (CSR and CSC; faer's with pointers from `lead`, `spare`
//! entries after them and, uncompressed, `slack` after each slice): every form is taken, and gives
//! back the matrix's entries.
#![no_main]

use gpu_spmv_fuzz::Matrix;
use gpu_spmv_fuzz::properties::interop::{check_faer, check_sprs};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (Matrix, u8, u8, u8)| {
    let (m, lead, spare, slack) = input;
    let layout = (usize::from(lead % 4), usize::from(spare % 4), usize::from(slack % 4));
    m.for_each_precision(
        |a| {
            check_faer(a, layout);
            check_sprs(a);
        },
        |a| {
            check_faer(a, layout);
            check_sprs(a);
        },
    );
});
