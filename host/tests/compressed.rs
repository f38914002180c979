//! The conversion to compressed column indices and narrower values, on the CPU: round trips of the
//! columns and the values on the edge cases, stencils and banded matrices (which must compress
//! completely), segments that need plain columns, the largest offset that still compresses, values
//! beyond a storage type's range, and the reported rounding.

mod common;

use common::{Csr, banded, edge_cases, five_point, rng};
use gpu_spmv::formats::{CompressedCsr, SEGMENT_ROWS, Storage, ValueStorage};
use gpu_spmv::{CsrRef, Error, FormatError, Scalar};
use half::{bf16, f16};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Converts `a` to storage `V` and checks the round trip: every column decodes to the original,
/// every value is the original rounded to `V`, the segment table has one pair per 32 rows, and the
/// byte count adds up. Returns the conversion.
fn round_trip<T: Scalar, V: ValueStorage<T>>(what: &str, a: &Csr<T>) -> CompressedCsr<T, V> {
    let c = CompressedCsr::<T, V>::try_from_csr(a.view()).unwrap_or_else(|e| panic!("{what}: {e}"));
    assert_eq!((c.nrows(), c.ncols(), c.nnz()), (a.nrows, a.ncols, a.vals.len()), "{what}");
    assert_eq!(c.segments().len(), 2 * a.nrows.div_ceil(SEGMENT_ROWS), "{what}");
    assert_eq!(c.deltas().len() + c.escapes().len(), a.vals.len(), "{what}");
    let cols: Vec<u32> = a.cols.iter().map(|&c| c as u32).collect();
    assert_eq!(c.columns(), cols, "{what}: columns");
    for (k, (&v, &stored)) in a.vals.iter().zip(c.values()).enumerate() {
        let expected = V::round(v).widen();
        assert!(stored.widen() == expected || expected.is_nan(), "{what}: value {k}");
    }
    let bytes = 4 * (a.nrows + 1 + c.segments().len() + c.escapes().len())
        + 2 * c.deltas().len()
        + V::STORAGE.bytes() * a.vals.len();
    assert_eq!(c.device_bytes(), bytes, "{what}");
    c
}

#[test]
fn edge_cases_round_trip_in_every_storage() {
    let mut rng = rng("edge_cases_round_trip_in_every_storage");
    for (name, a) in edge_cases::<f32>(&mut rng) {
        round_trip::<f32, f32>(name, &a);
        round_trip::<f32, f16>(name, &a);
        round_trip::<f32, bf16>(name, &a);
    }
    for (name, a) in edge_cases::<f64>(&mut rng) {
        round_trip::<f64, f64>(name, &a);
        round_trip::<f64, f32>(name, &a);
        round_trip::<f64, bf16>(name, &a);
    }
}

#[test]
fn stencils_and_banded_matrices_compress_completely() {
    let mut rng = rng("stencils_and_banded_matrices_compress_completely");
    let stencil = five_point::<f32>(301, |r, c| if r == c { 4.0 } else { -1.0 });
    let c = round_trip::<f32, f32>("5-point, 301 x 301", &stencil);
    assert_eq!(c.compressed_fraction(), 1.0);
    // 2 (offset) + 4 (value) + (4 offset + 8 / 32 segment) / 4.97 entries per row.
    assert!((6.8..6.9).contains(&c.bytes_per_entry()), "{}", c.bytes_per_entry());
    let c = round_trip::<f32, bf16>("5-point in bf16", &stencil);
    assert!((4.8..4.9).contains(&c.bytes_per_entry()), "{}", c.bytes_per_entry());
    let band = banded::<f64>(&mut rng, 20_011, 20_011, 200, 3);
    let c = round_trip::<f64, f64>("banded", &band);
    assert_eq!(c.compressed_fraction(), 1.0);
    assert!(c.bytes_per_entry() < 10.1, "{}", c.bytes_per_entry());
}

/// Row `r` holds columns `r` and `r + spread` (clipped): segments compress exactly when
/// `spread + 31 <= 65,535` (32 rows' diagonals plus the spread).
fn two_diagonals(nrows: usize, ncols: usize, spread: usize) -> Csr<f32> {
    let mut offsets = vec![0];
    let mut cols = Vec::new();
    for r in 0..nrows {
        cols.push(r % ncols);
        if r + spread < ncols {
            cols.push(r + spread);
        }
        offsets.push(cols.len());
    }
    let vals = (0..cols.len()).map(|k| 1.0 + k as f32).collect();
    Csr { nrows, ncols, offsets, cols, vals }
}

#[test]
fn the_widest_offset_compresses_and_one_more_does_not() {
    let widest = usize::from(u16::MAX) - (SEGMENT_ROWS - 1);
    let a = two_diagonals(64, 200_000, widest);
    let c = round_trip::<f32, f32>("widest", &a);
    assert_eq!(c.compressed_fraction(), 1.0);
    assert!(c.deltas().contains(&u16::MAX), "the largest offset is used");
    let a = two_diagonals(64, 200_000, widest + 1);
    let c = round_trip::<f32, f32>("one past the widest", &a);
    assert_eq!(c.compressed_fraction(), 0.0);
    assert_eq!(c.escapes().len(), a.vals.len());
}

