//! The baseline of the CG study (issue 11, Reguly & Giles §8): conjugate gradients as a typical user
//! writes them on NVIDIA's libraries, cuSPARSE's generic SpMV for the product and cuBLAS level 1 for
//! the vectors, driven from the host. It follows NVIDIA's `conjugateGradient` CUDA sample: every
//! scalar comes back to the host from a `cublas<t>dot` in the handle's default host pointer mode,
//! which waits for the stream, and `p = z + beta p` is `cublas<t>scal` then `cublas<t>axpy` (cuBLAS
//! has no axpby for real vectors). The Jacobi preconditioner `z = D⁻¹ r` is `cublas<t>dgmm` on the
//! `n x 1` matrix `r` from the left, the elementwise product cuBLAS offers.
//!
//! The recurrence, stopping tests, initial residual (`r = b`, then `r = r - A x` by cuSPARSE) and
//! breakdown tests are those of `gpu_spmv::reference::cg`, in the element type, so that its
//! iteration counts agree with the library's solver up to the rounding of the dot products. Per
//! iteration it moves `14ns` bytes of vectors (plain: dot `pᵀq` 2, two axpys 6, `rᵀr` 1, scal 2,
//! axpy 3) or `19ns` (Jacobi: dgmm 3 and `rᵀz` 2 more) beside the product, against the library's
//! `10ns` and `12ns` (`kernels-gpu/src/cg.rs`), and waits for the host 2 (3) times.

use crate::cublas::{BlasScalar, Vectors, inverse_diagonal};
use crate::cusparse::{self, Algorithm, Prepared};
use anyhow::{Result, bail, ensure};
use cudarc::cublas::CudaBlas;
use cudarc::driver::CudaSlice;
use gpu_spmv::solve::{Outcome, Preconditioner, SolverOptions, Stop};
use gpu_spmv::{DeviceCsr, DeviceVector, Gpu, Scalar};

/// The faster of cuSPARSE's two CSR algorithms on `a` (one timed product each): the baseline gets
/// the better of what a user could pick.
pub fn faster_algorithm<T: Scalar>(
    gpu: &Gpu,
    handle: &cusparse::Handle,
    a: &DeviceCsr<T>,
) -> Result<Algorithm> {
    let x = gpu.zeros::<T>(a.ncols())?;
    let y = gpu.zeros::<T>(a.nrows())?;
    let mut best = (f64::INFINITY, Algorithm::CsrAlg1);
    for alg in [Algorithm::CsrAlg1, Algorithm::CsrAlg2] {
        let prepared = Prepared::new(gpu, handle, alg, a, None, &x, &y)?;
        let timing = crate::measure::time_gpu(gpu, |_| prepared.run(gpu, T::from_f64(1.0), T::ZERO))?;
        if timing.median_us < best.0 {
            best = (timing.median_us, alg);
        }
    }
    Ok(best.1)
}

/// Host-driven CG on cuSPARSE and cuBLAS for one CSR matrix, with its vectors (the iterate `x`
/// included: cuSPARSE's descriptors hold its address).
pub struct BaselineCg<'a, T: BlasScalar> {
    gpu: &'a Gpu,
    blas: Vectors<'a>,
    options: SolverOptions,
    /// `r = -A x + r`, for the initial residual.
    residual_product: Prepared<'a>,
    /// `q = A p`.
    product: Prepared<'a>,
    x: DeviceVector<T>,
    r: DeviceVector<T>,
    p: DeviceVector<T>,
    q: DeviceVector<T>,
    /// `D⁻¹ r` (Jacobi only; plain CG reads `r`).
    z: DeviceVector<T>,
    inv_diag: Option<CudaSlice<T>>,
    /// The recurrence's scalars, on the host: `rᵀz`, `rᵀr`, and the stopping threshold on `rᵀr`.
    rz: T,
    rr: T,
    tol_rr: T,
    bb: T,
    iterations: usize,
}

impl<T: BlasScalar> std::fmt::Debug for BaselineCg<'_, T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BaselineCg").field("n", &self.blas.len()).field("options", &self.options).finish()
    }
}

impl<'a, T: BlasScalar> BaselineCg<'a, T> {
    /// A solver for `a` (square, SPD) with cuSPARSE algorithm `alg`; `diagonal` is `A`'s diagonal,
    /// needed for Jacobi. The inverse diagonal is `1 / d` in f64 rounded to `T`, as the library's.
    pub fn new(
        gpu: &'a Gpu,
        sparse: &'a cusparse::Handle,
        blas: &'a CudaBlas,
        alg: Algorithm,
        a: &'a DeviceCsr<T>,
        options: SolverOptions,
        diagonal: &[T],
    ) -> Result<Self> {
        ensure!(a.nrows() == a.ncols(), "CG needs a square matrix, not {} x {}", a.nrows(), a.ncols());
        let n = a.nrows();
        let inv_diag = match options.preconditioner {
            Preconditioner::None => None,
            Preconditioner::Jacobi => Some(inverse_diagonal(gpu, diagonal, n, |d| d > T::ZERO, "positive")?),
        };
        let vector = || gpu.zeros::<T>(n);
        let (x, r, p, q, z) = (vector()?, vector()?, vector()?, vector()?, vector()?);
        let residual_product = Prepared::new(gpu, sparse, alg, a, None, &x, &r)?;
        let product = Prepared::new(gpu, sparse, alg, a, None, &p, &q)?;
        Ok(Self {
            gpu,
            blas: Vectors::new(gpu, blas, n)?,
            options,
            residual_product,
            product,
            x,
            r,
            p,
            q,
            z,
            inv_diag,
            rz: T::ZERO,
            rr: T::ZERO,
            tol_rr: T::ZERO,
            bb: T::ZERO,
            iterations: 0,
        })
    }

