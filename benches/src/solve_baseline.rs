//! The baseline of the solver study (issue 28, item 5): BiCGSTAB and restarted GMRES(m) as a
//! typical user writes them on NVIDIA's libraries, cuSPARSE's generic SpMV for the products and cuBLAS
//! for the vectors ([`crate::cublas`]), driven from the host in host pointer mode as NVIDIA's samples
//! are: every dot product comes back to the host, which waits for the stream, and every scalar of the
//! recurrence is computed there. Both are right-preconditioned by Jacobi (`cublas<t>dgmm` with the
//! inverse diagonal, `1 / d` in f64 rounded to `T` as the library's), by ILU(0) as cuSPARSE's users
//! build it ([`BaselineIlu0`]: `csrilu02` on the device, applied by two `cusparseSpSV_solve`, the
//! baseline of the library's `solve::Ilu0`), or not at all.
//!
//! The recurrences, stopping tests and breakdown tests are those of the library's CPU oracles,
//! `gpu_spmv::reference::{bicgstab, gmres}`, step for step in the element type, so that the
//! iteration counts agree with the library's solvers up to the rounding of the dot products (cuBLAS
//! sums in `T` in its own order, the oracle in f64). A breakdown ends a solve as [`End::Breakdown`],
//! named as the oracle names it.
//!
//! BiCGSTAB keeps `s` in `r`'s buffer, and without a preconditioner reads `p` and `s` where the
//! preconditioned solve reads `p̂ = M⁻¹ p` and `ŝ = M⁻¹ s`. Per iteration, beside its two products,
//! it moves `29n` elements of vectors (`p = r + β (p - ω v)` as axpy, scal, axpy 8; `r̂ᵀv` 2;
//! `s = r - α v` 3; `x += α p̂` 3; `sᵀs` 1; `tᵀs` 2; `tᵀt` 1; `x += ω ŝ` 3; `r = s - ω t` 3; `r̂ᵀr` 2;
//! `rᵀr` 1), `35n` with Jacobi (two dgmm, 3 each), and waits for the host 6 times. With ILU(0) the
//! two dgmm are two applies instead, each two triangular solves that read the factors (`A`'s
//! pattern) and move `4n` elements of vectors, and the waits stay 6.
//!
//! GMRES orthogonalises by classical Gram–Schmidt twice, as the oracle does, each pass two
//! `cublas<t>gemv` on the basis held as one `n x (m + 1)` column-major matrix (`h = Vᵀw`, read back
//! to the host; `w = w - V h`): what a user who writes CGS on cuBLAS does, one call per pass where
//! level-1 calls would cost a dot product, and a host wait, per basis vector. The Givens rotations,
//! the convergence test and the back-substitution are on the host; the update `x += M⁻¹ V y` is a
//! gemv (and with Jacobi a dgmm and an axpy). Without a preconditioner the product reads the basis
//! vector in place (`cusparseDnVecSetValues`). Arnoldi step `j` (from 0) moves `(4j + 13)n`
//! elements beside its product (two passes of `2(j + 1)n + 2n`; `‖w‖²` 1; the next basis vector,
//! copy and scal, 4), `3n` more with Jacobi, and waits for the host 3 times (the two `h` and
//! `‖w‖²`); a cycle adds its restart (`r = b - A x`: copy 2, the product, `rᵀr` 1, `v₀` 4) and its
//! update (`(j + 2)n`, with Jacobi `6n` more). With ILU(0) each dgmm is an apply, as in BiCGSTAB.

use crate::cublas::{BlasScalar, Vectors, inverse_diagonal};
use crate::cusparse::{self, Algorithm, Factorisation, Prepared, PreparedFactorisation, PreparedIluApply};
use anyhow::{Result, ensure};
use cudarc::cublas::CudaBlas;
use cudarc::driver::{CudaSlice, DevicePtr};
use gpu_spmv::solve::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Scalar};
use std::ops::ControlFlow::{self, Break, Continue};

/// A solver of the study.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    Bicgstab,
    /// GMRES restarted every `m` Arnoldi steps.
    Gmres(usize),
}

