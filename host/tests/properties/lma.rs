//! `Lma::try_new`: refused exactly as documented, and an accepted operator consistent with its own
//! assembly (its diagonal and product those of `to_csr`), with a valid colouring, stored packed
//! exactly when its element matrices are symmetric bit for bit, and giving the same bits in either
//! storage; the same for the input's element matrices mirrored into symmetric ones.

use gpu_spmv::formats::{Lma, LmaStorage, MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES, NO_NODE};
use gpu_spmv::reference::spmv_f64;
use gpu_spmv::{CsrRef, Error, FormatError};

/// The refusal `Lma::try_new` documents for its input, in the order of its checks; `None` where it
/// must accept.
fn lma_fault(node_count: usize, m: usize, map: &[usize], values: usize) -> Option<&'static str> {
    if m == 0 || !map.len().is_multiple_of(m) {
        return Some("InvalidParameter");
    }
    let elements = map.len() / m;
    if (elements as u128) * (m as u128) * (m as u128) != values as u128 {
        return Some("DimensionMismatch");
    }
    let declared_limit =
        MAX_ROWS_WITHOUT_ENTRIES.saturating_add(map.len().saturating_mul(MAX_ROWS_PER_ENTRY));
    if node_count >= u32::MAX as usize || node_count > declared_limit {
        return Some("TooLarge");
    }
    map.iter().any(|&n| n != NO_NODE && n >= node_count).then_some("LmaNodeOutOfRange")
}

/// `Lma::try_new` on any input: the documented refusal, or an operator whose colours separate the
/// elements that share a node, whose diagonal is its assembly's (repeated nodes included), and
/// whose product is its assembly's (exactly: the values must be small integers), under the GPU
/// contract for `alpha == 0`, stored packed exactly when its element matrices are symmetric, with
/// the products, diagonal and assembly of its full storage; then the same with the input's upper
/// triangles mirrored, which must be packed.
pub fn check_lma(node_count: usize, m: usize, map: &[usize], values: &[f64], x: &[f64]) {
    let expected = lma_fault(node_count, m, map, values.len());
    let a = match (Lma::try_new(node_count, m, map, values), expected) {
        (Ok(a), None) => a,
        (Err(e), Some(kind)) => {
            let got = match &e {
                Error::Format(FormatError::InvalidParameter { .. }) => "InvalidParameter",
                Error::DimensionMismatch { .. } => "DimensionMismatch",
                Error::TooLarge { .. } => "TooLarge",
                Error::Format(FormatError::LmaNodeOutOfRange { element, slot, node, .. }) => {
                    let first = map.iter().position(|&n| n != NO_NODE && n >= node_count).unwrap();
                    assert_eq!((*element, *slot, *node), (first / m, first % m, map[first]), "{e}");
                    "LmaNodeOutOfRange"
                }
                _ => panic!("unexpected refusal {e}"),
            };
            assert_eq!(got, kind, "{e}");
            return;
        }
        (got, expected) => panic!("try_new gave {got:?}, expected {expected:?}"),
    };
    check_operator(&a, node_count, m, map, values, x);
    // The same map with each element's upper triangle mirrored below it: symmetric, so packed.
    let mut mirrored = values.to_vec();
    for e in 0..map.len() / m {
        for i in 0..m {
            for j in 0..i {
                mirrored[(e * m + i) * m + j] = mirrored[(e * m + j) * m + i];
            }
        }
    }
    let b = Lma::try_new(node_count, m, map, &mirrored).expect("the same map and sizes");
    check_operator(&b, node_count, m, map, &mirrored, x);
    if !map.is_empty() {
        assert_eq!(b.storage(), LmaStorage::Symmetric);
    }
}

/// Whether every element matrix equals its transpose bit for bit, with the rows and columns of
/// Dirichlet slots taken as zeros.
fn symmetric(m: usize, map: &[usize], values: &[f64]) -> bool {
    let live = |e: usize, k: usize| map[e * m + k] != NO_NODE;
    (0..map.len() / m).all(|e| {
        (0..m).all(|i| {
            (0..m).all(|j| {
                !live(e, i)
                    || !live(e, j)
                    || values[(e * m + i) * m + j].to_bits() == values[(e * m + j) * m + i].to_bits()
            })
        })
    })
}

