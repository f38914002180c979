//! The CPU reference of the assembly from COO triples (`reference::assemble::assemble`), which the
//! device's `CooAssembly` matches bit for bit, on any input: refused as documented and in the
//! documented order, else valid CSR arrays whose entries are the distinct (row, column) pairs, each
//! the sum of its triples' values in input order.

use gpu_spmv::formats::{MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES};
use gpu_spmv::reference::assemble::assemble;
use gpu_spmv::{CsrRef, Error, Scalar};
use std::collections::BTreeMap;

/// The refusal `assemble` documents for these triples, as a message; `None` if it must accept them.
fn expected_refusal(dims: (usize, usize), rows: &[u32], cols: &[u32], values: usize) -> Option<String> {
    if cols.len() != rows.len() {
        return Some(format!("the column indices: expected {}, got {}", rows.len(), cols.len()));
    }
    if values != rows.len() {
        return Some(format!("the values: expected {}, got {values}", rows.len()));
    }
    let declared_limit =
        MAX_ROWS_WITHOUT_ENTRIES.saturating_add(rows.len().saturating_mul(MAX_ROWS_PER_ENTRY));
    if dims.0 > declared_limit || dims.1 > u32::MAX as usize {
        return Some("too large".into());
    }
    let bad = rows.iter().zip(cols).position(|(&r, &c)| r as usize >= dims.0 || c as usize >= dims.1)?;
    Some(if rows[bad] as usize >= dims.0 {
        format!("the row indices: entry {bad} is {}, out of range for {} elements", rows[bad], dims.0)
    } else {
        format!("the column indices: entry {bad} is {}, out of range for {} elements", cols[bad], dims.1)
    })
}

/// `assemble` on any triples: its refusal, or arrays equal to the distinct pairs in (row, column)
/// order with their values summed in input order, bit for bit.
pub fn check_assemble<T: Scalar>(dims: (usize, usize), rows: &[u32], cols: &[u32], values: &[T]) {
    let expected = expected_refusal(dims, rows, cols, values.len());
    match assemble(dims, rows, cols, values) {
        Ok((offsets, out_cols, out_values)) => {
            assert_eq!(expected, None, "accepted");
            let a = CsrRef::try_new(dims.0, dims.1, &offsets, &out_cols, &out_values).expect("valid CSR");
            let mut sums: BTreeMap<(u32, u32), T> = BTreeMap::new();
            for ((&r, &c), &v) in rows.iter().zip(cols).zip(values) {
                sums.entry((r, c)).and_modify(|s| *s = *s + v).or_insert(v);
            }
            assert_eq!(a.nnz(), sums.len());
            // Entry `i` is the `i`-th pair in (row, column) order, inside its row's range: a walk over
            // the entries, not the rows (up to 2^24 of them, most empty, may be declared).
            for (i, ((r, c), sum)) in sums.into_iter().enumerate() {
                let r = r as usize;
                assert!((offsets[r]..offsets[r + 1]).contains(&i), "entry {i} of ({r}, {c}) not in its row");
                assert_eq!(out_cols[i], c as usize, "entry {i}: column");
                let v = out_values[i];
                assert_eq!(v.to_f64().to_bits(), sum.to_f64().to_bits(), "({r}, {c}): {v:?} != {sum:?}");
            }
        }
        Err(e) => {
            let want = expected.unwrap_or_else(|| panic!("refused valid triples: {e}"));
            if want == "too large" {
                assert!(matches!(e, Error::TooLarge { .. }), "{e}");
            } else {
                let got = match &e {
                    Error::DimensionMismatch { what, expected, got } => {
                        format!("{what}: expected {expected}, got {got}")
                    }
                    other => other.to_string(),
                };
                assert_eq!(got, want);
            }
        }
    }
}
