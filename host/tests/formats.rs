//! Conversions from CSR to every other format and back, on random and edge-case matrices: each round
//! trip must give the same matrix, compared as the set of (row, column, summed value) triples. Values
//! are small integers, so sums of repeated positions are exact in any order.

mod common;

use common::{Csr, banded, edge_cases, rng, slice_edges};
use gpu_spmv::formats::{
    Brc, CompressedCsr, Coo, DENSE_WINDOW, DenseBlocks, ELL_MAX_PADDING_RATIO, Ell, Hyb,
    SELL_PADDING_FLOOR_BYTES, Sell, brc_b2_candidates, brc_model_b2, hyb_ell_width,
};
use gpu_spmv::{CsrRef, Error, FormatError, RowStats, Scalar};
use nalgebra_sparse::CsrMatrix;
use std::collections::BTreeMap;

/// The SMs of an H100 SXM, for BRC's B2 model.
const H100_SMS: u32 = 132;

/// The matrix as its distinct positions, sorted, each with the sum of its values there.
fn csr_triples<T: Scalar>(a: &Csr<T>) -> Vec<(usize, usize, f64)> {
    let view = a.view();
    let mut map = BTreeMap::new();
    for r in 0..a.nrows {
        let (cols, vals) = view.row(r);
        for (&c, v) in cols.iter().zip(vals) {
            *map.entry((r, c)).or_insert(0.0) += v.to_f64();
        }
    }
    map.into_iter().map(|((r, c), v)| (r, c, v)).collect()
}

/// The same for a matrix that is already sorted without repeats (what `to_csr` returns).
fn matrix_triples<T: Scalar>(m: &CsrMatrix<T>) -> Vec<(usize, usize, f64)> {
    m.triplet_iter().map(|(r, c, v)| (r, c, v.to_f64())).collect()
}

/// `a` with its values replaced by small integers (zeros among them).
fn integer_valued<T: Scalar>(mut a: Csr<T>) -> Csr<T> {
    for (k, v) in a.vals.iter_mut().enumerate() {
        *v = T::from_f64(((k * 7919) % 15) as f64 - 7.0);
    }
    a
}

/// The matrices every conversion is tried on: the shared edge cases and row counts around SELL's
/// slices, and shapes that stress the formats (a row with half the entries, a band, a small unsorted
/// rectangle, and enough rows for HYB's model to choose an ELL part of width 5).
fn matrices<T: Scalar>(test: &str) -> Vec<(String, Csr<T>)> {
    let mut rng = rng(test);
    let mut all: Vec<(String, Csr<T>)> = edge_cases::<T>(&mut rng)
        .into_iter()
        .chain(slice_edges::<T>(&mut rng))
        .map(|(n, a)| (n.to_string(), a))
        .collect();
    all.push((
        "one row holds half the entries".into(),
        Csr::random(&mut rng, 2001, 3000, false, |r| if r == 7 { 2000 } else { 1 }),
    ));
    all.push(("banded 1000 x 1037".into(), banded(&mut rng, 1000, 1037, 40, 3)));
    all.push(("rectangular 33 x 7, unsorted".into(), Csr::random(&mut rng, 33, 7, false, |r| r % 9)));
    all.push((
        "6000 rows, HYB width 5".into(),
        Csr::random(&mut rng, 6000, 500, false, |r| if r < 4100 { 5 + r % 3 } else { 1 }),
    ));
    all.into_iter().map(|(n, a)| (n, integer_valued(a))).collect()
}

/// Whether ELL refuses `a`: its padded bytes over `ELL_MAX_PADDING_RATIO` times its CSR bytes.
fn ell_refuses<T: Scalar>(a: &Csr<T>) -> bool {
    let slot = 4 + size_of::<T>() as u128;
    let ell = a.nrows as u128 * a.view().stats().max as u128 * slot;
    let csr = (a.nrows as u128 + 1) * 4 + a.vals.len() as u128 * slot;
    ell > u128::from(ELL_MAX_PADDING_RATIO) * csr
}

