//! From a matrix and a right-hand side to a preconditioned solve: a nonsymmetric convection-diffusion
//! system solved by BiCGSTAB and by GMRES(30), both with Jacobi, then the same solve captured into a
//! CUDA graph as a solver loop would replay it; and a symmetric positive definite one (no convection)
//! by CG with Jacobi and by preconditioned CG with IC(0). Run with `cargo run --example solve`;
//! without a GPU it says why and exits.

use gpu_spmv::nalgebra_sparse::CsrMatrix;
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{Bicgstab, Cg, Gmres, Ic0, Pcg, Preconditioner, SolverOptions};
use gpu_spmv::{CsrRef, Error, Gpu, Kernel};
use std::process::ExitCode;

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
    // The matrix: -Δu + 300 (w · ∇u) on a 300 x 300 grid, upwinded: nonsymmetric, so CG does not
    // apply. Any `CsrMatrix` would do (read one with `gpu_spmv::io`).
    let a: CsrMatrix<f64> = convection_diffusion(300, 300, 300.0)?;
    let n = a.nrows();
    let b: Vec<f64> = (0..n).map(|i| 1.0 + (i % 7) as f64).collect();
    // Jacobi needs the diagonal; the device matrices keep no host copy of the values.
    let diagonal = CsrRef::from(&a).diagonal();

    let device_a = gpu.upload_csr(&a)?;
    let db = gpu.upload_vector(&b)?;
    let options =
        SolverOptions { rel_tol: 1e-8, max_iterations: 10_000, preconditioner: Preconditioner::Jacobi };

    let mut x = gpu.zeros::<f64>(n)?;
    let mut bicgstab = Bicgstab::new(gpu.plan(&device_a, Kernel::Auto)?, options, Some(&diagonal))?;
    let outcome = bicgstab.solve(&db, &mut x)?;
    println!(
        "BiCGSTAB: {} iterations, relative residual {:.1e}",
        outcome.iterations, outcome.relative_residual
    );

    let mut x = gpu.zeros::<f64>(n)?;
    let mut gmres = Gmres::new(gpu.plan(&device_a, Kernel::Auto)?, options, 30, Some(&diagonal))?;
    let outcome = gmres.solve(&db, &mut x)?;
    println!(
        "GMRES(30): {} iterations, relative residual {:.1e}",
        outcome.iterations, outcome.relative_residual
    );

    // In a solver loop, capture a batch of iterations once and replay it: no host work per
    // iteration, and iterations past convergence change nothing.
    let mut x = gpu.zeros::<f64>(n)?;
    bicgstab.start(&db, &x)?;
    let batch = gpu.capture(|| bicgstab.iterate(&mut x, 25))?;
    let outcome = loop {
        batch.launch()?;
        if let Some(outcome) = bicgstab.outcome()? {
            break outcome;
        }
    };
    println!("BiCGSTAB in a graph: {} iterations, the same solve", outcome.iterations);

    // Without convection the matrix is symmetric positive definite: CG applies. `Cg` fuses its
    // vector passes (Jacobi or none); `Pcg` takes any symmetric positive definite preconditioner,
    // here IC(0), which needs fewer iterations at more work per iteration.
    let spd: CsrMatrix<f64> = convection_diffusion(300, 300, 0.0)?;
    let device_spd = gpu.upload_csr(&spd)?;
    let diagonal = CsrRef::from(&spd).diagonal();
    let mut x = gpu.zeros::<f64>(n)?;
    let outcome =
        Cg::new(gpu.plan(&device_spd, Kernel::Auto)?, options, Some(&diagonal))?.solve(&db, &mut x)?;
    println!("CG with Jacobi: {} iterations", outcome.iterations);
    let plain = SolverOptions { preconditioner: Preconditioner::None, ..options };
    let ic0 = Box::new(Ic0::new(&gpu, CsrRef::from(&spd))?);
    let mut x = gpu.zeros::<f64>(n)?;
    let mut pcg = Pcg::with_preconditioner(gpu.plan(&device_spd, Kernel::Auto)?, plain, ic0)?;
    let outcome = pcg.solve(&db, &mut x)?;
    println!("CG with IC(0): {} iterations", outcome.iterations);
    Ok(())
}