impl Method {
    /// `bicgstab` or `gmres(m)`.
    pub fn name(self) -> String {
        match self {
            Method::Bicgstab => "bicgstab".to_owned(),
            Method::Gmres(m) => format!("gmres({m})"),
        }
    }
}

/// How a solve ended: it stopped (converged or at the iteration limit), or its recurrence broke
/// down, which the study records as an outcome of the run, not as an error of it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum End {
    Stopped(Outcome),
    /// The scalar `what` (named as the oracles name it) was `value` at `iteration` (from 0).
    Breakdown {
        iteration: usize,
        what: &'static str,
        value: f64,
    },
}

impl End {
    /// The end of a library or oracle solve: its outcome, or its breakdown; any other error stays one.
    pub fn of(result: gpu_spmv::Result<Outcome>) -> Result<End> {
        match result {
            Ok(outcome) => Ok(End::Stopped(outcome)),
            Err(gpu_spmv::Error::Solve(SolveError::Breakdown { iteration, what, value, .. })) => {
                Ok(End::Breakdown { iteration, what, value })
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Iterations done: the outcome's, or the iteration of the breakdown.
    pub fn iterations(&self) -> usize {
        match *self {
            End::Stopped(outcome) => outcome.iterations,
            End::Breakdown { iteration, .. } => iteration,
        }
    }

    /// `converged`, `iteration limit`, or the breakdown (`breakdown: r̂ᵀv = 0`).
    pub fn describe(&self) -> String {
        match self {
            End::Stopped(Outcome { stop: Stop::Converged, .. }) => "converged".to_owned(),
            End::Stopped(Outcome { stop: Stop::MaxIterations, .. }) => "iteration limit".to_owned(),
            End::Breakdown { what, value, .. } => format!("breakdown: {what} = {value:e}"),
        }
    }
}

/// `a / b` rounded to `T` (the division a kernel in `T` makes), as the oracles divide.
fn quotient<T: Scalar>(a: T, b: T) -> T {
    T::from_f64(a.to_f64() / b.to_f64())
}

/// `-a`.
fn negative<T: Scalar>(a: T) -> T {
    T::from_f64(-a.to_f64())
}

/// `√a` rounded to `T`.
fn sqrt<T: Scalar>(a: T) -> T {
    T::from_f64(a.to_f64().sqrt())
}

fn finite<T: Scalar>(v: T) -> bool {
    v.to_f64().is_finite()
}

/// A breakdown of `what` at `iteration`.
fn breakdown<T: Scalar>(iteration: usize, what: &'static str, value: T) -> Result<End> {
    Ok(End::Breakdown { iteration, what, value: value.to_f64() })
}

/// ILU(0) as a cuSPARSE user builds it for the baseline's solvers, after NVIDIA's BiCGSTAB sample:
/// `A`'s factors computed on the device by `csrilu02` ([`PreparedFactorisation`]: its analysis,
/// the factorisation, and the check for a zero pivot, which waits for it), then both triangular
/// solves' SpSV analyses on those factors in place ([`PreparedIluApply::of_factorisation`]). Its
/// factors equal the library's `Ilu0`'s to rounding (csrilu02 rounds each step in `T`, the library
/// factorises in f64 and rounds once): the two solvers apply the same preconditioner.
///
/// [`BaselineIlu0::new`] is the whole setup a solve with it pays; the study times it as ours'
/// `Ilu0::new` is timed.
pub struct BaselineIlu0<'a, T: Scalar> {
    /// The two solves over the factorisation's buffer (declared first, so dropped first: its
    /// descriptors go before the buffers they point at).
    apply: PreparedIluApply<'a, T>,
    /// The operand, the intermediate `L⁻¹ r` and the result the analyses were described with, kept
    /// for the descriptors that point at them (each apply points the operand and result at the
    /// solver's vectors and solves through the intermediate).
    _vectors: [DeviceVector<T>; 3],
    /// The factors' buffer, which the apply reads.
    _factorisation: PreparedFactorisation<'a, T>,
    /// The matrix factorised, which a solver checks is its own.
    a: &'a DeviceCsr<T>,
}

impl<T: Scalar> std::fmt::Debug for BaselineIlu0<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineIlu0").field("apply", &self.apply).finish_non_exhaustive()
    }
}