fn round_trips<T: Scalar>() {
    for (name, a) in matrices::<T>(&format!("round trips {}", T::NAME)) {
        let expected = csr_triples(&a);
        let same = |what: &str, m: CsrMatrix<T>| {
            assert_eq!((m.nrows(), m.ncols()), (a.nrows, a.ncols), "{name}, {what}: shape");
            assert_eq!(matrix_triples(&m), expected, "{name}, {what}");
        };
        let view = a.view();
        let stats = view.stats();

        match Ell::try_from_csr(view) {
            Ok(ell) => {
                assert!(!ell_refuses(&a), "{name}: ELL should have been refused");
                assert_eq!(ell.nnz(), a.vals.len(), "{name}: ELL nnz");
                same("ELL", ell.to_csr());
            }
            Err(Error::Format(FormatError::EllPadding { width, .. })) => {
                assert!(ell_refuses(&a), "{name}: ELL refused without cause");
                assert_eq!(width, stats.max, "{name}");
            }
            Err(e) => panic!("{name}: ELL: {e}"),
        }

        match Sell::try_from_csr(view) {
            Ok(sell) => {
                assert_eq!((sell.nnz(), sell.slices()), (a.vals.len(), a.nrows.div_ceil(32)), "{name}: SELL");
                same("SELL", sell.to_csr());
            }
            Err(Error::Format(FormatError::SellPadding { sell_bytes, limit_bytes, .. })) => {
                assert!(sell_bytes > limit_bytes && limit_bytes >= SELL_PADDING_FLOOR_BYTES, "{name}");
            }
            Err(e) => panic!("{name}: SELL: {e}"),
        }

        let coo = Coo::try_from_csr(view).unwrap();
        assert!(coo.rows().windows(2).all(|w| w[0] <= w[1]), "{name}: COO rows not sorted");
        same("COO", coo.to_csr());

        let model_width = hyb_ell_width(view.row_offsets());
        for width in [Some(model_width), Some(0), Some(1), Some(3), None] {
            let hyb = match width {
                Some(w) => Hyb::try_from_csr_with_width(view, w),
                None => Hyb::try_from_csr(view),
            };
            match hyb {
                Ok(hyb) => {
                    assert_eq!(hyb.nnz(), a.vals.len(), "{name}: HYB nnz");
                    same(&format!("HYB width {width:?}"), hyb.to_csr());
                }
                // A forced width may pad too much; the model's width never does.
                Err(Error::Format(FormatError::EllPadding { .. }))
                    if width.is_some_and(|w| w != model_width) => {}
                Err(e) => panic!("{name}: HYB width {width:?}: {e}"),
            }
        }

        let mut b2s = brc_b2_candidates(&stats, H100_SMS);
        b2s.extend([1, brc_model_b2(&stats, H100_SMS), stats.max + 1]);
        b2s.sort_unstable();
        b2s.dedup();
        for b2 in b2s {
            let brc = Brc::try_from_csr(view, b2).unwrap();
            let mut sorted = brc.permutation().to_vec();
            sorted.sort_unstable();
            assert!(sorted.iter().copied().eq(0..a.nrows as u32), "{name}: BRC permutation");
            let lengths: Vec<usize> =
                brc.permutation().iter().map(|&r| view.row(r as usize).0.len()).collect();
            assert!(lengths.windows(2).all(|w| w[0] >= w[1]), "{name}: BRC rows not sorted by length");
            assert!(brc.block_width().iter().all(|&w| w as usize <= b2), "{name}: BRC block wider than B2");
            same(&format!("BRC B2 {b2}"), brc.to_csr());
        }

        for window in [DENSE_WINDOW, 64, 1] {
            let dense = DenseBlocks::try_from_csr(view, window).unwrap();
            assert!(dense.row_offsets().windows(2).all(|w| (w[1] - w[0]) % 16 == 0), "{name}: padding");
            same(&format!("dense blocks, window {window}"), dense.to_csr());
        }
    }
}

#[test]
fn round_trips_f32() {
    round_trips::<f32>();
}

#[test]
fn round_trips_f64() {
    round_trips::<f64>();
}

#[test]
fn bad_parameters_are_refused() {
    let a = Csr::<f64> { nrows: 2, ncols: 2, offsets: vec![0, 1, 2], cols: vec![0, 1], vals: vec![1.0, 2.0] };
    let err = Brc::try_from_csr(a.view(), 0).unwrap_err();
    assert!(matches!(err, Error::Format(FormatError::InvalidParameter { .. })), "{err}");
    // 2^61 and 2^62 elements of f64 wrap to a small byte count (issue 9).
    for window in [0, 100_000, 1 << 61, 1 << 62, usize::MAX] {
        let err = DenseBlocks::try_from_csr(a.view(), window).unwrap_err();
        assert!(matches!(err, Error::Format(FormatError::InvalidParameter { .. })), "{err}");
    }
    let single = Csr::<f32> { nrows: 1, ncols: 1, offsets: vec![0, 1], cols: vec![0], vals: vec![1.0] };
    for window in [1 << 62, 1 << 63] {
        let err = DenseBlocks::try_from_csr(single.view(), window).unwrap_err();
        assert!(matches!(err, Error::Format(FormatError::InvalidParameter { .. })), "{err}");
    }
}

