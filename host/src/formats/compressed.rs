//! CSR with compressed column indices, and optionally narrower values ([`CompressedCsr`]).
//!
//! Every CSR kernel reads a 4-byte column index and a value per entry, so the bandwidth floor of
//! `docs/PERF.md` binds them all. Stencils, banded and most FEM matrices have columns near their
//! row: within a segment of [`SEGMENT_ROWS`] consecutive rows they span far less than 2^16 columns.
//! Such a segment stores its smallest column once (the base) and a 16-bit offset per entry; a
//! segment whose columns span further (or start at 2^31 or beyond) keeps plain 32-bit columns, so
//! any matrix converts. The layout is `kernels_gpu::abi::CompressedArgs`'s; the kernel
//! (`kernels-gpu/src/formats/compressed.rs`) decodes in registers, with no load the plain kernel
//! does not make but the segment's 8-byte header, read once per warp.
//!
//! The values keep the matrix's type `T` unless the caller asks for a narrower storage type `V`
//! ([`ValueStorage`]: f32 for an f64 matrix, or binary16 or bfloat16 for either); the products and
//! sums stay in `T`. The conversion reports the largest relative rounding `ρ` of a value
//! ([`CompressedCsr::max_rounding`]), and [`CompressedCsr::error_bound`] the resulting bound of the
//! product (derived there).

use super::convert::{check_u32_dims, index32, par_fill_segments};
use super::shape::Shape;
use crate::Result;
use crate::error::FormatError;
use crate::formats::csr::{CsrRef, RowStats};
use crate::scalar::{Precision, Scalar};
use cudarc::driver::DeviceRepr;
use kernels_gpu::abi::{COMPRESSED_SEGMENT_ROWS, compressed_head, compressed_segment};
use rayon::prelude::*;
use std::fmt::Debug;
use std::marker::PhantomData;

/// Rows per segment: one base column (or the plain fallback) per this many rows.
pub const SEGMENT_ROWS: usize = COMPRESSED_SEGMENT_ROWS as usize;

/// Segments per rayon task when filling the column streams: 16,384 rows, enough work to amortise a
/// task.
const SEGMENTS_PER_TASK: usize = 512;

/// How the values of a [`CompressedCsr`] are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Storage {
    F64,
    F32,
    /// IEEE binary16: 11 significant bits, finite values up to 65,504.
    F16,
    /// bfloat16: 8 significant bits, the exponent range of f32.
    Bf16,
}

impl Storage {
    /// The type's name in reports and in the PTX entries.
    pub const fn name(self) -> &'static str {
        match self {
            Storage::F64 => "f64",
            Storage::F32 => "f32",
            Storage::F16 => "f16",
            Storage::Bf16 => "bf16",
        }
    }

    /// Bytes per value.
    pub const fn bytes(self) -> usize {
        match self {
            Storage::F64 => 8,
            Storage::F32 => 4,
            Storage::F16 | Storage::Bf16 => 2,
        }
    }
}

mod sealed {
    pub trait Sealed<T> {}
    impl<T: crate::scalar::Scalar> Sealed<T> for T {}
    impl Sealed<f64> for f32 {}
    impl<T: crate::scalar::Scalar> Sealed<T> for half::f16 {}
    impl<T: crate::scalar::Scalar> Sealed<T> for half::bf16 {}
}

/// A type the values of an `T` matrix can be stored in on the device, widened exactly to `T` by
/// the kernel: `T` itself, `f32` for `f64`, [`half::f16`] and [`half::bf16`] for both. Sealed.
pub trait ValueStorage<T: Scalar>:
    sealed::Sealed<T> + DeviceRepr + Copy + Debug + Send + Sync + 'static
{
    const STORAGE: Storage;
    /// The nearest value of this type (ties to even); infinite for finite values past its range.
    fn round(v: T) -> Self;
    /// The value, exactly.
    fn widen(self) -> f64;
}

