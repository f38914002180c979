//! [`Gpu::upload_for_products`]: the format for a known number of products, chosen by measuring each
//! candidate on the GPU at hand.

use super::auto_matrix::AutoMatrix;
use super::break_even::{FormatCost, break_even_products, cheapest_format, could_pay_off};
use super::selection::{AutoFormat, Outcome, Reason, Selection, Trial};
use super::timing::ProductTimer;
use crate::device::Gpu;
use crate::formats::compressed::CompressedCsr;
use crate::formats::compressed_ell::CompressedEll;
use crate::formats::coo::Coo;
use crate::formats::csr::CsrRef;
use crate::formats::dia::Dia;
use crate::formats::ell::Ell;
use crate::formats::hyb::{Hyb, hyb_ell_width};
use crate::formats::sell::Sell;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::sys;
use std::time::Instant;

/// The fewest announced products for which the planner converts and measures anything; for fewer it
/// returns CSR at once. No format pays off in fewer products than its conversion takes CSR products
/// (a product cannot take less than no time): on the H100 bench the cheapest conversion of any format,
/// over its ten matrices of 20 million entries in both precisions, took 78 CSR products (COO of the
/// power-law matrix in `f64`). The planning itself runs [`PLAN_WARMUP_PRODUCTS`](super::PLAN_WARMUP_PRODUCTS) +
/// [`PLAN_TIMED_PRODUCTS`](super::PLAN_TIMED_PRODUCTS) = 12 products per format, 72 with all of them.
pub const MIN_PLANNED_PRODUCTS: u64 = 100;

/// A format the planner tries besides CSR.
#[derive(Debug, Clone, Copy)]
enum Candidate {
    Coo,
    Hyb,
    Ell,
    Sell,
    Compressed,
    CompressedEll,
    Dia,
}

/// In the order tried: the cheapest conversion first (COO took 14 to 94 ms for 20 million entries on
/// the H100 bench, HYB and ELL 67 to 213 ms), then SELL, compressed column indices, compressed ELL and
/// DIA, whose conversions the bench has yet to time. Ties go to the earlier.
const CANDIDATES: [Candidate; 7] = [
    Candidate::Coo,
    Candidate::Hyb,
    Candidate::Ell,
    Candidate::Sell,
    Candidate::Compressed,
    Candidate::CompressedEll,
    Candidate::Dia,
];

/// A candidate converted on the host.
enum Converted<T> {
    Coo(Coo<T>),
    Hyb(Hyb<T>),
    Ell(Ell<T>),
    Sell(Sell<T>),
    Compressed(CompressedCsr<T>),
    CompressedEll(CompressedEll<T>),
    Dia(Dia<T>),
}

impl Candidate {
    fn format(self) -> AutoFormat {
        match self {
            Candidate::Coo => AutoFormat::CooSegmented,
            Candidate::Hyb => AutoFormat::Hyb,
            Candidate::Ell => AutoFormat::Ell,
            Candidate::Sell => AutoFormat::Sell,
            Candidate::Compressed => AutoFormat::Compressed,
            Candidate::CompressedEll => AutoFormat::CompressedEll,
            Candidate::Dia => AutoFormat::Dia,
        }
    }

    /// The candidate whose product this one's would repeat on a matrix whose HYB width is
    /// `hyb_width` and whose longest row has `max_row` entries: HYB with no ELL slots is COO (a scaling
    /// of `y`, then the segmented kernel), and HYB with every entry in its ELL part is ELL.
    fn same_as(self, hyb_width: usize, max_row: usize) -> Option<AutoFormat> {
        match self {
            Candidate::Hyb if hyb_width == 0 => Some(AutoFormat::CooSegmented),
            Candidate::Hyb if hyb_width >= max_row => Some(AutoFormat::Ell),
            _ => None,
        }
    }

