//! The Matrix Market reader: hand-written files of every supported kind, malformed files with the line
//! at fault, fixture files on disk, agreement with nalgebra-sparse's reader and writer, and the inputs
//! that once aborted it or read wrong (issue 9): huge declared sizes, endless lines, values out of
//! range, comments in other encodings, errors without their file, links to files.

mod common;

use gpu_spmv::Error;
use gpu_spmv::io::{
    MAX_LINE_BYTES, MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES, matrix_market_files, parse_matrix_market,
    pattern_value, read_matrix_market, read_matrix_market_from,
};
use nalgebra_sparse::CsrMatrix;
use nalgebra_sparse::io::{load_coo_from_matrix_market_str, save_to_matrix_market_str};
use rand::Rng;
use std::io::{BufReader, Read};
use std::path::PathBuf;

/// The matrix as dense rows.
fn dense(m: &CsrMatrix<f64>) -> Vec<Vec<f64>> {
    let mut d = vec![vec![0.0; m.ncols()]; m.nrows()];
    for (r, c, &v) in m.triplet_iter() {
        d[r][c] = v;
    }
    d
}

fn data(file: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data").join(file)
}

/// The line and message of a Matrix Market error, or a panic naming what came instead.
fn mm_error(text: &str) -> (Option<usize>, String) {
    match parse_matrix_market::<f64>(text) {
        Err(Error::MatrixMarket { path: None, line, message }) => (line, message),
        other => panic!("expected a Matrix Market error, got {other:?}\n{text}"),
    }
}

#[test]
fn general_real_with_one_based_indices() {
    let m = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real general\n\
         2 3 4\n\
         2 3 -2e1\n\
         1 1 1.5\n\
         2 1 .25\n\
         1 3 -0.5\n",
    )
    .unwrap();
    assert_eq!(dense(&m), [[1.5, 0.0, -0.5], [0.25, 0.0, -20.0]]);
    assert_eq!(m.row(1).col_indices(), [0, 2], "rows are sorted");
}

#[test]
fn symmetric_files_are_mirrored_without_doubling_the_diagonal() {
    let m = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real symmetric\n3 3 4\n1 1 2\n3 1 -1\n2 2 5\n3 2 7\n",
    )
    .unwrap();
    assert_eq!(dense(&m), [[2.0, 0.0, -1.0], [0.0, 5.0, 7.0], [-1.0, 7.0, 0.0]]);
    assert_eq!(m.nnz(), 6);
}

#[test]
fn skew_symmetric_files_are_mirrored_negated() {
    let m = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 3\n3 2 -4\n",
    )
    .unwrap();
    assert_eq!(dense(&m), [[0.0, -3.0, 0.0], [3.0, 0.0, 4.0], [0.0, -4.0, 0.0]]);
}

#[test]
fn pattern_entries_get_reproducible_nonzero_values() {
    let text = "%%MatrixMarket matrix coordinate pattern symmetric\n3 3 3\n1 1\n3 1\n3 2\n";
    let m = parse_matrix_market::<f64>(text).unwrap();
    let d = dense(&m);
    assert_eq!(d[0][0], pattern_value(0, 0));
    assert_eq!(d[2][0], pattern_value(2, 0));
    assert_eq!(d[0][2], d[2][0], "the mirror image takes the stored entry's value");
    assert_eq!(d[1][2], pattern_value(2, 1));
    assert_eq!(m.nnz(), 5);
    assert!(m.values().iter().all(|&v| v != 0.0 && (-1.0..1.0).contains(&v)));
    assert_eq!(m, parse_matrix_market::<f64>(text).unwrap(), "the same values on every read");
    // f32 reads round the same values exactly.
    let single = parse_matrix_market::<f32>(text).unwrap();
    assert!(single.values().iter().zip(m.values()).all(|(&s, &d)| f64::from(s) == d));
}

#[test]
fn integer_values() {
    let m = parse_matrix_market::<f32>(
        "%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 2 -7\n2 1 +12\n",
    )
    .unwrap();
    assert_eq!(
        m.triplet_iter().map(|(r, c, &v)| (r, c, v)).collect::<Vec<_>>(),
        [(0, 1, -7.0), (1, 0, 12.0)]
    );
}

