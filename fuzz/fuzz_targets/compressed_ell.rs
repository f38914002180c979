//! A CSR matrix through `CompressedEll::try_from_csr` (values in the matrix's type, f32 for f64,
//! bf16 and f16): an accepted matrix keeps ELL's slot layout with every column as its offset from the
//! row and every value rounded to the storage type, with the rounding and the error bound it
//! reports; a refused one gets the typed error its fault calls for, naming the fault.
//!
//! The shared input (`gpu_spmv_fuzz::Matrix`: at most 255 columns, small integer values) never puts
//! a column `2^15` from its row nor a value past a storage type's range, so this target has its own:
//! up to 255 rows repeating a pattern, columns at an offset from the row (near it, or either side of
//! the limit) or anywhere among up to 65,535, and values of any magnitude. Rows past `2^15`, where a
//! column left of its row can lie past the limit, are `host/tests/gpu/compressed_ell.rs`'s (its
//! conversions run without a GPU): such an input took a third of a second here, sanitized and
//! instrumented, and starved the fuzzing.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::{CompressedEll, Ell, ValueStorage, bf16, f16};
use gpu_spmv::{CsrRef, Error, FormatError, Scalar};
use gpu_spmv_fuzz::{Value, with_csr};
use libfuzzer_sys::fuzz_target;

/// The farthest a column may lie from its row: the kernels' `MAX_ROW_DELTA`, which `gpu_spmv` does
/// not re-export.
const MAX_ROW_DELTA: usize = i16::MAX as usize;

/// The stored offset of a padding slot: the kernels' `PAD_DELTA`, which `gpu_spmv` does not re-export.
const PAD_DELTA: i16 = i16::MIN;

/// The entries of a matrix at the most: past them the pattern stops repeating, so that one input
/// takes a millisecond or so.
const MAX_ENTRIES: usize = 1 << 11;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Puts the column count past the kernels' 32-bit limit, where the conversion must refuse.
    wide: bool,
    nrows: u8,
    ncols: u16,
    /// Row `r` holds the entries of `pattern[r % pattern.len()]` (none when the pattern is empty).
    pattern: Vec<Vec<(Column, Value)>>,
}

/// Where an entry's column lies; a column past the matrix's is taken modulo its column count.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Column {
    /// At `offset` from the row: a band.
    Near(i8),
    /// At `MAX_ROW_DELTA + past` left or right of the row: either side of the limit.
    Edge { left: bool, past: i8 },
    /// Anywhere.
    At(u32),
}

impl Input {
    fn ncols(&self) -> usize {
        let ncols = usize::from(self.ncols);
        if self.wide { (1 << 32) + ncols } else { ncols }
    }

