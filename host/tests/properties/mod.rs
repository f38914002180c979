//! The properties that every input must keep, asserted by the proptest suite (`tests/proptests.rs`)
//! and by the cargo-fuzz targets (`fuzz/`, which include this file by path), so that both check the
//! same thing: no input panics, an accepted one gives a valid result (a conversion's `to_csr` is the
//! input matrix with its repeated positions summed), and a refused one gets the typed error its fault
//! calls for. The surfaces with modules of their own: the LMA operator, the row partition, the sprs
//! and faer conversions, the CPU references and dense views, the reordering, CG's options, the Krylov
//! solvers, block-Jacobi's setup, the Chebyshev preconditioner, ILU(0), the assembly from COO triples
//! and the pass that fills an upload's staging chunks.
#![allow(dead_code)] // each user takes a part

pub mod assemble;
pub mod block_jacobi;
pub mod cg;
pub mod chebyshev;
pub mod ilu;
#[cfg(any(feature = "sprs", feature = "faer"))]
pub mod interop;
pub mod krylov;
pub mod lma;
pub mod partition;
pub mod references;
pub mod reorder;
pub mod staging;

use gpu_spmv::formats::{
    Brc, CompressedCsr, Coo, DENSE_MAX_WINDOW_BYTES, DenseBlocks, ELL_MAX_PADDING_RATIO, Ell, Hyb,
    SEGMENT_ROWS, SELL_PADDING_FLOOR_BYTES, Sell, ValueStorage, bf16, brc_b2_candidates, f16, hyb_ell_width,
};
use gpu_spmv::io::{MAX_DIMENSION, MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES, read_matrix_market_from};
use gpu_spmv::{CsrError, CsrRef, Error, FormatError, RowStats, Scalar};
use nalgebra_sparse::CsrMatrix;
use nalgebra_sparse::io::save_to_matrix_market_str;
use std::collections::BTreeMap;

/// Slots per row of a dense-block row's padding (`DENSE_ROW_THREADS`).
const DENSE_GROUP: u32 = 16;

/// The first fault of raw CSR arrays, in the order `CsrRef::try_new` documents it: lengths, then the
/// offsets from the first to the last, then the columns row by row. `None` for valid arrays.
pub fn first_csr_fault<T>(
    nrows: usize,
    ncols: usize,
    offsets: &[usize],
    cols: &[usize],
    values: &[T],
) -> Option<CsrError> {
    let nnz = values.len();
    if cols.len() != nnz {
        return Some(CsrError::LengthMismatch { col_indices: cols.len(), values: nnz });
    }
    if nrows.checked_add(1) != Some(offsets.len()) {
        return Some(CsrError::OffsetsLength { rows: nrows, got: offsets.len() });
    }
    if offsets[0] != 0 {
        return Some(CsrError::OffsetsStart(offsets[0]));
    }
    if let Some(row) = (0..nrows).find(|&r| offsets[r] > offsets[r + 1]) {
        return Some(CsrError::OffsetsDecrease { row, start: offsets[row], end: offsets[row + 1] });
    }
    if offsets[nrows] != nnz {
        return Some(CsrError::OffsetsEnd { last: offsets[nrows], nnz });
    }
    (0..nrows).find_map(|row| {
        (offsets[row]..offsets[row + 1]).find(|&k| cols[k] >= ncols).map(|entry| CsrError::ColumnOutOfRange {
            row,
            entry,
            col: cols[entry],
            ncols,
        })
    })
}

