//! A matrix whose values change every step while its pattern stays: implicit Euler for the heat
//! equation `c u_t = k(t) Δu` on the unit square (`u = 0` on the boundary), a heat capacity `c` that
//! differs between the two halves and a conductivity `k(t)` that changes with time. Each step solves
//!
//! `(M/dt + k(t) K) u_{n+1} = M/dt u_n`
//!
//! by CG, `M` the lumped mass (`c h²` on the diagonal), `K` the 5-point stencil scaled by `h²`.
//! The whole step is one CUDA graph, captured once and replayed: the new values formed on the device,
//! `DeviceCsr::update_values_from`, the right-hand side, `Cg::start` and a batch of iterations. Only
//! the two coefficients of the step cross from the host, copied before each replay (a graph cannot
//! hold a copy from the host: it would read the host memory again at every replay).
//!
//! Plain CG, not Jacobi: `A`'s diagonal changes every step (`c h²/dt + 4 k(t)` takes two values
//! whose ratio follows `k`), and `Cg::set_diagonal` copies it from the host, which a capture refuses
//! (`Error::Unsupported`). Nor can a Jacobi solver be captured after the update: the solver checks
//! its diagonal against the matrix's count of value updates when the work is enqueued, and the update
//! captured just before counts at once (`Error::StaleValues`). With Jacobi, update the values and
//! the diagonal outside the graph (`update_values`, `set_diagonal`) and capture the solve alone.
//!
//! `cargo run --example time_stepping`; without a GPU it says why and exits. At the end the GPU's
//! `u` is compared with the same steps run on the CPU by `reference::cg::cg`, the GPU solver's oracle.

use gpu_spmv::nalgebra_sparse::CsrMatrix;
use gpu_spmv::reference::{cg::cg, problems::convection_diffusion};
use gpu_spmv::solve::{Cg, Preconditioner, SolverOptions, Stop};
use gpu_spmv::{CsrRef, Error, Gpu, Kernel};
use std::process::ExitCode;

/// Interior points per side of the grid.
const N: usize = 100;
const STEPS: usize = 20;
const DT: f64 = 1e-3;
/// Iterations a replay of the step enqueues; a solve that needs more replays the second graph.
const BATCH: u32 = 32;

/// The conductivity at time `t`: one period of a swing between 0.1 and 1.9 over the run.
fn conductivity(t: f64) -> f64 {
    1.0 + 0.9 * (2.0 * std::f64::consts::PI * t / (STEPS as f64 * DT)).sin()
}

