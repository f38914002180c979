//! The README's first product: a 3 x 3 matrix through `Kernel::Auto`, then a plan of another kernel.
//! Run with `cargo run --example quick_start`; without a GPU it says why and exits.

use gpu_spmv::nalgebra_sparse::{CooMatrix, CsrMatrix};
use gpu_spmv::{Error, Gpu, Kernel};
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
    let mut coo = CooMatrix::new(3, 3);
    coo.push(0, 0, 2.0f32);
    coo.push(1, 2, 1.0);
    coo.push(2, 1, -1.0);
    let a = gpu.upload_csr(&CsrMatrix::from(&coo))?;
    let x = gpu.upload_vector(&[1.0f32, 2.0, 3.0])?;
    let mut y = gpu.zeros::<f32>(3)?;

    // y = A x with the kernel Auto picks from the row statistics: enqueued, not waited for.
    gpu.spmv(1.0, &a, &x, 0.0, &mut y)?;
    // y = 2 A x + y with four threads per row, prepared once for as many products as needed.
    let plan = gpu.plan(&a, Kernel::CsrVector { coop: 4, block_size: 128 })?;
    plan.spmv(2.0, &x, 1.0, &mut y)?;

    let y = y.to_host(&gpu)?; // waits for the stream
    assert_eq!(y, [6.0, 9.0, -6.0]);
    println!("{}: y = {y:?}", gpu.name());
    Ok(())
}