#[test]
fn comments_blank_lines_crlf_and_keyword_case() {
    let m = parse_matrix_market::<f64>(
        "%%MatrixMarket MATRIX Coordinate Real General\r\n\
         % a comment\r\n\
         \r\n\
         %another\n\
         \t 2 2 2 \n\
         \n\
         1 1 1.0\n\
         % between entries\n\
         \x20 2   2\t3.0\r\n\
         \n",
    )
    .unwrap();
    assert_eq!(dense(&m), [[1.0, 0.0], [0.0, 3.0]]);
}

#[test]
fn repeated_entries_are_summed() {
    let m = parse_matrix_market::<f64>(
        "%%MatrixMarket matrix coordinate real general\n2 2 4\n1 2 1.5\n2 2 1\n1 2 2.25\n2 2 -1\n",
    )
    .unwrap();
    assert_eq!(dense(&m), [[0.0, 3.75], [0.0, 0.0]]);
    assert_eq!(m.nnz(), 2, "a sum of zero stays an entry");
}

#[test]
fn empty_matrices() {
    let m = parse_matrix_market::<f64>("%%MatrixMarket matrix coordinate real general\n3 4 0\n").unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (3, 4, 0));
    let m =
        parse_matrix_market::<f64>("%%MatrixMarket matrix coordinate pattern symmetric\n0 0 0\n").unwrap();
    assert_eq!((m.nrows(), m.ncols(), m.nnz()), (0, 0, 0));
}

#[test]
fn malformed_files_name_their_line() {
    const GENERAL: &str = "%%MatrixMarket matrix coordinate real general\n";
    let cases: Vec<(String, usize, &str)> = vec![
        ("%%MatrixMarket matrix coordinate real\n1 1 0\n".into(), 1, "5 words"),
        ("%MatrixMarket matrix coordinate real general\n1 1 0\n".into(), 1, "%%MatrixMarket"),
        ("%%MatrixMarket vector coordinate real general\n1 1 0\n".into(), 1, "vector"),
        ("%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1 2\n".into(), 1, "complex"),
        ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n4\n".into(), 1, "array"),
        ("%%MatrixMarket matrix coordinate real hermitian\n1 1 0\n".into(), 1, "hermitian"),
        ("%%MatrixMarket matrix coordinate pattern skew-symmetric\n1 1 0\n".into(), 1, "pattern"),
        ("%%MatrixMarket matrix coordinate double general\n1 1 0\n".into(), 1, "double"),
        ("%%MatrixMarket matrix coordinate real unsymmetric\n1 1 0\n".into(), 1, "unsymmetric"),
        ("%%MatrixMarket matrix coordinate real general\n% only comments\n".into(), 3, "size line"),
        (format!("{GENERAL}% c\n2 2\n1 1 1\n"), 3, "size line"),
        (format!("{GENERAL}2 2 x\n"), 2, "`x`"),
        (format!("{GENERAL}2 2 -1\n"), 2, "`-1`"),
        (format!("{GENERAL}2 2 3\n1 1 1\n2 2 2\n"), 2, "declares 3 entries, but the file holds 2"),
        (format!("{GENERAL}2 2 1\n1 1 1\n\n2 2 2\n"), 5, "more entries than the 1"),
        (format!("{GENERAL}2 3 1\n3 1 1\n"), 3, "row index 3 is out of range 1..=2"),
        (format!("{GENERAL}2 3 1\n1 4 1\n"), 3, "column index 4 is out of range 1..=3"),
        (format!("{GENERAL}2 3 2\n1 1 1\n0 1 1\n"), 4, "row index 0"),
        (format!("{GENERAL}2 3 2\n1 1 1\n-1 1 1\n"), 4, "`-1`"),
        (format!("{GENERAL}2 3 2\n1 1 1\n2 3 abc\n"), 4, "`abc` is not a real number"),
        (format!("{GENERAL}2 3 2\n1 1 1\n2 3\n"), 4, "<value>"),
        (format!("{GENERAL}2 3 2\n1 1 1\n2 3 1 2\n"), 4, "<value>"),
        ("%%MatrixMarket matrix coordinate integer general\n1 1 1\n1 1 1.5\n".into(), 3, "not an integer"),
        ("%%MatrixMarket matrix coordinate pattern general\n1 1 1\n1 1 1\n".into(), 3, "<row> <column>`"),
        (
            "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n1 1 1\n1 3 2\n".into(),
            4,
            "above the diagonal",
        ),
        ("%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 1\n2 2 1\n".into(), 3, "on or above"),
        ("%%MatrixMarket matrix coordinate real symmetric\n3 2 0\n".into(), 2, "cannot be symmetric"),
        (format!("{GENERAL}4294967296 1 0\n"), 2, "exceeds"),
        (String::new(), 1, "empty"),
    ];
    for (text, line, needle) in cases {
        let (got_line, message) = mm_error(&text);
        assert_eq!(got_line, Some(line), "{message}\n{text}");
        assert!(message.contains(needle), "`{message}` does not mention `{needle}`\n{text}");
    }
}

