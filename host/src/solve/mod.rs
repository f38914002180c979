//! The solver tier: Krylov solvers on the GPU over the crate's products.
//!
//! - [`Cg`]: conjugate gradients for symmetric positive definite systems, plain or
//!   Jacobi-preconditioned, on any [`Plan`](crate::Plan), its vector passes fused into one
//!   cooperative launch per iteration;
//! - [`Pcg`]: preconditioned conjugate gradients on any [`Operator`], with any symmetric positive
//!   definite preconditioner: [`Ic0`] (incomplete Cholesky), [`BlockJacobi`], a [`Chebyshev`]
//!   polynomial, [`Jacobi`] or a caller's [`Precondition`]; [`PipelinedCg`], the same with one
//!   reduction an iteration (Ghysels & Vanroose), the form a solve over several GPUs needs;
//! - [`Bicgstab`] and [`Gmres`] (restarted GMRES(m)) for nonsymmetric systems, on any [`Operator`]
//!   (every plan, or a caller's matrix-free operator), preconditioned by [`Jacobi`],
//!   [`BlockJacobi`], a [`Chebyshev`] polynomial, [`Ilu0`] or a caller's [`Precondition`].
//!
//! Every scalar of a recurrence stays on the device: a solver enqueues its iterations in batches
//! with no host synchronisation (so they can be captured into a CUDA graph and replayed) and reads
//! its state between batches; iterations enqueued past the end of a solve change nothing, so the
//! counts are exact. Options and outcomes are the types every solver of the crate shares, the CPU
//! oracles of [`crate::reference`] too, which each solver follows step for step. Every solver keeps a
//! residual history on request (`with_history`, `residual_history`), written on the device by the
//! code that updates its state.

mod bicgstab;
mod block_jacobi;
mod cg;
mod chebyshev;
mod gmres;
mod ilu;
mod krylov;
mod operator;
mod pcg;
mod pipelined_cg;
mod program;
mod space;

pub use crate::iterative::{
    EigenBounds, MAX_CHEBYSHEV_DEGREE, MAX_HISTORY, MAX_POWER_STEPS, Outcome, Preconditioner, SolveError,
    SolverOptions, Stop,
};
pub use bicgstab::Bicgstab;
pub(crate) use bicgstab::BicgstabIn;
pub use block_jacobi::BlockJacobi;
pub use cg::Cg;
pub use chebyshev::Chebyshev;
pub use gmres::Gmres;
pub(crate) use gmres::{GmresIn, steps as gmres_steps};
pub use ilu::{Ic0, Ilu0};
pub(crate) use krylov::{Core, Recurrence};
pub use operator::{Jacobi, Operator, Precondition};
pub use pcg::Pcg;
pub(crate) use pcg::PcgIn;
pub use pipelined_cg::PipelinedCg;
pub(crate) use pipelined_cg::PipelinedCgIn;
pub(crate) use program::{copy as copy_scalar, copy_range};
pub(crate) use space::Space;

/// Iterations a solver's `solve` enqueues between two reads of the state, unless told otherwise: each read
/// waits for the GPU (one round trip, ~10-20 µs), so 32 iterations of even the smallest problem
/// (~15 µs each) hide it to a few percent, while a solve that converges mid-batch runs at most 31
/// idle products.
pub const CHECK_EVERY: u32 = 32;