impl<T: Scalar> ValueStorage<T> for T {
    const STORAGE: Storage = match T::PRECISION {
        Precision::Single => Storage::F32,
        Precision::Double => Storage::F64,
    };
    fn round(v: T) -> Self {
        v
    }
    fn widen(self) -> f64 {
        self.to_f64()
    }
}

impl ValueStorage<f64> for f32 {
    const STORAGE: Storage = Storage::F32;
    #[allow(clippy::cast_possible_truncation)] // rounding to the nearest f32 is the point
    fn round(v: f64) -> Self {
        v as f32
    }
    fn widen(self) -> f64 {
        f64::from(self)
    }
}

/// The storage impls of the 16-bit types, for either matrix type: rounded from the value as an f64
/// (exact for an f32), so in one rounding.
macro_rules! half_storage {
    ($($half:ty: $storage:expr),+) => {$(
        impl<T: Scalar> ValueStorage<T> for $half {
            const STORAGE: Storage = $storage;
            fn round(v: T) -> Self {
                <$half>::from_f64(v.to_f64())
            }
            fn widen(self) -> f64 {
                self.to_f64()
            }
        }
    )+};
}

half_storage!(half::f16: Storage::F16, half::bf16: Storage::Bf16);

/// A CSR matrix of `T` with compressed column indices (per segment of [`SEGMENT_ROWS`] rows: a base
/// column and 16-bit offsets, or plain 32-bit columns) and its values stored as `V`. Built by
/// [`CompressedCsr::try_from_csr`], uploaded by [`Gpu::upload_compressed`](crate::Gpu::upload_compressed).
///
/// ```
/// use gpu_spmv::CsrRef;
/// use gpu_spmv::formats::{CompressedCsr, bf16};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// // [4 -1]
/// // [. 3.14159]
/// let a = CsrRef::try_new(2, 2, &[0, 2, 3], &[0, 1, 1], &[4.0f32, -1.0, 3.14159])?;
/// let exact = CompressedCsr::<f32>::try_from_csr(a)?;
/// assert_eq!(exact.compressed_fraction(), 1.0);
/// assert_eq!(exact.bytes_per_entry(), (4.0 * 3.0 + 8.0 + 2.0 * 3.0 + 4.0 * 3.0) / 3.0);
/// let narrow = CompressedCsr::<f32, bf16>::try_from_csr(a)?; // asked for: bf16 values
/// assert!(narrow.max_rounding() > 0.0 && narrow.max_rounding() <= 2f64.powi(-8));
/// # Ok(())
/// # }
/// ```
#[derive(Debug, Clone)]
pub struct CompressedCsr<T, V = T> {
    stats: RowStats,
    row_offsets: Vec<u32>,
    /// Two words per segment, as `kernels_gpu::abi::CompressedArgs` describes.
    segments: Vec<u32>,
    deltas: Vec<u16>,
    escapes: Vec<u32>,
    values: Vec<V>,
    max_rounding: f64,
    _matrix: PhantomData<T>,
}

