//! The built-in benchmark suite: matrices generated from a seed, each imitating the structure of a
//! matrix that sparse matrix-vector studies measure (most from the SuiteSparse collection), so that a
//! run needs no download.
//!
//! At [`Size::Full`] every matrix holds 10 to 30 million entries: its CSR arrays (32-bit indices) are
//! several times the H100's 50 MB L2, so a product streams them from memory as a real one does.
//! Matrices are deterministic functions of their seed: values from one stream per chunk of entries,
//! structure from one stream per block of rows (see `rows.rs`), never from the number of threads.

mod banded;
mod circuit;
mod fem27;
mod planar;
mod powerlaw;
mod rows;
mod short_wide;
mod stencil5;
mod stencil7;
mod uniform;
mod wide_rows;

use nalgebra_sparse::CsrMatrix;

/// The power-law graph of `n` rows (the `powerlaw` generator at any size), for the multi-GPU study.
pub(crate) use powerlaw::generate as powerlaw_graph;

/// How large the suite's matrices are.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Size {
    /// A few thousand rows: for tests.
    Tiny,
    /// About 1/20 of [`Size::Full`] (0.7 to 1.6 million entries, 8 MB or more): for quick runs.
    Small,
    /// 10 to 30 million entries: several times the L2 cache of the GPUs measured.
    #[default]
    Full,
}

impl Size {
    pub const ALL: [Size; 3] = [Size::Tiny, Size::Small, Size::Full];

    pub fn name(self) -> &'static str {
        match self {
            Size::Tiny => "tiny",
            Size::Small => "small",
            Size::Full => "full",
        }
    }

    /// The size called `name` (as [`Size::name`] spells it).
    pub fn from_name(name: &str) -> Option<Size> {
        Size::ALL.into_iter().find(|s| s.name() == name)
    }

    /// The value of a generator's parameter at this size.
    fn pick<T>(self, tiny: T, small: T, full: T) -> T {
        match self {
            Size::Tiny => tiny,
            Size::Small => small,
            Size::Full => full,
        }
    }
}

/// One generator of the suite.
#[derive(Debug, Clone, Copy)]
pub struct SuiteMatrix {
    /// Short key for reports and `--only` filters.
    pub name: &'static str,
    /// The matrix whose structure it imitates, with that matrix's figures.
    pub imitates: &'static str,
    /// Generates the matrix: sorted, distinct columns in every row; values in (-1, 1), never zero,
    /// exact in f32.
    pub build: fn(Size, u64) -> CsrMatrix<f64>,
}

/// The suite, in the order reports list it: regular structure first, irregular last.
pub fn suite() -> Vec<SuiteMatrix> {
    vec![
        SuiteMatrix {
            name: "stencil2d-5",
            imitates: "ecology2 (999,999 rows, 5.0 per row): 2D 5-point stencil",
            build: stencil5::build,
        },
        SuiteMatrix {
            name: "stencil3d-7",
            imitates: "atmosmodd (1,270,432 rows, 6.9 per row): 3D 7-point stencil",
            build: stencil7::build,
        },
        SuiteMatrix {
            name: "fem3d-27",
            imitates: "HPCG's problem (26.5 per row): 3D 27-point stencil of hexahedral elements",
            build: fem27::build,
        },
        SuiteMatrix {
            name: "band-64",
            imitates: "cant (62,451 rows, 64 per row, max 78): FEM with 3 unknowns per node, narrow band",
            build: banded::build,
        },
        SuiteMatrix {
            name: "wide-400",
            imitates: "nd24k (72,000 rows, 399 per row, max 520): 3D mesh, wide rows near the diagonal",
            build: wide_rows::build,
        },
        SuiteMatrix {
            name: "random-1pct",
            imitates: "the student report's 30,000 x 20,000 random matrix at 1 % density, more rows",
            build: uniform::build,
        },
        SuiteMatrix {
            name: "planar",
            imitates: "delaunay_n22 (4,194,304 rows, 6.0 per row): planar triangulation graph",
            build: planar::build,
        },
        SuiteMatrix {
            name: "powerlaw",
            imitates: "webbase-1M (1,000,005 rows, mean 3.1, std 25): power-law web graph",
            build: powerlaw::build,
        },
        SuiteMatrix {
            name: "circuit",
            imitates: "dc1 (116,835 rows, mean 6.6, rows of 114,190 and 47,193): circuit simulation",
            build: circuit::build,
        },
        SuiteMatrix {
            name: "short-wide",
            imitates: "rail4284 (4,284 x 1,092,610, 11.3 M entries): set-covering LP, short and wide",
            build: short_wide::build,
        },
    ]
}