/// `CsrRef::try_new` accepts exactly the valid arrays, refuses the others naming their first fault,
/// and a view it accepts answers every row. The row statistics and the models that read offsets take
/// any offsets, CSR or not, without a panic.
pub fn check_csr_try_new<T: Scalar>(
    nrows: usize,
    ncols: usize,
    offsets: &[usize],
    cols: &[usize],
    values: &[T],
) {
    let stats = RowStats::from_offsets(offsets, ncols);
    assert!(stats.max <= stats.nnz && stats.empty_rows <= stats.rows);
    assert!(hyb_ell_width(offsets) <= stats.max);
    for sms in [0, 132, u32::MAX] {
        let b2s = brc_b2_candidates(&stats, sms);
        assert!(!b2s.is_empty() && b2s.is_sorted() && b2s[0] >= 1);
    }
    let expected = first_csr_fault(nrows, ncols, offsets, cols, values);
    match (CsrRef::try_new(nrows, ncols, offsets, cols, values), expected) {
        (Ok(a), None) => {
            assert_eq!((a.nrows(), a.ncols(), a.nnz()), (nrows, ncols, values.len()));
            let lengths: usize = (0..nrows).map(|r| a.row(r).0.len()).sum();
            assert_eq!(lengths, values.len());
            assert_eq!(a.stats().nnz, values.len());
        }
        (Err(got), Some(expected)) => {
            assert_eq!(got, expected);
            assert!(!got.to_string().is_empty());
        }
        (got, expected) => panic!("try_new gave {got:?}, expected {expected:?}"),
    }
}

/// The matrix as its distinct positions, sorted, each with the sum of its values (in f64).
pub fn summed<T: Scalar>(a: CsrRef<'_, T>) -> Vec<(usize, usize, f64)> {
    let mut map = BTreeMap::new();
    for r in 0..a.nrows() {
        let (cols, values) = a.row(r);
        for (&c, v) in cols.iter().zip(values) {
            *map.entry((r, c)).or_insert(0.0) += v.to_f64();
        }
    }
    map.into_iter().map(|((r, c), v)| (r, c, v)).collect()
}

/// The smallest normal number of `T`.
pub fn min_normal<T: Scalar>() -> f64 {
    match T::NAME {
        "f32" => f64::from(f32::MIN_POSITIVE),
        _ => f64::MIN_POSITIVE,
    }
}

/// The parameters the conversions take, fuzzed with the matrix.
#[derive(Debug, Clone, Copy)]
pub struct FormatParams {
    /// BRC's width bound.
    pub b2: usize,
    /// The dense blocks' window.
    pub window: usize,
    /// HYB's ELL width; `None` for the model's.
    pub hyb_width: Option<usize>,
}

/// Whether `width` slots per row of `a` exceed ELL's memory limit (the documented rule, restated).
fn ell_refuses<T: Scalar>(a: CsrRef<'_, T>, width: usize) -> bool {
    a.nrows() as u128 * width as u128 * slot_bytes::<T>() > padding_limit::<T>(a)
}

/// The bytes of a padded slot: its column index and its value.
fn slot_bytes<T>() -> u128 {
    4 + size_of::<T>() as u128
}

/// ELL_MAX_PADDING_RATIO times the bytes of `a` in CSR with 32-bit indices.
fn padding_limit<T: Scalar>(a: CsrRef<'_, T>) -> u128 {
    let csr = (a.nrows() as u128 + 1) * 4 + a.nnz() as u128 * slot_bytes::<T>();
    u128::from(ELL_MAX_PADDING_RATIO) * csr
}

/// SELL's slice height.
const SLICE: usize = 32;

/// The column of a padding slot: the kernels' `PAD_COL`, which `gpu_spmv` does not re-export.
const PAD_COL: u32 = u32::MAX;

/// Each slice's width: the length of the longest of its 32 rows.
fn slice_widths<T: Scalar>(a: CsrRef<'_, T>) -> Vec<usize> {
    (0..a.nrows().div_ceil(SLICE))
        .map(|s| (s * SLICE..a.nrows().min(s * SLICE + SLICE)).map(|r| a.row(r).0.len()).max().unwrap_or(0))
        .collect()
}

/// Whether slices of `widths` exceed SELL's memory limit (the documented rule, restated): their slots
/// and offsets over both ELL's ratio of the CSR bytes and SELL's floor.
fn sell_refuses<T: Scalar>(a: CsrRef<'_, T>, widths: &[usize]) -> bool {
    let slots = (SLICE * widths.iter().sum::<usize>()) as u128;
    let bytes = slots * slot_bytes::<T>() + (widths.len() as u128 + 1) * 4;
    bytes > padding_limit(a).max(SELL_PADDING_FLOOR_BYTES)
}

