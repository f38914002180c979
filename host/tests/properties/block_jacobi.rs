//! Block-Jacobi's setup (`reference::block_jacobi::BlockInverse`) on any matrix and block size:
//! refused as documented, in its order (shape, block size, then the first block that cannot be
//! inverted, named by its rows); otherwise finite inverses in the device's layout, zero past a short
//! last block, each the inverse of its block to within rounding.

use gpu_spmv::reference::block_jacobi::{BlockInverse, MAX_BLOCK};
use gpu_spmv::solve::SolveError;
use gpu_spmv::{CsrRef, Error, Scalar};

/// Checks `BlockInverse::new(a, block)`, and its apply on `r` (cycled to the order) when accepted.
pub fn check_block_jacobi<T: Scalar>(a: CsrRef<'_, T>, block: usize, r: &[T]) {
    let n = a.nrows();
    let result = BlockInverse::new(a, block);
    if a.ncols() != n {
        let expected = SolveError::NotSquare { rows: n, cols: a.ncols() };
        assert!(matches!(&result, Err(Error::Solve(e)) if *e == expected), "{result:?}");
        return;
    }
    if !(1..=MAX_BLOCK).contains(&block) {
        let expected = SolveError::InvalidBlockSize { value: block, limit: MAX_BLOCK };
        assert!(matches!(&result, Err(Error::Solve(e)) if *e == expected), "{result:?}");
        return;
    }
    let inverse = match result {
        Ok(inverse) => inverse,
        Err(Error::Solve(SolveError::SingularBlock { first_row, rows })) => {
            assert!(first_row % block == 0 && first_row < n, "block at row {first_row} of {n}");
            assert_eq!(rows, block.min(n - first_row), "the rows of the block at {first_row}");
            return;
        }
        Err(e) => panic!("an unexpected refusal: {e}"),
    };
    assert_eq!((inverse.n(), inverse.block(), inverse.entries().len()), (n, block, n * block));
    let entries = inverse.entries();
    assert!(entries.iter().all(|v| v.to_f64().is_finite()), "a non-finite inverse entry");
    for base in (0..n).step_by(block) {
        let len = block.min(n - base);
        let dense = dense_block(a, base, len);
        // Gauss-Jordan's residual is bounded by rounding times |B| |B⁻¹|; the bound is loose by
        // orders of magnitude, so that only a wrong entry or layout can break it.
        let norm_b = dense.iter().map(|row| row.iter().map(|v| v.abs()).sum::<f64>()).fold(0.0, f64::max);
        let norm_inv = (0..len)
            .map(|i| (0..len).map(|j| entries[j * n + base + i].to_f64().abs()).sum::<f64>())
            .fold(0.0, f64::max);
        let bound = 1e3 * len as f64 * T::EPSILON * norm_b * norm_inv;
        for i in 0..len {
            for j in 0..len {
                let product: f64 = (0..len).map(|k| dense[i][k] * entries[j * n + base + k].to_f64()).sum();
                let identity = if i == j { 1.0 } else { 0.0 };
                assert!((product - identity).abs() <= bound, "B B⁻¹ at ({i}, {j}) of the block at {base}");
            }
            assert!((len..block).all(|j| entries[j * n + base + i] == T::ZERO), "past the short block");
        }
    }
    if !r.is_empty() {
        let r: Vec<T> = r.iter().copied().cycle().take(n).collect();
        let mut z = vec![T::from_f64(f64::NAN); n];
        inverse.apply(&r, &mut z);
        for (i, zi) in z.iter().enumerate() {
            let base = i / block * block;
            let expected = (base..(base + block).min(n))
                .fold(T::ZERO, |sum, k| entries[(k - base) * n + i].mul_add(r[k], sum));
            assert_eq!(zi.to_f64().to_bits(), expected.to_f64().to_bits(), "z[{i}]");
        }
    }
}

/// The block of rows and columns `base .. base + len` in f64, duplicates summed.
fn dense_block<T: Scalar>(a: CsrRef<'_, T>, base: usize, len: usize) -> Vec<Vec<f64>> {
    let mut dense = vec![vec![0.0; len]; len];
    for (i, row) in dense.iter_mut().enumerate() {
        let (cols, vals) = a.row(base + i);
        for (&c, v) in cols.iter().zip(vals) {
            if (base..base + len).contains(&c) {
                row[c - base] += v.to_f64();
            }
        }
    }
    dense
}