impl<'a, T: Scalar> BaselineIlu0<'a, T> {
    /// Factorises `a` by `csrilu02` and prepares the apply. Refused: what [`PreparedFactorisation`]
    /// refuses (a matrix that is not square, sizes past a C int), and a zero pivot, structural or
    /// numerical, as a [`cusparse::ZeroPivot`] naming its row.
    pub fn new(gpu: &Gpu, sparse: &'a cusparse::Handle, a: &'a DeviceCsr<T>) -> Result<Self> {
        let mut factorisation = PreparedFactorisation::new(gpu, sparse, Factorisation::Ilu0, a)?;
        factorisation.run(gpu)?;
        factorisation.zero_pivot()?;
        let n = a.nrows();
        let vectors = [gpu.zeros::<T>(n)?, gpu.zeros::<T>(n)?, gpu.zeros::<T>(n)?];
        let [r, y, z] = &vectors;
        let apply = PreparedIluApply::of_factorisation(gpu, &factorisation, r, y, z)?;
        Ok(Self { apply, _vectors: vectors, _factorisation: factorisation, a })
    }

    /// Enqueues `z = U⁻¹ L⁻¹ v`. `v` and `z` are a solver's vectors, which outlive its solves and
    /// do not overlap.
    fn apply(&self, gpu: &Gpu, v: &impl DevicePtr<T>, z: &impl DevicePtr<T>) -> Result<()> {
        // SAFETY: `v` and `z` are two distinct vectors of the solver that owns this preconditioner,
        // kept for as long as it is (so past every apply it enqueues), and every apply points the
        // descriptors at its own operands before it runs.
        unsafe { self.apply.set_operands(gpu, v, z)? };
        self.apply.run()
    }
}

/// The baseline's right preconditioner `M⁻¹`.
enum Inverse<'a, T: Scalar> {
    /// The identity: the solvers read the vector itself.
    None,
    /// Jacobi's inverse diagonal.
    Jacobi(CudaSlice<T>),
    /// Boxed: its descriptors and buffers are ten times the other variants'.
    Ilu0(Box<BaselineIlu0<'a, T>>),
}

/// What both solvers share: the device, the routines, the options, the preconditioner and the
/// iterate.
struct Common<'a, T: Scalar> {
    gpu: &'a Gpu,
    blas: Vectors<'a>,
    options: SolverOptions,
    inverse: Inverse<'a, T>,
    x: DeviceVector<T>,
    /// `|b|²` and the threshold on `|r|²` of the solve under way.
    bb: T,
    tol_rr: T,
}

impl<'a, T: BlasScalar> Common<'a, T> {
    /// The preconditioner of `options`: `diagonal` is `A`'s, needed for Jacobi, refused when an
    /// entry is zero or not finite, as the oracles refuse it.
    fn new(
        gpu: &'a Gpu,
        blas: &'a CudaBlas,
        a: &DeviceCsr<T>,
        options: SolverOptions,
        diagonal: &[T],
    ) -> Result<Self> {
        let inverse = match options.preconditioner {
            Preconditioner::None => Inverse::None,
            Preconditioner::Jacobi => Inverse::Jacobi(inverse_diagonal(
                gpu,
                diagonal,
                a.nrows(),
                |d| d.to_f64() != 0.0 && finite(d),
                "non-zero and finite",
            )?),
        };
        Self::with_inverse(gpu, blas, a, options, inverse)
    }

