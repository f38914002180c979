//! What every iterative solver of the crate shares, on the CPU and on the GPU: the options of a
//! solve, why it stopped and its outcome. The GPU solvers (`crate::solve`) and their CPU oracles
//! (`crate::reference`) take and return the same types, so a test compares them field by field;
//! users reach them as `gpu_spmv::solve::{SolverOptions, Outcome, Stop, Preconditioner}`.

pub use crate::error::SolveError;
use crate::scalar::Scalar;
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

/// The most entries a solver's residual history keeps (8 MiB of f64 residuals): a solve that runs
/// longer keeps its first ones.
pub const MAX_HISTORY: usize = 1 << 20;

/// The most products a Chebyshev preconditioner's apply makes: past a few dozen, a Krylov solver
/// spends the same products better.
pub const MAX_CHEBYSHEV_DEGREE: usize = 64;

/// The most steps of the power iteration that estimates a Chebyshev interval.
pub const MAX_POWER_STEPS: usize = 1000;

/// An interval `[min, max]` of the real line holding the eigenvalues of a matrix, or the part of
/// them a polynomial preconditioner is to treat (`crate::solve::Chebyshev`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct EigenBounds {
    pub min: f64,
    pub max: f64,
}

impl EigenBounds {
    /// `[1.1 ρ / ratio, 1.1 ρ]` for an estimate `ρ` of the spectral radius (the power iteration's,
    /// which approaches it from below for a symmetric matrix): 10% above it at the top, as PETSc's
    /// Chebyshev widens its estimate, and `ratio` times lower at the bottom, the part of the spectrum
    /// a polynomial of low degree can treat (Adams, Brezina, Hu & Tuminaro, J. Comput. Phys. 188,
    /// 2003, section 4, take 30). Refused with [`Error::InvalidNumber`]: a radius that is not finite
    /// and positive, a ratio not finite and above 1, and an interval that is not finite with
    /// `0 < min < max` once widened.
    pub fn from_radius(radius: f64, ratio: f64) -> Result<Self> {
        if !(radius > 0.0 && radius.is_finite()) {
            let expected = "finite and above 0";
            return Err(Error::InvalidNumber { what: "the spectral radius", value: radius, expected });
        }
        if !(ratio > 1.0 && ratio.is_finite()) {
            let expected = "finite and above 1";
            return Err(Error::InvalidNumber {
                what: "the Chebyshev interval's ratio",
                value: ratio,
                expected,
            });
        }
        let max = 1.1 * radius;
        let bounds = Self { min: max / ratio, max };
        bounds.check()?;
        Ok(bounds)
    }

    /// Refuses an interval that is not `0 < min < max`, both ends finite.
    fn check(self) -> Result<()> {
        let expected = "finite, with 0 < min < max";
        for (what, value) in
            [("the Chebyshev interval's min", self.min), ("the Chebyshev interval's max", self.max)]
        {
            if !value.is_finite() {
                return Err(Error::InvalidNumber { what, value, expected });
            }
        }
        // Both finite past the loop: plain comparisons decide.
        if self.min <= 0.0 {
            return Err(Error::InvalidNumber {
                what: "the Chebyshev interval's min",
                value: self.min,
                expected,
            });
        }
        if self.max <= self.min {
            return Err(Error::InvalidNumber {
                what: "the Chebyshev interval's max",
                value: self.max,
                expected,
            });
        }
        Ok(())
    }
}

/// The constants of `degree` steps of the Chebyshev iteration on an interval (Saad, "Iterative
/// Methods for Sparse Linear Systems", 2nd ed., Algorithm 12.1, with `θ` its centre, `δ` its half
/// width, `σ = θ / δ`, `ρ₀ = 1 / σ`): `first = 1 / θ`, the start `z = d = r / θ`; then per step the
/// factor that keeps the step, `ρₖ₊₁ ρₖ`, and the one that adds the residual, `2 ρₖ₊₁ / δ`, where
/// `ρₖ₊₁ = 1 / (2σ - ρₖ)`. In f64, each rounded once to the element type where used, by the GPU
/// and the CPU oracle alike.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ChebyshevSteps {
    pub first: f64,
    pub steps: Vec<(f64, f64)>,
}

