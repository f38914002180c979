//! Matrix Market files (NIST's exchange format, the SuiteSparse collection's) read into CSR.
//!
//! The coordinate format with `real`, `integer` or `pattern` values, stored `general`, `symmetric` or
//! `skew-symmetric`. Symmetric files hold the lower triangle; it is mirrored, negated for
//! skew-symmetric ones. Repeated entries are summed. A `pattern` file has no values: each entry gets
//! a value made from a hash of its position (see [`pattern_value`]).
//!
//! Hand-written rather than nalgebra-sparse's reader (`io::load_coo_from_matrix_market_str`), which
//! was measured first: it parses the whole file into a syntax tree before reading an entry (22 s and
//! 4.5 GB of memory for a 285 MB file of 10 million entries; this reader streams lines, 1.3 s for a
//! 323 MB one), it gives no line number for a wrong count, a bad index or an entry above the diagonal,
//! it reads `integer` and `pattern` files only into integer and unit types, and it refuses a blank
//! line before the size line.
//!
//! # Bad input and memory
//!
//! Every malformed input gets [`Error::MatrixMarket`] naming the line (and the file, when read from a
//! path); none panics or aborts. Memory is bounded by what the input holds, never by what it declares:
//!
//! - a line is buffered up to [`MAX_LINE_BYTES`]; a longer one is refused;
//! - the entries are kept as they are read (16 bytes each, twice for a mirrored one), with nothing
//!   reserved from the declared count, and turned into CSR only once the count has been checked;
//! - the one array not sized by the entries, the `nrows + 1` row offsets, is allocated only for at
//!   most [`MAX_ROWS_WITHOUT_ENTRIES`] rows plus [`MAX_ROWS_PER_ENTRY`] per declared entry, a limit
//!   checked on the size line (a size line of `4294967295 4294967295 0` would otherwise ask for
//!   32 GiB of offsets).
//!
//! The CSR is built here, not by nalgebra-sparse's COO to CSR conversion (which allocates `nrows + 1`
//! offsets several times): a counting sort by row, stable so that repeated entries are summed in file
//! order, then each row sorted by column where it is not already. At its peak the reader holds about
//! 32 bytes per entry (the entries as read, and the CSR arrays they are sorted into) and the offsets.
//! Measured on a 425 MB file of 12 million entries: 1.8 s and 390 MB, where nalgebra-sparse's
//! conversion took 2.1 s and 700 MB.
//!
//! Comments (`%` lines) are skipped as bytes, so they may hold any encoding; the header, size and entry
//! lines must be UTF-8 (ASCII in practice). Values must be finite and within the range of the element
//! type: `nan`, `inf` and `1e400` are refused in both precisions, `1e39` in f32, each naming its line,
//! and so are repeated entries whose sum leaves the range, naming their position. Values round to the
//! nearest element (`1e-50` reads as 0 in f32).

use crate::formats::convert::index32;
use crate::formats::limits::max_rows;
use crate::scalar::Scalar;
use crate::{Error, Result};
use nalgebra_sparse::CsrMatrix;
use std::fs::File;
use std::io::{BufRead, BufReader, Read};
use std::path::{Path, PathBuf};

/// The largest number of rows or columns read: the kernels index with 32 bits.
pub const MAX_DIMENSION: usize = u32::MAX as usize;

/// The longest line read, in bytes, its line ending not counted: a file without line breaks must not
/// be buffered whole. An entry line takes about 50 bytes (two 10-digit indices and a 17-digit value
/// with its exponent), SuiteSparse's comment lines under 100; 1 MiB leaves room for any real file.
pub const MAX_LINE_BYTES: usize = 1 << 20;

/// The limits on the rows a file may declare for its entries, which the row offsets are sized by
/// (two entries for a stored entry of a symmetric file, which is mirrored): those of every count an
/// input declares (`formats::limits`).
pub use crate::formats::{MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES};

