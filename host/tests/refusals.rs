//! Regression tests of issue 24, one per example of bad input found in the surfaces added that
//! round (the LMA operator, the row partition, the compressed format, the sprs and faer conversions,
//! the CPU references, CG): each is now refused with its typed error before anything is allocated,
//! answered right, or, where the function cannot fail otherwise, panics as its `# Panics` says. The
//! process runs under a 4 GiB cap on its address space, so an over-allocation fails the test.

mod common;

use common::cap_memory;
use gpu_spmv::formats::{CompressedCsr, Lma, MAX_PARTS, RowPartition};
use gpu_spmv::io::parse_matrix_market;
use gpu_spmv::reference::{
    DenseRef, error_scale_transposed, max_relative_error, spmm_f64, spmv_transpose_f64, transpose,
};
use gpu_spmv::reference::{LinearOperator, cg::cg};
use gpu_spmv::solve::{Preconditioner, SolveError, SolverOptions};
use gpu_spmv::{CsrRef, Error};
use nalgebra_sparse::CsrMatrix;

/// Asserts that `f` panics with a message containing `needle`.
fn assert_panics(what: &str, needle: &str, f: impl FnOnce() + std::panic::UnwindSafe) {
    let payload = std::panic::catch_unwind(f).expect_err(what);
    let message = payload
        .downcast_ref::<String>()
        .cloned()
        .or_else(|| payload.downcast_ref::<&str>().map(|s| s.to_string()))
        .unwrap_or_default();
    assert!(message.contains(needle), "{what}: panicked with {message:?}");
}

// Class 1: sizes checked before allocating.

#[test]
fn lma_with_billions_of_nodes_and_no_elements_is_refused() {
    cap_memory();
    let e = Lma::<f64>::try_new(4_294_967_294, 1, &[], &[]).unwrap_err();
    assert!(matches!(e, Error::TooLarge { what: "the node count", .. }), "{e}");
}

#[test]
fn lma_colours_a_star_of_100k_elements_on_a_million_nodes() {
    cap_memory();
    // 4.8 MB of input; a bitset of colours per node took 12.5 GB.
    let elements = 100_000;
    let map: Vec<usize> = (1..=elements).flat_map(|i| [0, i * 9]).collect();
    let a = Lma::try_new(1_000_000, 2, &map, &vec![1.0f32; elements * 4]).unwrap();
    assert_eq!(a.colours(), elements);
}

#[test]
fn a_row_partition_into_more_parts_than_the_limit_is_refused() {
    cap_memory();
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 2.0]).unwrap();
    for parts in [MAX_PARTS + 1, 1 << 40, usize::MAX] {
        let e = RowPartition::balanced(&a, parts).unwrap_err();
        assert!(matches!(e, Error::TooLarge { what: "the part count", .. }), "{parts}: {e}");
    }
}

#[test]
fn the_transpose_of_a_file_declaring_four_billion_columns_is_refused() {
    cap_memory();
    let m: CsrMatrix<f64> =
        parse_matrix_market("%%MatrixMarket matrix coordinate real general\n1 4294967295 0\n").unwrap();
    let a = CsrRef::from(&m);
    let e = transpose(a).unwrap_err();
    assert!(matches!(e, Error::TooLarge { value: 4_294_967_295, .. }), "{e}");
    // The oracles size their result by `y`, which must have a column's length: checked first.
    let e = error_scale_transposed(1.0, a, &[1.0], 0.0, &[0.0; 3]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "y", expected: 4_294_967_295, got: 3 }), "{e}");
    let e = spmv_transpose_f64(1.0, a, &[1.0], 0.0, &[0.0; 3]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "y", .. }), "{e}");
}

#[cfg(feature = "sprs")]
#[test]
fn a_sprs_csc_matrix_of_2_to_the_40_rows_is_refused() {
    use gpu_spmv::formats::Csr;
    cap_memory();
    for rows in [1usize << 40, usize::MAX] {
        let m = sprs::CsMatI::<f64, usize>::new_csc((rows, 2), vec![0, 0, 0], vec![], vec![]);
        let e = Csr::try_from(&m).unwrap_err();
        assert!(matches!(e, Error::TooLarge { value, .. } if value == rows), "{rows}: {e}");
    }
}

#[cfg(feature = "faer")]
#[test]
fn a_faer_csc_matrix_of_2_to_the_40_rows_is_refused() {
    use faer::sparse::{SparseColMat, SymbolicSparseColMat};
    use gpu_spmv::formats::Csr;
    cap_memory();
    for rows in [1usize << 40, isize::MAX as usize] {
        let symbolic = SymbolicSparseColMat::new_checked(rows, 2, vec![0usize, 0, 0], None, vec![]);
        let m = SparseColMat::<usize, f64>::new(symbolic, vec![]);
        let e = Csr::try_from(&m).unwrap_err();
        assert!(matches!(e, Error::TooLarge { value, .. } if value == rows), "{rows}: {e}");
    }
}