/// An accepted operator: its sizes, storage, colouring, diagonal and product (against its assembly
/// and against its full storage, bit for bit).
fn check_operator(a: &Lma<f64>, node_count: usize, m: usize, map: &[usize], values: &[f64], x: &[f64]) {
    let elements = map.len() / m;
    assert_eq!((a.node_count(), a.nodes_per_element(), a.elements()), (node_count, m, elements));
    let packed = elements > 0 && symmetric(m, map, values);
    let (storage, per_element) =
        if packed { (LmaStorage::Symmetric, m * (m + 1) / 2) } else { (LmaStorage::Full, m * m) };
    assert_eq!((a.storage(), a.values().len()), (storage, elements * per_element));
    let repeats = map.chunks(m).any(|s| (0..m).any(|k| s[k] != NO_NODE && s[..k].contains(&s[k])));
    assert_eq!(a.repeats_nodes(), repeats);
    let mut order = a.element_order().to_vec();
    order.sort_unstable();
    assert!(order.iter().copied().eq(0..elements), "the stored order is not a permutation");
    let offsets = a.colour_offsets();
    assert!(offsets.first() == Some(&0) && offsets.last() == Some(&elements) && offsets.is_sorted());
    for c in 0..a.colours() {
        let mut seen = std::collections::HashSet::new();
        for s in offsets[c]..offsets[c + 1] {
            let e = a.element_order()[s];
            let mut nodes: Vec<usize> =
                map[e * m..(e + 1) * m].iter().copied().filter(|&n| n != NO_NODE).collect();
            nodes.sort_unstable();
            nodes.dedup();
            for n in nodes {
                assert!(seen.insert(n), "colour {c}: node {n} in two elements");
            }
        }
    }

    let csr = a.to_csr();
    let diagonal: Vec<f64> =
        (0..node_count).map(|r| csr.get_entry(r, r).map_or(0.0, |e| e.into_value())).collect();
    assert_eq!(a.diagonal(), diagonal, "the diagonal is not the assembly's");
    let x: Vec<f64> = (0..node_count).map(|i| x.get(i).copied().unwrap_or(1.0)).collect();
    let y0: Vec<f64> = (0..node_count).map(|i| i as f64 - 2.0).collect();
    let mut y = y0.clone();
    a.spmv(2.0, &x, -1.0, &mut y).unwrap();
    assert_eq!(
        y,
        spmv_f64(2.0, CsrRef::from(&csr), &x, -1.0, &y0).unwrap(),
        "the product is not the assembly's"
    );
    let mut y = y0.clone();
    a.spmv(0.0, &vec![f64::NAN; node_count], 3.0, &mut y).unwrap();
    assert!(y.iter().zip(&y0).all(|(&y, &y0)| y == 3.0 * y0), "alpha == 0 read x");
    let mut y = vec![f64::NAN; node_count];
    a.spmv(1.0, &x, 0.0, &mut y).unwrap();
    assert!(y.iter().all(|v| !v.is_nan()), "beta == 0 read y");
    let full = a.to_full_storage();
    assert_eq!((full.storage(), full.values().len()), (LmaStorage::Full, elements * m * m));
    let (mut y, mut y_full) = (y0.clone(), y0.clone());
    a.spmv(-1.5, &x, 0.5, &mut y).unwrap();
    full.spmv(-1.5, &x, 0.5, &mut y_full).unwrap();
    let bits = |v: &[f64]| v.iter().map(|e| e.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&y), bits(&y_full), "the storages' products differ");
    assert_eq!(bits(&a.diagonal()), bits(&full.diagonal()), "the storages' diagonals differ");
    assert_eq!(a.to_csr(), full.to_csr(), "the storages' assemblies differ");
}
