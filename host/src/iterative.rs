//! What every iterative solver of the crate shares, on the CPU and on the GPU: the options of a
//! solve, why it stopped and its outcome. The GPU solvers (`crate::solve`) and their CPU oracles
//! (`crate::reference`) take and return the same types, so a test compares them field by field;
//! users reach them as `gpu_spmv::solve::{SolverOptions, Outcome, Stop, Preconditioner}`.

pub use crate::error::SolveError;
use crate::{Error, Result};

/// The preconditioner a solver builds from the matrix for itself. A GPU solver may instead take a
/// caller's own, through `crate::solve::Precondition`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preconditioner {
    /// None: `z = r`.
    None,
    /// Jacobi: `z = D⁻¹ r`, `D` the diagonal of `A`, which must be positive for CG (an SPD matrix's
    /// is) and non-zero for the nonsymmetric solvers.
    Jacobi,
}

/// When a solve stops, and with what preconditioner. Every solver checks them before anything
/// else, with the same refusals.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct SolverOptions {
    /// Converged once `|r| <= rel_tol * |b|`, `r = b - A x` as the solver's recurrence keeps it; in
    /// `[0, 1]`, else [`SolveError::InvalidTolerance`] (NaN would stop no solve, and `rel_tol²|b|²`
    /// must not overflow).
    pub rel_tol: f64,
    /// Stop after this many iterations without converging; at most `u32::MAX`, the GPU solvers'
    /// counter, else [`Error::TooLarge`]. An iteration is one update of `x`: for CG and BiCGSTAB one
    /// pass of the loop, for GMRES one Arnoldi step.
    pub max_iterations: usize,
    pub preconditioner: Preconditioner,
}

impl SolverOptions {
    /// Refuses options outside their documented ranges.
    pub(crate) fn check(&self) -> Result<()> {
        if !(0.0..=1.0).contains(&self.rel_tol) {
            return Err(SolveError::InvalidTolerance { value: self.rel_tol }.into());
        }
        if u32::try_from(self.max_iterations).is_err() {
            let (value, limit) = (self.max_iterations, u32::MAX as usize);
            return Err(Error::TooLarge { what: "the iteration limit", value, limit });
        }
        Ok(())
    }
}

/// Why a solve that did not fail stopped.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    /// The relative residual reached the tolerance.
    Converged,
    /// [`SolverOptions::max_iterations`] iterations without converging.
    MaxIterations,
}

/// The outcome of a solve.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Outcome {
    /// Iterations done (see [`SolverOptions::max_iterations`]).
    pub iterations: usize,
    /// `|r| / |b|` of the recurrence's last residual (0 when `b` and `r` are 0, infinite when only
    /// `b` is).
    pub relative_residual: f64,
    pub stop: Stop,
}

/// The reason [`SolveError::Breakdown`] gives for CG's breakdowns.
pub(crate) const NOT_SPD: &str = "the matrix is not symmetric positive definite";

/// The reasons [`SolveError::Breakdown`] gives for the nonsymmetric solvers' breakdowns, the same on
/// the GPU and in the CPU oracles.
pub(crate) mod why {
    /// A scalar of the recurrence is NaN or infinite.
    pub const NOT_FINITE: &str = "the matrix, the preconditioner or b holds NaN or infinities";
    /// BiCGSTAB's `r̂ᵀr` is zero.
    pub const SHADOW_ORTHOGONAL: &str =
        "the shadow residual is orthogonal to the residual: restart from this x";
    /// BiCGSTAB's `r̂ᵀv` is zero.
    pub const SHADOW_ORTHOGONAL_TO_V: &str =
        "the shadow residual is orthogonal to A M⁻¹ p: restart from this x";
    /// BiCGSTAB's `tᵀt` is zero.
    pub const SINGULAR: &str = "A M⁻¹ s = 0 for a non-zero s: the matrix is singular";
    /// BiCGSTAB's `ω` is zero.
    pub const NO_PROGRESS: &str = "the stabilising step made no progress (tᵀs = 0)";
    /// GMRES's rotated Hessenberg diagonal is zero to working precision.
    pub const SINGULAR_HESSENBERG: &str = "A M⁻¹ maps the Krylov space into a smaller one (the Hessenberg matrix is singular): the matrix is singular";
}

/// `sqrt(rr / bb)`, 0 when `rr` is: the relative residual of [`Outcome`] from squared norms.
pub(crate) fn relative_residual(rr: f64, bb: f64) -> f64 {
    if rr == 0.0 { 0.0 } else { (rr / bb).sqrt() }
}
