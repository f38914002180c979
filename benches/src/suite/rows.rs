//! What every generator shares: CSR arrays built directly, block of rows by block of rows in
//! parallel, and their values. Each block of rows draws from its own ChaCha8 stream, and each chunk of
//! values from another, so that a matrix depends on its seed alone, not on the number of threads.

use nalgebra_sparse::CsrMatrix;
use rand::{Rng, RngCore, SeedableRng};
use rand_chacha::ChaCha8Rng;
use rayon::prelude::*;

/// Rows per block, each block with its own random stream: enough blocks for rayon to balance even the
/// suite's shortest matrix (rail-like, 268 rows at its tiny size), few enough that the per-block
/// bookkeeping (a stream, two vectors) is negligible.
const BLOCK_ROWS: usize = 64;

/// Values per chunk with its own random stream (512 KiB of f64).
const VALUE_CHUNK: usize = 1 << 16;

/// The first stream that draws values; the streams below it draw structure, one per block of rows.
const VALUE_STREAMS: u64 = 1 << 63;

/// Where a generator writes one row: [`RowWriter::push`] and the samplers append column indices, in
/// any order and possibly repeated (the row is sorted and deduplicated after the generator returns).
#[derive(Debug)]
pub(crate) struct RowWriter {
    rng: ChaCha8Rng,
    cols: Vec<usize>,
    /// Scratch of [`RowWriter::sample`]: one bit per candidate column, all clear between calls.
    bitmap: Vec<u64>,
}

impl RowWriter {
    /// The random stream of the current block of rows.
    pub(crate) fn rng(&mut self) -> &mut ChaCha8Rng {
        &mut self.rng
    }

    pub(crate) fn push(&mut self, col: usize) {
        self.cols.push(col);
    }

    /// `k` distinct columns drawn uniformly from `start .. start + len` (all of them if `k >= len`),
    /// appended in increasing order. Floyd's algorithm over a bitmap: O(k + len / 64).
    pub(crate) fn sample(&mut self, start: usize, len: usize, k: usize) {
        let words = len.div_ceil(64);
        if self.bitmap.len() < words {
            self.bitmap.resize(words, 0);
        }
        for j in len - k.min(len)..len {
            let t = self.rng.random_range(0..=j);
            let pick = if self.bitmap[t / 64] >> (t % 64) & 1 == 1 { j } else { t };
            self.bitmap[pick / 64] |= 1 << (pick % 64);
        }
        for (w, word) in self.bitmap[..words].iter_mut().enumerate() {
            let mut bits = std::mem::take(word);
            while bits != 0 {
                self.cols.push(start + w * 64 + bits.trailing_zeros() as usize);
                bits &= bits - 1;
            }
        }
    }

    /// Each column of `start .. start + len` with probability `p`, independently, appended in
    /// increasing order. Jumps from one chosen column to the next by geometric gaps: O(entries).
    pub(crate) fn bernoulli(&mut self, start: usize, len: usize, p: f64) {
        if p >= 1.0 {
            self.cols.extend(start..start + len);
            return;
        }
        if p <= 0.0 {
            return;
        }
        let log_miss = (-p).ln_1p();
        let mut col = start;
        let mut left = len;
        loop {
            // 1 - u lies in (0, 1], so the gap is finite: P(gap >= g) = (1 - p)^g.
            let u: f64 = self.rng.random();
            let gap = ((1.0 - u).ln() / log_miss).floor();
            if gap >= left as f64 {
                return;
            }
            let gap = gap as usize;
            self.cols.push(col + gap);
            col += gap + 1;
            left -= gap + 1;
        }
    }
}

/// The matrix whose row `r` has the columns `row(r, writer)` appends, with values from
/// [`random_values`]. Rows are generated in parallel blocks, each from its own stream of `seed`.
///
/// Panics if a generator appends a column `>= ncols`: a bug of the generator, not an input error.
pub(crate) fn build(
    nrows: usize,
    ncols: usize,
    seed: u64,
    row: impl Fn(usize, &mut RowWriter) + Sync,
) -> CsrMatrix<f64> {
    let blocks: Vec<(Vec<usize>, Vec<usize>)> = (0..nrows.div_ceil(BLOCK_ROWS))
        .into_par_iter()
        .map(|block| {
            let rows = block * BLOCK_ROWS..nrows.min((block + 1) * BLOCK_ROWS);
            let mut writer =
                RowWriter { rng: stream(seed, block as u64), cols: Vec::new(), bitmap: Vec::new() };
            let mut ends = Vec::with_capacity(rows.len());
            for r in rows {
                let start = writer.cols.len();
                row(r, &mut writer);
                sort_dedup_tail(&mut writer.cols, start);
                ends.push(writer.cols.len());
            }
            (ends, writer.cols)
        })
        .collect();

    let nnz = blocks.iter().map(|(_, cols)| cols.len()).sum();
    let mut offsets = Vec::with_capacity(nrows + 1);
    let mut col_indices = Vec::with_capacity(nnz);
    offsets.push(0);
    for (ends, cols) in blocks {
        let base = col_indices.len();
        offsets.extend(ends.iter().map(|end| base + end));
        col_indices.extend_from_slice(&cols);
    }
    let values = random_values(nnz, seed);
    CsrMatrix::try_from_csr_data(nrows, ncols, offsets, col_indices, values)
        .unwrap_or_else(|e| panic!("a suite generator built invalid CSR arrays: {e}"))
}

