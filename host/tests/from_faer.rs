//! faer's sparse matrices into the library's CSR input (feature `faer`): a compressed row-major
//! matrix with `usize` indices borrowed without a copy; column-major, `u32` indices and the
//! uncompressed form (a count of entries per row or column, with slack after them) copied, on the
//! edge-case matrices. Copies must give the CSR input's arrays (transposes: its sorted arrays).
#![cfg(feature = "faer")]

mod common;

use common::{Csr as TestCsr, edge_cases, rng};
use faer::sparse::{SparseColMat, SparseRowMat, SymbolicSparseColMat, SymbolicSparseRowMat};
use gpu_spmv::formats::Csr;
use gpu_spmv::{CsrRef, Error};

fn assert_same(what: &str, got: CsrRef<'_, f64>, want: &TestCsr<f64>) {
    assert_eq!((got.nrows(), got.ncols()), (want.nrows, want.ncols), "{what}: shape");
    assert_eq!(got.row_offsets(), want.offsets, "{what}: row offsets");
    assert_eq!(got.col_indices(), want.cols, "{what}: column indices");
    assert_eq!(got.values(), want.vals, "{what}: values");
}

/// The transpose's compressed arrays (rows of `a` become columns), each column's rows increasing.
fn transpose(a: &TestCsr<f64>) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut ptr = vec![0; a.ncols + 1];
    a.cols.iter().for_each(|&c| ptr[c + 1] += 1);
    (0..a.ncols).for_each(|c| ptr[c + 1] += ptr[c]);
    let (mut next, mut idx, mut val) = (ptr.clone(), vec![0; a.cols.len()], vec![0.0; a.cols.len()]);
    for r in 0..a.nrows {
        for k in a.offsets[r]..a.offsets[r + 1] {
            let at = &mut next[a.cols[k]];
            (idx[*at], val[*at]) = (r, a.vals[k]);
            *at += 1;
        }
    }
    (ptr, idx, val)
}

/// The arrays with two slack entries after each outer slice (NaN values that must not be read),
/// and the count of real entries per slice.
fn with_slack(ptr: &[usize], idx: &[usize], val: &[f64]) -> (Vec<usize>, Vec<usize>, Vec<usize>, Vec<f64>) {
    let (mut p, mut n, mut i, mut v) = (vec![0], Vec::new(), Vec::new(), Vec::new());
    for w in ptr.windows(2) {
        i.extend_from_slice(&idx[w[0]..w[1]]);
        v.extend_from_slice(&val[w[0]..w[1]]);
        i.extend([0, 0]);
        v.extend([f64::NAN, f64::NAN]);
        n.push(w[1] - w[0]);
        p.push(i.len());
    }
    (p, n, i, v)
}

#[test]
fn row_major_is_borrowed_and_the_rest_copied_to_the_same_arrays() {
    let mut rng = rng("faer row and column major");
    for (name, a) in edge_cases::<f64>(&mut rng) {
        let sorted = !name.contains("unsorted");
        let symbolic = if sorted {
            SymbolicSparseRowMat::new_checked(a.nrows, a.ncols, a.offsets.clone(), None, a.cols.clone())
        } else {
            SymbolicSparseRowMat::new_unsorted_checked(
                a.nrows,
                a.ncols,
                a.offsets.clone(),
                None,
                a.cols.clone(),
            )
        };
        let m = SparseRowMat::new(symbolic, a.vals.clone());
        let borrowed = CsrRef::try_from(m.as_ref()).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(name, borrowed, &a);
        assert!(std::ptr::eq(borrowed.values().as_ptr(), m.val().as_ptr()), "{name}: copied, not borrowed");
        assert_same(&format!("{name}, copied"), Csr::try_from(&m).unwrap().as_ref(), &a);

        let (p, n, i, v) = with_slack(&a.offsets, &a.cols, &a.vals);
        let symbolic = SymbolicSparseRowMat::new_unsorted_checked(a.nrows, a.ncols, p, Some(n), i);
        let loose = SparseRowMat::new(symbolic, v);
        assert!(matches!(CsrRef::try_from(loose.as_ref()), Err(Error::Unsupported(_))), "{name}: borrowed");
        assert_same(&format!("{name}, uncompressed"), Csr::try_from(&loose).unwrap().as_ref(), &a);

        if !sorted {
            continue;
        }
        let (ptr, idx, val) = transpose(&a);
        let csc = SparseColMat::new(
            SymbolicSparseColMat::new_checked(a.nrows, a.ncols, ptr.clone(), None, idx.clone()),
            val.clone(),
        );
        assert_same(&format!("{name}, column major"), Csr::try_from(&csc).unwrap().as_ref(), &a);
        let (p, n, i, v) = with_slack(&ptr, &idx, &val);
        let loose = SparseColMat::new(SymbolicSparseColMat::new_checked(a.nrows, a.ncols, p, Some(n), i), v);
        assert_same(
            &format!("{name}, column major uncompressed"),
            Csr::try_from(&loose).unwrap().as_ref(),
            &a,
        );
    }
}

#[test]
fn u32_indices_are_widened() {
    let mut rng = rng("faer u32");
    let a = TestCsr::<f64>::random(&mut rng, 1001, 777, true, |r| r % 13);
    let narrow = |v: &[usize]| v.iter().map(|&i| u32::try_from(i).unwrap()).collect::<Vec<_>>();
    let m = SparseRowMat::new(
        SymbolicSparseRowMat::new_checked(a.nrows, a.ncols, narrow(&a.offsets), None, narrow(&a.cols)),
        a.vals.clone(),
    );
    assert_same("u32 row major", Csr::try_from(m.as_ref()).unwrap().as_ref(), &a);
    let (ptr, idx, val) = transpose(&a);
    let csc = SparseColMat::new(
        SymbolicSparseColMat::new_checked(a.nrows, a.ncols, narrow(&ptr), None, narrow(&idx)),
        val,
    );
    assert_same("u32 column major", Csr::try_from(csc.as_ref()).unwrap().as_ref(), &a);
}
