//! The cuSPARSE baseline of the ILU(0)/IC(0) apply (`spmv_bench::cusparse::PreparedIluApply`, two
//! `cusparseSpSV` solves on one CSR matrix of both factors) against the CPU oracle
//! (`IluFactors::apply`) on small convection–diffusion problems of sizes that are no multiple of
//! anything, in f32 and f64: every element of `y` and `z` written (both poisoned with NaN before),
//! and `z` the oracle's within a tolerance of the precision's epsilon times the levels. Without a
//! GPU the test says why it skips (see `skip.rs`).

#[path = "../../host/tests/common/skip.rs"]
#[allow(dead_code)] // the helpers of every GPU test; this one uses a part
mod skip;
#[path = "common/spsv_apply.rs"]
mod spsv_apply;

use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::{CsrRef, Gpu, Scalar};
use rand::{Rng, SeedableRng};
use spmv_bench::cusparse::Handle;

/// The factors of `a` (IC(0) where `cholesky`, else ILU(0)), applied by cuSPARSE to a random `r`,
/// against the oracle.
fn agree<T: Scalar>(
    gpu: &Gpu,
    handle: &Handle,
    rng: &mut impl Rng,
    nx: usize,
    ny: usize,
    peclet: f64,
    cholesky: bool,
) {
    let what = format!("{} {nx}x{ny} Pe {peclet} {}", T::NAME, if cholesky { "ic(0)" } else { "ilu(0)" });
    let a = convection_diffusion::<T>(nx, ny, peclet).unwrap();
    let view = CsrRef::from(&a);
    let factors =
        if cholesky { IluFactors::incomplete_cholesky(view) } else { IluFactors::new(view) }.unwrap();
    let difference = spsv_apply::difference(gpu, handle, rng, &factors, factors.csr().2, &what);
    let levels = factors.lower_levels().count() + factors.upper_levels().count();
    let tolerance = 10.0 * T::EPSILON * levels as f64;
    assert!(
        difference <= tolerance,
        "{what}: max |z - z_cpu| / max |z_cpu| = {difference:e} over {tolerance:e}"
    );
    println!("{what}: {levels} levels, max rel. difference {difference:.2e} (tolerance {tolerance:.2e})");
}

#[test]
fn gpu_cusparse_ilu_apply_agrees_with_the_oracle() {
    let test = "gpu_cusparse_ilu_apply_agrees_with_the_oracle";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let seed = std::env::var("SPMV_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{test}: seed {seed} (SPMV_TEST_SEED replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let handle = Handle::new(&gpu).unwrap();
    for (nx, ny) in [(23, 19), (37, 41)] {
        for peclet in [0.0, 100.0, 1000.0] {
            agree::<f64>(&gpu, &handle, &mut rng, nx, ny, peclet, false);
            agree::<f32>(&gpu, &handle, &mut rng, nx, ny, peclet, false);
        }
        // IC(0) on the symmetric positive definite one.
        agree::<f64>(&gpu, &handle, &mut rng, nx, ny, 0.0, true);
        agree::<f32>(&gpu, &handle, &mut rng, nx, ny, 0.0, true);
    }
}
