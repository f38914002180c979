//! The CPU reference of the assembly from COO triples (`reference::assemble::assemble`, which the
//! device's `CooAssembly` matches bit for bit) on any triples: any dimensions, indices in and out of
//! range, arrays of unequal lengths, any values (NaN and infinities included): refused as
//! documented, or the distinct pairs in order, each the sum of its triples in input order.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::{MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES};
use gpu_spmv_fuzz::Param;
use gpu_spmv_fuzz::properties::assemble::check_assemble;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    dims: (Param, Param),
    rows: Vec<u8>,
    cols: Vec<u8>,
    values: Vec<f64>,
}

fuzz_target!(|input: Input| {
    let rows: Vec<u32> = input.rows.iter().map(|&r| u32::from(r)).collect();
    // The row count sizes the row offsets (a pass over them in the reference and in the property's
    // check): counts past the declared-count limit are kept, to be refused, the others kept small,
    // so that an accepted input costs milliseconds, not the seconds of 2^24 offsets under
    // AddressSanitizer (a timeout in CI).
    let limit = MAX_ROWS_WITHOUT_ENTRIES + MAX_ROWS_PER_ENTRY * rows.len();
    let nrows = match input.dims.0.value() {
        refused if refused > limit => refused,
        small => small % 4096,
    };
    let dims = (nrows, input.dims.1.value());
    let cols: Vec<u32> = input.cols.iter().map(|&c| u32::from(c)).collect();
    check_assemble(dims, &rows, &cols, &input.values);
    let values32: Vec<f32> = input.values.iter().map(|&v| v as f32).collect();
    check_assemble(dims, &rows, &cols, &values32);
});