/// Reads the Matrix Market file at `path`; an error names the file.
pub fn read_matrix_market<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| Error::Io { path: Some(path.to_path_buf()), source })?;
    read(BufReader::new(file)).map_err(|e| match e {
        Error::MatrixMarket { path: None, line, message } => {
            Error::MatrixMarket { path: Some(path.to_path_buf()), line, message }
        }
        Error::Io { path: None, source } => Error::Io { path: Some(path.to_path_buf()), source },
        other => other,
    })
}

/// Reads a Matrix Market file from `reader`.
pub fn read_matrix_market_from<T: Scalar>(reader: impl BufRead) -> Result<CsrMatrix<T>> {
    read(reader)
}

/// Parses Matrix Market text.
pub fn parse_matrix_market<T: Scalar>(text: &str) -> Result<CsrMatrix<T>> {
    read(text.as_bytes())
}

/// The Matrix Market files that `path` names: itself if it is a file, else the `.mtx` files in it (not
/// in its subfolders), sorted by name; a symbolic link counts as what it points to. An empty list if a
/// folder holds none. A link to nowhere named `.mtx` is an error naming it.
pub fn matrix_market_files(path: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let path = path.as_ref();
    let io_error = |at: &Path| {
        let at = at.to_path_buf();
        move |source| Error::Io { path: Some(at), source }
    };
    if !path.metadata().map_err(io_error(path))?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in path.read_dir().map_err(io_error(path))? {
        let file = entry.map_err(io_error(path))?.path();
        let is_mtx = file.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtx"));
        // `Path::metadata` follows links, where `DirEntry::file_type` does not.
        if is_mtx && file.metadata().map_err(io_error(&file))?.is_file() {
            files.push(file);
        }
    }
    files.sort();
    Ok(files)
}

/// The value a `pattern` file's entry at (0-based) `(row, col)` gets: `(2k + 1) / 2^24 - 1` for 24 bits
/// `k` of a hash of the position. In (-1, 1), never zero, exact in f32 and f64 alike, and the same on
/// every read. A mirrored entry of a symmetric file gets the value of the stored one.
pub fn pattern_value(row: usize, col: usize) -> f64 {
    let mut z = (row as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ col as u64;
    // SplitMix64's finaliser.
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    const HALF: f64 = (1u64 << 24) as f64;
    (2.0 * (z >> 40) as f64 + 1.0) / HALF - 1.0
}

/// The kinds of value a file stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Real,
    Integer,
    Pattern,
}

/// Which entries a file stores.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Symmetry {
    General,
    /// The lower triangle of `A = A^T`.
    Symmetric,
    /// The strict lower triangle of `A = -A^T`.
    SkewSymmetric,
}

/// An entry as read, 0-based (16 bytes: indices are below [`MAX_DIMENSION`]).
#[derive(Debug, Clone, Copy)]
struct Entry {
    row: u32,
    col: u32,
    value: f64,
}

/// The lines of the input, numbered from 1, as bytes.
struct Lines<R> {
    reader: R,
    /// The current line, its line ending included; at most [`MAX_LINE_BYTES`] and the ending.
    bytes: Vec<u8>,
    /// Its number; 0 before the first.
    number: usize,
}

impl<R: BufRead> Lines<R> {
    /// Reads the next line into `bytes`; false at the end of the input.
    fn advance(&mut self) -> Result<bool> {
        self.bytes.clear();
        // One byte past the limit tells a line of the limit's length from a longer one.
        let limit = MAX_LINE_BYTES as u64 + 1;
        let read = (&mut self.reader)
            .take(limit)
            .read_until(b'\n', &mut self.bytes)
            .map_err(|source| Error::Io { path: None, source })?;
        if read == 0 {
            return Ok(false);
        }
        self.number += 1;
        if self.bytes.len() > MAX_LINE_BYTES && self.bytes.last() != Some(&b'\n') {
            return Err(error(self.number, format!("the line is longer than {MAX_LINE_BYTES} bytes")));
        }
        Ok(true)
    }