    /// Preconditioned by `ilu`: `options.preconditioner` must be `None`, as the library's
    /// `with_preconditioner` solvers refuse another (the preconditioner is `ilu`).
    fn with_ilu0(
        gpu: &'a Gpu,
        blas: &'a CudaBlas,
        a: &DeviceCsr<T>,
        options: SolverOptions,
        ilu: BaselineIlu0<'a, T>,
    ) -> Result<Self> {
        ensure!(
            options.preconditioner == Preconditioner::None,
            "preconditioned by ILU(0), the options must name no preconditioner, not {:?}",
            options.preconditioner
        );
        ensure!(std::ptr::eq(ilu.a, a), "the ILU(0) factors of another matrix than the solver's");
        Self::with_inverse(gpu, blas, a, options, Inverse::Ilu0(Box::new(ilu)))
    }

    fn with_inverse(
        gpu: &'a Gpu,
        blas: &'a CudaBlas,
        a: &DeviceCsr<T>,
        options: SolverOptions,
        inverse: Inverse<'a, T>,
    ) -> Result<Self> {
        ensure!(
            a.nrows() == a.ncols(),
            "the solvers need a square matrix, not {} x {}",
            a.nrows(),
            a.ncols()
        );
        let n = a.nrows();
        Ok(Self {
            gpu,
            blas: Vectors::new(gpu, blas, n)?,
            options,
            inverse,
            x: gpu.zeros(n)?,
            bb: T::ZERO,
            tol_rr: T::ZERO,
        })
    }

    /// Whether `M⁻¹` is not the identity, so that the solvers keep vectors for `M⁻¹ v`.
    fn preconditioned(&self) -> bool {
        !matches!(self.inverse, Inverse::None)
    }

    /// Copies `x0` to `x` on the device and computes `|b|²` and the tolerance, as the oracles do.
    fn begin(&mut self, b: &DeviceVector<T>, x0: &DeviceVector<T>) -> Result<()> {
        let n = self.blas.len();
        ensure!(b.len() == n && x0.len() == n, "b and x0 must have {n} entries");
        self.blas.copy(x0.as_slice(), self.x.as_slice())?;
        self.bb = self.blas.dot(b.as_slice(), b.as_slice())?;
        let tol = T::from_f64(self.options.rel_tol);
        self.tol_rr = tol * tol * self.bb;
        Ok(())
    }

    /// `z = M⁻¹ v`; nothing without a preconditioner (the caller reads `v`).
    fn precondition(&self, v: &impl DevicePtr<T>, z: &impl DevicePtr<T>) -> Result<()> {
        match &self.inverse {
            Inverse::None => Ok(()),
            Inverse::Jacobi(d) => self.blas.diag_times(d, v, z),
            Inverse::Ilu0(ilu) => ilu.apply(self.gpu, v, z),
        }
    }

    fn stopped(&self, iterations: usize, rr: T, stop: Stop) -> Result<End> {
        let (rr, bb) = (rr.to_f64(), self.bb.to_f64());
        let relative_residual = if rr == 0.0 { 0.0 } else { (rr / bb).sqrt() };
        Ok(End::Stopped(Outcome { iterations, relative_residual, stop }))
    }
}

/// Host-driven BiCGSTAB on cuSPARSE and cuBLAS for one CSR matrix, with its vectors.
pub struct BaselineBicgstab<'a, T: BlasScalar> {
    common: Common<'a, T>,
    r: DeviceVector<T>,
    r_hat: DeviceVector<T>,
    p: DeviceVector<T>,
    v: DeviceVector<T>,
    t: DeviceVector<T>,
    /// `p̂` and `ŝ`, with a preconditioner.
    hats: Option<(DeviceVector<T>, DeviceVector<T>)>,
    /// `r = -A x + r`.
    residual_product: Prepared<'a>,
    /// `v = A p̂`.
    p_product: Prepared<'a>,
    /// `t = A ŝ`.
    s_product: Prepared<'a>,
}

impl<T: BlasScalar> std::fmt::Debug for BaselineBicgstab<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.common.blas.len();
        f.debug_struct("BaselineBicgstab").field("n", &n).field("options", &self.common.options).finish()
    }
}