impl<T: Scalar, V: ValueStorage<T>> CompressedCsr<T, V> {
    /// Converts `a`. Refused with [`crate::Error::TooLarge`] when a dimension does not fit 32 bits,
    /// and with [`FormatError::ValueOutOfRange`] when a finite value lies beyond the range of `V`.
    /// Rows need not be sorted: a segment's base is its smallest column.
    pub fn try_from_csr(a: CsrRef<'_, T>) -> Result<Self> {
        check_u32_dims(&a)?;
        let (offsets, cols) = (a.row_offsets(), a.col_indices());
        let segment_count = a.nrows().div_ceil(SEGMENT_ROWS);
        let entries = |s: usize| offsets[s * SEGMENT_ROWS]..offsets[((s + 1) * SEGMENT_ROWS).min(a.nrows())];
        // Each segment's head, as the device's copy finds it (the columns fit 32 bits, checked).
        let heads: Vec<u32> = (0..segment_count)
            .into_par_iter()
            .map(|s| {
                let (lo, hi) = cols[entries(s)]
                    .iter()
                    .fold((u32::MAX, 0), |(lo, hi), &c| (lo.min(index32(c)), hi.max(index32(c))));
                compressed_head(lo, hi)
            })
            .collect();
        let table = SegmentTable::new(&heads, |s| entries(s).len());
        let (delta_offsets, escape_offsets) = (&table.delta_offsets, &table.escape_offsets);
        let segments = table.segments();
        let compresses = |s: usize| compressed_segment(heads[s]);
        let mut deltas = vec![0u16; delta_offsets[segment_count]];
        par_fill_segments(delta_offsets, &mut deltas, SEGMENTS_PER_TASK, |s, out| {
            if compresses(s) {
                for (d, &c) in out.iter_mut().zip(&cols[entries(s)]) {
                    #[allow(clippy::cast_possible_truncation)] // the segment spans at most `u16::MAX`
                    let delta = (index32(c) - heads[s]) as u16;
                    *d = delta;
                }
            }
        });
        let mut escapes = vec![0u32; escape_offsets[segment_count]];
        par_fill_segments(escape_offsets, &mut escapes, SEGMENTS_PER_TASK, |s, out| {
            for (e, &c) in out.iter_mut().zip(&cols[entries(s)]) {
                *e = index32(c);
            }
        });
        let max_rounding = max_rounding::<T, V>(&a)?;
        let values: Vec<V> = a.values().par_iter().map(|&v| V::round(v)).collect();
        Ok(Self {
            stats: a.stats(),
            row_offsets: offsets.iter().map(|&o| index32(o)).collect(),
            segments,
            deltas,
            escapes,
            values,
            max_rounding,
            _matrix: PhantomData,
        })
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.stats.rows, ncols: self.stats.cols, nnz: self.stats.nnz }
    }

    crate::formats::shape_accessors!();

    /// The row statistics of the matrix it was built from.
    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    /// The `nrows + 1` row offsets.
    pub fn row_offsets(&self) -> &[u32] {
        &self.row_offsets
    }

    /// Two words per segment: the base column, or `COMPRESSED_PLAIN` for a segment of plain
    /// columns; then the entries of the other kind before the segment.
    pub fn segments(&self) -> &[u32] {
        &self.segments
    }

    /// The 16-bit column offsets of the compressed segments' entries, in entry order.
    pub fn deltas(&self) -> &[u16] {
        &self.deltas
    }

    /// The plain columns of the other segments' entries, in entry order.
    pub fn escapes(&self) -> &[u32] {
        &self.escapes
    }

    /// The `nnz` values, rounded to `V`, in CSR order.
    pub fn values(&self) -> &[V] {
        &self.values
    }

    /// The column of every entry, decoded as the kernel does: the round trip of the conversion.
    pub fn columns(&self) -> Vec<u32> {
        let mut cols = Vec::with_capacity(self.nnz());
        for (s, seg) in self.segments.chunks_exact(2).enumerate() {
            let first = self.row_offsets[s * SEGMENT_ROWS] as usize;
            let end = self.row_offsets[((s + 1) * SEGMENT_ROWS).min(self.nrows())] as usize;
            let shift = seg[1] as usize;
            for k in first..end {
                cols.push(if compressed_segment(seg[0]) {
                    seg[0] + u32::from(self.deltas[k - shift])
                } else {
                    self.escapes[k - shift]
                });
            }
        }
        cols
    }

    /// The fraction of entries with 16-bit columns (1 for a matrix without entries).
    pub fn compressed_fraction(&self) -> f64 {
        if self.nnz() == 0 { 1.0 } else { self.deltas.len() as f64 / self.nnz() as f64 }
    }

    /// Bytes of the matrix on the device.
    pub fn device_bytes(&self) -> usize {
        4 * self.row_offsets.len()
            + column_bytes(self.segments.len() / 2, self.deltas.len(), self.escapes.len())
            + V::STORAGE.bytes() * self.values.len()
    }

    /// Bytes per entry, every array counted ([`CompressedCsr::device_bytes`] over `nnz`; the total
    /// for a matrix without entries). CSR with 32-bit indices takes `4 + size_of::<T>()` plus
    /// `4 (rows + 1) / nnz`.
    pub fn bytes_per_entry(&self) -> f64 {
        self.device_bytes() as f64 / self.nnz().max(1) as f64
    }

    /// The largest relative rounding `ρ = |v' - v| / |v|` of a value `v` stored as `v'` (finite,
    /// non-zero values; 0 when `V` is `T`). At most the unit roundoff of `V` (2^-24 for f32, 2^-11
    /// for f16, 2^-8 for bf16) unless a value falls below `V`'s normal range, up to 1 for a value
    /// that rounds to zero.
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// The factor `c` of the error bound of row `row` of a product in `T`:
    /// `|ŷ_i - (α A x + β y)_i| <= c (|α| Σ_k |a_ik x_k| + |β y_i|)`, with
    /// `c = ρ + (1 + ρ) γ_(n + 7)`, `n` the row's entries, `γ_m = m u / (1 - m u)` and `u` the unit
    /// roundoff of `T`.
    ///
    /// Why: the kernel multiplies stored values `a_ik (1 + δ_k)`, `|δ_k| <= ρ` (so the exact sum of
    /// their products is within `ρ Σ|a x|` of `Σ a x`, and `Σ|a' x| <= (1 + ρ) Σ|a x|`); a lane adds
    /// its `ceil(n / coop)` products with one `fma` rounding each, then the group's butterfly adds
    /// `log2(coop) <= 5` roundings, so each product passes at most `n + 5` roundings and the
    /// computed sum is within `γ_(n+5) Σ|a' x|` of the exact one (Higham, *Accuracy and Stability of
    /// Numerical Algorithms*, 2nd ed., section 3.1, Lemma 3.1 and (3.5)); `y = fma(α, s, β y)` adds
    /// two roundings, which `(1 + γ_m)(1 + u) <= 1 + γ_(m+1)` absorbs into `γ_(n+7)`.
    ///
    /// # Panics
    ///
    /// If `row >= nrows()`, like a slice index out of bounds.
    pub fn error_bound(&self, row: usize) -> f64 {
        let n = (self.row_offsets[row + 1] - self.row_offsets[row]) as f64;
        let rho = self.max_rounding;
        rho + (1.0 + rho) * gamma(n + 7.0, T::EPSILON / 2.0)
    }
}

