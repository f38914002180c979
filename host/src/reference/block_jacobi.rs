//! Block-Jacobi's setup and its CPU apply: the diagonal blocks of `A`, `block` rows and columns each
//! (the last block shorter when `block` does not divide the order), inverted in f64 by Gauss-Jordan
//! elimination with partial pivoting and rounded once to `T` (Saad, "Iterative Methods for Sparse
//! Linear Systems", 2nd ed., section 12.2). The GPU preconditioner
//! ([`crate::solve::BlockJacobi`]) uploads exactly these inverses, and [`BlockInverse::apply`]
//! follows `kernels-gpu/src/block_jacobi.rs` operation for operation, so the two agree bit for bit.
//!
//! Where point Jacobi undoes a row scaling only, a block holds the couplings inside it: the degrees
//! of freedom of one node of a vector PDE, a line of a structured grid, the strongly coupled
//! unknowns that ordering put next to each other.

use crate::error::SolveError;
use crate::formats::convert::narrow;
use crate::formats::csr::CsrRef;
use crate::iterative::square_order;
use crate::scalar::Scalar;
use crate::{Error, Result};

use kernels_gpu::abi::BLOCK_JACOBI_MAX;

/// The largest block size (`kernels_gpu::abi::BLOCK_JACOBI_MAX`, where its reason is written).
pub const MAX_BLOCK: usize = BLOCK_JACOBI_MAX as usize;

/// The inverted diagonal blocks of a square matrix, in the device's layout: row `i`'s entries of
/// its block's inverse at `entries[j * n + i]`, `j` the block's local column (`j < len` of the
/// block; the rest of a short last block's rows are zero).
#[derive(Debug, Clone, PartialEq)]
pub struct BlockInverse<T> {
    n: usize,
    block: usize,
    entries: Vec<T>,
}

impl<T: Scalar> BlockInverse<T> {
    /// Inverts the diagonal blocks of `a` (duplicate entries summed, entries outside the blocks
    /// ignored).
    ///
    /// Refused: `a` not square ([`SolveError::NotSquare`]); `block` outside
    /// `1..=MAX_BLOCK` ([`SolveError::InvalidBlockSize`]); an order over the kernels' `u32`
    /// ([`Error::TooLarge`], before anything is allocated); a block that is singular to working
    /// precision, holds NaN or infinities, or whose inverse does not fit `T`
    /// ([`SolveError::SingularBlock`], naming its first row).
    pub fn new(a: CsrRef<'_, T>, block: usize) -> Result<Self> {
        let n = square_order(a.nrows(), a.ncols())?;
        if !(1..=MAX_BLOCK).contains(&block) {
            return Err(SolveError::InvalidBlockSize { value: block, limit: MAX_BLOCK }.into());
        }
        narrow("the order of the block-Jacobi preconditioner", n)?;
        // `n < 2^32` and `block <= 32`: the product fits a 64-bit usize; checked all the same.
        let len = n.checked_mul(block).ok_or(Error::TooLarge {
            what: "the block-Jacobi inverses' entries",
            value: n,
            limit: usize::MAX / block,
        })?;
        let mut inverse = Self { n, block, entries: vec![T::ZERO; len] };
        inverse.invert(a)?;
        Ok(inverse)
    }

    fn invert(&mut self, a: CsrRef<'_, T>) -> Result<()> {
        let (n, block) = (self.n, self.block);
        let mut dense = [[0.0f64; MAX_BLOCK]; MAX_BLOCK];
        let mut inv = dense;
        for base in (0..n).step_by(block) {
            let len = block.min(n - base);
            for row in dense.iter_mut().take(len) {
                row[..len].fill(0.0);
            }
            for (i, row) in dense.iter_mut().enumerate().take(len) {
                let (cols, vals) = a.row(base + i);
                for (&c, v) in cols.iter().zip(vals) {
                    if (base..base + len).contains(&c) {
                        row[c - base] += v.to_f64();
                    }
                }
            }
            let singular = SolveError::SingularBlock { first_row: base, rows: len };
            gauss_jordan(&mut dense, &mut inv, len).ok_or(singular.clone())?;
            for (i, row) in inv.iter().enumerate().take(len) {
                for (j, &entry) in row[..len].iter().enumerate() {
                    let value = T::from_f64(entry);
                    if !value.to_f64().is_finite() {
                        return Err(singular.into());
                    }
                    self.entries[j * n + base + i] = value;
                }
            }
        }
        Ok(())
    }