impl<'a, T: BlasScalar> BaselineBicgstab<'a, T> {
    /// A solver for `a` with cuSPARSE algorithm `alg`; `diagonal` is `A`'s, needed for Jacobi.
    pub fn new(
        gpu: &'a Gpu,
        sparse: &'a cusparse::Handle,
        blas: &'a CudaBlas,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        options: SolverOptions,
        diagonal: &[T],
    ) -> Result<Self> {
        Self::with_common(sparse, alg, a, Common::new(gpu, blas, a, options, diagonal)?)
    }

    /// A solver for `a` with cuSPARSE algorithm `alg`, right-preconditioned by `ilu` (`a`'s own);
    /// `options.preconditioner` must be `None`, as for the library's `with_preconditioner`.
    pub fn with_ilu0(
        gpu: &'a Gpu,
        sparse: &'a cusparse::Handle,
        blas: &'a CudaBlas,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        options: SolverOptions,
        ilu: BaselineIlu0<'a, T>,
    ) -> Result<Self> {
        Self::with_common(sparse, alg, a, Common::with_ilu0(gpu, blas, a, options, ilu)?)
    }

    /// The vectors and prepared products of a solver of `common`.
    fn with_common(
        sparse: &'a cusparse::Handle,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        common: Common<'a, T>,
    ) -> Result<Self> {
        let (gpu, n) = (common.gpu, a.nrows());
        let vector = || gpu.zeros::<T>(n);
        let (r, r_hat, p, v, t) = (vector()?, vector()?, vector()?, vector()?, vector()?);
        let hats = if common.preconditioned() { Some((vector()?, vector()?)) } else { None };
        let (p_hat, s_hat) = hats.as_ref().map_or((&p, &r), |(p_hat, s_hat)| (p_hat, s_hat));
        let p_product = Prepared::new(gpu, sparse, alg, a, None, p_hat, &v)?;
        let s_product = Prepared::new(gpu, sparse, alg, a, None, s_hat, &t)?;
        let residual_product = Prepared::new(gpu, sparse, alg, a, None, &common.x, &r)?;
        Ok(Self { common, r, r_hat, p, v, t, hats, residual_product, p_product, s_product })
    }

    /// The iterate.
    pub fn x(&self) -> &DeviceVector<T> {
        &self.common.x
    }

    /// Solves `A x = b` from `x0` by the recurrence of `gpu_spmv::reference::bicgstab`: a
    /// convergence of the recurrence restarts it from `x`, and only a true residual that meets the
    /// tolerance ends the solve.
    pub fn solve(&mut self, b: &DeviceVector<T>, x0: &DeviceVector<T>) -> Result<End> {
        self.common.begin(b, x0)?;
        // Iterations done before the current (re)start.
        let mut done = 0;
        loop {
            let stream = self.common.gpu.stream();
            stream.memset_zeros(self.p.as_mut_slice())?;
            stream.memset_zeros(self.v.as_mut_slice())?;
            match self.pass(b, done)? {
                Break(end) => return Ok(end),
                Continue(restart) => done = restart,
            }
        }
    }