/// Every conversion of `a` either gives back `a` (summed) through `to_csr`, with the format's own
/// invariants, or is refused with the error its documentation names. The values of `a` must be small
/// integers, so that sums are exact in any order.
pub fn check_conversions<T: Scalar>(a: CsrRef<'_, T>, p: FormatParams) {
    check_ell(a);
    check_sell(a);
    check_coo(a);
    check_hyb(a, p.hyb_width);
    check_brc(a, p.b2);
    check_dense_blocks(a, p.window);
    check_compressed(a);
}

/// Whether `a`'s sizes fit the kernels' 32-bit indices (else every conversion is `TooLarge`).
fn fits_u32<T>(a: CsrRef<'_, T>) -> bool {
    let limit = u32::MAX as usize;
    a.nrows() <= limit && a.ncols() <= limit && a.nnz() <= limit
}

/// Asserts that `m`, a conversion's `to_csr`, is `a` with its repeated positions summed.
fn assert_same<T: Scalar>(what: &str, a: CsrRef<'_, T>, m: CsrMatrix<T>) {
    assert_eq!((m.nrows(), m.ncols()), (a.nrows(), a.ncols()), "{what}: shape");
    let got: Vec<_> = m.triplet_iter().map(|(r, c, v)| (r, c, v.to_f64())).collect();
    assert_eq!(got, summed(a), "{what}: round trip");
}

/// The error of a conversion refused for a reason other than its own: only `TooLarge`, for a matrix
/// past the 32-bit sizes.
fn assert_too_large<T>(what: &str, a: CsrRef<'_, T>, e: Error) {
    assert!(matches!(e, Error::TooLarge { .. }) && !fits_u32(a), "{what}: unexpected error {e}");
}

pub fn check_ell<T: Scalar>(a: CsrRef<'_, T>) {
    let max = a.stats().max;
    match Ell::try_from_csr(a) {
        Ok(ell) => {
            assert!(fits_u32(a) && !ell_refuses(a, max), "ELL accepted a matrix it must refuse");
            assert_eq!((ell.width(), ell.nnz()), (max, a.nnz()));
            assert_same("ELL", a, ell.to_csr());
        }
        Err(Error::Format(FormatError::EllPadding { width, longest_len, .. })) => {
            assert!(fits_u32(a) && ell_refuses(a, max) && width == max && longest_len == max);
        }
        Err(e) => assert_too_large("ELL", a, e),
    }
}

/// SELL keeps its layout (each slice `32 * width` slots from its offset, a lane's entries in its first
/// slots, padding after them and in every lane past the last row, 0 in every padding slot) and gives
/// `a` back, or is refused for the padding the rule restated above finds, naming the first widest
/// slice.
pub fn check_sell<T: Scalar>(a: CsrRef<'_, T>) {
    let widths = slice_widths(a);
    match Sell::try_from_csr(a) {
        Ok(sell) => {
            assert!(fits_u32(a) && !sell_refuses(a, &widths), "SELL accepted a matrix it must refuse");
            assert_eq!((sell.slices(), sell.nnz()), (widths.len(), a.nnz()));
            let ptr = sell.slice_ptr();
            assert_eq!(ptr[0], 0);
            assert_eq!(
                (sell.cols().len(), sell.values().len()),
                (ptr[widths.len()] as usize, ptr[widths.len()] as usize)
            );
            for (s, &width) in widths.iter().enumerate() {
                assert_eq!((ptr[s + 1] - ptr[s]) as usize, SLICE * width, "slice {s}");
                for lane in 0..SLICE {
                    let row = s * SLICE + lane;
                    let len = if row < a.nrows() { a.row(row).0.len() } else { 0 };
                    for k in 0..width {
                        let slot = ptr[s] as usize + SLICE * k + lane;
                        let (col, value) = (sell.cols()[slot], sell.values()[slot]);
                        if k < len {
                            let (cols, values) = a.row(row);
                            assert!(col as usize == cols[k] && value == values[k], "row {row}, slot {k}");
                        } else {
                            assert!(col == PAD_COL && value == T::ZERO, "row {row}, slot {k}: not padding");
                        }
                    }
                }
            }
            assert_same("SELL", a, sell.to_csr());
        }
        Err(Error::Format(FormatError::SellPadding { slice, width, .. })) => {
            assert!(fits_u32(a) && sell_refuses(a, &widths), "SELL refused without cause");
            let widest = widths.iter().copied().max().unwrap_or(0);
            assert_eq!((width, widths.iter().position(|&w| w == widest)), (widest, Some(slice)));
        }
        Err(e) => assert_too_large("SELL", a, e),
    }
}

