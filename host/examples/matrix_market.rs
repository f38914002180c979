//! A Matrix Market file through `Kernel::Auto`, checked against the f64 CPU reference.
//! `cargo run --example matrix_market [FILE.mtx]` (a small symmetric matrix by default); without a
//! GPU it says why and exits.

use gpu_spmv::io::read_matrix_market;
use gpu_spmv::reference::{error_scale, max_relative_error, spmv_f64};
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
    let path = std::env::args()
        .nth(1)
        .unwrap_or_else(|| concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/lower_symmetric.mtx").into());
    let a = read_matrix_market::<f64>(&path)?;
    let stats = CsrRef::from(&a).stats();
    println!("{path}: {} x {}, {} entries, {:.1} per row", a.nrows(), a.ncols(), a.nnz(), stats.mean);
    let gpu = match Gpu::new() {
        Err(Error::NoDevice(why)) => {
            println!("skipped, no GPU: {why}");
            return Ok(());
        }
        gpu => gpu?,
    };

    let x: Vec<f64> = (0..a.ncols()).map(|i| 1.0 + (i % 7) as f64 / 8.0).collect();
    let device_a = gpu.upload_csr(&a)?;
    let plan = gpu.plan(&device_a, Kernel::Auto)?;
    let dx = gpu.upload_vector(&x)?;
    let mut dy = gpu.zeros(a.nrows())?;
    plan.spmv(1.0, &dx, 0.0, &mut dy)?;
    let y = dy.to_host(&gpu)?;

    let (view, y_in) = (CsrRef::from(&a), vec![0.0; a.nrows()]);
    let reference = spmv_f64(1.0, view, &x, 0.0, &y_in)?;
    let error = max_relative_error(&y, &reference, &error_scale(1.0, view, &x, 0.0, &y_in)?);
    println!("{} on {}: largest relative error {error:.2e}", plan.kernel(), gpu.name());
    assert!(error < 1e-12, "the GPU disagrees with the CPU");
    Ok(())
}
