//! The CPU reference of the assembly from COO triples (`reference::assemble::assemble`, which the
//! device's `CooAssembly` matches bit for bit) on any triples: any dimensions, indices in and out of
//! range, arrays of unequal lengths, any values (NaN and infinities included): refused as
//! documented, or the distinct pairs in order, each the sum of its triples in input order.
#![no_main]

use arbitrary::Arbitrary;
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
    let dims = (input.dims.0.value(), input.dims.1.value());
    let rows: Vec<u32> = input.rows.iter().map(|&r| u32::from(r)).collect();
    let cols: Vec<u32> = input.cols.iter().map(|&c| u32::from(c)).collect();
    check_assemble(dims, &rows, &cols, &input.values);
    let values32: Vec<f32> = input.values.iter().map(|&v| v as f32).collect();
    check_assemble(dims, &rows, &cols, &values32);
});
