//! ILU(0)'s and IC(0)'s CPU reference (`reference::ilu::IluFactors`) on any small matrix, square or one
//! column wider, with any entries (repeated, unsorted, scaled far from 1) and any rows given a diagonal
//! shift: refused as documented, or factors whose product is `A` on its pattern (for IC(0), its lower
//! triangle and that triangle's mirror, whatever the upper one holds) and valid level schedules; and
//! the device factorisation's pattern data and CPU model (`reference::ilu_pattern::FactorPattern`):
//! refused from the pattern as the oracle refuses it, else the oracle's schedules and, in f64, its
//! factors or refusal bit for bit.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::CsrRef;
use gpu_spmv_fuzz::properties::ilu::{check_device_pattern, check_ic0, check_ilu0};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Rows of (column, value); columns taken modulo the column count.
    rows: Vec<Vec<(u8, i8)>>,
    wide: bool,
    /// The rows below this get `shift` on their diagonal.
    diagonal_rows: u8,
    shift: u16,
    /// Every entry times 2^scale.
    scale: i8,
}

fuzz_target!(|input: Input| {
    let n = input.rows.len().min(48);
    let ncols = n + usize::from(input.wide);
    let scale = 2f64.powi(i32::from(input.scale));
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for (r, row) in input.rows[..n].iter().enumerate() {
        for &(c, v) in row {
            cols.push(usize::from(c) % ncols.max(1));
            values.push(f64::from(v) * scale);
        }
        if r < usize::from(input.diagonal_rows) {
            cols.push(r);
            values.push(f64::from(input.shift) * scale);
        }
        offsets.push(cols.len());
    }
    let a = CsrRef::try_new(n, ncols, &offsets, &cols, &values).expect("valid by construction");
    check_ilu0(a);
    check_ic0(a);
    check_device_pattern(a);
    let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let a32 = CsrRef::try_new(n, ncols, &offsets, &cols, &values32).expect("valid by construction");
    check_ilu0(a32);
    check_ic0(a32);
    check_device_pattern(a32);
});
