//! Block-Jacobi's setup (`reference::block_jacobi::BlockInverse`) on any small matrix, square or
//! not, with any block size and entries scaled far from 1: refused as documented, or inverses of
//! every block to within rounding, and an apply that sums as the kernel does.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::CsrRef;
use gpu_spmv_fuzz::properties::block_jacobi::check_block_jacobi;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Rows of (column, value); columns taken modulo the column count.
    rows: Vec<Vec<(u8, i8)>>,
    /// One more column than rows.
    wide: bool,
    block: u8,
    /// Every entry times 2^scale.
    scale: i8,
    r: Vec<i8>,
}

fuzz_target!(|input: Input| {
    let n = input.rows.len().min(96);
    let ncols = n + usize::from(input.wide);
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for row in &input.rows[..n] {
        for &(c, v) in row {
            cols.push(usize::from(c) % ncols);
            values.push(f64::from(v) * 2f64.powi(i32::from(input.scale)));
        }
        offsets.push(cols.len());
    }
    let block = usize::from(input.block);
    let r: Vec<f64> = input.r.iter().map(|&v| f64::from(v)).collect();
    let a = CsrRef::try_new(n, ncols, &offsets, &cols, &values).expect("valid by construction");
    check_block_jacobi(a, block, &r);
    let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let r32: Vec<f32> = r.iter().map(|&v| v as f32).collect();
    let a32 = CsrRef::try_new(n, ncols, &offsets, &cols, &values32).expect("valid by construction");
    check_block_jacobi(a32, block, &r32);
});
