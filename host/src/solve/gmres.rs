//! Restarted GMRES(m) (Saad & Schultz 1986; Saad, "Iterative Methods for Sparse Linear Systems",
//! 2nd ed., algorithms 6.9 and 9.5), right-preconditioned: the recurrence of
//! [`crate::reference::gmres`], its oracle, step for step, with every scalar on the device.
//!
//! The Arnoldi basis is orthogonalised by classical Gram-Schmidt applied twice (CGS2): each pass is
//! one reduction over all columns so far (`krylov_basis_dots_*`) and one combination
//! (`krylov_basis_combine_*`), where modified Gram-Schmidt needs a reduction per column, each a
//! grid-wide dependency; the second pass restores the orthogonality one pass of CGS loses, to the
//! level of MGS (Giraud, Langou & Rozložník 2005). The small least-squares problem is solved as it
//! grows, by Givens rotations on the device in one thread (`O(j)` flops per step, nothing to move to
//! the host), so the residual norm of each step is known without a product, and the convergence test
//! needs no host synchronisation.
//!
//! A cycle is its restart (`r = b - A x`, `β = |r|`, `v₀ = r / β`), `m` Arnoldi steps and the update
//! `x += M⁻¹ V y`. A step that converges, or reaches the iteration limit, ends the cycle early: the
//! steps after it are gated off and the update uses the columns so far (`kernels-gpu/src/krylov.rs`,
//! "GMRES"). An iteration is an Arnoldi step; [`Gmres::iterate`] enqueues whole cycles.

use super::krylov::{Breakdowns, Core, PrecondSource, RUNNING, STARTING, UPDATING, preconditioned};
use super::operator::{Operator, Precondition};
use super::program::{
    BB, Ends, FIRST_FREE, ONE, ZERO, add_range, backsolve, columns, converged, converged_if_at_most, copy,
    count, div, end_cycle, finite, givens, limit, sqrt, start,
};
use super::space::OneGpu;
use super::{Outcome, SolveError, SolverOptions};
use crate::Result;
use crate::device::{DeviceVector, VectorMut, VectorRef};
use crate::enqueue::krylov::{Columns, DeviceBasis, coef, constant};
use crate::iterative::why;
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use kernels_gpu::abi::{KRYLOV_MAX_RESTART, KRYLOV_NO_TAG, gmres_scalars};

const RR: u32 = FIRST_FREE;
const BETA: u32 = FIRST_FREE + 1;
const INV_BETA: u32 = FIRST_FREE + 2;
const HH: u32 = FIRST_FREE + 3;
const HN: u32 = FIRST_FREE + 4;
const INV_H: u32 = FIRST_FREE + 5;
const RES: u32 = FIRST_FREE + 6;
/// The first slot of the cycle's scalars ([`gmres_scalars`]).
const BASE: u32 = FIRST_FREE + 7;

const RR_TAG: u32 = 0;
const NORM_TAG: u32 = 1;
const H_TAG: u32 = 2;

/// What each breakdown stops on, and why (the CPU oracle names them the same).
const BREAKDOWNS: Breakdowns =
    &[("rᵀr", why::NOT_FINITE), ("‖w‖²", why::NOT_FINITE), ("H[j][j]", why::SINGULAR_HESSENBERG)];

/// Where the scalars of a cycle of `m` steps sit (`kernels-gpu/src/krylov.rs`, "GMRES").
#[derive(Debug, Clone, Copy)]
struct Layout {
    m: u32,
}

impl Layout {
    /// `H[i][j]`.
    fn h(self, i: u32, j: u32) -> u32 {
        BASE + j * (self.m + 1) + i
    }

    /// `g[0]`.
    fn g(self) -> u32 {
        BASE + self.m * (self.m + 1) + 2 * self.m
    }

    /// `y[0]`, also the scratch of the second Gram-Schmidt pass.
    fn y(self) -> u32 {
        self.g() + self.m + 1
    }
}

/// A GMRES(m) solver for one operator, with the basis, vectors and device state of its solves,
/// allocated once.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Gmres, Preconditioner, SolverOptions};
/// use gpu_spmv::{Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(3);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let mut solver = Gmres::new(gpu.plan(&device_a, Kernel::Auto)?, options, 30, None)?;
/// let b = gpu.upload_vector(&[1.0, 2.0, 3.0])?;
/// let mut x = gpu.zeros::<f64>(3)?;
/// let outcome = solver.solve(&b, &mut x)?;
/// println!("{} iterations, relative residual {:e}", outcome.iterations, outcome.relative_residual);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Gmres<'a, T: Scalar, A: Operator<T>> {
    core: Core<T, OneGpu<'a, T, A>>,
    layout: Layout,
    basis: DeviceBasis<T>,
    r: DeviceVector<T>,
    w: DeviceVector<T>,
    /// `M⁻¹ v_j` and `M⁻¹ V y`, with a preconditioner.
    z: Option<DeviceVector<T>>,
    /// Cycles [`Gmres::solve`] enqueues between two reads of the state.
    check_every: u32,
}

