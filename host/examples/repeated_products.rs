//! Many products with one matrix, as an iterative solver runs them: the run-time tuner
//! (`tune::TunedSpmv`, after Reguly & Giles) settles on a kernel while the loop runs, from
//! `Kernel::Auto`'s choice across the CSR kernels, then every call is a plain launch. `cargo run --release --example repeated_products`; without a GPU it says why and
//! exits.

use gpu_spmv::tune::TunedSpmv;
use gpu_spmv::{Error, Gpu};
use nalgebra_sparse::{CooMatrix, CsrMatrix};
use std::process::ExitCode;

/// The 5-point Laplacian of an `n` x `n` grid.
fn laplacian(n: usize) -> CsrMatrix<f32> {
    let mut coo = CooMatrix::new(n * n, n * n);
    for i in 0..n {
        for j in 0..n {
            let row = i * n + j;
            coo.push(row, row, 4.0);
            for (di, dj) in [(0, 1), (2, 1), (1, 0), (1, 2)] {
                let (ni, nj) = ((i + di).wrapping_sub(1), (j + dj).wrapping_sub(1));
                if ni < n && nj < n {
                    coo.push(row, ni * n + nj, -1.0);
                }
            }
        }
    }
    CsrMatrix::from(&coo)
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
    let a = gpu.upload_csr(&laplacian(1000))?;
    let x = gpu.upload_vector(&vec![1.0f32; a.ncols()])?;
    let mut y = gpu.zeros::<f32>(a.nrows())?;

    let mut tuned = TunedSpmv::new(&gpu, &a)?;
    for product in 1..=2000 {
        tuned.spmv(1.0, &x, 0.0, &mut y)?;
        if product % 50 == 0 {
            gpu.synchronize()?; // where a solver would read a residual
        }
    }
    let y = y.to_host(&gpu)?;
    // Interior rows of a Laplacian sum to 0, edges to 1, corners to 2.
    assert_eq!((y[1001], y[1], y[0]), (0.0, 1.0, 2.0));
    match tuned.converged() {
        Some(kernel) => println!("converged on {kernel} after {} products", tuned.tuning_products()),
        None => println!("still tuning after {} products, at {}", tuned.tuning_products(), tuned.best()),
    }
    Ok(())
}