    /// Reads the next line that is neither blank nor a comment (`%`): those may stand anywhere after
    /// the header. False at the end of the input.
    fn advance_to_data(&mut self) -> Result<bool> {
        while self.advance()? {
            let line = self.bytes.trim_ascii_start();
            if !(line.is_empty() || line[0] == b'%') {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The current line as text.
    fn text(&self) -> Result<&str> {
        std::str::from_utf8(&self.bytes)
            .map_err(|_| error(self.number, "the line is not text (invalid UTF-8)"))
    }
}

fn error(line: usize, message: impl Into<String>) -> Error {
    Error::MatrixMarket { path: None, line: Some(line), message: message.into() }
}

fn read<T: Scalar>(reader: impl BufRead) -> Result<CsrMatrix<T>> {
    let mut lines = Lines { reader, bytes: Vec::new(), number: 0 };
    if !lines.advance()? {
        return Err(error(1, "the input is empty"));
    }
    let (field, symmetry) = parse_header(&String::from_utf8_lossy(&lines.bytes))?;

    if !lines.advance_to_data()? {
        return Err(error(lines.number + 1, "the file ends before its size line"));
    }
    let size_line = lines.number;
    let (nrows, ncols, declared) = parse_size(lines.text()?, size_line, symmetry)?;

    // Nothing reserved from `declared`: the entries grow as they come.
    let mut entries: Vec<Entry> = Vec::new();
    let mut count = 0;
    while lines.advance_to_data()? {
        let line = lines.number;
        if count == declared {
            return Err(error(line, format!("more entries than the {declared} the size line declares")));
        }
        count += 1;
        let entry = parse_entry::<T>(lines.text()?, line, field, nrows, ncols)?;
        entries.push(entry);
        if let Some(mirrored) = mirror(symmetry, entry).map_err(|message| error(line, message))? {
            entries.push(mirrored);
        }
    }
    if count < declared {
        let message = format!("the size line declares {declared} entries, but the file holds {count}");
        return Err(error(size_line, message));
    }
    csr_from_entries(nrows, ncols, entries)
}

/// The CSR matrix of `entries`, in range of an `nrows x ncols` matrix whose row count passed
/// [`parse_size`]'s limit: rows by a stable counting sort, then each row sorted by column (only where
/// it is not already: the column-major order of most files comes out sorted) and its repeated columns
/// summed in file order. Sums are taken in f64, so that an f32 matrix is rounded once.
fn csr_from_entries<T: Scalar>(nrows: usize, ncols: usize, entries: Vec<Entry>) -> Result<CsrMatrix<T>> {
    // Counts of row r at offsets[r + 1]; their prefix sums make offsets[r] the start of row r, and
    // offsets[r] serves as row r's cursor while scattering, ending as the start of row r + 1.
    let mut offsets = vec![0usize; nrows + 1];
    for e in &entries {
        offsets[e.row as usize + 1] += 1;
    }
    for r in 0..nrows {
        offsets[r + 1] += offsets[r];
    }
    let mut cols = vec![0usize; entries.len()];
    let mut values = vec![0f64; entries.len()];
    for e in entries {
        let k = &mut offsets[e.row as usize];
        (cols[*k], values[*k]) = (e.col as usize, e.value);
        *k += 1;
    }
    offsets.copy_within(0..nrows, 1);
    offsets[0] = 0;

    // Each row sorted and summed, written back compacted: the write cursor never passes the read one.
    let mut scratch: Vec<(usize, f64)> = Vec::new();
    let mut written = 0;
    let mut start = 0;
    for r in 0..nrows {
        let end = offsets[r + 1];
        if !cols[start..end].is_sorted() {
            scratch.clear();
            scratch.extend(cols[start..end].iter().copied().zip(values[start..end].iter().copied()));
            scratch.sort_by_key(|&(c, _)| c); // stable: repeats keep their file order
            for (k, &(c, v)) in (start..end).zip(&scratch) {
                (cols[k], values[k]) = (c, v);
            }
        }
        let row_start = written;
        for k in start..end {
            if written > row_start && cols[written - 1] == cols[k] {
                values[written - 1] += values[k];
            } else {
                (cols[written], values[written]) = (cols[k], values[k]);
                written += 1;
            }
        }
        offsets[r + 1] = written;
        start = end;
    }
    cols.truncate(written);
    values.truncate(written);

    let values = values
        .iter()
        .enumerate()
        .map(|(k, &v)| {
            let rounded = T::from_f64(v);
            if rounded.to_f64().is_finite() {
                return Ok(rounded);
            }
            let row = offsets.partition_point(|&o| o <= k) - 1;
            Err(Error::MatrixMarket {
                path: None,
                line: None,
                message: format!(
                    "the repeated entries at ({}, {}) sum to {v:e}, beyond the range of {}",
                    row + 1,
                    cols[k] + 1,
                    T::NAME
                ),
            })
        })
        .collect::<Result<Vec<T>>>()?;
    Ok(CsrMatrix::try_from_csr_data(nrows, ncols, offsets, cols, values)
        .expect("rows counted, sorted and summed form a valid CSR matrix"))
}

/// The mirror image `(c, r)` of a stored entry `(r, c)`, if the file's symmetry implies one; an error
/// message if the entry is outside the triangle the file may store.
fn mirror(symmetry: Symmetry, e: Entry) -> Result<Option<Entry>, String> {
    let at = || format!("entry ({}, {})", e.row as u64 + 1, e.col as u64 + 1);
    let image = |value| Entry { row: e.col, col: e.row, value };
    match symmetry {
        Symmetry::General => Ok(None),
        Symmetry::Symmetric if e.col > e.row => {
            Err(format!("{} lies above the diagonal: a symmetric file holds the lower triangle", at()))
        }
        Symmetry::Symmetric => Ok((e.row != e.col).then(|| image(e.value))),
        Symmetry::SkewSymmetric if e.col >= e.row => Err(format!(
            "{} lies on or above the diagonal: a skew-symmetric file holds the strict lower triangle",
            at()
        )),
        Symmetry::SkewSymmetric => Ok(Some(image(-e.value))),
    }
}

/// `%%MatrixMarket matrix coordinate <field> <symmetry>`, keywords in any case.
fn parse_header(line: &str) -> Result<(Field, Symmetry)> {
    let words: Vec<String> = line.split_ascii_whitespace().map(str::to_ascii_lowercase).collect();
    let words: Vec<&str> = words.iter().map(String::as_str).collect();
    let [banner, object, format, field, symmetry] = words[..] else {
        return Err(error(
            1,
            "the header must be `%%MatrixMarket matrix coordinate <field> <symmetry>` (5 words)",
        ));
    };
    if banner != "%%matrixmarket" {
        return Err(error(1, "not a Matrix Market file: the first line must start with %%MatrixMarket"));
    }
    if object != "matrix" {
        return Err(error(1, format!("object `{object}` is not supported: only `matrix`")));
    }
    match format {
        "coordinate" => {}
        "array" => return Err(error(1, "the dense `array` format is not supported: only `coordinate`")),
        other => return Err(error(1, format!("unknown format `{other}`"))),
    }
    let field = match field {
        "real" => Field::Real,
        "integer" => Field::Integer,
        "pattern" => Field::Pattern,
        "complex" => return Err(error(1, "`complex` values are not supported: only real ones")),
        other => return Err(error(1, format!("unknown field `{other}`"))),
    };
    let symmetry = match symmetry {
        "general" => Symmetry::General,
        "symmetric" => Symmetry::Symmetric,
        "skew-symmetric" if field == Field::Pattern => {
            return Err(error(1, "a `pattern` matrix cannot be `skew-symmetric`"));
        }
        "skew-symmetric" => Symmetry::SkewSymmetric,
        "hermitian" => return Err(error(1, "`hermitian` matrices are complex: not supported")),
        other => return Err(error(1, format!("unknown symmetry `{other}`"))),
    };
    Ok((field, symmetry))
}

/// `<rows> <columns> <entries>`, refused when the row offsets would exceed the reader's limit
/// ([`MAX_ROWS_WITHOUT_ENTRIES`] plus [`MAX_ROWS_PER_ENTRY`] per entry).
fn parse_size(text: &str, line: usize, symmetry: Symmetry) -> Result<(usize, usize, usize)> {
    let words: Vec<&str> = text.split_ascii_whitespace().collect();
    let [rows, cols, entries] = words[..] else {
        return Err(error(line, "the size line must be `<rows> <columns> <entries>`"));
    };
    let number = |word: &str, what: &str| {
        word.parse::<usize>().map_err(|_| error(line, format!("`{word}` is not a number of {what}")))
    };
    let (nrows, ncols, entries) =
        (number(rows, "rows")?, number(cols, "columns")?, number(entries, "entries")?);
    if nrows.max(ncols) > MAX_DIMENSION {
        return Err(error(line, format!("{nrows} x {ncols} exceeds {MAX_DIMENSION} rows or columns")));
    }
    if symmetry != Symmetry::General && nrows != ncols {
        return Err(error(line, format!("a {nrows} x {ncols} matrix cannot be symmetric")));
    }
    let held = if symmetry == Symmetry::General { entries } else { entries.saturating_mul(2) };
    let limit = max_rows(held);
    if nrows > limit {
        return Err(error(
            line,
            format!(
                "{nrows} rows for {entries} entries exceed the reader's limit of {limit} rows \
                 (MAX_ROWS_WITHOUT_ENTRIES + MAX_ROWS_PER_ENTRY per entry): their row offsets would \
                 take {} bytes",
                (nrows as u128 + 1) * size_of::<usize>() as u128
            ),
        ));
    }
    Ok((nrows, ncols, entries))
}

/// `<row> <column> [<value>]`, indices from 1, the value finite in `T`; returns 0-based indices.
fn parse_entry<T: Scalar>(
    text: &str,
    line: usize,
    field: Field,
    nrows: usize,
    ncols: usize,
) -> Result<Entry> {
    let mut words = text.split_ascii_whitespace();
    let expected = if field == Field::Pattern { "`<row> <column>`" } else { "`<row> <column> <value>`" };
    let wrong_shape = || error(line, format!("an entry must be {expected}"));
    let index = |word: Option<&str>, what: &str, len: usize| -> Result<usize> {
        let word = word.ok_or_else(wrong_shape)?;
        let i = word.parse::<usize>().map_err(|_| error(line, format!("`{word}` is not a {what} index")))?;
        if i == 0 || i > len {
            return Err(error(line, format!("{what} index {i} is out of range 1..={len}")));
        }
        Ok(i - 1)
    };
    let row = index(words.next(), "row", nrows)?;
    let col = index(words.next(), "column", ncols)?;
    let value = match field {
        Field::Pattern => pattern_value(row, col),
        Field::Real => {
            let word = words.next().ok_or_else(wrong_shape)?;
            let v = word
                .parse::<f64>()
                .map_err(|_| error(line, format!("the value `{word}` is not a real number")))?;
            if !T::from_f64(v).to_f64().is_finite() {
                return Err(error(
                    line,
                    format!(
                        "the value `{word}` is not a finite number in {} (nan, inf or too large)",
                        T::NAME
                    ),
                ));
            }
            v
        }
        Field::Integer => {
            let word = words.next().ok_or_else(wrong_shape)?;
            let v = word
                .parse::<i64>()
                .map_err(|_| error(line, format!("the value `{word}` is not an integer")))?;
            // Within f32's range: rounds to the nearest representable value.
            v as f64
        }
    };
    if words.next().is_some() {
        return Err(wrong_shape());
    }
    // Both indices are below a dimension of at most `MAX_DIMENSION`, so they fit 32 bits.
    Ok(Entry { row: index32(row), col: index32(col), value })
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    #[allow(clippy::cast_possible_truncation)] // rounding to f32 is what the test checks
    fn pattern_values_are_nonzero_exact_in_f32_and_in_range() {
        for row in 0..300 {
            for col in (0..1 << 20).step_by(4099) {
                let v = pattern_value(row, col);
                assert!(v > -1.0 && v < 1.0 && v != 0.0, "({row}, {col}): {v}");
                assert_eq!(f64::from(v as f32), v);
            }
        }
        assert_ne!(pattern_value(1, 2), pattern_value(2, 1));
    }
}