impl<'a, T: Scalar, A: Operator<T>> Gmres<'a, T, A> {
    /// A solver restarting every `restart` steps. `diagonal`, the diagonal of `A`, is needed for
    /// [`Preconditioner::Jacobi`](super::Preconditioner::Jacobi) and ignored otherwise.
    ///
    /// Refused as [`Bicgstab::new`](super::Bicgstab::new) refuses, and for a restart of 0 or above
    /// `kernels_gpu::abi::KRYLOV_MAX_RESTART` ([`SolveError::InvalidRestart`]), before anything is
    /// allocated.
    pub fn new(op: A, options: SolverOptions, restart: usize, diagonal: Option<&[T]>) -> Result<Self> {
        Self::build(op, options, restart, diagonal.map(PrecondSource::Diagonal))
    }

    /// A solver preconditioned by the caller's `preconditioner`; `options.preconditioner` must be
    /// `None`.
    pub fn with_preconditioner(
        op: A,
        options: SolverOptions,
        restart: usize,
        preconditioner: Box<dyn Precondition<T> + 'a>,
    ) -> Result<Self> {
        Self::build(op, options, restart, Some(PrecondSource::Custom(preconditioner)))
    }

    fn build(
        op: A,
        options: SolverOptions,
        restart: usize,
        source: Option<PrecondSource<'a, '_, T>>,
    ) -> Result<Self> {
        // Refused in the oracle's order: the options and the shape, the restart, then (in
        // `Core::new`) the preconditioner.
        Core::check(&op, &options)?;
        let limit = KRYLOV_MAX_RESTART as usize;
        let m = match u32::try_from(restart) {
            Ok(m) if (1..=limit).contains(&restart) => m,
            _ => return Err(SolveError::InvalidRestart { value: restart, limit }.into()),
        };
        let core = Core::new(
            op,
            options,
            source,
            (BASE + gmres_scalars(m), m + 1),
            BREAKDOWNS,
            DiagonalNeed::NonZero,
        )?;
        let (gpu, n) = (core.space.op.gpu(), core.n());
        let z = match core.space.precond {
            super::krylov::Precond::None => None,
            _ => Some(gpu.zeros(n)?),
        };
        Ok(Self {
            layout: Layout { m },
            basis: DeviceBasis::new(gpu, n, m + 1)?,
            r: gpu.zeros(n)?,
            w: gpu.zeros(n)?,
            z,
            check_every: 1,
            core,
        })
    }

    /// The restart length `m`.
    pub fn restart(&self) -> usize {
        self.layout.m as usize
    }

    /// Cycles between two reads of the state in [`Gmres::solve`] (at least 1; 1 by default, as a
    /// cycle already holds `m` steps).
    pub fn set_check_every(&mut self, cycles: u32) {
        self.check_every = cycles.max(1);
    }