    /// Row offsets, column indices and values; the rows stop at the last whole row within
    /// [`MAX_ENTRIES`].
    fn arrays<T: Scalar>(&self) -> (Vec<usize>, Vec<usize>, Vec<T>) {
        let ncols = self.ncols();
        let (mut offsets, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
        for r in 0..usize::from(self.nrows) {
            let row = match self.pattern.len() {
                0 => &[][..],
                len => &self.pattern[r % len][..],
            };
            if cols.len() + row.len() > MAX_ENTRIES {
                break;
            }
            if ncols > 0 {
                for &(column, value) in row {
                    let col = match column {
                        Column::Near(offset) => r as i64 + i64::from(offset),
                        Column::Edge { left, past } => {
                            let delta = MAX_ROW_DELTA as i64 + i64::from(past);
                            if left { r as i64 - delta } else { r as i64 + delta }
                        }
                        Column::At(c) => i64::from(c),
                    };
                    cols.push(col.rem_euclid(ncols as i64) as usize);
                    values.push(T::from_f64(value.to_f64()));
                }
            }
            offsets.push(cols.len());
        }
        (offsets, cols, values)
    }
}

fuzz_target!(|input: Input| {
    with_csr(input.arrays::<f32>(), input.ncols(), |a| {
        let faults = Faults::of(a);
        check::<f32, f32>(a, &faults);
        check::<f32, bf16>(a, &faults);
        check::<f32, f16>(a, &faults);
    });
    with_csr(input.arrays::<f64>(), input.ncols(), |a| {
        let faults = Faults::of(a);
        check::<f64, f64>(a, &faults);
        check::<f64, f32>(a, &faults);
        check::<f64, bf16>(a, &faults);
        check::<f64, f16>(a, &faults);
    });
});

/// What refuses a matrix whatever the storage type, found once for all of them.
#[derive(Debug)]
struct Faults {
    /// Its sizes fit the kernels' 32-bit indices.
    fits_u32: bool,
    /// ELL's refusal of the matrix, if any: the padding rule compressed ELL shares.
    ell: Option<Error>,
    /// The first entry (by row, then entry) whose column lies farther than [`MAX_ROW_DELTA`] from its
    /// row, as `(row, entry)`.
    far: Option<(usize, usize)>,
    /// Entries of the longest row.
    longest: usize,
}

impl Faults {
    fn of<T: Scalar>(a: CsrRef<'_, T>) -> Self {
        let limit = u32::MAX as usize;
        let (offsets, cols) = (a.row_offsets(), a.col_indices());
        let far = (0..a.nrows()).find_map(|row| {
            (offsets[row]..offsets[row + 1])
                .find(|&e| cols[e].abs_diff(row) > MAX_ROW_DELTA)
                .map(|e| (row, e))
        });
        Faults {
            fits_u32: a.nrows() <= limit && a.ncols() <= limit && a.nnz() <= limit,
            ell: Ell::try_from_csr(a).err(),
            far,
            longest: offsets.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0),
        }
    }
}

/// Whether `V` cannot hold the value `v` of `T`: finite, but rounded to an infinity.
fn out_of_range<T: Scalar, V: ValueStorage<T>>(v: T) -> bool {
    v.to_f64().is_finite() && V::round(v).widen().is_infinite()
}

/// `γ_m = m u / (1 - m u)`, the factor `error_bound` documents.
fn gamma(m: f64, u: f64) -> f64 {
    m * u / (1.0 - m * u)
}

/// The conversion of `a`, whose storage-independent faults are `faults`, to compressed ELL with values stored
/// as `V`: accepted exactly when `a` fits 32 bits, ELL accepts its padding, every column lies within
/// `MAX_ROW_DELTA` of its row and every finite value within `V`'s range; then every slot holds its entry
/// (offset and rounded value) or padding, and the rounding and error bound are those documented. Otherwise
/// the error names a fault that is there: `TooLarge` before any other, ELL's own padding refusal, the first
/// far column, a value out of range.
fn check<T: Scalar, V: ValueStorage<T>>(a: CsrRef<'_, T>, faults: &Faults) {
    let what = format!("{} stored as {}", T::NAME, V::STORAGE.name());
    let Faults { fits_u32, ref ell, far, longest } = *faults;
    let out = a.values().iter().position(|&v| out_of_range::<T, V>(v));
    match CompressedEll::<T, V>::try_from_csr(a) {
        Ok(c) => {
            assert!(fits_u32, "{what}: accepted a matrix past 32 bits");
            assert!(ell.is_none(), "{what}: accepted what ELL refuses: {ell:?}");
            assert_eq!(far, None, "{what}: accepted a column far from its row");
            assert_eq!(out, None, "{what}: accepted a value out of range");
            check_accepted(&what, a, &c, longest);
        }
        Err(Error::Format(padding @ FormatError::EllPadding { .. })) => match ell {
            Some(Error::Format(e)) => assert_eq!(*e, padding, "{what}: not ELL's refusal"),
            other => panic!("{what}: refused the padding ({padding}), ELL gave {other:?}"),
        },
        Err(Error::Format(FormatError::ColumnFarFromRow { row, entry, col, limit })) => {
            assert!(fits_u32, "{what}: past 32 bits, but refused for a column");
            assert_eq!(far, Some((row, entry)), "{what}: not the first far entry");
            assert_eq!((col, limit), (a.col_indices()[entry], MAX_ROW_DELTA), "{what}");
        }
        Err(Error::Format(FormatError::ValueOutOfRange { row, entry, storage })) => {
            assert!(fits_u32, "{what}: past 32 bits, but refused for a value");
            let v = a.values()[entry];
            assert!(out_of_range::<T, V>(v), "{what}: entry {entry}, {}, is in range", v.to_f64());
            assert!(a.row_offsets()[row] <= entry && entry < a.row_offsets()[row + 1], "{what}: row {row}");
            assert_eq!(storage, V::STORAGE.name(), "{what}");
        }
        Err(e @ Error::TooLarge { .. }) => assert!(!fits_u32, "{what}: {e}"),
        Err(e) => panic!("{what}: unexpected error {e}"),
    }
}

