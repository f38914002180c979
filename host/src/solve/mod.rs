//! The solver tier: Krylov solvers on the GPU over the crate's products.
//!
//! [`Cg`] is conjugate gradients, plain or Jacobi-preconditioned, on any [`Plan`](crate::Plan), its
//! vector passes fused into one cooperative launch per iteration. Options and outcomes are the
//! types every solver of the crate shares, the CPU oracles of [`crate::reference`] too.

mod cg;

pub use crate::iterative::{Outcome, Preconditioner, SolveError, SolverOptions, Stop};
pub use cg::Cg;
pub(crate) use cg::outcome_of;

/// Iterations a solver's `solve` enqueues between two reads of the state, unless told otherwise: each read
/// waits for the GPU (one round trip, ~10-20 µs), so 32 iterations of even the smallest problem
/// (~15 µs each) hide it to a few percent, while a solve that converges mid-batch runs at most 31
/// idle products.
pub const CHECK_EVERY: u32 = 32;