/// Prints an error with its message (`Display`), not its `Debug` form as returning it from `main`
/// would.
fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run() -> Result<(), Error> {
    let gpu = match Gpu::new() {
        Err(Error::NoDevice(why)) => {
            println!("skipped, no GPU: {why}");
            return Ok(());
        }
        gpu => gpu?,
    };
    // K: the Poisson matrix (a Péclet number of 0), rows scaled by h². Its pattern is A's.
    let stiffness: CsrMatrix<f64> = convection_diffusion(N, N, 0.0)?;
    let (n, nnz) = (stiffness.nrows(), stiffness.nnz());
    let h = 1.0 / (N as f64 + 1.0);
    let x_of = |row: usize| (row % N + 1) as f64 * h;
    let y_of = |row: usize| (row / N + 1) as f64 * h;
    // M/dt on the diagonal: the right half holds ten times the heat of the left.
    let mass: Vec<f64> = (0..n).map(|row| if x_of(row) > 0.5 { 10.0 } else { 1.0 } * h * h / DT).collect();
    // The two fixed value arrays, entry by entry in A's order: M/dt (0 off the diagonal) and K.
    let offsets = stiffness.row_offsets();
    let mass_entries: Vec<f64> = (0..nnz)
        .map(|e| {
            let row = offsets.partition_point(|&o| o <= e) - 1;
            if stiffness.col_indices()[e] == row { mass[row] } else { 0.0 }
        })
        .collect();

    // A step's values, M/dt + k K, are a product: the nnz x 2 matrix of the two arrays times
    // (1, k), so the device forms them in the graph from a vector of two.
    let columns = CsrMatrix::try_from_csr_data(
        nnz,
        2,
        (0..=nnz).map(|e| 2 * e).collect(),
        [0, 1].repeat(nnz),
        mass_entries.iter().zip(stiffness.values()).flat_map(|(&m, &k)| [m, k]).collect(),
    )
    .expect("a valid CSR matrix by construction");
    let diagonal = CsrMatrix::try_from_csr_data(n, n, (0..=n).collect(), (0..n).collect(), mass.clone())
        .expect("a valid CSR matrix by construction");
    // Hot in the middle square, cold elsewhere.
    let u0: Vec<f64> = (0..n)
        .map(|r| if (0.25..0.75).contains(&x_of(r)) && (0.25..0.75).contains(&y_of(r)) { 1.0 } else { 0.0 })
        .collect();

    let device_columns = gpu.upload_csr(&columns)?;
    let device_mass = gpu.upload_csr(&diagonal)?;
    // Uploaded with K's values; the first replay replaces them before any product reads them.
    let a = gpu.upload_csr(&stiffness)?;
    let columns_plan = gpu.plan(&device_columns, Kernel::Auto)?;
    let mass_plan = gpu.plan(&device_mass, Kernel::Auto)?;
    let mut coefficients = gpu.zeros::<f64>(2)?;
    let mut values = gpu.zeros::<f64>(nnz)?;
    let mut b = gpu.zeros::<f64>(n)?;
    let mut u = gpu.upload_vector(&u0)?;
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 1000, preconditioner: Preconditioner::None };
    let mut solver = Cg::new(gpu.plan(&a, Kernel::Auto)?, options, None)?;

    // One step: values, update, b = M/dt u_n, then CG from u_n, which it overwrites with u_{n+1}.
    let step = gpu.capture(|| {
        columns_plan.spmv(1.0, &coefficients, 0.0, &mut values)?;
        a.update_values_from(&gpu, &values)?;
        mass_plan.spmv(1.0, &u, 0.0, &mut b)?;
        solver.start(&b, &mut u)?;
        solver.iterate(&mut u, BATCH)
    })?;
    let more = gpu.capture(|| solver.iterate(&mut u, BATCH))?;

    for n_step in 1..=STEPS {
        let k = conductivity(n_step as f64 * DT);
        coefficients.copy_from_host(&gpu, &[1.0, k])?;
        step.launch()?;
        let outcome = loop {
            if let Some(outcome) = solver.outcome()? {
                break outcome;
            }
            more.launch()?;
        };
        assert_eq!(outcome.stop, Stop::Converged, "step {n_step}: {outcome:?}");
        println!(
            "step {n_step:2}: k = {k:.3}, {:3} iterations, relative residual {:.1e}",
            outcome.iterations, outcome.relative_residual
        );
    }

    // The same steps on the CPU, in f64, by the GPU solver's oracle.
    let mut expected = u0;
    let mut a_host = stiffness.clone();
    for n_step in 1..=STEPS {
        let k = conductivity(n_step as f64 * DT);
        for ((v, &m), &s) in a_host.values_mut().iter_mut().zip(&mass_entries).zip(stiffness.values()) {
            *v = m + k * s;
        }
        let rhs: Vec<f64> = mass.iter().zip(&expected).map(|(m, u)| m * u).collect();
        let outcome = cg(&CsrRef::from(&a_host), &rhs, &mut expected, &options)?;
        assert_eq!(outcome.stop, Stop::Converged, "CPU step {n_step}: {outcome:?}");
    }
    let u = u.to_host(&gpu)?;
    let max = |v: &mut dyn Iterator<Item = f64>| v.fold(0.0, f64::max);
    let difference = max(&mut u.iter().zip(&expected).map(|(g, c)| (g - c).abs()));
    let scale = max(&mut expected.iter().map(|c| c.abs()));
    // Each step's solve is exact to about κ(A) · 1e-10 (κ below 10^3 here), on either side.
    assert!(difference <= 1e-6 * scale, "GPU and CPU differ by {difference:e} (max |u| {scale:e})");
    println!("after {STEPS} steps: max |u| {scale:.4}, GPU and CPU agree to {difference:.1e}");
    Ok(())
}