/// The layout, round trip, rounding and error bound of `c`, the accepted conversion of `a`, whose
/// longest row has `longest` entries.
fn check_accepted<T: Scalar, V: ValueStorage<T>>(
    what: &str,
    a: CsrRef<'_, T>,
    c: &CompressedEll<T, V>,
    longest: usize,
) {
    let (nrows, width) = (a.nrows(), c.width());
    let (offsets, cols, values) = (a.row_offsets(), a.col_indices(), a.values());
    assert_eq!((c.nrows(), c.ncols(), c.nnz()), (nrows, a.ncols(), a.nnz()), "{what}: shape");
    assert_eq!(width, longest, "{what}: width");
    assert_eq!((c.deltas().len(), c.values().len()), (nrows * width, nrows * width), "{what}: slots");
    assert_eq!(c.device_bytes(), nrows * width * (2 + V::STORAGE.bytes()), "{what}: bytes");
    assert_eq!(c.storage(), V::STORAGE, "{what}");
    let mut entries = Vec::with_capacity(a.nnz());
    for k in 0..width {
        for row in 0..nrows {
            let slot = k * nrows + row;
            let (delta, stored) = (c.deltas()[slot], c.values()[slot].widen());
            let e = offsets[row] + k;
            if e < offsets[row + 1] {
                entries.push((row, cols[e]));
                assert_eq!(delta as isize, cols[e] as isize - row as isize, "{what}: row {row}, slot {k}");
                let expected = V::round(values[e]).widen();
                assert!(
                    stored.to_bits() == expected.to_bits() || (expected.is_nan() && stored.is_nan()),
                    "{what}: row {row}, slot {k}: {stored} for {}",
                    values[e].to_f64()
                );
            } else {
                assert!(
                    delta == PAD_DELTA && stored.to_bits() == 0,
                    "{what}: row {row}, slot {k}: not padding"
                );
            }
        }
    }
    assert_eq!(c.entries(), entries, "{what}: entries");
    let rounding = values
        .iter()
        .map(|&v| (v.to_f64(), V::round(v).widen()))
        .filter(|&(v, _)| v.is_finite() && v != 0.0)
        .fold(0.0f64, |worst, (v, s)| worst.max((s - v).abs() / v.abs()));
    assert_eq!(c.max_rounding(), rounding, "{what}: max_rounding");
    assert!((0.0..=1.0).contains(&rounding), "{what}: rounding {rounding}");
    let rho = rounding;
    for row in 0..nrows {
        let n = (offsets[row + 1] - offsets[row]) as f64;
        let bound = c.error_bound(row);
        let documented = rho + (1.0 + rho) * gamma(n + 2.0, T::EPSILON / 2.0);
        assert!(bound.is_finite() && bound >= rho, "{what}: row {row}'s bound {bound}");
        assert!(
            (bound - documented).abs() <= 1e-12 * documented,
            "{what}: row {row}: {bound}, not {documented}"
        );
    }
}