    /// `z = B⁻¹ r`: each row's products summed by `fma` in `T` in the order of its block's columns,
    /// from zero, as the kernel sums them.
    ///
    /// # Panics
    /// If `r` or `z` is not of the order's length.
    pub fn apply(&self, r: &[T], z: &mut [T]) {
        let (n, block) = (self.n, self.block);
        assert!(r.len() == n && z.len() == n, "r and z must have {n} entries");
        for (i, zi) in z.iter_mut().enumerate() {
            let base = i / block * block;
            let len = block.min(n - base);
            *zi = (0..len).fold(T::ZERO, |sum, j| self.entries[j * n + i].mul_add(r[base + j], sum));
        }
    }

    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.n
    }

    /// The block size.
    pub fn block(&self) -> usize {
        self.block
    }

    /// The inverses in the device's layout (see [`BlockInverse`]).
    pub fn entries(&self) -> &[T] {
        &self.entries
    }
}

impl<T: Scalar> super::CpuPrecondition<T> for BlockInverse<T> {
    fn order(&self) -> usize {
        self.n
    }

    fn apply(&self, r: &[T], z: &mut [T]) -> Result<()> {
        super::check_lengths(self.n, r, z)?;
        BlockInverse::apply(self, r, z);
        Ok(())
    }
}