    fn convert<T: Scalar>(self, a: CsrRef<'_, T>) -> Result<Converted<T>> {
        Ok(match self {
            Candidate::Coo => Converted::Coo(Coo::try_from_csr(a)?),
            Candidate::Hyb => Converted::Hyb(Hyb::try_from_csr(a)?),
            Candidate::Ell => Converted::Ell(Ell::try_from_csr(a)?),
            Candidate::Sell => Converted::Sell(Sell::try_from_csr(a)?),
            Candidate::Compressed => Converted::Compressed(CompressedCsr::try_from_csr(a)?),
            Candidate::CompressedEll => Converted::CompressedEll(CompressedEll::try_from_csr(a)?),
            Candidate::Dia => Converted::Dia(Dia::try_from_csr(a)?),
        })
    }
}

impl<T: Scalar> Converted<T> {
    fn upload(&self, gpu: &Gpu) -> Result<AutoMatrix<T>> {
        Ok(match self {
            Converted::Coo(coo) => AutoMatrix::Coo(gpu.upload_coo(coo)?),
            Converted::Hyb(hyb) => AutoMatrix::Hyb(gpu.upload_hyb(hyb)?),
            Converted::Ell(ell) => AutoMatrix::Ell(gpu.upload_ell(ell)?),
            Converted::Sell(sell) => AutoMatrix::Sell(gpu.upload_sell(sell)?),
            Converted::Compressed(c) => AutoMatrix::Compressed(gpu.upload_compressed(c)?),
            Converted::CompressedEll(c) => AutoMatrix::CompressedEll(gpu.upload_compressed_ell(c)?),
            Converted::Dia(dia) => AutoMatrix::Dia(gpu.upload_dia(dia)?),
        })
    }
}

/// Whether `e` rules out one candidate rather than the planning: a conversion's limit (a layout's
/// padding or shape, 32-bit sizes) or device memory too small for a second copy of the matrix (as
/// the crate's allocations report it, or as the driver does), when CSR still works.
fn is_refusal(e: &Error) -> bool {
    match e {
        Error::Format(_) | Error::TooLarge { .. } | Error::DeviceMemory { .. } => true,
        Error::Driver(d) => d.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY,
        _ => false,
    }
}

/// What trying a candidate gave: a measured matrix, or an outcome without one.
#[allow(clippy::large_enum_variant)] // made and moved once per candidate
enum Tried<T> {
    Measured(FormatCost, AutoMatrix<T>),
    Not(Outcome),
}

fn ms_since(start: Instant) -> f64 {
    start.elapsed().as_secs_f64() * 1e3
}