// Class 2: wrong answers.

/// A 1D mesh of `n` bars whose every third element is `[i i]` (a node repeated) on top of the
/// bars `[i i+1]`: SPD, with the repeated elements adding to the diagonal only through their
/// off-diagonal entries.
fn mesh_with_repeated_nodes(n: usize) -> Lma<f64> {
    let (mut map, mut k) = (vec![], vec![]);
    for i in 0..n {
        map.extend([i, i + 1]);
        k.extend([2.0, -1.0, -1.0, 2.0]);
        if i % 3 == 0 {
            // Alone on node i: 0.5 - 0.25 - 0.25 + 0.5 = 0.5 on the diagonal.
            map.extend([i, i]);
            k.extend([0.5, -0.25, -0.25, 0.5]);
        }
    }
    Lma::try_new(n + 1, 2, &map, &k).unwrap()
}

#[test]
fn lma_diagonal_counts_the_couplings_of_a_repeated_node() {
    cap_memory();
    let a = mesh_with_repeated_nodes(30);
    let csr = a.to_csr();
    let from_csr: Vec<f64> = (0..31).map(|r| csr.get_entry(r, r).unwrap().into_value()).collect();
    assert_eq!(a.diagonal(), from_csr);
    // The Jacobi CG used to see a zero diagonal at the chain's ends and refuse.
    let b: Vec<f64> = (0..31).map(|i| (i as f64).cos()).collect();
    let mut x = vec![0.0; 31];
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 1000, preconditioner: Preconditioner::Jacobi };
    cg(&a, &b, &mut x, &options).unwrap();
}

#[test]
fn the_transposed_and_spmm_oracles_read_no_x_when_alpha_is_zero() {
    cap_memory();
    let a = CsrRef::try_new(2, 3, &[0, 2, 3], &[0, 2, 1], &[1.0, 2.0, 3.0]).unwrap();
    let (x, y) = ([f64::NAN; 2], [1.0, -2.0, 4.0]);
    assert_eq!(spmv_transpose_f64(0.0, a, &x, 0.5, &y).unwrap(), [0.5, -1.0, 2.0]);
    assert_eq!(error_scale_transposed(0.0, a, &x, 0.5, &y).unwrap(), [0.5, 1.0, 2.0]);
    let xs = [f64::NAN; 6];
    let ys = [1.0, 2.0, 3.0, 4.0];
    let xd = DenseRef::try_new(&xs, 3, 2, 1, 3).unwrap();
    let yd = DenseRef::try_new(&ys, 2, 2, 1, 2).unwrap();
    let (out, scale) = spmm_f64(0.0, a, xd, 2.0, yd).unwrap();
    assert_eq!(out, [2.0, 4.0, 6.0, 8.0]);
    assert_eq!(scale, [2.0, 4.0, 6.0, 8.0]);
}

#[test]
fn max_relative_error_certifies_nothing_against_inf_or_nan() {
    cap_memory();
    assert_eq!(max_relative_error(&[1.0f64], &[f64::INFINITY], &[f64::INFINITY]), f64::INFINITY);
    assert_eq!(max_relative_error(&[f64::INFINITY], &[f64::INFINITY], &[1.0]), f64::INFINITY);
    assert_eq!(max_relative_error(&[1.0f64], &[1.0], &[f64::NAN]), f64::INFINITY);
    assert_eq!(max_relative_error(&[1.0f64, 2.0], &[1.0, 2.5], &[1.0, 1.0]), 0.5);
}

// Class 3: panics and misleading errors.

#[test]
fn dense_views_past_their_data_are_refused() {
    cap_memory();
    let data = [1.0f64; 5];
    let e = DenseRef::try_new(&data, 3, 2, 1, 3).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { expected: 6, got: 5, .. }), "{e}");
    let e = DenseRef::try_new(&data, 2, 2, 1, usize::MAX).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    let e = DenseRef::try_new(&data, usize::MAX, 2, 0, 0).unwrap_err();
    assert!(matches!(e, Error::TooLarge { .. }), "{e}");
    // Strides of 0 would let a view claim more elements than its data holds.
    let e = DenseRef::try_new(&data, 1000, 1000, 0, 0).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { expected: 1_000_000, .. }), "{e}");
    assert_eq!(DenseRef::try_new(&[0.0f32; 0], 0, 7, 1, 0).unwrap().cols(), 7);
}