/// Where each segment's entries go, from the segments' heads (a base column, or
/// `COMPRESSED_PLAIN`): the host's conversion and the device's copy (`Kernel::CsrCompressedCopy`,
/// whose heads the device finds) lay their streams out by this one count.
#[derive(Debug)]
pub(crate) struct SegmentTable<'h> {
    heads: &'h [u32],
    /// `segments + 1` offsets: the compressed segments' entries before each segment (so the
    /// entries of `deltas`).
    pub(crate) delta_offsets: Vec<usize>,
    /// The same for the plain segments (so the entries of `escapes`).
    pub(crate) escape_offsets: Vec<usize>,
}

impl<'h> SegmentTable<'h> {
    /// The table of segments with these heads, segment `s` holding `entries(s)` entries.
    pub(crate) fn new(heads: &'h [u32], entries: impl Fn(usize) -> usize) -> Self {
        let (mut delta_offsets, mut escape_offsets) = (vec![0], vec![0]);
        for (s, &head) in heads.iter().enumerate() {
            let (n, d, e) = (entries(s), delta_offsets[s], escape_offsets[s]);
            let compressed = compressed_segment(head);
            delta_offsets.push(if compressed { d + n } else { d });
            escape_offsets.push(if compressed { e } else { e + n });
        }
        Self { heads, delta_offsets, escape_offsets }
    }