/// Compressed column indices with values in `T`, bf16 and f16: every column decodes to its own,
/// every value is its rounding, and a refusal names a finite value the storage type cannot hold.
pub fn check_compressed<T: Scalar>(a: CsrRef<'_, T>) {
    check_compressed_as::<T, T>(a);
    check_compressed_as::<T, bf16>(a);
    check_compressed_as::<T, f16>(a);
}

fn check_compressed_as<T: Scalar, V: ValueStorage<T>>(a: CsrRef<'_, T>) {
    let what = V::STORAGE.name();
    match CompressedCsr::<T, V>::try_from_csr(a) {
        Ok(c) => {
            assert!(fits_u32(a), "{what}: accepted a matrix past 32 bits");
            let cols: Vec<u32> = a.col_indices().iter().map(|&c| u32::try_from(c).unwrap()).collect();
            assert_eq!(c.columns(), cols, "{what}: columns");
            assert_eq!(c.deltas().len() + c.escapes().len(), a.nnz(), "{what}");
            assert_eq!(c.deltas().len(), compressible_entries(a), "{what}: entries in 16 bits");
            for (&v, &stored) in a.values().iter().zip(c.values()) {
                let expected = V::round(v).widen();
                assert!(stored.widen() == expected || expected.is_nan(), "{what}: value {}", v.to_f64());
            }
            assert!((0.0..=1.0).contains(&c.max_rounding()), "{what}: rounding {}", c.max_rounding());
            for row in 0..a.nrows() {
                assert!(c.error_bound(row) >= c.max_rounding(), "{what}: row {row}'s bound");
            }
        }
        Err(Error::Format(FormatError::ValueOutOfRange { row, entry, storage })) => {
            let v = a.values()[entry];
            assert!(v.to_f64().is_finite() && V::round(v).widen().is_infinite(), "{what}: entry {entry}");
            assert!(a.row_offsets()[row] <= entry && entry < a.row_offsets()[row + 1], "{what}: row {row}");
            assert_eq!(storage, what);
        }
        Err(e) => assert_too_large(what, a, e),
    }
}

/// The entries of the segments of [`SEGMENT_ROWS`] rows whose columns lie within `u16::MAX` of the
/// segment's smallest, that smallest below `2^31`: those that compressed columns keep in 16 bits, on
/// the host and in the device's copy alike (both take the head rule of `abi::compressed_head`).
fn compressible_entries<T: Scalar>(a: CsrRef<'_, T>) -> usize {
    let offsets = a.row_offsets();
    (0..a.nrows().div_ceil(SEGMENT_ROWS))
        .map(|s| {
            let end = ((s + 1) * SEGMENT_ROWS).min(a.nrows());
            let cols = &a.col_indices()[offsets[s * SEGMENT_ROWS]..offsets[end]];
            match (cols.iter().min(), cols.iter().max()) {
                (Some(&lo), Some(&hi)) if hi - lo <= usize::from(u16::MAX) && lo < 1 << 31 => cols.len(),
                _ => 0,
            }
        })
        .sum()
}

pub fn check_coo<T: Scalar>(a: CsrRef<'_, T>) {
    match Coo::try_from_csr(a) {
        Ok(coo) => {
            assert!(fits_u32(a) && coo.rows().is_sorted() && coo.nnz() == a.nnz());
            assert_same("COO", a, coo.to_csr());
        }
        Err(e) => assert_too_large("COO", a, e),
    }
}

/// HYB with the ELL width `width`, or the model's for `None`.
pub fn check_hyb<T: Scalar>(a: CsrRef<'_, T>, width: Option<usize>) {
    let max = a.stats().max;
    let hyb = match width {
        Some(w) => Hyb::try_from_csr_with_width(a, w),
        None => Hyb::try_from_csr(a),
    };
    match hyb {
        Ok(hyb) => {
            assert!(fits_u32(a) && hyb.nnz() == a.nnz());
            assert!(hyb.ell().width() <= width.unwrap_or(usize::MAX).min(max));
            assert_same("HYB", a, hyb.to_csr());
        }
        // The model's width never pads past the limit; a width asked for may.
        Err(Error::Format(FormatError::EllPadding { width: padded, .. })) => {
            let asked = width.expect("HYB's model width was refused for its padding");
            assert!(fits_u32(a) && padded == asked.min(max) && ell_refuses(a, padded));
        }
        Err(e) => assert_too_large("HYB", a, e),
    }
}

