//! A CSR matrix through `Dia::try_from_csr` (values in the matrix's type, f32 for f64, bf16 and
//! f16): an accepted matrix holds exactly its entries' diagonals, presence words per row (word-major,
//! a word per 32 diagonals) with a bit for each of the row's entries and none past the diagonals, every entry's value rounded to the storage type in its slot and +0
//! in every other, with the rounding and the error bound it reports; a refused one gets the typed
//! error its fault calls for, naming the fault.
//!
//! The shared input (`gpu_spmv_fuzz::Matrix`) scatters its columns, so that nearly every matrix has
//! more than 128 diagonals; this target has its own: up to 255 rows repeating a pattern of columns at
//! an offset from the row (near it, or far) or anywhere, or again at a column the row already has,
//! with holes, rows sorted or not, columns past the edge dropped or wrapped round, values of any
//! magnitude, and now and then some 16,384 empty rows between two of them, so that the conversion's
//! first task (of 16,384 rows) ends in the gap or among the rows after it. Such an input takes some
//! 60 ms here, sanitized and instrumented (for its rows: the library's passes over them, mostly),
//! against a few for the others: so only this many rows, and only in inputs that ask for them with
//! one byte's value ([`TALL`]), lest they starve the fuzzing.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::{DIA_MAX_DIAGONALS, Dia, ValueStorage, bf16, f16};
use gpu_spmv::{CsrRef, Error, FormatError, RowStats, Scalar};
use gpu_spmv_fuzz::{Value, with_csr};
use libfuzzer_sys::fuzz_target;
use std::cell::OnceCell;
use std::collections::{BTreeMap, BTreeSet};

/// The entries of a matrix at the most: past them the pattern stops repeating, so that one input
/// takes a few milliseconds (seven conversions and their checks).
const MAX_ENTRIES: usize = 1 << 11;

/// The bytes of a matrix in CSR with 32-bit indices, times this, are the most its DIA form may take:
/// `ELL_MAX_PADDING_RATIO`, written out again so that the target computes the limit on its own.
const PADDING_RATIO: u128 = 3;

/// The fewest empty rows of a gap: 128 short of the rows of one task of the conversion's passes
/// (`ROWS_PER_TASK` in `host/src/formats/dia.rs`, private), so that a gap of up to 255 more, after up
/// to 255 rows, puts that task's end in the gap or after it.
const GAP_ROWS: usize = 16 * 1024 - 128;

/// The value of [`Gap::tall`] that puts the gap in.
const TALL: u8 = 0x5a;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Puts the column count past the kernels' 32-bit limit, where the conversion must refuse.
    wide: bool,
    nrows: u8,
    ncols: Columns,
    /// Some 16,384 empty rows put in before a row, or none.
    gap: Gap,
    /// A column outside the matrix is taken modulo its column count (a diagonal that wraps round);
    /// else the entry is left out (a band cut at the edges).
    wrap: bool,
    /// Each row's entries sorted by column (duplicates then side by side).
    sorted: bool,
    /// About `holes / 256` of the entries left out, in no pattern.
    holes: u8,
    /// Row `r` holds the entries of `pattern[r % pattern.len()]` (none when the pattern is empty).
    pattern: Vec<Vec<(Column, Value)>>,
}

/// The column count.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Columns {
    /// As many as rows.
    Square,
    /// The row count plus this (none when that is negative).
    Plus(i8),
    Any(u16),
}

/// When `tall` is [`TALL`], [`GAP_ROWS`] `+ more` empty rows put in before row `before` of the
/// pattern (after the last row when there are fewer rows).
#[derive(Debug, Clone, Copy, Arbitrary)]
struct Gap {
    tall: u8,
    before: u8,
    more: u8,
}

impl Gap {
    /// Empty rows put in.
    fn rows(self) -> usize {
        if self.tall == TALL { GAP_ROWS + usize::from(self.more) } else { 0 }
    }
}

/// Where an entry's column lies.
#[derive(Debug, Clone, Copy, Arbitrary)]
enum Column {
    /// At `offset` from the row: a band or a stencil.
    Near(i8),
    /// At `offset` from the row: a far diagonal.
    Far(i16),
    /// At column `c`, whatever the row: a diagonal per row.
    At(u16),
    /// The column of the row's entry `k` (modulo its entries so far; none if it has none yet).
    Again(u8),
}

impl Input {
    /// Rows: the pattern's and the gap's.
    fn nrows(&self) -> usize {
        usize::from(self.nrows) + self.gap.rows()
    }

    fn ncols(&self) -> usize {
        let ncols = match self.ncols {
            Columns::Square => self.nrows(),
            Columns::Plus(more) => self.nrows().saturating_add_signed(isize::from(more)),
            Columns::Any(ncols) => usize::from(ncols),
        };
        if self.wide { (1 << 32) + ncols } else { ncols }
    }