#[test]
fn errors_display_their_line() {
    let err = parse_matrix_market::<f64>("%%MatrixMarket matrix coordinate real general\n1 1 1\n1 2 1\n")
        .unwrap_err();
    assert_eq!(err.to_string(), "Matrix Market, line 3: column index 2 is out of range 1..=1");
}

#[test]
fn invalid_utf8_is_refused_with_its_line() {
    let bytes = b"%%MatrixMarket matrix coordinate real general\n1 1 1\n1 1 \xff\n";
    match read_matrix_market_from::<f64>(&bytes[..]) {
        Err(Error::MatrixMarket { line: Some(3), message, .. }) => assert!(message.contains("UTF-8")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn fixture_files_are_read_from_disk() {
    let m = read_matrix_market::<f64>(data("lower_symmetric.mtx")).unwrap();
    assert_eq!(
        dense(&m),
        [[4.0, -1.0, 0.0, 0.5], [-1.0, 4.0, -1.0, 0.0], [0.0, -1.0, 0.0, 0.0], [0.5, 0.0, 0.0, 2.5]]
    );
    let m = read_matrix_market::<f32>(data("pattern_general.mtx")).unwrap();
    assert_eq!((m.nrows(), m.ncols()), (3, 5));
    assert_eq!(
        m.triplet_iter().map(|(r, c, _)| (r, c)).collect::<Vec<_>>(),
        [(0, 4), (1, 1), (2, 0), (2, 3)]
    );
}

#[test]
fn a_missing_file_is_an_io_error_with_its_path() {
    let path = data("no such file.mtx");
    match read_matrix_market::<f64>(&path) {
        Err(e @ Error::Io { .. }) => {
            let Error::Io { path: Some(p), source } = &e else { panic!("{e:?}") };
            assert_eq!(p, &path);
            assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
            assert!(e.to_string().contains("no such file.mtx"), "{e}");
        }
        other => panic!("{other:?}"),
    }
    assert!(matches!(matrix_market_files(&path), Err(Error::Io { .. })));
}

#[test]
fn folders_list_their_mtx_files_sorted() {
    let files = matrix_market_files(data("")).unwrap();
    assert_eq!(files, [data("lower_symmetric.mtx"), data("pattern_general.mtx")]);
    assert_eq!(matrix_market_files(data("pattern_general.mtx")).unwrap(), [data("pattern_general.mtx")]);
}

#[test]
fn agrees_with_nalgebra_sparse_on_real_files() {
    let mut rng = common::rng("matrix market round trip");
    for (nrows, ncols, nnz) in [(1, 1, 1), (40, 700, 3000), (513, 200, 9000)] {
        // Random triplets, repeats included, written by nalgebra-sparse.
        let mut coo = nalgebra_sparse::CooMatrix::new(nrows, ncols);
        for _ in 0..nnz {
            coo.push(rng.random_range(0..nrows), rng.random_range(0..ncols), rng.random_range(-1.0..1.0f64));
        }
        let expected = CsrMatrix::from(&coo);
        let text = save_to_matrix_market_str(&expected);
        let ours = parse_matrix_market::<f64>(&text).unwrap();
        assert_eq!(ours, expected, "{nrows} x {ncols}");
        assert_eq!(ours, CsrMatrix::from(&load_coo_from_matrix_market_str::<f64>(&text).unwrap()));
    }
    let text = std::fs::read_to_string(data("lower_symmetric.mtx")).unwrap();
    let theirs = CsrMatrix::from(&load_coo_from_matrix_market_str::<f64>(&text).unwrap());
    assert_eq!(parse_matrix_market::<f64>(&text).unwrap(), theirs);
}

const GENERAL: &str = "%%MatrixMarket matrix coordinate real general\n";

/// A fresh, empty folder for this test under cargo's scratch space.
fn scratch(test: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("io").join(test);
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

#[test]
fn dimensions_without_the_entries_to_justify_them_are_refused_on_the_size_line() {
    // 4294967295 rows would take 32 GiB of row offsets (this input aborted the process).
    for size in ["4294967295 4294967295 0", "100000000 1 0", "4294967295 1 1"] {
        let (line, message) = mm_error(&format!("{GENERAL}{size}\n"));
        assert_eq!(line, Some(2), "{message}");
        assert!(message.contains("limit"), "{message}");
    }
    // The limit: MAX_ROWS_WITHOUT_ENTRIES rows, plus MAX_ROWS_PER_ENTRY per entry (mirrored ones too).
    let limit = MAX_ROWS_WITHOUT_ENTRIES + MAX_ROWS_PER_ENTRY;
    let m = parse_matrix_market::<f32>(&format!("{GENERAL}{limit} 1 1\n{limit} 1 1\n")).unwrap();
    assert_eq!((m.nrows(), m.nnz()), (limit, 1));
    assert_eq!(mm_error(&format!("{GENERAL}{} 1 1\n1 1 1\n", limit + 1)).0, Some(2));
    let symmetric = "%%MatrixMarket matrix coordinate real symmetric\n";
    let rows = MAX_ROWS_WITHOUT_ENTRIES + 2 * MAX_ROWS_PER_ENTRY;
    assert_eq!(mm_error(&format!("{symmetric}{} {0} 1\n", rows + 1)).0, Some(2));
    // Columns allocate nothing: a single row may have u32::MAX - 1 of them.
    let m = parse_matrix_market::<f64>(&format!("{GENERAL}1 4294967295 1\n1 4294967295 2\n")).unwrap();
    assert_eq!((m.ncols(), m.row(0).col_indices()), (4294967295, &[4294967294][..]));
}

#[test]
fn a_declared_count_is_not_trusted() {
    // 10^12 entries declared, one held: nothing is reserved from the count, and it is refused at the end.
    let (line, message) = mm_error(&format!("{GENERAL}2 2 1000000000000\n1 1 1\n"));
    assert_eq!(line, Some(2));
    assert!(message.contains("declares 1000000000000 entries, but the file holds 1"), "{message}");
    let (line, _) = mm_error(&format!("{GENERAL}2 2 18446744073709551615\n"));
    assert_eq!(line, Some(2));
}

#[test]
fn lines_are_read_up_to_the_limit() {
    // A line of the limit's length is read; one byte more is refused with its line.
    let comment = |len: usize| format!("%{}", "x".repeat(len - 1));
    let at_limit = format!("{GENERAL}{}\n1 1 1\n1 1 2\n", comment(MAX_LINE_BYTES));
    assert_eq!(parse_matrix_market::<f64>(&at_limit).unwrap().nnz(), 1);
    let at_end = format!("{GENERAL}1 1 1\n1 1 {}", "2".repeat(MAX_LINE_BYTES - 4));
    assert!(matches!(parse_matrix_market::<f64>(&at_end), Err(Error::MatrixMarket { line: Some(3), .. })));
    for too_long in [
        format!("{GENERAL}{}\n1 1 0\n", comment(MAX_LINE_BYTES + 1)),
        format!("{GENERAL}1 1 1\n1 1 {}", "2".repeat(MAX_LINE_BYTES)),
    ] {
        let (line, message) = mm_error(&too_long);
        assert!(line == Some(2) || line == Some(3), "{line:?}");
        assert!(message.contains(&format!("longer than {MAX_LINE_BYTES} bytes")), "{message}");
    }
    // A line that never ends is refused after the limit, not buffered whole.
    let start = format!("{GENERAL}1 1 1\n");
    let endless = start.as_bytes().chain(std::io::repeat(b' '));
    match read_matrix_market_from::<f64>(BufReader::new(endless)) {
        Err(Error::MatrixMarket { line: Some(3), message, .. }) => assert!(message.contains("longer")),
        other => panic!("{other:?}"),
    }
}

#[test]
fn comments_may_hold_any_bytes() {
    let bytes =
        b"%%MatrixMarket matrix coordinate real general\n% caf\xe9 (Latin-1)\n1 1 1\n% \xff\xfe\n1 1 2\n";
    let m = read_matrix_market_from::<f64>(&bytes[..]).unwrap();
    assert_eq!(m.values(), [2.0]);
}

#[test]
fn values_must_be_finite_in_the_element_type() {
    for word in ["nan", "NaN", "inf", "-inf", "infinity", "1e400", "-1e309"] {
        let text = format!("{GENERAL}2 2 2\n1 1 1\n2 2 {word}\n");
        for (line, message) in [mm_error(&text), mm_error32(&text)] {
            assert_eq!(line, Some(4), "{word}: {message}");
            assert!(message.contains(&format!("`{word}` is not a finite number")), "{message}");
        }
    }
    // 1e39 is finite in f64 only; 1e-50 rounds to 0 in f32, as any value rounds to the nearest.
    let text = format!("{GENERAL}1 1 1\n1 1 1e39\n");
    assert_eq!(parse_matrix_market::<f64>(&text).unwrap().values(), [1e39]);
    let (line, message) = mm_error32(&text);
    assert_eq!(line, Some(3));
    assert!(message.contains("f32"), "{message}");
    let tiny = parse_matrix_market::<f32>(&format!("{GENERAL}1 1 1\n1 1 1e-50\n")).unwrap();
    assert_eq!(tiny.values(), [0.0]);
    // Repeated entries whose sum leaves the range are refused naming their position.
    let in_f32 = format!("{GENERAL}2 3 3\n1 1 1\n2 3 3e38\n2 3 3e38\n");
    assert_eq!(parse_matrix_market::<f64>(&in_f32).unwrap().values(), [1.0, 6e38]);
    let in_f64 = format!("{GENERAL}2 3 3\n1 1 1\n2 3 1.7e308\n2 3 1.7e308\n");
    for (line, message) in [mm_error32(&in_f32), mm_error(&in_f64)] {
        assert_eq!(line, None, "{message}");
        assert!(message.contains("at (2, 3)"), "{message}");
    }
}

/// [`mm_error`] for an f32 read.
fn mm_error32(text: &str) -> (Option<usize>, String) {
    match parse_matrix_market::<f32>(text) {
        Err(Error::MatrixMarket { path: None, line, message }) => (line, message),
        other => panic!("expected a Matrix Market error, got {other:?}\n{text}"),
    }
}

#[test]
fn errors_from_a_file_name_it() {
    let dir = scratch("errors_from_a_file_name_it");
    let file = dir.join("bad.mtx");
    std::fs::write(&file, format!("{GENERAL}2 2 1\n3 1 1\n")).unwrap();
    let err = read_matrix_market::<f64>(&file).unwrap_err();
    let Error::MatrixMarket { path: Some(path), line: Some(3), .. } = &err else { panic!("{err:?}") };
    assert_eq!(path, &file);
    assert_eq!(
        err.to_string(),
        format!("Matrix Market file {}, line 3: row index 3 is out of range 1..=2", file.display())
    );
}

#[test]
fn links_to_mtx_files_are_listed() {
    let dir = scratch("links_to_mtx_files_are_listed");
    std::os::unix::fs::symlink(data("pattern_general.mtx"), dir.join("b.mtx")).unwrap();
    std::fs::write(dir.join("a.mtx"), format!("{GENERAL}1 1 0\n")).unwrap();
    std::fs::create_dir(dir.join("c.mtx")).unwrap();
    std::os::unix::fs::symlink(dir.join("c.mtx"), dir.join("d.mtx")).unwrap();
    assert_eq!(matrix_market_files(&dir).unwrap(), [dir.join("a.mtx"), dir.join("b.mtx")]);
    assert_eq!(read_matrix_market::<f64>(dir.join("b.mtx")).unwrap().nnz(), 4);
    // A link to nowhere is an error naming it, not a file silently left out.
    std::os::unix::fs::symlink(dir.join("missing"), dir.join("e.mtx")).unwrap();
    match matrix_market_files(&dir) {
        Err(Error::Io { path: Some(path), .. }) => assert_eq!(path, dir.join("e.mtx")),
        other => panic!("{other:?}"),
    }
}