    /// As [`Bicgstab::set_diagonal`](super::Bicgstab::set_diagonal).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        self.core.set_diagonal(diagonal)
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there.
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        self.start(b, x)?;
        loop {
            self.iterate(x, self.check_every)?;
            if let Some(outcome) = self.outcome()? {
                return Ok(outcome);
            }
        }
    }

    /// Enqueues the start of a solve: `bᵀb` and the tolerance. Checks `b` and `x` first: on error
    /// nothing is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        self.core.begin(b, x)?;
        let c = &self.core;
        let gpu = c.space.op.gpu();
        c.space.device.dots(gpu, STARTING, &[(&c.b, &c.b, BB)])?;
        let max = u32::try_from(c.options.max_iterations).unwrap_or(u32::MAX);
        let mut program = c.constants().to_vec();
        program.push(start(max, 0));
        c.space.device.program(gpu, STARTING, &program)
    }

    /// Enqueues `cycles` cycles (restart, `m` steps, update) on the solve [`Gmres::start`] began,
    /// then copies the iterate to `x`. Allocates nothing, waits for nothing: may be captured into a
    /// CUDA graph and replayed. Cycles after the solve stopped change nothing.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, cycles: u32) -> Result<()> {
        self.core.check_x(x)?;
        self.core.check_fresh()?;
        for _ in 0..cycles {
            self.cycle()?;
        }
        self.core.finish_batch(x)
    }

    /// One cycle's launches.
    fn cycle(&mut self) -> Result<()> {
        let layout = self.layout;
        let c = &mut self.core;
        let gpu = c.space.op.gpu();
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        // The restart: r = b - A x, β = |r|, v₀ = r / β, g = (β, 0, ...).
        c.space.device.scale(gpu, RUNNING, constant(one), Some(&c.b), &mut self.r)?;
        c.space.op.apply(&c.x, &mut self.w)?;
        c.space.device.axpy(gpu, RUNNING, constant(minus_one), &self.w, &mut self.r)?;
        c.space.device.dots(gpu, RUNNING, &[(&self.r, &self.r, RR)])?;
        c.space.device.program(
            gpu,
            RUNNING,
            &[
                c.record(RR, 0),
                finite(RR, RR_TAG),
                converged(RR, Ends::Solve),
                limit(RR, Ends::Solve),
                sqrt(RR, BETA),
                div(ONE, BETA, INV_BETA, KRYLOV_NO_TAG),
                copy(BETA, layout.g()),
            ],
        )?;
        c.space.device.scale(gpu, RUNNING, coef(one, INV_BETA), Some(&self.r), self.basis.column_mut(0))?;
        for j in 0..layout.m {
            self.step(j)?;
        }
        // The update: y = H⁻¹ g, x += M⁻¹ V y (V y in r, free until the next restart).
        let c = &mut self.core;
        let gpu = c.space.op.gpu();
        c.space.device.program(gpu, UPDATING, &[backsolve(layout.m, BASE)])?;
        c.space.device.basis_combine(
            gpu,
            UPDATING,
            &self.basis,
            Columns::State { most: layout.m },
            layout.y(),
            one,
            false,
            &mut self.r,
        )?;
        let u = preconditioned(&mut c.space.precond, gpu, &self.r, self.z.as_mut())?;
        c.space.device.axpy(gpu, UPDATING, constant(one), u, &mut c.x)?;
        c.space.device.program(gpu, UPDATING, &[end_cycle()])
    }

    /// Arnoldi step `j`: `w = A M⁻¹ v_j`, orthogonalised against `v_0 .. v_j` twice, `H`'s column
    /// `j`, its rotation, the tests, and `v_{j+1} = w / |w|`.
    fn step(&mut self, j: u32) -> Result<()> {
        let (layout, ju) = (self.layout, j as usize);
        let c = &mut self.core;
        let gpu = c.space.op.gpu();
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        let v_j = self.basis.column(ju);
        let z = preconditioned(&mut c.space.precond, gpu, v_j, self.z.as_mut())?;
        c.space.op.apply(z, &mut self.w)?;
        let (cols, h) = (Columns::First(j + 1), layout.h(0, j));
        for slot in [h, layout.y()] {
            c.space.device.basis_dots(gpu, RUNNING, &self.basis, cols, slot, &self.w)?;
            c.space.device.basis_combine(
                gpu,
                RUNNING,
                &self.basis,
                cols,
                slot,
                minus_one,
                true,
                &mut self.w,
            )?;
        }
        c.space.device.dots(gpu, RUNNING, &[(&self.w, &self.w, HH)])?;
        c.space.device.program(
            gpu,
            RUNNING,
            &[
                add_range(layout.y(), h, j + 1),
                finite(HH, NORM_TAG),
                sqrt(HH, HN),
                copy(HN, layout.h(j + 1, j)),
                givens(j, layout.m, BASE, RES, H_TAG),
                count(),
                c.record(RES, 0),
                columns(j + 1),
                converged_if_at_most(HH, ZERO, Ends::Cycle),
                converged(RES, Ends::Cycle),
                limit(RES, Ends::Cycle),
                div(ONE, HN, INV_H, KRYLOV_NO_TAG),
            ],
        )?;
        c.space.device.scale(gpu, RUNNING, coef(one, INV_H), Some(&self.w), self.basis.column_mut(ju + 1))
    }

    /// Where the solve stands, read from the device (waits for the stream).
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        self.core.outcome(0)
    }

    /// Keeps the residual of each iteration of the solves to come, up to `capacity` entries (the
    /// start's first), for [`Gmres::residual_history`]: refused past
    /// [`MAX_HISTORY`](super::MAX_HISTORY) ([`Error::TooLarge`](crate::Error::TooLarge)), before
    /// anything is allocated, and while the stream captures a graph. It replaces the solver's device
    /// state: call it before capturing any of its work.
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        self.core.keep_history(capacity)?;
        Ok(self)
    }

    /// The relative residuals `|r_k| / |b|` of the last solve, from its start (`k = 0`), one an
    /// iteration, at most the capacity given to [`Gmres::with_history`] (empty without one). Within
    /// a cycle the residual of the least-squares problem (`|g_{j+1}|`, what GMRES tests), at each
    /// restart the true residual `b - A x`. Entry `k` is written once step `k` has run, entry 0 at
    /// the first restart: read the history after [`Gmres::iterate`], not between `start` and it.
    /// Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        self.core.residual_history()
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.core.options
    }
}