/// Sorts `cols[start..]` and removes its repeated entries.
fn sort_dedup_tail(cols: &mut Vec<usize>, start: usize) {
    if cols[start..].is_sorted_by(|a, b| a < b) {
        return;
    }
    cols[start..].sort_unstable();
    let mut kept = start;
    for i in start..cols.len() {
        if kept == start || cols[i] != cols[kept - 1] {
            cols[kept] = cols[i];
            kept += 1;
        }
    }
    cols.truncate(kept);
}

/// `nnz` values drawn by [`value`], in parallel chunks with a stream each.
fn random_values(nnz: usize, seed: u64) -> Vec<f64> {
    let mut values = vec![0.0; nnz];
    values.par_chunks_mut(VALUE_CHUNK).enumerate().for_each(|(chunk, out)| {
        let mut rng = stream(seed, VALUE_STREAMS + chunk as u64);
        out.iter_mut().for_each(|v| *v = value(rng.next_u32()));
    });
    values
}

/// The value of 32 random bits: `(2k + 1) / 2^24 - 1` for their top 24 bits `k`, uniform over the odd
/// multiples of 2^-24 in (-1, 1). Never zero, and exact in f32, so the f32 copy of a suite matrix is the
/// same matrix as the f64 one.
pub(crate) fn value(bits: u32) -> f64 {
    const HALF: f64 = (1u32 << 24) as f64;
    (2.0 * f64::from(bits >> 8) + 1.0) / HALF - 1.0
}

/// Stream `stream` of the ChaCha8 generator keyed by `seed`.
fn stream(seed: u64, stream: u64) -> ChaCha8Rng {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    rng.set_stream(stream);
    rng
}

/// A hash of `(seed, a, b)`, for structure that rows must agree on without sharing a stream (the two
/// halves of a symmetric pattern, a mesh cell seen from its corners): SplitMix64's finaliser, twice.
pub(crate) fn hash(seed: u64, a: u64, b: u64) -> u64 {
    mix(mix(seed ^ mix(a)) ^ b)
}

/// Whether `(seed, a, b)` is among a fraction `p` of all keys.
pub(crate) fn chance(seed: u64, a: u64, b: u64, p: f64) -> bool {
    (hash(seed, a, b) >> 11) as f64 * f64::EPSILON / 2.0 < p
}

fn mix(z: u64) -> u64 {
    let z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    let z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_odd_multiples_of_2_pow_minus_24_in_the_open_interval() {
        for bits in [0, 255, 256, u32::MAX / 2, u32::MAX / 2 + 1, u32::MAX - 255, u32::MAX] {
            let v = value(bits);
            assert!(v > -1.0 && v < 1.0 && v != 0.0, "{bits}: {v}");
            assert_eq!(f64::from(v as f32), v, "{bits}: {v} is not exact in f32");
        }
        assert_eq!(value(0), -1.0 + 2f64.powi(-24));
        assert_eq!(value(u32::MAX), 1.0 - 2f64.powi(-24));
    }

    #[test]
    fn sample_draws_distinct_sorted_columns_and_leaves_the_bitmap_clear() {
        let mut w = RowWriter { rng: stream(3, 0), cols: Vec::new(), bitmap: Vec::new() };
        for (start, len, k) in [(10, 1000, 400), (0, 70, 70), (5, 70, 200), (0, 1, 1), (7, 64, 0)] {
            w.cols.clear();
            w.sample(start, len, k);
            assert_eq!(w.cols.len(), k.min(len));
            assert!(w.cols.windows(2).all(|p| p[0] < p[1]));
            assert!(w.cols.iter().all(|&c| (start..start + len).contains(&c)));
            assert!(w.bitmap.iter().all(|&b| b == 0));
        }
    }

    #[test]
    fn bernoulli_keeps_about_p_of_the_columns_in_order() {
        let mut w = RowWriter { rng: stream(4, 0), cols: Vec::new(), bitmap: Vec::new() };
        w.bernoulli(100, 100_000, 0.01);
        assert!((850..1150).contains(&w.cols.len()), "{}", w.cols.len());
        assert!(w.cols.windows(2).all(|p| p[0] < p[1]));
        assert!(w.cols.iter().all(|&c| (100..100_100).contains(&c)));
        w.cols.clear();
        w.bernoulli(3, 5, 1.0);
        assert_eq!(w.cols, [3, 4, 5, 6, 7]);
        w.cols.clear();
        w.bernoulli(3, 5, 0.0);
        assert!(w.cols.is_empty());
    }

    #[test]
    fn rows_are_sorted_and_deduplicated() {
        let mut cols = vec![9, 5, 3, 5, 1, 3, 3];
        sort_dedup_tail(&mut cols, 1);
        assert_eq!(cols, [9, 1, 3, 5]);
        let m = build(3, 10, 1, |r, w| {
            for c in [7, 2, 7, r, 2] {
                w.push(c);
            }
        });
        assert_eq!(m.row(0).col_indices(), [0, 2, 7]);
        assert_eq!(m.row(2).col_indices(), [2, 7]);
    }

    #[test]
    fn chance_hits_about_the_fraction_asked() {
        let hits = (0..100_000).filter(|&i| chance(9, i, 17, 0.3)).count();
        assert!((29_000..31_000).contains(&hits), "{hits}");
    }
}