#[test]
fn columns_that_need_plain_indices_everywhere_or_in_some_segments() {
    let mut rng = rng("columns_that_need_plain_indices_everywhere_or_in_some_segments");
    // Every row reaches both the first and the last column: nothing compresses.
    let ncols = 1_000_003;
    let mut a = Csr::<f64>::random(&mut rng, 1001, ncols, true, |r| r % 9);
    for r in 0..a.nrows {
        let (s, e) = (a.offsets[r], a.offsets[r + 1]);
        if e - s >= 2 {
            a.cols[s] = 0;
            a.cols[e - 1] = ncols - 1;
        }
    }
    let c = round_trip::<f64, f64>("first and last column in every row", &a);
    assert_eq!(c.compressed_fraction(), 0.0);
    // Diagonal segments alternating with segments that span the matrix.
    let mut a = Csr::<f32>::random(&mut rng, 32 * 17 + 5, 300_000, false, |r| r % 7);
    for r in 0..a.nrows {
        if (r / SEGMENT_ROWS).is_multiple_of(2) {
            for k in a.offsets[r]..a.offsets[r + 1] {
                a.cols[k] = r + (k - a.offsets[r]);
            }
        }
    }
    let c = round_trip::<f32, f16>("alternating segments, unsorted rows", &a);
    assert!(0.0 < c.compressed_fraction() && c.compressed_fraction() < 1.0);
}

#[test]
fn random_matrices_round_trip() {
    let mut rng = rng("random_matrices_round_trip");
    for _ in 0..50 {
        let nrows = rng.random_range(0..300);
        let widest = [10, 70_000, 5_000_000][rng.random_range(0..3)];
        let ncols = rng.random_range(1..widest);
        let max_len = rng.random_range(1..40);
        let lens: Vec<usize> = (0..nrows).map(|_| rng.random_range(0..max_len)).collect();
        let sorted = rng.random();
        let a = Csr::<f32>::random(&mut rng, nrows, ncols, sorted, |r| lens[r]);
        round_trip::<f32, bf16>("random", &a);
    }
}

/// `len` values of magnitudes in [2^lo, 2^hi), random signs.
fn values(rng: &mut ChaCha8Rng, len: usize, lo: i32, hi: i32) -> Vec<f64> {
    (0..len)
        .map(|_| {
            let v = 2f64.powi(rng.random_range(lo..hi)) * rng.random_range(1.0..2.0);
            if rng.random() { v } else { -v }
        })
        .collect()
}

/// The reported rounding is the largest over the values, and within the unit roundoff of the
/// storage type for values in its normal range.
fn check_rounding<T: Scalar, V: ValueStorage<T>>(rng: &mut ChaCha8Rng, lo: i32, hi: i32, unit: f64) {
    let mut a = Csr::<T>::random(rng, 500, 500, true, |r| r % 13);
    a.vals = values(rng, a.vals.len(), lo, hi).into_iter().map(T::from_f64).collect();
    let c = round_trip::<T, V>(V::STORAGE.name(), &a);
    let worst = a
        .vals
        .iter()
        .map(|&v| (V::round(v).widen() - v.to_f64()).abs() / v.to_f64().abs())
        .fold(0.0, f64::max);
    assert_eq!(c.max_rounding(), worst, "{}", V::STORAGE.name());
    assert!(worst > 0.0 && worst <= unit, "{}: {worst:e} over {unit:e}", V::STORAGE.name());
    for row in 0..a.nrows {
        assert!(c.error_bound(row) >= worst, "the bound includes the storage rounding");
    }
}

#[test]
fn the_reported_rounding_is_the_largest_and_within_the_unit_roundoff() {
    let mut rng = rng("the_reported_rounding_is_the_largest_and_within_the_unit_roundoff");
    check_rounding::<f32, bf16>(&mut rng, -100, 100, 2f64.powi(-8));
    check_rounding::<f32, f16>(&mut rng, -14, 15, 2f64.powi(-11));
    check_rounding::<f64, bf16>(&mut rng, -100, 100, 2f64.powi(-8));
    check_rounding::<f64, f32>(&mut rng, -120, 120, 2f64.powi(-24));
    let a = five_point::<f64>(40, |_, _| 1.0);
    let c = round_trip::<f64, f64>("exact", &a);
    assert_eq!(c.max_rounding(), 0.0);
    // γ_(n+7) for n = 5 in f64.
    let g = 12.0 * f64::EPSILON / 2.0;
    assert!((c.error_bound(41) - g / (1.0 - g)).abs() < 1e-30);
}

#[test]
fn values_beyond_the_storage_range_are_refused_with_their_entry() {
    let offsets = [0, 1, 3];
    let cols = [0, 0, 1];
    let a = CsrRef::try_new(2, 2, &offsets, &cols, &[1.0f32, -2.0, 70_000.0]).unwrap();
    match CompressedCsr::<f32, f16>::try_from_csr(a) {
        Err(Error::Format(FormatError::ValueOutOfRange { row: 1, entry: 2, storage: "f16" })) => {}
        other => panic!("expected ValueOutOfRange at entry 2, got {other:?}"),
    }
    assert!(CompressedCsr::<f32, bf16>::try_from_csr(a).is_ok(), "bf16 has f32's range");
    let big = CsrRef::try_new(2, 2, &offsets, &cols, &[1e300f64, 0.0, 1.0]).unwrap();
    assert!(matches!(
        CompressedCsr::<f64, f32>::try_from_csr(big),
        Err(Error::Format(FormatError::ValueOutOfRange { row: 0, entry: 0, storage: "f32" }))
    ));
    // Infinities and NaN are stored as they are, and do not count as rounded.
    let special = CsrRef::try_new(2, 2, &offsets, &cols, &[f32::INFINITY, f32::NAN, 0.0]).unwrap();
    let c = CompressedCsr::<f32, f16>::try_from_csr(special).unwrap();
    assert_eq!(c.max_rounding(), 0.0);
    assert_eq!(Storage::Bf16.name(), "bf16");
}