/// Issue 9: HYB with a fixed width names that width and, apart, the longest row with its length.
#[test]
fn hyb_padding_error_names_width_and_longest_row() {
    let a = Csr::<f64>::random(&mut rng("hyb padding"), 1000, 1000, false, |r| if r == 7 { 100 } else { 0 });
    let Err(err) = Hyb::try_from_csr_with_width(a.view(), 5) else { panic!("HYB accepted width 5") };
    let Error::Format(FormatError::EllPadding { width, longest_row, longest_len, .. }) = err else {
        panic!("{err}")
    };
    assert_eq!((width, longest_row, longest_len), (5, 7, 100));
    assert!(err.to_string().contains("pad every row to 5 entries (the longest, row 7, has 100)"), "{err}");
}

/// Issue 9: the conversions check the 32-bit sizes before they read the rows; HYB's model width was
/// computed first, from a vector of every row's length.
#[test]
fn hyb_checks_its_sizes_first() {
    let wide = CsrRef::<f32>::try_new(1, 1 << 32, &[0, 0], &[], &[]).unwrap();
    assert!(matches!(Hyb::try_from_csr(wide), Err(Error::TooLarge { what: "the column count", .. })));
}

/// SELL checks the 32-bit sizes before it reads the rows.
#[test]
fn sell_checks_its_sizes_first() {
    let wide = CsrRef::<f64>::try_new(1, 1 << 32, &[0, 0], &[], &[]).unwrap();
    assert!(matches!(Sell::try_from_csr(wide), Err(Error::TooLarge { what: "the column count", .. })));
}

/// One row of 2^27 entries takes 32 x 2^27 = 2^32 slots in its slice of 32 lanes, one past the
/// kernels' 32-bit offsets: refused before the slots are built (they would take 48 GiB). Needs 2 GiB
/// for the matrix itself.
#[test]
#[ignore = "needs 2 GiB of memory: run with --ignored --release"]
fn sell_refuses_2_to_the_32_slots_before_building_them() {
    let nnz = 1 << 27;
    let cols: Vec<usize> = (0..nnz).collect();
    let vals = vec![1.0f32; nnz];
    let offsets = [0, nnz];
    let a = CsrRef::try_new(1, nnz, &offsets, &cols, &vals).unwrap();
    let err = Sell::try_from_csr(a).unwrap_err();
    assert!(
        matches!(err, Error::TooLarge { what: "SELL's slot count", value, .. } if value == 1 << 32),
        "{err}"
    );
}

/// Issue 9, at full size: 2^32 + 1 rows aborted `Hyb::try_from_csr`. Needs 32 GiB of row offsets.
#[test]
#[ignore = "needs 33 GiB of memory: run with --ignored --release on a large machine"]
fn hyb_refuses_2_to_the_32_plus_1_rows() {
    let rows = (1 << 32) + 1;
    let offsets = vec![0usize; rows + 1];
    let a = CsrRef::<f32>::try_new(rows, 1, &offsets, &[], &[]).unwrap();
    assert!(matches!(Hyb::try_from_csr(a), Err(Error::TooLarge { what: "the row count", .. })));
}

/// Issue 9, at full size: 2^28 rows of one entry pad to 2^32 dense-block slots, refused before the
/// slots are built (the conversion grew to 9.4 GB first). Needs 5 GiB for the matrix itself.
#[test]
#[ignore = "needs 6 GiB of memory and a release build: run with --ignored --release"]
fn dense_blocks_refuse_their_padding_before_building_it() {
    let rows = 1 << 28;
    let offsets: Vec<usize> = (0..=rows).collect();
    let (cols, vals) = (vec![0usize; rows], vec![1.0f32; rows]);
    let a = CsrRef::try_new(rows, 1, &offsets, &cols, &vals).unwrap();
    let err = DenseBlocks::try_from_csr(a, 64).unwrap_err();
    assert!(matches!(err, Error::TooLarge { value, .. } if value == 1 << 32), "{err}");
}