    /// The recurrence from `r = b - A x`, `r̂ = r`, after `done` iterations: the end of the solve,
    /// or the iterations done when the recurrence said it converged.
    fn pass(&self, b: &DeviceVector<T>, done: usize) -> Result<ControlFlow<End, usize>> {
        let c = &self.common;
        let (gpu, blas, x) = (c.gpu, &c.blas, c.x.as_slice());
        let (r, r_hat, p, v, t) = (
            self.r.as_slice(),
            self.r_hat.as_slice(),
            self.p.as_slice(),
            self.v.as_slice(),
            self.t.as_slice(),
        );
        let (p_hat, s_hat) =
            self.hats.as_ref().map_or((p, r), |(p_hat, s_hat)| (p_hat.as_slice(), s_hat.as_slice()));
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        let max = c.options.max_iterations;
        blas.copy(b.as_slice(), r)?;
        self.residual_product.run(gpu, minus_one, one)?;
        blas.copy(r, r_hat)?;
        let mut rho = blas.dot(r_hat, r)?;
        let mut rr = blas.dot(r, r)?;
        if !finite(rr) {
            return breakdown(done, "rᵀr", rr).map(Break);
        }
        if rr <= c.tol_rr {
            return c.stopped(done, rr, Stop::Converged).map(Break);
        }
        let (mut alpha, mut omega, mut rho_prev) = (one, one, one);
        for iteration in done..=max {
            if rho == T::ZERO || !finite(rho) {
                return breakdown(iteration, "r̂ᵀr", rho).map(Break);
            }
            if iteration == max {
                break;
            }
            let beta = quotient(rho, rho_prev) * quotient(alpha, omega);
            blas.axpy(negative(omega), v, p)?;
            blas.scal(beta, p)?;
            blas.axpy(one, r, p)?;
            c.precondition(p, p_hat)?;
            self.p_product.run(gpu, one, T::ZERO)?;
            let rv = blas.dot(r_hat, v)?;
            if rv == T::ZERO || !finite(rv) {
                return breakdown(iteration, "r̂ᵀv", rv).map(Break);
            }
            alpha = quotient(rho, rv);
            // `s`, in `r`'s buffer.
            blas.axpy(negative(alpha), v, r)?;
            blas.axpy(alpha, p_hat, x)?;
            if blas.dot(r, r)? <= c.tol_rr {
                return Ok(Continue(iteration + 1));
            }
            c.precondition(r, s_hat)?;
            self.s_product.run(gpu, one, T::ZERO)?;
            let ts = blas.dot(t, r)?;
            let tt = blas.dot(t, t)?;
            if tt == T::ZERO || !finite(tt) {
                return breakdown(iteration, "tᵀt", tt).map(Break);
            }
            omega = quotient(ts, tt);
            if omega == T::ZERO || !finite(omega) {
                return breakdown(iteration, "ω", omega).map(Break);
            }
            blas.axpy(omega, s_hat, x)?;
            blas.axpy(negative(omega), t, r)?;
            rho_prev = rho;
            rho = blas.dot(r_hat, r)?;
            rr = blas.dot(r, r)?;
            if rr <= c.tol_rr {
                return Ok(Continue(iteration + 1));
            }
        }
        c.stopped(max, rr, Stop::MaxIterations).map(Break)
    }
}

/// Host-driven GMRES(m) on cuSPARSE and cuBLAS for one CSR matrix, with its basis and vectors.
pub struct BaselineGmres<'a, T: BlasScalar> {
    common: Common<'a, T>,
    m: usize,
    /// `v_0, ..., v_m`, column-major `n x (m + 1)`.
    basis: CudaSlice<T>,
    /// The `h` of a Gram–Schmidt pass, then the `y` of the update (`m + 1` elements).
    coefficients: CudaSlice<T>,
    /// The residual at a restart, then `V y` of the update.
    r: DeviceVector<T>,
    w: DeviceVector<T>,
    /// `M⁻¹ v_j` and `M⁻¹ V y`, with a preconditioner.
    z: Option<DeviceVector<T>>,
    /// `r = -A x + r`.
    residual_product: Prepared<'a>,
    /// `w = A z`, or `w = A v_j` (pointed at the column each step) without a preconditioner.
    step_product: Prepared<'a>,
}

impl<T: BlasScalar> std::fmt::Debug for BaselineGmres<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let n = self.common.blas.len();
        let options = &self.common.options;
        f.debug_struct("BaselineGmres").field("n", &n).field("m", &self.m).field("options", options).finish()
    }
}

