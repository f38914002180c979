//! Model problems generated to any size, for the solvers' tests and the solver study: systems whose
//! difficulty a single parameter sets.

use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use nalgebra_sparse::CsrMatrix;

/// The convection–diffusion operator `−Δu + Pe (w · ∇u)` on the unit square with `w = (1, 1)/√2`
/// and `u = 0` on the boundary, discretised on the `nx × ny` interior points of a uniform grid
/// (spacings `hx = 1/(nx + 1)`, `hy = 1/(ny + 1)`): the 5-point Laplacian and first-order upwind
/// differences for the convection, each row scaled by the cell area `hx hy`. On a square grid
/// (`h = hx = hy`) that is the usual scaling by `h²`: `4 + Pe h (|w_x| + |w_y|)` on the diagonal,
/// `−1` to the downwind neighbours and `−1 − Pe h |w_x|` (or `|w_y|`) to the upwind ones.
///
/// The Péclet number `peclet` sets how far from symmetric the system is: 0 gives the SPD Poisson
/// matrix; with it growing the convection dominates and the spectrum spreads into the complex
/// plane. Upwinding keeps it an M-matrix for every `Pe ≥ 0` (off-diagonal entries not positive,
/// diagonally dominant by rows and strictly so next to the boundary, irreducible), so it is
/// nonsingular and its diagonal positive: Jacobi applies. The unknown at grid point `(i, j)` is row
/// `j nx + i`; columns sorted within each row.
///
/// Refused, before anything is allocated: a Péclet number that is negative, not finite, or so large
/// that the diagonal overflows `T` ([`Error::InvalidNumber`]), and a grid whose unknowns or entries do not fit the kernels' 32-bit
/// indices ([`Error::TooLarge`]). A grid with `nx` or `ny` zero is the empty `0 × 0` matrix.
pub fn convection_diffusion<T: Scalar>(nx: usize, ny: usize, peclet: f64) -> Result<CsrMatrix<T>> {
    if !(peclet >= 0.0 && peclet.is_finite()) {
        let expected = "a finite number at least 0";
        return Err(Error::InvalidNumber { what: "the Péclet number", value: peclet, expected });
    }
    let too_large = |what, value| Error::TooLarge { what, value, limit: u32::MAX as usize };
    let n = nx.checked_mul(ny).ok_or(too_large("the unknowns of the grid (nx × ny)", nx.max(ny)))?;
    narrow("the unknowns of the grid (nx × ny)", n)?;
    // Every unknown, and both directions of every edge between neighbours, horizontal or vertical.
    let nnz = [nx.saturating_sub(1).checked_mul(ny), ny.saturating_sub(1).checked_mul(nx)]
        .into_iter()
        .try_fold(n, |sum, edges| edges?.checked_mul(2)?.checked_add(sum))
        .ok_or(too_large("the entries of the grid's matrix", n))?;
    narrow("the entries of the grid's matrix", nnz)?;

    let (hx, hy) = (1.0 / (nx as f64 + 1.0), 1.0 / (ny as f64 + 1.0));
    let w = std::f64::consts::FRAC_1_SQRT_2;
    // Scaled by hx hy: diffusion hy/hx to each x neighbour, hx/hy to each y neighbour; the upwind
    // difference adds Pe w_x hy to the diagonal and takes it from the west neighbour (w_x > 0), and
    // likewise Pe w_y hx from the south one.
    let (east, north) = (-hy / hx, -hx / hy);
    let (west, south) = (east - peclet * w * hy, north - peclet * w * hx);
    let diagonal = -(east + west + north + south);
    // The largest entry: finite in `T`, so are the others.
    if !T::from_f64(diagonal).to_f64().is_finite() {
        let expected = "small enough for the matrix's entries to be finite in the element type";
        return Err(Error::InvalidNumber { what: "the Péclet number", value: peclet, expected });
    }
    let mut offsets = Vec::with_capacity(n + 1);
    let (mut cols, mut values) = (Vec::with_capacity(nnz), Vec::with_capacity(nnz));
    offsets.push(0);
    // One pass over the rows, not over `ny` lines of `nx`: a grid of no columns and 2^63 lines has
    // no unknowns and costs nothing.
    for row in 0..n {
        let (i, j) = (row % nx, row / nx);
        let neighbours = [
            (j > 0, row.wrapping_sub(nx), south),
            (i > 0, row.wrapping_sub(1), west),
            (true, row, diagonal),
            (i + 1 < nx, row + 1, east),
            (j + 1 < ny, row + nx, north),
        ];
        for (_, col, value) in neighbours.into_iter().filter(|&(inside, ..)| inside) {
            cols.push(col);
            values.push(T::from_f64(value));
        }
        offsets.push(cols.len());
    }
    Ok(CsrMatrix::try_from_csr_data(n, n, offsets, cols, values).expect("a valid CSR matrix by construction"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pe_zero_is_the_poisson_matrix() {
        let a = convection_diffusion::<f64>(3, 2, 0.0).unwrap();
        assert_eq!((a.nrows(), a.ncols(), a.nnz()), (6, 6, 6 + 2 * (2 * 2 + 3)));
        let dense = nalgebra_sparse::convert::serial::convert_csr_dense(&a);
        assert_eq!(dense, dense.transpose());
        // hx = 1/4, hy = 1/3: x neighbours -hy/hx = -4/3, y neighbours -hx/hy = -3/4.
        let (x, y) = (-4.0 / 3.0, -0.75);
        let row4: Vec<f64> = (0..6).map(|c| dense[(4, c)]).collect();
        let expected = [0.0, y, 0.0, x, -2.0 * (x + y), x];
        assert!(row4.iter().zip(expected).all(|(a, e)| (a - e).abs() < 1e-15), "{row4:?}");
    }

    #[test]
    fn a_grid_without_unknowns_is_empty_at_once_however_long() {
        // Found by the `krylov` fuzz target: `0 × 2^63` walked 2^63 empty lines.
        for (nx, ny) in [(0, usize::MAX / 2), (usize::MAX / 2, 0), (0, 0)] {
            let a = convection_diffusion::<f32>(nx, ny, 1.0).unwrap();
            assert_eq!((a.nrows(), a.nnz()), (0, 0));
        }
    }

    #[test]
    fn upwinding_keeps_an_m_matrix_with_sorted_rows() {
        for pe in [0.0, 10.0, 1000.0] {
            let a = convection_diffusion::<f32>(5, 4, pe).unwrap();
            for (r, row) in a.row_iter().enumerate() {
                assert!(row.col_indices().is_sorted(), "row {r}");
                let (mut diagonal, mut off) = (0.0, 0.0);
                for (&c, &v) in row.col_indices().iter().zip(row.values()) {
                    if c == r {
                        diagonal = v;
                    } else {
                        assert!(v <= 0.0, "Pe {pe}: ({r}, {c}) = {v}");
                        off -= v;
                    }
                }
                assert!(diagonal >= off * (1.0 - 1e-6), "Pe {pe}, row {r}: {diagonal} < {off}");
            }
            // Upwind: the west neighbour's coupling is the larger one once Pe > 0.
            let row = a.row(6);
            let (west, east) =
                (row.get_entry(5).unwrap().into_value(), row.get_entry(7).unwrap().into_value());
            assert!(pe == 0.0 && west == east || west < east, "Pe {pe}: {west} {east}");
        }
    }

    #[test]
    fn refuses_bad_numbers_and_sizes_before_allocating() {
        for pe in [-1e-300, f64::NAN, f64::INFINITY, -0.5] {
            let e = convection_diffusion::<f64>(3, 3, pe).unwrap_err();
            assert!(matches!(e, Error::InvalidNumber { what: "the Péclet number", .. }), "{pe}: {e}");
        }
        let e = convection_diffusion::<f32>(3, 3, 1e40).unwrap_err();
        assert!(matches!(e, Error::InvalidNumber { what: "the Péclet number", .. }), "{e}");
        // In f64 the diagonal, Pe (hx + hy) / √2 + ..., stays below Pe: finite for every finite Pe.
        assert!(convection_diffusion::<f64>(1, 1, f64::MAX).is_ok());
        let e = convection_diffusion::<f64>(usize::MAX, 2, 1.0).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the unknowns of the grid (nx × ny)", .. }), "{e}");
        let e = convection_diffusion::<f64>(1 << 16, 1 << 16, 1.0).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the unknowns of the grid (nx × ny)", .. }), "{e}");
        // 2^30 unknowns fit 32 bits; their 5 · 2^30 entries do not.
        let e = convection_diffusion::<f64>(1 << 15, 1 << 15, 1.0).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the entries of the grid's matrix", .. }), "{e}");
        let empty = convection_diffusion::<f64>(0, 7, 1.0).unwrap();
        assert_eq!((empty.nrows(), empty.nnz()), (0, 0));
        let line = convection_diffusion::<f64>(1, 4, 0.0).unwrap();
        assert_eq!(line.nnz(), 4 + 2 * 3);
    }
}
