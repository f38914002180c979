//! Reverse Cuthill–McKee (`Permutation::rcm`) and the permutation's uses: refused for a matrix that
//! is not square, else a permutation under which `P A Pᵀ` is `A` renumbered and vectors go there
//! and back unchanged.

use super::summed;
use gpu_spmv::formats::Permutation;
use gpu_spmv::{CsrRef, Error, Scalar};

pub fn check_rcm<T: Scalar>(a: CsrRef<'_, T>) {
    let p = match Permutation::rcm(a) {
        Ok(p) => p,
        Err(Error::DimensionMismatch { expected, got, .. }) => {
            return assert!(expected == a.nrows() && got == a.ncols() && got != expected);
        }
        Err(e) => panic!("unexpected refusal {e}"),
    };
    let n = a.nrows();
    assert_eq!(p.len(), n);
    let mut seen = vec![false; n];
    for (new, &old) in p.new_to_old().iter().enumerate() {
        assert!(!seen[old], "node {old} numbered twice");
        seen[old] = true;
        assert_eq!(p.old_to_new()[old], new);
    }
    let v: Vec<usize> = (0..n).collect();
    assert_eq!(p.to_old(&p.to_new(&v).unwrap()).unwrap(), v);
    assert!(matches!(p.to_new(&vec![0; n + 1]), Err(Error::DimensionMismatch { .. })));
    let b = p.permute(a).unwrap();
    let renumbered: Vec<(usize, usize, f64)> = {
        let mut m: Vec<_> =
            summed(a).into_iter().map(|(r, c, v)| (p.old_to_new()[r], p.old_to_new()[c], v)).collect();
        m.sort_by_key(|&(r, c, _)| (r, c));
        m
    };
    assert_eq!(summed(b.view()), renumbered, "P A Pᵀ is not A renumbered");
    assert!(b.view().row_offsets().len() == n + 1 && (0..n).all(|r| b.view().row(r).0.is_sorted()));
}