    /// Whether entry `k` of row `r` falls in a hole.
    fn hole(&self, r: usize, k: usize) -> bool {
        let hash =
            (r as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ (k as u64).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
        (hash.wrapping_mul(0x1656_67b1_9e37_79f9) >> 56) < u64::from(self.holes)
    }

    /// Row offsets, column indices and values; the rows stop at the last whole row within
    /// [`MAX_ENTRIES`].
    fn arrays<T: Scalar>(&self) -> (Vec<usize>, Vec<usize>, Vec<T>) {
        let ncols = self.ncols();
        let (mut offsets, mut cols, mut values) = (vec![0], Vec::new(), Vec::new());
        let mut r = 0;
        for i in 0..=usize::from(self.nrows) {
            if usize::from(self.gap.before).min(usize::from(self.nrows)) == i {
                offsets.extend(std::iter::repeat_n(cols.len(), self.gap.rows()));
                r += self.gap.rows();
            }
            if i == usize::from(self.nrows) {
                break;
            }
            let pattern = match self.pattern.len() {
                0 => &[][..],
                len => &self.pattern[i % len][..],
            };
            let mut row: Vec<(usize, f64)> = Vec::with_capacity(pattern.len());
            for (k, &(column, value)) in pattern.iter().enumerate() {
                let col = match column {
                    Column::Near(offset) => r as i64 + i64::from(offset),
                    Column::Far(offset) => r as i64 + i64::from(offset),
                    Column::At(c) => i64::from(c),
                    Column::Again(k) if !row.is_empty() => row[usize::from(k) % row.len()].0 as i64,
                    Column::Again(_) => continue,
                };
                if ncols == 0 || self.hole(r, k) {
                    continue;
                }
                let col = if self.wrap {
                    col.rem_euclid(ncols as i64)
                } else if (0..ncols as i64).contains(&col) {
                    col
                } else {
                    continue;
                };
                row.push((col as usize, value.to_f64()));
            }
            if cols.len() + row.len() > MAX_ENTRIES {
                break;
            }
            if self.sorted {
                row.sort_by_key(|&(col, _)| col);
            }
            for (col, value) in row {
                cols.push(col);
                values.push(T::from_f64(value));
            }
            offsets.push(cols.len());
            r += 1;
        }
        (offsets, cols, values)
    }
}

fuzz_target!(|input: Input| {
    assert_eq!(DIA_MAX_DIAGONALS, 128, "four 32-bit presence words a row");
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

/// What refuses a matrix whatever the storage type, found once for all of them, in the simplest way.
#[derive(Debug)]
struct Faults {
    /// Its sizes fit the kernels' 32-bit indices.
    fits_u32: bool,
    /// The offsets `column - row` of its entries, increasing; or, when there are more than
    /// `DIA_MAX_DIAGONALS`, the entry (by row, then entry) that brings the first one too many, as
    /// `(row, entry, column)`.
    diagonals: Result<Vec<i64>, (usize, usize, usize)>,
    /// The first row (in order) with two entries in one column, as `(row, first, entry, column)`:
    /// `entry` the first of the row whose column an earlier entry has, `first` the earliest of those.
    duplicate: Option<(usize, usize, usize, usize)>,
    /// Its row statistics (the sanitized sum over 16,384 rows is not cheap).
    stats: RowStats,
    /// What an accepted conversion holds, found once (when one is accepted) for all storage types.
    layout: OnceCell<Layout>,
}

/// The layout of a matrix on at most `DIA_MAX_DIAGONALS` diagonals, no two entries of a row in one
/// column, found from its entries.
#[derive(Debug)]
struct Layout {
    /// Word-major: bit `d % 32` of word `(d / 32) * nrows + row` set where `row` has an entry on
    /// diagonal `d`.
    present: Vec<u32>,
    /// Slot `d * nrows + row`: the entry of `row` on diagonal `d`, if any.
    slots: Vec<Option<usize>>,
    /// `(row, column)` of every entry, sorted.
    entries: Vec<(usize, usize)>,
}

impl Faults {
    fn of<T: Scalar>(a: CsrRef<'_, T>) -> Self {
        let limit = u32::MAX as usize;
        let (offsets, cols) = (a.row_offsets(), a.col_indices());
        let mut seen = BTreeSet::new();
        let mut too_many = None;
        'rows: for row in 0..a.nrows() {
            for (entry, &col) in (offsets[row]..).zip(&cols[offsets[row]..offsets[row + 1]]) {
                let offset = col as i64 - row as i64;
                seen.insert(offset);
                if seen.len() > DIA_MAX_DIAGONALS {
                    too_many = Some((row, entry, col));
                    break 'rows;
                }
            }
        }
        // Per row, the first entry of each column met so far.
        let duplicate = (0..a.nrows()).find_map(|row| {
            let mut firsts = BTreeMap::new();
            (offsets[row]..).zip(&cols[offsets[row]..offsets[row + 1]]).find_map(|(entry, &col)| {
                let first = *firsts.entry(col).or_insert(entry);
                (first != entry).then_some((row, first, entry, col))
            })
        });
        Faults {
            fits_u32: a.nrows() <= limit && a.ncols() <= limit && a.nnz() <= limit,
            diagonals: too_many.map_or_else(|| Ok(seen.into_iter().collect()), Err),
            duplicate,
            stats: a.stats(),
            layout: OnceCell::new(),
        }
    }

    /// The layout of `a`, whose faults these are (none but maybe its padding).
    fn layout<T: Scalar>(&self, a: CsrRef<'_, T>) -> &Layout {
        self.layout.get_or_init(|| {
            let diagonals = self.diagonals.as_ref().expect("at most DIA_MAX_DIAGONALS diagonals");
            let (nrows, offsets, cols) = (a.nrows(), a.row_offsets(), a.col_indices());
            let mut present = vec![0u32; nrows * diagonals.len().div_ceil(32)];
            let mut slots = vec![None; nrows * diagonals.len()];
            let mut entries = Vec::with_capacity(a.nnz());
            for row in 0..nrows {
                for (e, &col) in (offsets[row]..).zip(&cols[offsets[row]..offsets[row + 1]]) {
                    let d = diagonals.binary_search(&(col as i64 - row as i64)).expect("every diagonal");
                    present[d / 32 * nrows + row] |= 1 << (d % 32);
                    slots[d * nrows + row] = Some(e);
                    entries.push((row, col));
                }
            }
            entries.sort_unstable();
            Layout { present, slots, entries }
        })
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

/// The bytes of `diagonals` diagonals of `a` stored as `V` with their presence words, and the
/// most they may take: three times the bytes of `a` in CSR with 32-bit indices and values of `T`.
fn padding<T: Scalar, V: ValueStorage<T>>(a: CsrRef<'_, T>, diagonals: usize) -> (u128, u128) {
    let (rows, nnz) = (a.nrows() as u128, a.nnz() as u128);
    let words = diagonals.div_ceil(32) as u128;
    let dia_bytes = rows * (diagonals as u128 * size_of::<V>() as u128 + 4 * words);
    let csr_bytes = (rows + 1) * 4 + nnz * (4 + size_of::<T>() as u128);
    (dia_bytes, PADDING_RATIO * csr_bytes)
}

/// The conversion of `a`, whose storage-independent faults are `faults`, to DIA with values stored as
/// `V`: accepted exactly when `a` fits 32 bits, has at most `DIA_MAX_DIAGONALS` diagonals, no two
/// entries of a row in one column, slots within the padding limit and every finite value within
/// `V`'s range; then the layout is checked by `check_accepted`. Otherwise the error names a fault
/// that is there, exactly: `TooLarge` before any other, the entry bringing the first diagonal too
/// many, the first row with a repeated column, the padding's figures, a value out of range.
fn check<T: Scalar, V: ValueStorage<T>>(a: CsrRef<'_, T>, faults: &Faults) {
    let what = format!("{} stored as {}", T::NAME, V::STORAGE.name());
    let Faults { fits_u32, ref diagonals, duplicate, .. } = *faults;
    let out = a.values().iter().position(|&v| out_of_range::<T, V>(v));
    match Dia::<T, V>::try_from_csr(a) {
        Ok(dia) => {
            assert!(fits_u32, "{what}: accepted a matrix past 32 bits");
            let diagonals = diagonals
                .as_ref()
                .unwrap_or_else(|e| panic!("{what}: accepted, but {e:?} is past the limit"));
            let (dia_bytes, limit_bytes) = padding::<T, V>(a, diagonals.len());
            assert!(dia_bytes <= limit_bytes, "{what}: accepted {dia_bytes} bytes, over {limit_bytes}");
            assert_eq!(out, None, "{what}: accepted a value out of range");
            assert_eq!(duplicate, None, "{what}: accepted a repeated column");
            assert_eq!(*dia.stats(), faults.stats, "{what}: stats");
            check_accepted(&what, a, &dia, diagonals, faults.layout(a));
        }
        Err(Error::Format(FormatError::TooManyDiagonals { row, entry, col, limit })) => {
            assert!(fits_u32, "{what}: past 32 bits, but refused for its diagonals");
            assert_eq!(
                diagonals.as_ref().err(),
                Some(&(row, entry, col)),
                "{what}: not the first entry past the limit"
            );
            assert_eq!(limit, DIA_MAX_DIAGONALS, "{what}");
        }
        Err(Error::Format(FormatError::DuplicateEntry { row, first, entry, col })) => {
            assert!(fits_u32, "{what}: past 32 bits, but refused for a repeated column");
            assert_eq!(duplicate, Some((row, first, entry, col)), "{what}: not the first repeated column");
        }
        Err(Error::Format(FormatError::DiaPadding { diagonals: count, dia_bytes, limit_bytes })) => {
            assert!(fits_u32, "{what}: past 32 bits, but refused for its padding");
            let diagonals = diagonals
                .as_ref()
                .unwrap_or_else(|e| panic!("{what}: refused the padding, but {e:?} is past the limit"));
            assert_eq!(count, diagonals.len(), "{what}: diagonals");
            let expected = padding::<T, V>(a, count);
            assert_eq!((dia_bytes, limit_bytes), expected, "{what}: the padding's bytes");
            assert!(dia_bytes > limit_bytes, "{what}: refused {dia_bytes} bytes, within {limit_bytes}");
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

/// The diagonals, presence words, slots, round trip, rounding and error bound of `dia`, the accepted
/// conversion of `a`, whose entries lie on `diagonals` (increasing).
fn check_accepted<T: Scalar, V: ValueStorage<T>>(
    what: &str,
    a: CsrRef<'_, T>,
    dia: &Dia<T, V>,
    diagonals: &[i64],
    layout: &Layout,
) {
    let (nrows, width) = (a.nrows(), diagonals.len());
    let (offsets, values) = (a.row_offsets(), a.values());
    assert_eq!((dia.nrows(), dia.ncols(), dia.nnz()), (nrows, a.ncols(), a.nnz()), "{what}: shape");
    assert_eq!(dia.storage(), V::STORAGE, "{what}");
    assert!(dia.offsets().windows(2).all(|w| w[0] < w[1]), "{what}: offsets {:?}", dia.offsets());
    assert!(dia.offsets().len() <= DIA_MAX_DIAGONALS, "{what}: {} diagonals", dia.offsets().len());
    assert_eq!(dia.offsets(), diagonals, "{what}: offsets");
    let words = width.div_ceil(32);
    assert_eq!(dia.present().len(), nrows * words, "{what}: presence words");
    assert_eq!(dia.values().len(), nrows * width, "{what}: slots");
    let bytes = nrows * width * size_of::<V>() + nrows * words * 4 + width * 8;
    assert_eq!(dia.device_bytes(), bytes, "{what}: bytes");
    // Word `w` holds diagonals `32 w ..`: its bits past the last diagonal are clear.
    let unused = dia.present().iter().enumerate().position(|(i, &word)| {
        let live = width.saturating_sub(i / nrows * 32).min(32);
        u64::from(word) >> live != 0
    });
    assert_eq!(unused, None, "{what}: a presence bit past {width} diagonals");
    let bits: usize = dia.present().iter().map(|word| word.count_ones() as usize).sum();
    assert_eq!(bits, a.nnz(), "{what}: presence bits");
    if let Some(i) = (0..nrows * words).find(|&i| dia.present()[i] != layout.present[i]) {
        panic!("{what}: row {}'s presence word {}", i % nrows, i / nrows);
    }
    for (slot, (&stored, &e)) in dia.values().iter().zip(&layout.slots).enumerate() {
        let (d, row, stored) = (slot / nrows, slot % nrows, stored.widen());
        match e {
            Some(e) => {
                let expected = V::round(values[e]).widen();
                assert!(
                    stored.to_bits() == expected.to_bits() || (expected.is_nan() && stored.is_nan()),
                    "{what}: row {row}, diagonal {d}: {stored} for {}",
                    values[e].to_f64()
                );
            }
            None => assert_eq!(stored.to_bits(), 0, "{what}: row {row}, diagonal {d}: {stored}, not +0"),
        }
    }
    assert_eq!(dia.entries(), layout.entries, "{what}: entries");
    let rounding = values
        .iter()
        .map(|&v| (v.to_f64(), V::round(v).widen()))
        .filter(|&(v, _)| v.is_finite() && v != 0.0)
        .fold(0.0f64, |worst, (v, s)| worst.max((s - v).abs() / v.abs()));
    assert_eq!(dia.max_rounding(), rounding, "{what}: max_rounding");
    assert!((0.0..=1.0).contains(&rounding), "{what}: rounding {rounding}");
    let rho = rounding;
    for row in 0..nrows {
        let n = (offsets[row + 1] - offsets[row]) as f64;
        let bound = dia.error_bound(row);
        let documented = rho + (1.0 + rho) * gamma(n + 2.0, T::EPSILON / 2.0);
        assert!(bound.is_finite() && bound >= rho, "{what}: row {row}'s bound {bound}");
        assert!(
            (bound - documented).abs() <= 1e-12 * documented,
            "{what}: row {row}: {bound}, not {documented}"
        );
    }
}
