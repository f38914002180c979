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

use super::krylov::{
    Breakdowns, Core, PrecondSource, RUNNING, Recurrence, STARTING, UPDATING, iterate_on, solve_on, start_on,
};
use super::operator::{Operator, Precondition};
use super::program::{
    BB, Ends, FIRST_FREE, ONE, ZERO, add_range, backsolve, columns, converged, converged_if_at_most, copy,
    count, div, end_cycle, finite, givens, limit, sqrt, start,
};
use super::space::{OneGpu, Space};
use super::{Outcome, SolveError, SolverOptions};
use crate::Result;
use crate::device::{VectorMut, VectorRef};
use crate::enqueue::krylov::{Columns, coef, constant};
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
    it: GmresIn<T, OneGpu<'a, T, A>>,
}

/// GMRES(m) in any [`Space`]: the recurrence's basis, vectors and state, and its launches, the one
/// source of [`Gmres`] (one GPU) and of the distributed tier's solver (several). An iteration of
/// [`Recurrence`] is a cycle.
#[derive(Debug)]
pub(crate) struct GmresIn<T: Scalar, S: Space<T>> {
    pub core: Core<T, S>,
    layout: Layout,
    basis: S::Basis,
    r: S::Vector,
    w: S::Vector,
    /// `M⁻¹ v_j` and `M⁻¹ V y`, with a preconditioner.
    z: Option<S::Vector>,
}

/// The restart length `m` of a `restart` the solvers take: refused for 0 or above
/// [`KRYLOV_MAX_RESTART`] ([`SolveError::InvalidRestart`]).
pub(crate) fn steps(restart: usize) -> Result<u32> {
    let limit = KRYLOV_MAX_RESTART as usize;
    match u32::try_from(restart) {
        Ok(m) if (1..=limit).contains(&restart) => Ok(m),
        _ => Err(SolveError::InvalidRestart { value: restart, limit }.into()),
    }
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

    /// A solver preconditioned by the caller's `preconditioner`; refused as
    /// [`Bicgstab::with_preconditioner`](super::Bicgstab::with_preconditioner) refuses.
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
        let m = steps(restart)?;
        let room = GmresIn::<T, OneGpu<'a, T, A>>::room(m);
        let core = Core::new(op, options, source, room, BREAKDOWNS, DiagonalNeed::NonZero)?;
        Ok(Self { it: GmresIn::new(core, m)? })
    }

    /// The restart length `m`.
    pub fn restart(&self) -> usize {
        self.it.restart()
    }

    /// Cycles between two reads of the state in [`Gmres::solve`] (at least 1; 1 by default, as a
    /// cycle already holds `m` steps).
    pub fn set_check_every(&mut self, cycles: u32) {
        self.it.core.check_every = cycles.max(1);
    }

    /// As [`Bicgstab::set_diagonal`](super::Bicgstab::set_diagonal).
    pub fn set_diagonal(&mut self, diagonal: &[T]) -> Result<()> {
        self.it.core.set_diagonal(diagonal)
    }

    /// Solves `A x = b` from the initial guess in `x`, leaving the last iterate there.
    pub fn solve<B, X>(&mut self, b: &B, x: &mut X) -> Result<Outcome>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorMut<T> + ?Sized,
    {
        let every = self.it.core.check_every;
        solve_on(&mut self.it, b, x, every)
    }

    /// Enqueues the start of a solve: `bᵀb` and the tolerance. Checks `b` and `x` first: on error
    /// nothing is enqueued.
    pub fn start<B, X>(&mut self, b: &B, x: &X) -> Result<()>
    where
        B: VectorRef<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
    {
        start_on(&mut self.it, b, x)
    }

    /// Enqueues `cycles` cycles (restart, `m` steps, update) on the solve [`Gmres::start`] began,
    /// then copies the iterate to `x`. Allocates nothing, waits for nothing: may be captured into a
    /// CUDA graph and replayed. Cycles after the solve stopped change nothing.
    pub fn iterate<X: VectorMut<T> + ?Sized>(&mut self, x: &mut X, cycles: u32) -> Result<()> {
        iterate_on(&mut self.it, x, cycles)
    }

    /// Where the solve stands, read from the device (waits for the stream).
    pub fn outcome(&self) -> Result<Option<Outcome>> {
        self.it.core.outcome(0)
    }

    /// Keeps the residual of each iteration of the solves to come, up to `capacity` entries (the
    /// start's first), for [`Gmres::residual_history`]: refused past
    /// [`MAX_HISTORY`](super::MAX_HISTORY) ([`Error::TooLarge`](crate::Error::TooLarge)), before
    /// anything is allocated, and while the stream captures a graph. It replaces the solver's device
    /// state: call it before capturing any of its work.
    pub fn with_history(mut self, capacity: usize) -> Result<Self> {
        self.it.core.keep_history(capacity)?;
        Ok(self)
    }

    /// The relative residuals `|r_k| / |b|` of the last solve, from its start (`k = 0`), one an
    /// iteration, at most the capacity given to [`Gmres::with_history`] (empty without one). Within
    /// a cycle the residual of the least-squares problem (`|g_{j+1}|`, what GMRES tests), at each
    /// restart the true residual `b - A x`. Entry `k` is written once step `k` has run, entry 0 at
    /// the first restart: read the history after [`Gmres::iterate`], not between `start` and it.
    /// Waits for the stream.
    pub fn residual_history(&self) -> Result<Vec<f64>> {
        self.it.core.residual_history()
    }

    /// The options the solver was made with.
    pub fn options(&self) -> &SolverOptions {
        &self.it.core.options
    }
}

