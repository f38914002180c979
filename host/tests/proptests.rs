//! Property tests (proptest) of what no input may break: `CsrRef::try_new` on raw arrays, every
//! conversion from CSR with its parameters, the Matrix Market reader on generated and on damaged
//! files, and Auto's rule on any row statistics. The properties themselves live in `properties/mod.rs`, shared with the fuzz targets; this
//! file generates inputs for them, small and many, so the suite takes a few seconds. A failure prints
//! the shrunk input.

mod properties;

use gpu_spmv::io::{parse_matrix_market, pattern_value};
use gpu_spmv::rule::Target;
use gpu_spmv::{CsrRef, Kernel, Regime, RowStats, Scalar};
use properties::{FormatParams, check_conversions, check_csr_try_new, check_matrix_market};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Cases per property: enough to cover the shapes below in a few seconds of a debug build.
const CASES: u32 = 256;

/// A valid CSR matrix with small integer values (sums exact in f32), as rows of (column, value).
#[derive(Debug, Clone)]
struct Matrix {
    ncols: usize,
    rows: Vec<Vec<(usize, i8)>>,
}

impl Matrix {
    fn arrays<T: Scalar>(&self) -> (Vec<usize>, Vec<usize>, Vec<T>) {
        let mut offsets = vec![0];
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for row in &self.rows {
            for &(c, v) in row {
                cols.push(c);
                values.push(T::from_f64(f64::from(v)));
            }
            offsets.push(cols.len());
        }
        (offsets, cols, values)
    }
}

/// Matrices of up to 80 rows (a few of them long, so that BRC splits and ELL refuses), columns from
/// none to past the kernels' 32-bit limit, entries in any order with repeats.
fn matrix() -> impl Strategy<Value = Matrix> {
    let ncols = prop_oneof![3 => 0usize..70, 1 => Just((1usize << 32) + 5)];
    (ncols, 0usize..80).prop_flat_map(|(ncols, nrows)| {
        let len = if ncols == 0 { 0..1usize } else { 0..40usize };
        let row = prop::collection::vec((0..ncols.max(1), any::<i8>()), len);
        let rows = prop::collection::vec(row, nrows);
        rows.prop_map(move |rows| Matrix { ncols, rows })
    })
}