pub fn check_brc<T: Scalar>(a: CsrRef<'_, T>, b2: usize) {
    match Brc::try_from_csr(a, b2) {
        Ok(brc) => {
            assert!(fits_u32(a) && b2 > 0);
            let mut rows = brc.permutation().to_vec();
            rows.sort_unstable();
            assert!(rows.iter().map(|&r| r as usize).eq(0..a.nrows()), "BRC: not a permutation");
            assert!(brc.block_width().iter().all(|&w| w as usize <= b2), "BRC: a block wider than B2");
            assert_same("BRC", a, brc.to_csr());
        }
        Err(Error::Format(FormatError::InvalidParameter { value: 0, .. })) => assert!(fits_u32(a) && b2 == 0),
        Err(e) => assert_too_large("BRC", a, e),
    }
}

pub fn check_dense_blocks<T: Scalar>(a: CsrRef<'_, T>, window: usize) {
    let window_fits =
        window > 0 && window.checked_mul(size_of::<T>()).is_some_and(|bytes| bytes <= DENSE_MAX_WINDOW_BYTES);
    match DenseBlocks::try_from_csr(a, window) {
        Ok(dense) => {
            assert!(fits_u32(a) && window_fits);
            let slots = dense.row_offsets();
            assert_eq!(slots.len(), a.nrows() + 1);
            assert!(slots.windows(2).all(|w| w[0] <= w[1] && (w[1] - w[0]) % DENSE_GROUP == 0));
            assert_eq!(dense.nnz(), a.nnz());
            assert_same("dense blocks", a, dense.to_csr());
        }
        Err(Error::Format(FormatError::InvalidParameter { value, .. })) => {
            assert!(fits_u32(a) && !window_fits && value == window);
        }
        Err(e) => assert_too_large("dense blocks", a, e),
    }
}

/// Any bytes read as a Matrix Market file: refused with a Matrix Market error on a line of the input
/// (or, for summed entries out of range, on none), or read into a matrix within the reader's limits
/// whose values are finite, which nalgebra-sparse's writer and this reader give back unchanged, and
/// which an f32 read gives rounded (or refuses, for a value out of f32's range).
pub fn check_matrix_market(bytes: &[u8]) {
    let lines = bytes.split(|&b| b == b'\n').count();
    let refused = |e: Error| match e {
        Error::MatrixMarket { path: None, line, message } => {
            assert!(line.is_none_or(|l| (1..=lines + 1).contains(&l)), "line {line:?} of {lines}: {message}");
            assert!(!message.is_empty());
        }
        e => panic!("not a Matrix Market error: {e:?}"),
    };
    let single = read_matrix_market_from::<f32>(bytes);
    match read_matrix_market_from::<f64>(bytes) {
        Ok(m) => {
            assert!(m.nrows().max(m.ncols()) <= MAX_DIMENSION);
            assert!(m.values().iter().all(|v| v.is_finite()));
            // Written back, repeated entries are summed: the row limit may then refuse what it took.
            if m.nrows() <= MAX_ROWS_WITHOUT_ENTRIES + MAX_ROWS_PER_ENTRY * m.nnz() {
                let text = save_to_matrix_market_str(&m);
                let again =
                    read_matrix_market_from::<f64>(text.as_bytes()).expect("the writer's output reads");
                assert_eq!(again, m, "written and read again");
            }
            match single {
                Ok(s) => {
                    assert_eq!(s.pattern(), m.pattern());
                    assert!(s.values().iter().zip(m.values()).all(|(&s, &d)| s == f32::from_f64(d)));
                }
                Err(e) => refused(e),
            }
        }
        Err(e) => {
            refused(e);
            refused(single.expect_err("an input refused in f64 is refused in f32"));
        }
    }
}
