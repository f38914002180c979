//! `sprs::CsMat` into the library's CSR input (feature `sprs`): CSR borrowed without a copy, CSC and
//! narrower index types copied, on the edge-case matrices; the copies must give the same arrays as
//! the CSR input (sorted and distinct columns), and a CSC matrix cannot be borrowed.
#![cfg(feature = "sprs")]

mod common;

use common::{Csr as TestCsr, edge_cases, rng};
use gpu_spmv::formats::Csr;
use gpu_spmv::{CsrRef, Error};
use sprs::{CsMatI, TriMat};

/// The test matrix as a sprs CSR matrix with `usize` indices.
fn to_sprs(a: &TestCsr<f64>) -> CsMatI<f64, usize> {
    CsMatI::try_new((a.nrows, a.ncols), a.offsets.clone(), a.cols.clone(), a.vals.clone())
        .unwrap_or_else(|e| panic!("sprs refused a valid matrix: {e:?}"))
}

fn assert_same(what: &str, got: CsrRef<'_, f64>, want: &TestCsr<f64>) {
    assert_eq!((got.nrows(), got.ncols()), (want.nrows, want.ncols), "{what}: shape");
    assert_eq!(got.row_offsets(), want.offsets, "{what}: row offsets");
    assert_eq!(got.col_indices(), want.cols, "{what}: column indices");
    assert_eq!(got.values(), want.vals, "{what}: values");
}

#[test]
fn csr_is_borrowed_and_csc_copied_to_the_same_arrays() {
    let mut rng = rng("sprs csr and csc");
    for (name, a) in edge_cases::<f64>(&mut rng).into_iter().filter(|(n, _)| !n.contains("unsorted")) {
        let m = to_sprs(&a);
        let borrowed = CsrRef::try_from(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(name, borrowed, &a);
        assert!(std::ptr::eq(borrowed.values().as_ptr(), m.data().as_ptr()), "{name}: copied, not borrowed");

        let csc = m.to_csc();
        assert!(matches!(CsrRef::try_from(&csc), Err(Error::Unsupported(_))), "{name}: CSC borrowed");
        let copied = Csr::try_from(&csc).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&format!("{name}, from CSC"), copied.as_ref(), &a);
        let copied = Csr::try_from(&m).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_same(&format!("{name}, CSR copied"), copied.as_ref(), &a);
    }
}

#[test]
fn narrow_and_signed_indices_are_widened() {
    let mut rng = rng("sprs index types");
    let a = TestCsr::<f64>::random(&mut rng, 1001, 777, true, |r| r % 13);
    let narrow = |v: &[usize]| v.iter().map(|&i| u32::try_from(i).unwrap()).collect::<Vec<_>>();
    let m =
        CsMatI::<f64, u32>::try_new((a.nrows, a.ncols), narrow(&a.offsets), narrow(&a.cols), a.vals.clone())
            .unwrap();
    assert_same("u32, CSR", Csr::try_from(&m).unwrap().as_ref(), &a);
    assert_same("u32, CSC", Csr::try_from(&m.to_csc()).unwrap().as_ref(), &a);
    let signed = |v: &[usize]| v.iter().map(|&i| i32::try_from(i).unwrap()).collect::<Vec<_>>();
    let m =
        CsMatI::<f64, i32>::try_new((a.nrows, a.ncols), signed(&a.offsets), signed(&a.cols), a.vals.clone())
            .unwrap();
    assert_same("i32, CSC", Csr::try_from(&m.to_csc()).unwrap().as_ref(), &a);
}

#[test]
fn repeated_triplets_arrive_summed_as_sprs_sums_them() {
    // sprs sums repeated (row, column) pairs when it compresses triplets; the conversion keeps its
    // sums. Small integers, so the sums are exact.
    let mut t = TriMat::new((3, 4));
    for (r, c, v) in [(0, 1, 1.0), (2, 3, 2.0), (0, 1, 3.0), (2, 0, -1.0)] {
        t.add_triplet(r, c, v);
    }
    let want = TestCsr {
        nrows: 3,
        ncols: 4,
        offsets: vec![0, 1, 1, 3],
        cols: vec![1, 0, 3],
        vals: vec![4.0, -1.0, 2.0],
    };
    assert_same("from CSC triplets", Csr::try_from(&t.to_csc::<usize>()).unwrap().as_ref(), &want);
    let csr: CsMatI<f64, usize> = t.to_csr();
    assert_same("from CSR triplets", CsrRef::try_from(&csr).unwrap(), &want);
}