    /// The iterate.
    pub fn x(&self) -> &DeviceVector<T> {
        &self.x
    }

    /// `z = D⁻¹ r` for Jacobi (plain CG reads `r` as `z`: see [`BaselineCg::z`]).
    fn precondition(&self) -> Result<()> {
        match &self.inv_diag {
            Some(d) => self.blas.diag_times(d, self.r.as_slice(), self.z.as_slice()),
            None => Ok(()),
        }
    }

    /// The preconditioned residual: `z`, or `r` itself for plain CG.
    fn z(&self) -> &CudaSlice<T> {
        if self.inv_diag.is_some() { self.z.as_slice() } else { self.r.as_slice() }
    }

    /// `r = b - A x0` and `p = z`, with `x0` in `x`, and the scalars; `Some` when the solve is over
    /// before it starts (`b = 0`, or the guess solves it).
    pub fn start(&mut self, b: &DeviceVector<T>, x0: &[T]) -> Result<Option<Outcome>> {
        let n = self.blas.len();
        ensure!(b.len() == n && x0.len() == n, "b and x0 must have {n} entries");
        self.x.copy_from_host(self.gpu, x0)?;
        self.blas.copy(b.as_slice(), self.r.as_slice())?;
        self.residual_product.run(self.gpu, T::from_f64(-1.0), T::from_f64(1.0))?;
        self.precondition()?;
        self.blas.copy(self.z(), self.p.as_slice())?;
        self.rz = self.blas.dot(self.r.as_slice(), self.z())?;
        self.rr = self.blas.dot(self.r.as_slice(), self.r.as_slice())?;
        self.bb = self.blas.dot(b.as_slice(), b.as_slice())?;
        let tol = T::from_f64(self.options.rel_tol);
        self.tol_rr = tol * tol * self.bb;
        self.iterations = 0;
        if self.rr <= self.tol_rr {
            return Ok(Some(self.outcome(Stop::Converged)));
        }
        if !positive(self.rz) || !self.rr.to_f64().is_finite() {
            bail!("baseline CG: breakdown before the first iteration, rᵀz = {}", self.rz);
        }
        Ok(None)
    }

    /// One iteration; `Some` once the solve has converged or reached the iteration limit.
    pub fn step(&mut self) -> Result<Option<Outcome>> {
        self.product.run(self.gpu, T::from_f64(1.0), T::ZERO)?;
        let (r, p, q) = (self.r.as_slice(), self.p.as_slice(), self.q.as_slice());
        let pq = self.blas.dot(p, q)?;
        let alpha = T::from_f64(self.rz.to_f64() / pq.to_f64());
        if !positive(pq) || !alpha.to_f64().is_finite() {
            bail!("baseline CG: breakdown at iteration {}, pᵀAp = {pq}", self.iterations);
        }
        self.blas.axpy(alpha, p, self.x.as_slice())?;
        self.blas.axpy(T::from_f64(-alpha.to_f64()), q, r)?;
        self.precondition()?;
        let rr = self.blas.dot(r, r)?;
        let rz = if self.inv_diag.is_some() { self.blas.dot(r, self.z())? } else { rr };
        let beta = T::from_f64(rz.to_f64() / self.rz.to_f64());
        self.blas.scal(beta, p)?;
        self.blas.axpy(T::from_f64(1.0), self.z(), p)?;
        (self.rr, self.rz) = (rr, rz);
        self.iterations += 1;
        if self.rr <= self.tol_rr {
            return Ok(Some(self.outcome(Stop::Converged)));
        }
        if !positive(self.rz) || !self.rr.to_f64().is_finite() {
            bail!("baseline CG: breakdown at iteration {}, rᵀz = {}", self.iterations, self.rz);
        }
        Ok((self.iterations >= self.options.max_iterations).then(|| self.outcome(Stop::MaxIterations)))
    }

    /// Solves `A x = b` from `x0`: [`BaselineCg::start`], then [`BaselineCg::step`] until it stops.
    pub fn solve(&mut self, b: &DeviceVector<T>, x0: &[T]) -> Result<Outcome> {
        if let Some(outcome) = self.start(b, x0)? {
            return Ok(outcome);
        }
        loop {
            if let Some(outcome) = self.step()? {
                return Ok(outcome);
            }
        }
    }

    fn outcome(&self, stop: Stop) -> Outcome {
        let (rr, bb) = (self.rr.to_f64(), self.bb.to_f64());
        let relative_residual = if rr == 0.0 { 0.0 } else { (rr / bb).sqrt() };
        Outcome { iterations: self.iterations, relative_residual, stop }
    }
}

/// Whether `v` is a positive finite number (false for NaN).
fn positive<T: Scalar>(v: T) -> bool {
    v > T::ZERO && v.to_f64().is_finite()
}
