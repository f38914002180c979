//! The conversions from sprs and faer: every matrix those crates' checked constructors accept is
//! taken and gives back its entries, whatever its storage (CSR or CSC, compressed or not, pointers
//! that start after 0, spare entries after them).

use super::summed;
use gpu_spmv::formats::Csr;
use gpu_spmv::{CsrRef, Error, Scalar};

/// The CSC arrays of `a` (a counting sort by column, rows increasing in each column).
fn to_csc<T: Scalar>(a: CsrRef<'_, T>) -> (Vec<usize>, Vec<usize>, Vec<T>) {
    let mut ptr = vec![0; a.ncols() + 1];
    for &c in a.col_indices() {
        ptr[c + 1] += 1;
    }
    for c in 0..a.ncols() {
        ptr[c + 1] += ptr[c];
    }
    let (mut next, mut rows, mut values) = (ptr.clone(), vec![0; a.nnz()], vec![T::ZERO; a.nnz()]);
    for r in 0..a.nrows() {
        for (&c, &v) in a.row(r).0.iter().zip(a.row(r).1) {
            (rows[next[c]], values[next[c]]) = (r, v);
            next[c] += 1;
        }
    }
    (ptr, rows, values)
}

/// The arrays moved `lead` entries on and followed by `spare` ones, none of them the matrix's
/// (indices past any dimension, NaN values); with `slack`, `slack` such entries after each outer
/// slice too, and the count of real ones per slice (faer's uncompressed form).
#[allow(clippy::type_complexity)]
fn padded<T: Scalar>(
    ptr: &[usize],
    idx: &[usize],
    val: &[T],
    (lead, spare, slack): (usize, usize, usize),
) -> (Vec<usize>, Vec<usize>, Vec<usize>, Vec<T>) {
    let junk = (usize::MAX / 2, T::from_f64(f64::NAN));
    let (mut p, mut n, mut i, mut v) = (vec![lead], vec![], vec![junk.0; lead], vec![junk.1; lead]);
    for w in ptr.windows(2) {
        i.extend_from_slice(&idx[w[0]..w[1]]);
        v.extend_from_slice(&val[w[0]..w[1]]);
        n.push(w[1] - w[0]);
        i.extend(std::iter::repeat_n(junk.0, slack));
        v.extend(std::iter::repeat_n(junk.1, slack));
        p.push(i.len());
    }
    i.extend(std::iter::repeat_n(junk.0, spare));
    v.extend(std::iter::repeat_n(junk.1, spare));
    (p, n, i, v)
}

fn assert_entries<T: Scalar>(what: &str, got: Result<Csr<T>, Error>, a: CsrRef<'_, T>) {
    let got = got.unwrap_or_else(|e| panic!("{what}: refused a valid matrix: {e}"));
    assert_eq!((got.as_ref().nrows(), got.as_ref().ncols()), (a.nrows(), a.ncols()), "{what}");
    assert_eq!(summed(got.as_ref()), summed(a), "{what}");
}

/// Columns up to which the CSC forms are built (they are sized by the column count).
const MAX_CSC_COLS: usize = 1 << 16;

/// faer's row-major and column-major matrices of `a`, with the layout `(lead, spare, slack)`.
#[cfg(feature = "faer")]
pub fn check_faer<T: Scalar>(a: CsrRef<'_, T>, layout: (usize, usize, usize)) {
    if a.ncols() > MAX_CSC_COLS {
        return;
    }
    use faer::sparse::{SparseColMat, SparseRowMat, SymbolicSparseColMat, SymbolicSparseRowMat};
    let (lead, spare, slack) = layout;
    for uncompressed in [false, true] {
        let slack = if uncompressed { slack } else { 0 };
        let (p, n, i, v) = padded(a.row_offsets(), a.col_indices(), a.values(), (lead, spare, slack));
        let counts = uncompressed.then_some(n);
        let symbolic = SymbolicSparseRowMat::new_unsorted_checked(a.nrows(), a.ncols(), p, counts, i);
        let m = SparseRowMat::new(symbolic, v);
        assert_entries("faer, row major", Csr::try_from(&m), a);
        match CsrRef::try_from(m.as_ref()) {
            Ok(b) => {
                assert!(!uncompressed && lead == 0, "borrowed what it cannot");
                assert_eq!((b.row_offsets(), b.col_indices()), (a.row_offsets(), a.col_indices()));
            }
            Err(Error::Unsupported(_)) => assert!(uncompressed || lead > 0),
            Err(e) => panic!("faer, borrowed: {e}"),
        }
        let (ptr, rows, values) = to_csc(a);
        let (p, n, i, v) = padded(&ptr, &rows, &values, (lead, spare, slack));
        let counts = uncompressed.then_some(n);
        let symbolic = SymbolicSparseColMat::new_unsorted_checked(a.nrows(), a.ncols(), p, counts, i);
        assert_entries("faer, column major", Csr::try_from(&SparseColMat::new(symbolic, v)), a);
    }
}

/// sprs's CSR and CSC matrices of `a` (summed first: sprs takes sorted rows without repeats).
#[cfg(feature = "sprs")]
pub fn check_sprs<T: Scalar>(a: CsrRef<'_, T>) {
    if a.ncols() > MAX_CSC_COLS {
        return;
    }
    use sprs::CsMatI;
    let entries = summed(a);
    let mut offsets = vec![0; a.nrows() + 1];
    for &(r, _, _) in &entries {
        offsets[r + 1] += 1;
    }
    for r in 0..a.nrows() {
        offsets[r + 1] += offsets[r];
    }
    let cols: Vec<usize> = entries.iter().map(|e| e.1).collect();
    let values: Vec<T> = entries.iter().map(|e| T::from_f64(e.2)).collect();
    let canonical = CsrRef::try_new(a.nrows(), a.ncols(), &offsets, &cols, &values).unwrap();
    let m = CsMatI::try_new((a.nrows(), a.ncols()), offsets.clone(), cols.clone(), values.clone())
        .unwrap_or_else(|e| panic!("sprs refused a valid matrix: {:?}", e.3));
    let borrowed = CsrRef::try_from(&m).unwrap();
    assert_eq!((borrowed.row_offsets(), borrowed.col_indices()), (&offsets[..], &cols[..]));
    assert_entries("sprs, CSR", Csr::try_from(&m), canonical);
    let csc = m.to_csc();
    assert!(matches!(CsrRef::try_from(&csc), Err(Error::Unsupported(_))));
    assert_entries("sprs, CSC", Csr::try_from(&csc), canonical);
}