#[test]
fn spmm_names_the_dimension_of_y_at_fault() {
    cap_memory();
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0, 1.0]).unwrap();
    let data = [1.0; 6];
    let x = DenseRef::try_new(&data, 2, 3, 1, 2).unwrap();
    let y = DenseRef::try_new(&data, 2, 2, 1, 2).unwrap();
    let e = spmm_f64(1.0, a, x, 0.0, y).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "the columns of Y", expected: 3, got: 2 }), "{e}");
    let y = DenseRef::try_new(&data, 3, 2, 1, 3).unwrap();
    let e = spmm_f64(1.0, a, x, 0.0, y).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "the rows of Y", expected: 2, got: 3 }), "{e}");
}

#[test]
fn error_scale_transposed_checks_lengths() {
    cap_memory();
    let a = CsrRef::try_new(2, 3, &[0, 2, 3], &[0, 2, 1], &[1.0, 2.0, 3.0]).unwrap();
    let e = error_scale_transposed(1.0, a, &[1.0; 3], 0.0, &[0.0; 3]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "x", expected: 2, got: 3 }), "{e}");
    let e = error_scale_transposed(1.0, a, &[1.0; 2], 0.0, &[0.0; 2]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "y", expected: 3, got: 2 }), "{e}");
}

#[test]
fn index_accessors_panic_as_documented() {
    cap_memory();
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[1.0f32, 2.0]).unwrap();
    let c = CompressedCsr::<f32>::try_from_csr(a).unwrap();
    assert!(c.error_bound(1) > 0.0);
    assert_panics("error_bound past the rows", "out of bounds", || {
        c.error_bound(2);
    });
    let partition = RowPartition::balanced(&a, 2).unwrap();
    assert_panics("rows of a part past the parts", "out of bounds", || {
        partition.rows(2);
    });
}

#[test]
fn cg_refuses_a_nan_tolerance_instead_of_reporting_a_breakdown() {
    cap_memory();
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[2.0, 3.0]).unwrap();
    let options =
        SolverOptions { rel_tol: f64::NAN, max_iterations: 10, preconditioner: Preconditioner::None };
    let e = cg(&a, &[1.0, 1.0], &mut [0.0; 2], &options).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::InvalidTolerance { .. })), "{e}");
}

#[test]
fn apply_refuses_vectors_outside_its_contract() {
    cap_memory();
    let a = mesh_with_repeated_nodes(4);
    let e = a.apply(&[1.0; 4], &mut [0.0; 5]).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "x", expected: 5, got: 4 }), "{e}");
}

// Class 4: valid input refused.

#[cfg(feature = "faer")]
#[test]
fn faer_matrices_its_checked_constructors_accept_are_taken() {
    use common::rng;
    use faer::sparse::{SparseColMat, SparseRowMat, SymbolicSparseColMat, SymbolicSparseRowMat};
    use gpu_spmv::formats::Csr;
    use rand::Rng;
    cap_memory();
    let mut rng = rng("faer offsets");
    // [1 . 2]
    // [. 3 .]: column pointers from 2 with 3 spare entries after the last; NaN where not the matrix's.
    let junk = f64::from(rng.random_range(1..100u8));
    let (rows, vals) =
        (vec![7, 7, 0, 1, 0, 9, 9, 9], vec![junk, junk, 1.0, 3.0, 2.0, f64::NAN, f64::NAN, f64::NAN]);
    let csc =
        SparseColMat::new(SymbolicSparseColMat::new_checked(2, 3, vec![2usize, 3, 4, 5], None, rows), vals);
    let want = Csr::try_new(2, 3, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!(Csr::try_from(&csc).unwrap(), want);
    // Row-major: copied from pointers after 0, borrowed with spare capacity.
    let (cols, vals) = (vec![5, 0, 2, 1, 6], vec![f64::NAN, 1.0, 2.0, 3.0, f64::NAN]);
    let late =
        SparseRowMat::new(SymbolicSparseRowMat::new_checked(2, 7, vec![1usize, 3, 4], None, cols), vals);
    let want_wide = Csr::try_new(2, 7, vec![0, 2, 3], vec![0, 2, 1], vec![1.0, 2.0, 3.0]).unwrap();
    assert_eq!(Csr::try_from(&late).unwrap(), want_wide);
    assert!(matches!(CsrRef::try_from(late.as_ref()), Err(Error::Unsupported(_))));
    let (cols, vals) = (vec![0, 2, 1, 6], vec![1.0, 2.0, 3.0, f64::NAN]);
    let spare =
        SparseRowMat::new(SymbolicSparseRowMat::new_checked(2, 7, vec![0usize, 2, 3], None, cols), vals);
    let borrowed = CsrRef::try_from(spare.as_ref()).unwrap();
    assert_eq!((borrowed.row_offsets(), borrowed.col_indices()), (&[0, 2, 3][..], &[0, 2, 1][..]));
    assert_eq!(Csr::try_from(&spare).unwrap(), want_wide);
}