impl Gpu {
    /// Uploads `a` in the format that minimises the total time of `products` products, conversion
    /// included, as measured on this GPU, and says what it measured ([`Selection`], printable).
    ///
    /// CSR is uploaded first: it is the baseline and the fallback. With no entries, or fewer than
    /// [`MIN_PLANNED_PRODUCTS`] products, that is the answer. Otherwise the planner times the CSR
    /// product of [`crate::Kernel::Auto`], then for COO (segmented), HYB, ELL and SELL (each when its
    /// padding limit allows), compressed column indices (values kept in `T`: CSR's accuracy, and bit for
    /// bit its `y` wherever Auto takes the parametrised kernel without splitting a row), compressed
    /// ELL and DIA (each where its layout takes the matrix; values in `T`, ELL's `y` bit for bit)
    /// converts on the host and uploads, timing both on the CPU, and times the product;
    /// a candidate whose host conversion alone exceeds CSR's products is not uploaded. It keeps the
    /// smallest of conversion + `products` x product time ([`cheapest_format`]; a lone
    /// candidate wins exactly from its [`break_even_products`] count), CSR on a tie, and frees
    /// the others' device memory. Speed is measured, not predicted from row statistics, which on the
    /// H100 bench did not tell when a format beats CSR.
    ///
    /// The timed products use the planner's own vectors, so no caller buffer is touched, and the
    /// call waits for the GPU, work enqueued before it included: it is a one-time cost, of the
    /// conversions (up to hundreds of milliseconds for tens of millions of entries) and 12 products
    /// per format. The matrix's products are `y = alpha * A * x + beta * y` as with CSR; COO and HYB
    /// add with atomics, so their last bits may vary from run to run.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), gpu_spmv::Error> {
    /// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(1000);
    /// let gpu = gpu_spmv::Gpu::new()?;
    /// let (a, selection) = gpu.upload_for_products(&a, 50_000)?;
    /// println!("{selection}"); // each candidate's times and break-even count, the choice and why
    /// let x = gpu.upload_vector(&vec![1.0; 1000])?;
    /// let mut y = gpu.zeros::<f64>(1000)?;
    /// for _ in 0..50_000 {
    ///     gpu.spmv(1.0, &a, &x, 0.0, &mut y)?;
    /// }
    /// # Ok(())
    /// # }
    /// ```
    pub fn upload_for_products<'a, T: Scalar>(
        &self,
        a: impl Into<CsrRef<'a, T>>,
        products: u64,
    ) -> Result<(AutoMatrix<T>, Selection)> {
        let a = a.into();
        let csr = self.upload_csr_ref(a)?;
        let unmeasured = |reason| Selection {
            products,
            csr_product_ms: None,
            trials: Vec::new(),
            chosen: AutoFormat::Csr,
            reason,
        };
        if a.nnz() == 0 {
            return Ok((AutoMatrix::Csr(csr), unmeasured(Reason::NoEntries)));
        }
        if products < MIN_PLANNED_PRODUCTS {
            return Ok((AutoMatrix::Csr(csr), unmeasured(Reason::FewProducts)));
        }
        let mut timer = ProductTimer::new(self, a.nrows(), a.ncols())?;
        let csr_ms = timer.median_ms(self, &csr)?;
        let (hyb_width, max_row) = (hyb_ell_width(a.row_offsets()), csr.stats().max);
        let mut trials = Vec::new();
        let mut costs = Vec::new();
        // The cheapest candidate so far; replacing it frees the previous one's device memory.
        let mut leader = None;
        for candidate in CANDIDATES {
            let outcome = if let Some(same_as) = candidate.same_as(hyb_width, max_row) {
                Outcome::Redundant { same_as }
            } else {
                match self.try_candidate(candidate, a, products, csr_ms, &mut timer)? {
                    Tried::Measured(cost, matrix) => {
                        costs.push(cost);
                        if cheapest_format(csr_ms, &costs, products) == Some(costs.len() - 1) {
                            leader = Some(matrix);
                        }
                        Outcome::Measured { cost, break_even: break_even_products(csr_ms, cost) }
                    }
                    Tried::Not(outcome) => outcome,
                }
            };
            trials.push(Trial { format: candidate.format(), outcome });
        }
        let matrix = leader.unwrap_or(AutoMatrix::Csr(csr));
        let selection = Selection {
            products,
            csr_product_ms: Some(csr_ms),
            trials,
            chosen: matrix.format(),
            reason: Reason::SmallestTotal,
        };
        Ok((matrix, selection))
    }

    /// Converts `a` to `candidate`, uploads it and times its product, unless it is refused or its
    /// conversion alone already loses to CSR's `products` at `csr_ms` each.
    fn try_candidate<T: Scalar>(
        &self,
        candidate: Candidate,
        a: CsrRef<'_, T>,
        products: u64,
        csr_ms: f64,
        timer: &mut ProductTimer<T>,
    ) -> Result<Tried<T>> {
        let refused =
            |e: Error| if is_refusal(&e) { Ok(Tried::Not(Outcome::Refused(e.to_string()))) } else { Err(e) };
        let start = Instant::now();
        let host = match candidate.convert(a) {
            Ok(host) => host,
            Err(e) => return refused(e),
        };
        let host_ms = ms_since(start);
        if !could_pay_off(csr_ms, host_ms, products) {
            return Ok(Tried::Not(Outcome::ConversionTooSlow { conversion_ms: host_ms }));
        }
        let matrix = match host.upload(self).and_then(|m| self.synchronize().map(|()| m)) {
            Ok(matrix) => matrix,
            Err(e) => return refused(e),
        };
        let conversion_ms = ms_since(start);
        drop(host);
        let product_ms = timer.median_ms(self, &matrix)?;
        Ok(Tried::Measured(FormatCost { conversion_ms, product_ms }, matrix))
    }
}
