//! CG's options on a small SPD system, for CG and pipelined CG with Jacobi from the options or IC(0)
//! from the caller: refused before anything else when out of their ranges (a NaN or negative
//! tolerance, more iterations than the GPU solvers count), else a solve that stops as they say.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::solve::{Preconditioner, SolverOptions};
use gpu_spmv_fuzz::Param;
use gpu_spmv_fuzz::properties::cg::check_cg_options;
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    n: u8,
    rel_tol: f64,
    max_iterations: Param,
    jacobi: bool,
}

fuzz_target!(|input: Input| {
    let preconditioner = if input.jacobi { Preconditioner::Jacobi } else { Preconditioner::None };
    // Iterations cost a product each: an accepted limit is kept to a few thousand.
    let max_iterations = match input.max_iterations.value() {
        small @ 0..=4096 => small,
        huge if huge > u32::MAX as usize => huge,
        other => other % 4096,
    };
    let options = SolverOptions { rel_tol: input.rel_tol, max_iterations, preconditioner };
    check_cg_options(usize::from(input.n % 24), options);
});
