//! The matrices a run measures: the generated suite, or Matrix Market files.

use crate::suite::{self, Size};
use anyhow::{Result, bail};
use gpu_spmv::io::{matrix_market_files, read_matrix_market};
use nalgebra_sparse::CsrMatrix;
use std::path::Path;

/// A matrix of the run, built when its turn comes (the suite's matrices are large).
pub struct BenchMatrix {
    pub name: String,
    pub imitates: String,
    pub build: Box<dyn Fn() -> Result<CsrMatrix<f64>>>,
}

impl std::fmt::Debug for BenchMatrix {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BenchMatrix").field("name", &self.name).field("imitates", &self.imitates).finish()
    }
}

/// The generated suite at `size`, from `seed`.
pub fn suite(size: Size, seed: u64) -> Vec<BenchMatrix> {
    suite::suite()
        .into_iter()
        .map(|m| BenchMatrix {
            name: m.name.to_owned(),
            imitates: m.imitates.to_owned(),
            build: Box::new(move || Ok((m.build)(size, seed))),
        })
        .collect()
}

/// The Matrix Market file at `path`, or the `.mtx` files of the folder `path`, named by file stem.
pub fn from_matrix_market(path: &Path) -> Result<Vec<BenchMatrix>> {
    let files = matrix_market_files(path)?;
    if files.is_empty() {
        bail!("no .mtx file in {}", path.display());
    }
    Ok(files
        .into_iter()
        .map(|file| BenchMatrix {
            name: file
                .file_stem()
                .map_or_else(|| file.display().to_string(), |s| s.to_string_lossy().into_owned()),
            imitates: "Matrix Market file".to_owned(),
            build: Box::new(move || Ok(read_matrix_market::<f64>(&file)?)),
        })
        .collect())
}