    /// The kernels' two words a segment (`kernels_gpu::abi::CompressedArgs`): the head, then the
    /// entries of the other kind before the segment.
    pub(crate) fn segments(&self) -> Vec<u32> {
        let shift = |s: usize, head: u32| {
            if compressed_segment(head) { self.escape_offsets[s] } else { self.delta_offsets[s] }
        };
        self.heads.iter().enumerate().flat_map(|(s, &head)| [head, index32(shift(s, head))]).collect()
    }

    /// Entries with 16-bit columns, then entries with plain ones.
    pub(crate) fn streams(&self) -> (usize, usize) {
        (self.delta_offsets.last().copied().unwrap_or(0), self.escape_offsets.last().copied().unwrap_or(0))
    }

    /// Bytes of the compressed columns on the device ([`column_bytes`]).
    pub(crate) fn column_bytes(&self) -> usize {
        let (deltas, escapes) = self.streams();
        column_bytes(self.heads.len(), deltas, escapes)
    }
}

/// Bytes of compressed columns: two words a segment, 2 bytes an entry of a compressed segment, 4 an
/// entry of a plain one.
pub(crate) fn column_bytes(segments: usize, deltas: usize, escapes: usize) -> usize {
    8 * segments + 2 * deltas + 4 * escapes
}

/// `γ_m = m u / (1 - m u)` (infinite once `m u >= 1`).
pub(crate) fn gamma(m: f64, u: f64) -> f64 {
    let mu = m * u;
    if mu < 1.0 { mu / (1.0 - mu) } else { f64::INFINITY }
}

/// The largest relative rounding of a finite non-zero value of `a` stored as `V`; refuses a finite
/// value that `V` cannot hold, naming its row and entry.
pub(crate) fn max_rounding<T: Scalar, V: ValueStorage<T>>(a: &CsrRef<'_, T>) -> Result<f64> {
    let worst = a.values().par_iter().enumerate().try_fold(
        || 0.0f64,
        |worst, (entry, &v)| {
            let (v, s) = (v.to_f64(), V::round(v).widen());
            if v.is_finite() && !s.is_finite() {
                return Err(entry);
            }
            Ok(if v.is_finite() && v != 0.0 { worst.max((s - v).abs() / v.abs()) } else { worst })
        },
    );
    worst.try_reduce(|| 0.0, |a, b| Ok(a.max(b))).map_err(|entry| {
        let row = a.row_offsets().partition_point(|&o| o <= entry) - 1;
        FormatError::ValueOutOfRange { row, entry, storage: V::STORAGE.name() }.into()
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use kernels_gpu::abi::COMPRESSED_PLAIN;

    #[test]
    fn a_segment_whose_columns_span_too_far_keeps_plain_columns() {
        // Rows 0..32 are a diagonal (compressed); rows 32..40 each reach column 70,000 (plain).
        let n = 70_001;
        let mut offsets = vec![0];
        let mut cols = vec![];
        for r in 0..40 {
            cols.push(r);
            if r >= 32 {
                cols.push(70_000);
            }
            offsets.push(cols.len());
        }
        let values = vec![1.0f32; cols.len()];
        let a = CsrRef::try_new(40, n, &offsets, &cols, &values).unwrap();
        let c = CompressedCsr::<f32>::try_from_csr(a).unwrap();
        assert_eq!(c.segments(), [0, 0, COMPRESSED_PLAIN, 32]);
        assert_eq!(c.deltas().len(), 32);
        assert_eq!(c.escapes().len(), 16);
        let expected: Vec<u32> = cols.iter().map(|&c| index32(c)).collect();
        assert_eq!(c.columns(), expected);
        assert_eq!(c.max_rounding(), 0.0);
    }
}