fn params() -> impl Strategy<Value = FormatParams> {
    let b2 = prop_oneof![Just(0usize), 1usize..50, Just(usize::MAX)];
    let window = prop_oneof![
        Just(0usize),
        1usize..200,
        Just(6144),
        Just(6145),
        Just(12288),
        Just(1 << 61),
        Just(usize::MAX)
    ];
    let hyb_width = prop_oneof![Just(None), (0usize..50).prop_map(Some), Just(Some(usize::MAX))];
    (b2, window, hyb_width).prop_map(|(b2, window, hyb_width)| FormatParams { b2, window, hyb_width })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn conversions_round_trip_or_refuse_with_their_error(a in matrix(), p in params()) {
        let (offsets, cols, values) = a.arrays::<f32>();
        check_conversions(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), p);
        let (offsets, cols, values) = a.arrays::<f64>();
        check_conversions(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), p);
    }

    /// Raw arrays near a valid matrix: a few offsets or columns changed, or lengths cut.
    #[test]
    fn csr_validation_names_the_first_fault(
        a in matrix(),
        nrows_delta in prop_oneof![4 => Just(0isize), 1 => -2isize..3],
        damage in prop::collection::vec((any::<prop::sample::Index>(), 0usize..100, any::<bool>()), 0..3),
        drop_value in any::<bool>(),
    ) {
        let (mut offsets, mut cols, mut values) = a.arrays::<f64>();
        for (at, value, in_offsets) in damage {
            if in_offsets {
                let i = at.index(offsets.len());
                offsets[i] = value;
            } else if !cols.is_empty() {
                let i = at.index(cols.len());
                cols[i] = value;
            }
        }
        if drop_value {
            values.pop();
        }
        let nrows = a.rows.len().saturating_add_signed(nrows_delta);
        check_csr_try_new(nrows, a.ncols, &offsets, &cols, &values);
    }

    /// Generated files of every kind, with comments, blank lines and spacing, against the matrix
    /// they describe.
    #[test]
    fn matrix_market_reads_what_was_written(
        (n, entries) in (1usize..30).prop_flat_map(|n| (Just(n), prop::collection::vec((0..n, 0..n, -50i32..50), 0..60))),
        kind in 0usize..4,
        spacing in prop::collection::vec(prop_oneof![Just(" "), Just("\t"), Just("  "), Just(" \t ")], 3),
        comment_every in 1usize..7,
        crlf in any::<bool>(),
    ) {
        let (field, symmetry) = [("real", "general"), ("integer", "symmetric"), ("pattern", "symmetric"), ("real", "skew-symmetric")][kind];
        // The entries the file may hold: the lower triangle for symmetric, the strict one for skew.
        let entries: Vec<_> = entries
            .into_iter()
            .filter(|&(r, c, _)| match symmetry { "general" => true, "symmetric" => c <= r, _ => c < r })
            .collect();
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text = format!("%%MatrixMarket matrix coordinate {field} {symmetry}{eol}% generated{eol}{eol}");
        text += &format!("{n}{}{n}{}{}{eol}", spacing[0], spacing[1], entries.len());
        let mut expected = BTreeMap::new();
        for (k, &(r, c, v)) in entries.iter().enumerate() {
            if k % comment_every == 0 {
                text += &format!("% entry {k} follows{eol}");
            }
            let value = if field == "pattern" { pattern_value(r, c) } else { f64::from(v) };
            if field == "pattern" {
                text += &format!("{}{}{}{eol}", r + 1, spacing[2], c + 1);
            } else {
                text += &format!("{}{}{}{}{v}{eol}", r + 1, spacing[2], c + 1, spacing[0]);
            }
            *expected.entry((r, c)).or_insert(0.0) += value;
            if r != c && symmetry != "general" {
                let mirrored = if symmetry == "skew-symmetric" { -value } else { value };
                *expected.entry((c, r)).or_insert(0.0) += mirrored;
            }
        }
        let m = parse_matrix_market::<f64>(&text).unwrap();
        prop_assert_eq!((m.nrows(), m.ncols()), (n, n));
        let got: Vec<_> = m.triplet_iter().map(|(r, c, &v)| (r, c, v)).collect();
        let expected: Vec<_> = expected.into_iter().map(|((r, c), v)| (r, c, v)).collect();
        prop_assert_eq!(got, expected);
        check_matrix_market(text.as_bytes());
    }

    /// Damaged files: bytes changed, inserted or cut anywhere in a valid one.
    #[test]
    fn damaged_matrix_market_files_are_refused_cleanly(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        let mut bytes = b"%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 5\n1 1 2.5\n2 1 -1\n3 3 1e3\n4 2 7\n4 4 .5\n".to_vec();
        for (at, byte, how) in edits {
            let i = at.index(bytes.len() + 1);
            match how {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => bytes.truncate(i),
            }
        }
        check_matrix_market(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Auto's fitted rule answers a kernel for any statistics, GPU and regime, however absurd (NaN and
    /// infinite means, counts near `usize::MAX`, no SMs, no L2): never `Auto` itself, never a panic,
    /// always a width the kernels are compiled for.
    #[test]
    fn auto_answers_for_any_statistics(
        (rows, cols, nnz, max) in (any::<usize>(), any::<usize>(), any::<usize>(), any::<usize>()),
        mean in prop_oneof![any::<f64>(), 0.0..1e4],
        std_dev in prop_oneof![any::<f64>(), 0.0..1e4],
        value_bytes in prop_oneof![Just(4usize), Just(8)],
        (sm_count, l2_bytes) in (any::<u32>(), any::<u64>()),
        regime in prop_oneof![Just(Regime::Cold), Just(Regime::Hot), Just(Regime::Graph)],
    ) {
        let stats = RowStats { rows, cols, nnz, mean, std_dev, max, empty_rows: 0 };
        let kernel = Kernel::auto_for(&stats, value_bytes, Target { sm_count, l2_bytes }, regime);
        match kernel {
            Kernel::Auto => prop_assert!(false, "Auto answered Auto"),
            Kernel::CsrVector { coop, .. } => prop_assert!(Kernel::VECTOR_COOPS.contains(&coop)),
            Kernel::CsrParam { coop, .. } => prop_assert!(Kernel::PARAM_COOPS.contains(&coop)),
            _ => {}
        }
    }
}