/// Issue 9: offsets that are not CSR and statistics out of any GPU's range give answers of no use,
/// never an overflow panic in a debug build.
#[test]
fn models_take_any_input_without_overflow() {
    assert_eq!(hyb_ell_width(&[3, 1]), 0);
    let decreasing: Vec<usize> = (0..5000).rev().collect();
    assert_eq!(hyb_ell_width(&decreasing), 0);
    let huge = RowStats {
        rows: usize::MAX,
        cols: usize::MAX,
        nnz: usize::MAX,
        mean: f64::MAX,
        std_dev: f64::MAX,
        max: usize::MAX,
        empty_rows: 0,
    };
    for sms in [0, 1, u32::MAX] {
        let candidates = brc_b2_candidates(&huge, sms);
        assert!(!candidates.is_empty() && candidates.is_sorted(), "{sms} SMs: {candidates:?}");
        assert!(brc_model_b2(&huge, sms) >= 1);
    }
    let nan = RowStats { mean: f64::NAN, std_dev: f64::NAN, ..huge };
    assert!(!brc_b2_candidates(&nan, 0).is_empty());
}

/// A long row refuses SELL only where its slice's padding passes the limit, and the error names that
/// slice and its width (the row's length).
#[test]
fn one_long_row_past_the_limit_makes_sell_refuse_naming_its_slice() {
    let mut rng = rng("sell refusal");
    let a = Csr::<f64>::random(&mut rng, 100_000, 100_000, false, |r| if r == 54_321 { 100_000 } else { 1 });
    match Sell::try_from_csr(a.view()) {
        Err(e @ Error::Format(FormatError::SellPadding { slice, width, .. })) => {
            assert_eq!((slice, width), (54_321 / 32, 100_000));
            assert!(e.to_string().contains("the widest slice, 1697, pads its rows to 100000 entries"), "{e}");
        }
        other => panic!("expected a SellPadding error, got {other:?}"),
    }
}

#[test]
fn half_the_entries_in_one_row_make_ell_refuse_naming_it() {
    let mut rng = rng("ell refusal");
    let a = Csr::<f32>::random(&mut rng, 1000, 1000, true, |r| if r == 321 { 999 } else { 1 });
    match Ell::try_from_csr(a.view()) {
        Err(Error::Format(FormatError::EllPadding { longest_row, width, .. })) => {
            assert_eq!(longest_row, 321);
            assert_eq!(width, a.view().stats().max);
        }
        other => panic!("expected an EllPadding error, got {other:?}"),
    }
}

/// Every host format answers the shape of the CSR matrix it was made from: its rows, columns and
/// entries, padding not counted (`Shape`, the one type of the accessors).
#[test]
fn every_format_keeps_the_shape_of_its_csr_matrix() {
    let mut rng = rng("every_format_keeps_the_shape_of_its_csr_matrix");
    for (name, a) in edge_cases::<f64>(&mut rng) {
        let view = a.view();
        let shape = view.shape();
        assert_eq!((shape.nrows, shape.ncols, shape.nnz), (view.nrows(), view.ncols(), view.nnz()), "{name}");
        assert_eq!(shape.is_square(), view.nrows() == view.ncols(), "{name}");
        if let Ok(ell) = Ell::try_from_csr(view) {
            assert_eq!(ell.shape(), shape, "{name}: ELL");
        }
        if let Ok(sell) = Sell::try_from_csr(view) {
            assert_eq!(sell.shape(), shape, "{name}: SELL");
        }
        assert_eq!(Coo::try_from_csr(view).unwrap().shape(), shape, "{name}: COO");
        if let Ok(hyb) = Hyb::try_from_csr(view) {
            assert_eq!(hyb.shape(), shape, "{name}: HYB");
        }
        assert_eq!(Brc::try_from_csr(view, 4).unwrap().shape(), shape, "{name}: BRC");
        assert_eq!(
            DenseBlocks::try_from_csr(view, DENSE_WINDOW).unwrap().shape(),
            shape,
            "{name}: dense blocks"
        );
        assert_eq!(
            CompressedCsr::<f64, f64>::try_from_csr(view).unwrap().shape(),
            shape,
            "{name}: compressed"
        );
    }
}