impl<'a, T: BlasScalar> BaselineGmres<'a, T> {
    /// A solver for `a` restarting every `restart` steps (1 to the library's limit, so that the basis
    /// is bounded), with cuSPARSE algorithm `alg`; `diagonal` is `A`'s, needed for Jacobi.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        gpu: &'a Gpu,
        sparse: &'a cusparse::Handle,
        blas: &'a CudaBlas,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        options: SolverOptions,
        restart: usize,
        diagonal: &[T],
    ) -> Result<Self> {
        Self::with_common(sparse, alg, a, Common::new(gpu, blas, a, options, diagonal)?, restart)
    }

    /// A solver for `a` restarting every `restart` steps with cuSPARSE algorithm `alg`,
    /// right-preconditioned by `ilu` (`a`'s own); `options.preconditioner` must be `None`, as for
    /// the library's `with_preconditioner`.
    #[allow(clippy::too_many_arguments)]
    pub fn with_ilu0(
        gpu: &'a Gpu,
        sparse: &'a cusparse::Handle,
        blas: &'a CudaBlas,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        options: SolverOptions,
        restart: usize,
        ilu: BaselineIlu0<'a, T>,
    ) -> Result<Self> {
        Self::with_common(sparse, alg, a, Common::with_ilu0(gpu, blas, a, options, ilu)?, restart)
    }

    /// The basis, vectors and prepared products of a solver of `common` (the restart length checked).
    fn with_common(
        sparse: &'a cusparse::Handle,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        common: Common<'a, T>,
        restart: usize,
    ) -> Result<Self> {
        let limit = kernels_gpu::abi::KRYLOV_MAX_RESTART as usize;
        ensure!((1..=limit).contains(&restart), "the restart length {restart} is not in 1..={limit}");
        let (gpu, n) = (common.gpu, a.nrows());
        let elements = n
            .checked_mul(restart + 1)
            .ok_or_else(|| anyhow::anyhow!("a basis of {restart} + 1 vectors of {n} overflows"))?;
        let (r, w) = (gpu.zeros::<T>(n)?, gpu.zeros::<T>(n)?);
        let z = if common.preconditioned() { Some(gpu.zeros::<T>(n)?) } else { None };
        let residual_product = Prepared::new(gpu, sparse, alg, a, None, &common.x, &r)?;
        let step_product = Prepared::new(gpu, sparse, alg, a, None, z.as_ref().unwrap_or(&r), &w)?;
        Ok(Self {
            basis: gpu.stream().alloc_zeros(elements)?,
            coefficients: gpu.stream().alloc_zeros(restart + 1)?,
            common,
            m: restart,
            r,
            w,
            z,
            residual_product,
            step_product,
        })
    }

    /// The iterate.
    pub fn x(&self) -> &DeviceVector<T> {
        &self.common.x
    }

    /// One classical Gram–Schmidt pass against `v_0, ..., v_j`: `h = Vᵀw` (read back), then
    /// `w = w - V h`. Returns `h`.
    fn gram_schmidt(&mut self, j: usize) -> Result<Vec<T>> {
        let (blas, stream) = (&self.common.blas, self.common.gpu.stream());
        let (one, w) = (T::from_f64(1.0), self.w.as_slice());
        blas.gemv(true, j + 1, one, &self.basis, w, T::ZERO, &self.coefficients)?;
        let h = stream.clone_dtoh(&self.coefficients.slice(..=j))?;
        blas.gemv(false, j + 1, T::from_f64(-1.0), &self.basis, &self.coefficients, one, w)?;
        Ok(h)
    }

    /// Solves `A x = b` from `x0` by the recurrence of `gpu_spmv::reference::gmres`.
    pub fn solve(&mut self, b: &DeviceVector<T>, x0: &DeviceVector<T>) -> Result<End> {
        self.common.begin(b, x0)?;
        let (gpu, n, m) = (self.common.gpu, self.common.blas.len(), self.m);
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        let max = self.common.options.max_iterations;
        let mut k = 0;
        loop {
            let common = &self.common;
            let (blas, r) = (&common.blas, self.r.as_slice());
            blas.copy(b.as_slice(), r)?;
            self.residual_product.run(gpu, minus_one, one)?;
            let rr = blas.dot(r, r)?;
            if !finite(rr) {
                return breakdown(k, "rᵀr", rr);
            }
            if rr <= common.tol_rr {
                return common.stopped(k, rr, Stop::Converged);
            }
            if k == max {
                return common.stopped(k, rr, Stop::MaxIterations);
            }
            let v0 = self.basis.slice(..n);
            blas.copy(r, &v0)?;
            blas.scal(quotient(one, sqrt(rr)), &v0)?;
            let mut g = vec![sqrt(rr)];
            // Column j of the rotated H: its j + 1 entries on and above the diagonal.
            let mut h: Vec<Vec<T>> = Vec::new();
            let mut rotations: Vec<(T, T)> = Vec::new();
            let mut converged = false;
            for j in 0..m {
                if k == max {
                    break;
                }
                let vj = self.basis.slice(j * n..(j + 1) * n);
                match &self.z {
                    Some(z) => self.common.precondition(&vj, z.as_slice())?,
                    None => self.step_product.set_x(gpu, &vj)?,
                }
                self.step_product.run(gpu, one, T::ZERO)?;
                let mut column = self.gram_schmidt(j)?;
                for (first, second) in column.iter_mut().zip(self.gram_schmidt(j)?) {
                    *first = *first + second;
                }
                let hh = self.common.blas.dot(self.w.as_slice(), self.w.as_slice())?;
                if !finite(hh) {
                    return breakdown(k, "‖w‖²", hh);
                }
                let below = sqrt(hh);
                // The column's norm before the rotations, summed as the oracle sums it.
                let norm2 = column.iter().fold(below * below, |acc, &h| h.mul_add(h, acc));
                for (i, &(c, s)) in rotations.iter().enumerate() {
                    let (upper, lower) = (column[i], column[i + 1]);
                    column[i] = c.mul_add(upper, s * lower);
                    column[i + 1] = negative(s).mul_add(upper, c * lower);
                }
                let d = sqrt(column[j].mul_add(column[j], below * below));
                let threshold = T::from_f64((j + 1) as f64) * T::from_f64(T::EPSILON) * sqrt(norm2);
                // A NaN `d` breaks down too.
                if d.partial_cmp(&threshold) != Some(std::cmp::Ordering::Greater) {
                    return breakdown(k, "H[j][j]", d);
                }
                let (c, s) = (quotient(column[j], d), quotient(below, d));
                column[j] = d;
                rotations.push((c, s));
                h.push(column);
                g.push(negative(s) * g[j]);
                g[j] = c * g[j];
                k += 1;
                if below == T::ZERO || g[j + 1] * g[j + 1] <= self.common.tol_rr {
                    converged = true;
                    break;
                }
                let next = self.basis.slice((j + 1) * n..(j + 2) * n);
                let blas = &self.common.blas;
                blas.copy(self.w.as_slice(), &next)?;
                blas.scal(quotient(one, below), &next)?;
            }
            let columns = h.len();
            let y = back_substitute(&h, &g[..columns]);
            self.update(&y)?;
            if converged {
                let last = g[columns];
                return self.common.stopped(k, last * last, Stop::Converged);
            }
        }
    }

    /// `x += M⁻¹ V y` over the first `y.len()` basis vectors.
    fn update(&mut self, y: &[T]) -> Result<()> {
        let c = &self.common;
        let (stream, blas, one) = (c.gpu.stream(), &c.blas, T::from_f64(1.0));
        stream.memcpy_htod(y, &mut self.coefficients.slice_mut(..y.len()))?;
        match &self.z {
            Some(z) => {
                let u = self.r.as_slice();
                blas.gemv(false, y.len(), one, &self.basis, &self.coefficients, T::ZERO, u)?;
                c.precondition(u, z.as_slice())?;
                blas.axpy(one, z.as_slice(), c.x.as_slice())
            }
            None => blas.gemv(false, y.len(), one, &self.basis, &self.coefficients, one, c.x.as_slice()),
        }
    }
}

/// `y` solving `R y = g`, `R` upper triangular given by columns (`columns[l][i] = R[i][l]`), as the
/// oracle's back-substitution: `acc = fma(-R[i][l], y_l, acc)` for `l > i` in increasing order.
fn back_substitute<T: Scalar>(columns: &[Vec<T>], g: &[T]) -> Vec<T> {
    let m = g.len();
    let mut y = vec![T::ZERO; m];
    for i in (0..m).rev() {
        let mut acc = g[i];
        for l in i + 1..m {
            acc = negative(columns[l][i]).mul_add(y[l], acc);
        }
        y[i] = quotient(acc, columns[i][i]);
    }
    y
}
