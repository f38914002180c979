//! BiCGSTAB and GMRES(m) on small square systems with any options, restart length, `b` and `x`, and
//! the convection–diffusion generator on any grid and Péclet number: refused as documented with `x`
//! untouched, else a solve that stops within its limit without a NaN residual (or breaks down on a
//! named scalar), and a generated M-matrix.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::CsrRef;
use gpu_spmv::solve::{Preconditioner, SolverOptions};
use gpu_spmv_fuzz::Param;
use gpu_spmv_fuzz::properties::krylov::{Krylov, check_convection_diffusion, check_krylov};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Rows of (column, value); columns taken modulo the order, the row count.
    rows: Vec<Vec<(u8, i8)>>,
    b: Vec<i8>,
    x: Vec<i8>,
    rel_tol: f64,
    max_iterations: Param,
    jacobi: bool,
    /// GMRES's restart length, or BiCGSTAB for `None`.
    restart: Option<Param>,
    grid: (Param, Param),
    peclet: f64,
}

fuzz_target!(|input: Input| {
    let n = input.rows.len().min(32);
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for row in &input.rows[..n] {
        for &(c, v) in row {
            cols.push(usize::from(c) % n);
            values.push(f64::from(v));
        }
        offsets.push(cols.len());
    }
    let a = CsrRef::try_new(n, n, &offsets, &cols, &values).expect("valid by construction");
    // Iterations cost a product each: an accepted limit is kept to a few thousand.
    let max_iterations = match input.max_iterations.value() {
        small @ 0..=4096 => small,
        huge if huge > u32::MAX as usize => huge,
        other => other % 4096,
    };
    let preconditioner = if input.jacobi { Preconditioner::Jacobi } else { Preconditioner::None };
    let options = SolverOptions { rel_tol: input.rel_tol, max_iterations, preconditioner };
    let solver = match input.restart {
        None => Krylov::Bicgstab,
        Some(restart) => Krylov::Gmres { restart: restart.value() },
    };
    let b: Vec<f64> = input.b.iter().map(|&v| f64::from(v)).collect();
    let x: Vec<f64> = input.x.iter().map(|&v| f64::from(v)).collect();
    check_krylov(solver, a, &b, &x, options);
    let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let a32 = CsrRef::try_new(n, n, &offsets, &cols, &values32).expect("valid by construction");
    let (b32, x32): (Vec<f32>, Vec<f32>) =
        (b.iter().map(|&v| v as f32).collect(), x.iter().map(|&v| v as f32).collect());
    check_krylov(solver, a32, &b32, &x32, options);

    // A grid is allocated as asked: small ones are built, huge ones refused; none in between.
    let (nx, ny) = (input.grid.0.value(), input.grid.1.value());
    let (nx, ny) = match nx.checked_mul(ny) {
        Some(unknowns) if unknowns <= 4096 => (nx, ny),
        Some(unknowns) if unknowns <= u32::MAX as usize => (nx % 64, ny % 64),
        _ => (nx, ny),
    };
    check_convection_diffusion::<f32>(nx, ny, input.peclet);
    check_convection_diffusion::<f64>(nx, ny, input.peclet);
});