impl<T: Scalar, S: Space<T>> GmresIn<T, S> {
    /// The scalar slots of the solver's own and the basis columns of a cycle of `m` steps, which a
    /// space's state must hold.
    pub fn room(m: u32) -> (u32, u32) {
        (BASE + gmres_scalars(m), m + 1)
    }

    /// A solver of `n` unknowns in `space`, restarting every `m` steps ([`steps`]), whose state holds
    /// [`Self::room`] (the options checked by the caller).
    pub fn on(space: S, n: usize, options: SolverOptions, m: u32) -> Result<Self> {
        Self::new(Core::on(space, n, options, Self::room(m).0, BREAKDOWNS)?, m)
    }

    /// The recurrence's basis and vectors, in the core's space; a read of the state every cycle
    /// unless told otherwise (a cycle already holds `m` steps).
    pub fn new(mut core: Core<T, S>, m: u32) -> Result<Self> {
        let space = &core.space;
        let z = if space.has_preconditioner() { Some(space.zeros()?) } else { None };
        let basis = space.basis(m + 1)?;
        let (r, w) = (space.zeros()?, space.zeros()?);
        core.check_every = 1;
        Ok(Self { core, layout: Layout { m }, basis, r, w, z })
    }

    /// The restart length `m`.
    pub fn restart(&self) -> usize {
        self.layout.m as usize
    }

    /// Arnoldi step `j`: `w = A M⁻¹ v_j`, orthogonalised against `v_0 .. v_j` twice, `H`'s column
    /// `j`, its rotation, the tests, and `v_{j+1} = w / |w|`.
    fn step(&mut self, j: u32) -> Result<()> {
        let (layout, ju) = (self.layout, j as usize);
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        let z = c.space.preconditioned(S::column(&self.basis, ju), self.z.as_mut())?;
        c.space.apply(z, &mut self.w)?;
        let h = layout.h(0, j);
        for slot in [h, layout.y()] {
            c.space.basis_dots(RUNNING, &self.basis, j + 1, slot, &self.w)?;
            let cols = Columns::First(j + 1);
            c.space.basis_combine(RUNNING, &self.basis, cols, slot, (minus_one, true), &mut self.w)?;
        }
        c.space.dots(RUNNING, &[(&self.w, &self.w, HH)])?;
        c.space.program(
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
        c.space.scale_to_column(RUNNING, coef(one, INV_H), &self.w, &mut self.basis, ju + 1)
    }
}

impl<T: Scalar, S: Space<T>> Recurrence<T, S> for GmresIn<T, S> {
    fn core(&mut self) -> &mut Core<T, S> {
        &mut self.core
    }

    /// The start's launches: `bᵀb` and the tolerance.
    fn start(&mut self) -> Result<()> {
        let c = &mut self.core;
        c.space.dots(STARTING, &[(&c.b, &c.b, BB)])?;
        let max = u32::try_from(c.options.max_iterations).unwrap_or(u32::MAX);
        let mut program = c.constants().to_vec();
        program.push(start(max, 0));
        c.space.program(STARTING, &program)
    }

    /// One cycle's launches: the restart, `m` steps, the update.
    fn iteration(&mut self) -> Result<()> {
        let layout = self.layout;
        let c = &mut self.core;
        let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
        // The restart: r = b - A x, β = |r|, v₀ = r / β, g = (β, 0, ...).
        c.space.scale(RUNNING, constant(one), Some(&c.b), &mut self.r)?;
        c.space.apply(&c.x, &mut self.w)?;
        c.space.axpy(RUNNING, constant(minus_one), &self.w, &mut self.r)?;
        c.space.dots(RUNNING, &[(&self.r, &self.r, RR)])?;
        c.space.program(
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
        c.space.scale_to_column(RUNNING, coef(one, INV_BETA), &self.r, &mut self.basis, 0)?;
        for j in 0..layout.m {
            self.step(j)?;
        }
        // The update: y = H⁻¹ g, x += M⁻¹ V y (V y in r, free until the next restart).
        let c = &mut self.core;
        c.space.program(UPDATING, &[backsolve(layout.m, BASE)])?;
        let cols = Columns::State { most: layout.m };
        c.space.basis_combine(UPDATING, &self.basis, cols, layout.y(), (one, false), &mut self.r)?;
        let u = c.space.preconditioned(&self.r, self.z.as_mut())?;
        c.space.axpy(UPDATING, constant(one), u, &mut c.x)?;
        c.space.program(UPDATING, &[end_cycle()])
    }

    /// Where the solve stands, as the state says.
    fn outcome(&mut self) -> Result<Option<Outcome>> {
        self.core.outcome(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Error;

    #[test]
    fn a_restart_is_taken_from_one_to_the_kernels_limit() {
        for restart in [1, 30, KRYLOV_MAX_RESTART as usize] {
            assert_eq!(steps(restart).unwrap() as usize, restart);
        }
        for restart in [0, KRYLOV_MAX_RESTART as usize + 1, usize::MAX] {
            let e = steps(restart).unwrap_err();
            let limit = KRYLOV_MAX_RESTART as usize;
            assert!(
                matches!(e, Error::Solve(SolveError::InvalidRestart { value, limit: l }) if value == restart && l == limit),
                "{restart}: {e}"
            );
        }
    }
}