impl ChebyshevSteps {
    /// The constants for the element type `T`. Refused: a degree past [`MAX_CHEBYSHEV_DEGREE`]
    /// ([`SolveError::InvalidDegree`]), then an interval that is not `0 < min < max` with both ends
    /// finite, or one whose constants are not finite in `T` (an interval near 0 or `T`'s largest
    /// number; [`Error::InvalidNumber`]).
    pub(crate) fn new<T: Scalar>(bounds: EigenBounds, degree: usize) -> Result<Self> {
        if degree > MAX_CHEBYSHEV_DEGREE {
            return Err(SolveError::InvalidDegree { value: degree, limit: MAX_CHEBYSHEV_DEGREE }.into());
        }
        bounds.check()?;
        // `min + half` rather than `(max + min) / 2`, which overflows for finite ends near f64's top.
        let delta = (bounds.max - bounds.min) / 2.0;
        let theta = bounds.min + delta;
        let sigma = theta / delta;
        let mut rho = 1.0 / sigma;
        let steps = (0..degree)
            .map(|_| {
                let next = 1.0 / (2.0 * sigma - rho);
                let step = (next * rho, 2.0 * next / delta);
                rho = next;
                step
            })
            .collect();
        let steps = Self { first: 1.0 / theta, steps };
        let constants = std::iter::once(steps.first).chain(steps.steps.iter().flat_map(|&(k, a)| [k, a]));
        if let Some(value) = constants.into_iter().find(|&c| !T::from_f64(c).to_f64().is_finite()) {
            let expected =
                "finite in the element type: an interval away from 0 and the type's largest number";
            return Err(Error::InvalidNumber { what: "a Chebyshev constant", value, expected });
        }
        Ok(steps)
    }

    /// Refuses a power iteration of no steps or more than [`MAX_POWER_STEPS`]
    /// ([`SolveError::InvalidPowerSteps`]).
    pub(crate) fn check_power_steps(steps: usize) -> Result<()> {
        if !(1..=MAX_POWER_STEPS).contains(&steps) {
            return Err(SolveError::InvalidPowerSteps { value: steps, limit: MAX_POWER_STEPS }.into());
        }
        Ok(())
    }
}

/// The order of a square operator of `rows` rows and `cols` columns, else [`SolveError::NotSquare`].
pub(crate) fn square_order(rows: usize, cols: usize) -> Result<usize> {
    if rows != cols {
        return Err(SolveError::NotSquare { rows, cols }.into());
    }
    Ok(rows)
}

/// The power iteration `v ← A v / ‖A v‖` that estimates a spectral radius, as the CPU oracle and
/// the GPU's estimate share it: the start, and after each product its norm (the estimate) with the
/// next `v`. Norms in f64, each `v` rounded once to `T`.
pub(crate) mod power {
    use super::{Error, Result, Scalar};

    /// `‖v‖`, summed in f64.
    pub(crate) fn norm<T: Scalar>(v: &[T]) -> f64 {
        v.iter().map(|x| x.to_f64().powi(2)).sum::<f64>().sqrt()
    }

    /// The start of `n` elements, of norm 1: entries in `[1, 2)` that vary with the index (a Weyl
    /// sequence), so that no eigenvector of a structured matrix is missed, the same on every run.
    pub(crate) fn start<T: Scalar>(n: usize) -> Vec<T> {
        const GOLDEN: f64 = 0.618_033_988_749_894_8;
        let raw: Vec<f64> = (0..n).map(|i| 1.0 + (i as f64 * GOLDEN).fract()).collect();
        let scale = 1.0 / raw.iter().map(|x| x * x).sum::<f64>().sqrt();
        raw.iter().map(|x| T::from_f64(scale * x)).collect()
    }

    /// `(‖w‖, w / ‖w‖)` for the product `w = A v` of a step; refused where `‖w‖` vanishes (an
    /// operator without rows too) or is not finite ([`Error::InvalidNumber`]).
    pub(crate) fn step<T: Scalar>(w: &[T]) -> Result<(f64, Vec<T>)> {
        let radius = norm(w);
        if radius == 0.0 || !radius.is_finite() {
            return Err(Error::InvalidNumber {
                what: "the power iteration's ‖A v‖",
                value: radius,
                expected: "finite and above 0 (A v = 0 has no radius to show)",
            });
        }
        let scale = 1.0 / radius;
        Ok((radius, w.iter().map(|x| T::from_f64(scale * x.to_f64())).collect()))
    }
}
