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
//! Summing repeated entries and sorting rows is still nalgebra-sparse's (COO to CSR).

use crate::scalar::Scalar;
use crate::{Error, Result};
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use std::fs::File;
use std::io::{BufRead, BufReader, ErrorKind};
use std::path::{Path, PathBuf};

/// The largest number of rows or columns read: the kernels index with 32 bits, and a larger size line
/// would make the reader allocate row offsets it cannot use.
pub const MAX_DIMENSION: usize = u32::MAX as usize;

/// Entries reserved before reading at the most, whatever the size line declares: a malformed count
/// must not allocate gigabytes up front (the arrays grow as entries come).
const MAX_RESERVE: usize = 1 << 24;

/// Reads the Matrix Market file at `path`.
pub fn read_matrix_market<T: Scalar>(path: impl AsRef<Path>) -> Result<CsrMatrix<T>> {
    let path = path.as_ref();
    let file = File::open(path).map_err(|source| Error::Io { path: Some(path.to_path_buf()), source })?;
    read(BufReader::new(file), Some(path))
}

/// Reads a Matrix Market file from `reader`.
pub fn read_matrix_market_from<T: Scalar>(reader: impl BufRead) -> Result<CsrMatrix<T>> {
    read(reader, None)
}

/// Parses Matrix Market text.
pub fn parse_matrix_market<T: Scalar>(text: &str) -> Result<CsrMatrix<T>> {
    read(text.as_bytes(), None)
}

/// The Matrix Market files that `path` names: itself if it is a file, else the `.mtx` files in it (not
/// in its subfolders), sorted by name. An empty list if a folder holds none.
pub fn matrix_market_files(path: impl AsRef<Path>) -> Result<Vec<PathBuf>> {
    let path = path.as_ref();
    let io_error = |source| Error::Io { path: Some(path.to_path_buf()), source };
    if !path.metadata().map_err(io_error)?.is_dir() {
        return Ok(vec![path.to_path_buf()]);
    }
    let mut files = Vec::new();
    for entry in path.read_dir().map_err(io_error)? {
        let entry = entry.map_err(io_error)?;
        let file = entry.path();
        let is_mtx = file.extension().is_some_and(|e| e.eq_ignore_ascii_case("mtx"));
        if is_mtx && entry.file_type().map_err(io_error)?.is_file() {
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

/// The lines of the input, numbered from 1.
struct Lines<R> {
    reader: R,
    path: Option<PathBuf>,
    /// The current line.
    text: String,
    /// Its number; 0 before the first.
    number: usize,
}

impl<R: BufRead> Lines<R> {
    /// Reads the next line into `text`; false at the end of the input.
    fn advance(&mut self) -> Result<bool> {
        self.text.clear();
        match self.reader.read_line(&mut self.text) {
            Ok(0) => Ok(false),
            Ok(_) => {
                self.number += 1;
                Ok(true)
            }
            Err(e) if e.kind() == ErrorKind::InvalidData => {
                Err(error(self.number + 1, "the line is not text (invalid UTF-8)"))
            }
            Err(source) => Err(Error::Io { path: self.path.clone(), source }),
        }
    }

    /// Reads the next line that is neither blank nor a comment (`%`): those may stand anywhere after
    /// the header. False at the end of the input.
    fn advance_to_data(&mut self) -> Result<bool> {
        while self.advance()? {
            let line = self.text.trim_ascii_start();
            if !(line.is_empty() || line.starts_with('%')) {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

fn error(line: usize, message: impl Into<String>) -> Error {
    Error::MatrixMarket { line: Some(line), message: message.into() }
}

fn read<T: Scalar>(reader: impl BufRead, path: Option<&Path>) -> Result<CsrMatrix<T>> {
    let mut lines = Lines { reader, path: path.map(Path::to_path_buf), text: String::new(), number: 0 };
    if !lines.advance()? {
        return Err(error(1, "the input is empty"));
    }
    let (field, symmetry) = parse_header(&lines.text)?;

    if !lines.advance_to_data()? {
        return Err(error(lines.number + 1, "the file ends before its size line"));
    }
    let size_line = lines.number;
    let (nrows, ncols, declared) = parse_size(&lines.text, size_line, symmetry)?;

    let capacity = if symmetry == Symmetry::General { declared } else { declared.saturating_mul(2) };
    let capacity = capacity.min(MAX_RESERVE);
    let mut rows = Vec::with_capacity(capacity);
    let mut cols = Vec::with_capacity(capacity);
    let mut vals = Vec::<f64>::with_capacity(capacity);
    let mut count = 0;
    while lines.advance_to_data()? {
        let line = lines.number;
        if count == declared {
            return Err(error(line, format!("more entries than the {declared} the size line declares")));
        }
        count += 1;
        let (r, c, v) = parse_entry(&lines.text, line, field, nrows, ncols)?;
        rows.push(r);
        cols.push(c);
        vals.push(v);
        if let Some(mirrored) = mirror(symmetry, r, c, v).map_err(|message| error(line, message))? {
            rows.push(c);
            cols.push(r);
            vals.push(mirrored);
        }
    }
    if count < declared {
        let message = format!("the size line declares {declared} entries, but the file holds {count}");
        return Err(error(size_line, message));
    }
    // Repeated entries are summed in f64, so that an f32 matrix is rounded once.
    let coo = CooMatrix::try_from_triplets(nrows, ncols, rows, cols, vals)
        .expect("indices were checked against the size line");
    let (pattern, values) = CsrMatrix::from(&coo).into_pattern_and_values();
    let values = values.into_iter().map(T::from_f64).collect();
    Ok(CsrMatrix::try_from_pattern_and_values(pattern, values).expect("one value per entry"))
}

/// The value of the mirror image `(c, r)` of a stored entry `(r, c)` of value `v`, if the file's
/// symmetry implies one; an error message if the entry is outside the triangle the file may store.
fn mirror(symmetry: Symmetry, r: usize, c: usize, v: f64) -> Result<Option<f64>, String> {
    let at = || format!("entry ({}, {})", r + 1, c + 1);
    match symmetry {
        Symmetry::General => Ok(None),
        Symmetry::Symmetric if c > r => {
            Err(format!("{} lies above the diagonal: a symmetric file holds the lower triangle", at()))
        }
        Symmetry::Symmetric => Ok((r != c).then_some(v)),
        Symmetry::SkewSymmetric if c >= r => Err(format!(
            "{} lies on or above the diagonal: a skew-symmetric file holds the strict lower triangle",
            at()
        )),
        Symmetry::SkewSymmetric => Ok(Some(-v)),
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

/// `<rows> <columns> <entries>`.
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
    Ok((nrows, ncols, entries))
}

/// `<row> <column> [<value>]`, indices from 1; returns 0-based indices.
fn parse_entry(
    text: &str,
    line: usize,
    field: Field,
    nrows: usize,
    ncols: usize,
) -> Result<(usize, usize, f64)> {
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
            word.parse::<f64>()
                .map_err(|_| error(line, format!("the value `{word}` is not a real number")))?
        }
        Field::Integer => {
            let word = words.next().ok_or_else(wrong_shape)?;
            let v = word
                .parse::<i64>()
                .map_err(|_| error(line, format!("the value `{word}` is not an integer")))?;
            v as f64
        }
    };
    if words.next().is_some() {
        return Err(wrong_shape());
    }
    Ok((row, col, value))
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