/// Inverts the leading `len x len` block of `a` into `inv` by Gauss-Jordan elimination with partial
/// pivoting (`a` is destroyed). `None` when a pivot is at most `len ε` times the block's largest
/// entry (singular to working precision) or the block holds NaN or infinities.
fn gauss_jordan<const M: usize>(a: &mut [[f64; M]; M], inv: &mut [[f64; M]; M], len: usize) -> Option<()> {
    let scale = a.iter().take(len).flat_map(|row| &row[..len]).fold(0.0f64, |m, v| m.max(v.abs()));
    if !scale.is_finite() || a.iter().take(len).flat_map(|row| &row[..len]).any(|v| v.is_nan()) {
        return None;
    }
    let tiny = len as f64 * f64::EPSILON * scale;
    for (i, row) in inv.iter_mut().enumerate().take(len) {
        row[..len].fill(0.0);
        row[i] = 1.0;
    }
    for col in 0..len {
        let pivot_row = (col..len).max_by(|&p, &q| a[p][col].abs().total_cmp(&a[q][col].abs()))?;
        if a[pivot_row][col].abs() <= tiny {
            return None;
        }
        a.swap(col, pivot_row);
        inv.swap(col, pivot_row);
        let pivot = a[col][col];
        for j in 0..len {
            a[col][j] /= pivot;
            inv[col][j] /= pivot;
        }
        for row in (0..len).filter(|&row| row != col) {
            let factor = a[row][col];
            if factor != 0.0 {
                for j in 0..len {
                    a[row][j] -= factor * a[col][j];
                    inv[row][j] -= factor * inv[col][j];
                }
            }
        }
    }
    Some(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::reference::solver_checks::seeded;
    use rand::Rng;

    /// A random `n x n` matrix in CSR with the rows' columns shuffled and one duplicate per row: a
    /// dominant diagonal plus couplings inside and outside the blocks.
    fn matrix(rng: &mut impl Rng, n: usize) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
        let (mut offsets, mut cols, mut vals) = (vec![0], vec![], vec![]);
        for i in 0..n {
            let mut row: Vec<(usize, f64)> = vec![(i, 4.0 + rng.random::<f64>())];
            for _ in 0..4 {
                row.push((rng.random_range(0..n), rng.random_range(-1.0..1.0)));
            }
            row.push((i, 0.5));
            row.reverse();
            for (c, v) in row {
                cols.push(c);
                vals.push(v);
            }
            offsets.push(cols.len());
        }
        (offsets, cols, vals)
    }

    /// Each block's rows of `B z`, from the CSR rows (duplicates summed as they come).
    fn block_product(a: CsrRef<'_, f64>, block: usize, z: &[f64]) -> Vec<f64> {
        (0..a.nrows())
            .map(|i| {
                let base = i / block * block;
                let (cols, vals) = a.row(i);
                cols.iter()
                    .zip(vals)
                    .filter(|&(&c, _)| (base..base + block).contains(&c))
                    .map(|(&c, v)| v * z[c])
                    .sum()
            })
            .collect()
    }

    #[test]
    fn inverts_every_block_off_every_multiple() {
        let mut rng = seeded("block_jacobi inverts_every_block_off_every_multiple");
        for (n, block) in [(37, 5), (40, 8), (33, 32), (7, 1), (1, 4), (64, 3)] {
            let (o, c, v) = matrix(&mut rng, n);
            let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
            let inverse = BlockInverse::new(a, block).unwrap();
            assert_eq!((inverse.n(), inverse.block(), inverse.entries().len()), (n, block, n * block));
            // A short last block's rows hold zeros past its columns.
            let last = (n - 1) / block * block;
            for i in last..n {
                assert!((n - last..block).all(|j| inverse.entries()[j * n + i] == 0.0), "row {i}");
            }
            // `B (B⁻¹ r) = r`, block by block.
            let r: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
            let mut z = vec![f64::NAN; n];
            inverse.apply(&r, &mut z);
            for (i, (bz, r)) in block_product(a, block, &z).iter().zip(&r).enumerate() {
                assert!((bz - r).abs() < 1e-13, "n {n} block {block} row {i}: {bz} against {r}");
            }
        }
    }

    #[test]
    fn block_one_is_the_inverse_diagonal() {
        let a = CsrRef::try_new(3, 3, &[0, 2, 3, 5], &[1, 0, 1, 2, 0], &[7.0, 2.0, -4.0, 0.5, 1.0]).unwrap();
        assert_eq!(BlockInverse::new(a, 1).unwrap().entries(), &[0.5, -0.25, 2.0]);
    }

    #[test]
    fn refuses_what_it_cannot_invert_naming_the_block() {
        let refusal = |a: CsrRef<'_, f64>, block| match BlockInverse::new(a, block) {
            Err(Error::Solve(e)) => e,
            other => panic!("not a refusal of the solver: {other:?}"),
        };
        let singular = |first_row, rows| SolveError::SingularBlock { first_row, rows };
        // Rows 2..4 hold [[1, 1], [1, 1]]: rank one.
        let a = CsrRef::try_new(
            5,
            5,
            &[0, 1, 2, 4, 6, 7],
            &[0, 1, 2, 3, 2, 3, 4],
            &[1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 2.0],
        )
        .unwrap();
        assert_eq!(refusal(a, 2), singular(2, 2));
        assert!(BlockInverse::new(a, 1).is_ok());
        // An empty row: the last, short block of one row is zero.
        let a = CsrRef::try_new(3, 3, &[0, 1, 2, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        assert_eq!(refusal(a, 2), singular(2, 1));
        // NaN and infinity.
        for bad in [f64::NAN, f64::INFINITY] {
            let values = [1.0, bad];
            let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &values).unwrap();
            assert_eq!(refusal(a, 2), singular(0, 2));
        }
        // Invertible in f64, but 1 / 1e-39 overflows f32.
        let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f32, 1e-39]).unwrap();
        assert!(matches!(
            BlockInverse::new(a, 1),
            Err(Error::Solve(SolveError::SingularBlock { first_row: 1, rows: 1 }))
        ));
        // The block size, then the shape.
        let a = CsrRef::try_new(2, 3, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
        let limit = MAX_BLOCK;
        for value in [0, limit + 1] {
            let square = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
            assert_eq!(refusal(square, value), SolveError::InvalidBlockSize { value, limit });
        }
        assert_eq!(refusal(a, 2), SolveError::NotSquare { rows: 2, cols: 3 });
    }

    #[test]
    fn an_empty_matrix_has_no_blocks() {
        let a = CsrRef::<f64>::try_new(0, 0, &[0], &[], &[]).unwrap();
        let inverse = BlockInverse::new(a, 4).unwrap();
        assert!(inverse.entries().is_empty());
        inverse.apply(&[], &mut []);
    }
}