/// The generator called `name`.
pub fn find(name: &str) -> Option<SuiteMatrix> {
    suite().into_iter().find(|m| m.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;
    use gpu_spmv::RowStats;

    /// Row statistics of a generated matrix.
    pub(super) fn stats(m: &CsrMatrix<f64>) -> RowStats {
        RowStats::from_offsets(m.row_offsets(), m.ncols())
    }

    #[test]
    fn names_are_unique_and_found() {
        let all = suite();
        for m in &all {
            assert_eq!(all.iter().filter(|o| o.name == m.name).count(), 1, "{}", m.name);
            assert_eq!(find(m.name).map(|f| f.name), Some(m.name));
        }
        assert!(find("nonesuch").is_none());
        for size in Size::ALL {
            assert_eq!(Size::from_name(size.name()), Some(size));
        }
        assert_eq!(Size::default(), Size::Full);
    }

    #[test]
    fn every_matrix_is_deterministic_with_valid_values() {
        for m in suite() {
            let a = (m.build)(Size::Tiny, 7);
            let rows = a.nrows();
            assert!((250..=20_000).contains(&rows), "{}: {rows} rows", m.name);
            assert!(a.nnz() > 10_000, "{}: {} entries", m.name, a.nnz());
            assert!(a.values().iter().all(|&v| v > -1.0 && v < 1.0 && v != 0.0), "{}", m.name);
            assert!(a.values().iter().all(|&v| f64::from(v as f32) == v), "{}", m.name);
            assert_eq!(a, (m.build)(Size::Tiny, 7), "{}: same seed, another matrix", m.name);
            let b = (m.build)(Size::Tiny, 8);
            let same_values = a.values().iter().zip(b.values()).filter(|(x, y)| x == y).count();
            assert!(same_values * 100 < a.nnz().min(b.nnz()), "{}: seeds 7 and 8 share values", m.name);
        }
    }

    #[test]
    fn small_is_over_a_megabyte_and_under_full() {
        for m in suite() {
            let tiny = (m.build)(Size::Tiny, 1);
            let small = (m.build)(Size::Small, 1);
            // Bytes on the device: 4-byte column indices and row offsets, 4-byte values at the least.
            let bytes = 8 * small.nnz() + 4 * small.nrows();
            assert!(bytes > 1 << 20, "{}: {bytes} bytes at small size", m.name);
            assert!(small.nnz() > 3 * tiny.nnz(), "{}: small is hardly larger than tiny", m.name);
        }
    }

    /// The promise of [`Size::Full`], with the generation times: slow in a debug build, so run it as
    /// `cargo test --release -p spmv-bench -- --ignored --nocapture full_size`.
    #[test]
    #[ignore = "builds every matrix at full size: seconds each in release, minutes in debug"]
    fn full_size_matrices_fill_several_l2_caches() {
        for m in suite() {
            let start = std::time::Instant::now();
            let a = (m.build)(Size::Full, 1);
            let seconds = start.elapsed().as_secs_f64();
            let s = stats(&a);
            // Device bytes in f64 with 32-bit indices.
            let mb = (12 * s.nnz + 4 * (s.rows + 1)) as f64 / 1e6;
            println!(
                "{:12} {:>9} x {:>9}, {:>10} entries, {mb:4.0} MB, mean {:6.1}, std {:6.1}, max {:>9}: {seconds:.2} s",
                m.name, s.rows, s.cols, s.nnz, s.mean, s.std_dev, s.max
            );
            assert!((10_000_000..=30_000_000).contains(&s.nnz), "{}: {} entries", m.name, s.nnz);
            assert!(mb > 2.0 * 50.0, "{}: {mb} MB", m.name);
        }
    }
}
