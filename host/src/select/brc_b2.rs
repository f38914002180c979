//! BRC's block width B2 tuned by measurement: Ashari et al. ("An Efficient Two-Dimensional Blocking
//! Strategy for Sparse Matrix-Vector Multiplication on GPUs", ICS 2014, section 5) guide their
//! auto-tuner by the model `mean + standard deviation` and time a few widths around it, reaching 96%
//! of an exhaustive search's best. Here the widths are the ladder of [`brc_b2_candidates`] (the
//! model's B2, capped to fill the GPU, times 1/4 to 4); the tuner starts at the model, times its two
//! neighbours, and walks towards the faster one while each step is faster. Each width costs a
//! conversion, an upload and 12 products, so a walk of three widths, the usual, costs three.

use super::timing::ProductTimer;
use crate::device::{DeviceBrc, Gpu};
use crate::formats::brc::{Brc, brc_b2_candidates, brc_model_b2};
use crate::formats::csr::CsrRef;
use crate::scalar::Scalar;
use crate::{Error, Result};

/// What the B2 tuner timed and chose.
#[derive(Debug, Clone, PartialEq)]
pub struct BrcTuning {
    /// The model's B2, where the walk started.
    pub model_b2: usize,
    /// The chosen B2: the fastest one timed.
    pub b2: usize,
    /// Each B2 timed, with the median time of its product in milliseconds, in the order timed.
    pub trials: Vec<(usize, f64)>,
}

impl Gpu {
    /// Converts `a` to BRC at several block widths B2, times each on this GPU, and keeps the fastest
    /// (see `select/brc_b2.rs`): an upload that costs a few conversions, for a matrix that will run
    /// many products. Refused with [`Error::Unsupported`] for a matrix without entries (every B2
    /// gives the same empty product).
    pub fn upload_brc_tuned<'a, T: Scalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
    ) -> Result<(DeviceBrc<T>, BrcTuning)> {
        let a = a.into();
        if a.nnz() == 0 {
            return Err(Error::Unsupported("tuning BRC's B2 needs a matrix with entries"));
        }
        let stats = a.stats();
        let ladder = brc_b2_candidates(&stats, self.sm_count());
        let model_b2 = brc_model_b2(&stats, self.sm_count());
        let mut timer = ProductTimer::new(self, a.nrows(), a.ncols())?;
        let mut trials = Vec::new();
        let mut time = |i: usize| -> Result<(DeviceBrc<T>, f64)> {
            let matrix = self.upload_brc(&Brc::try_from_csr(a, ladder[i])?)?;
            let ms = timer.median_ms(self, &matrix)?;
            trials.push((ladder[i], ms));
            Ok((matrix, ms))
        };
        // The model is on the ladder (its value times 1, clamped as the others).
        let start = ladder.iter().position(|&b| b == model_b2).unwrap_or(ladder.len() / 2);
        let mut best = (start, time(start)?);
        let mut step = None;
        for next in
            [start.checked_sub(1), Some(start + 1).filter(|&i| i < ladder.len())].into_iter().flatten()
        {
            let tried = time(next)?;
            if tried.1 < best.1.1 {
                step = Some(if next < start { -1 } else { 1 });
                best = (next, tried);
            }
        }
        // Walk on past the faster neighbour while each width is faster still.
        while let Some(dir) = step {
            let Some(next) = best.0.checked_add_signed(dir).filter(|&i| i < ladder.len()) else { break };
            let tried = time(next)?;
            if tried.1 < best.1.1 {
                best = (next, tried);
            } else {
                step = None;
            }
        }
        let (index, (matrix, _)) = best;
        Ok((matrix, BrcTuning { model_b2, b2: ladder[index], trials }))
    }
}
