//! The cuSPARSE baseline of the ILU(0)/IC(0) apply (`spmv_bench::cusparse::PreparedIluApply`, two
//! `cusparseSpSV` solves on one CSR matrix of both factors) against the CPU oracle
//! (`IluFactors::apply`) on small convection–diffusion problems of sizes that are no multiple of
//! anything, in f32 and f64: every element of `y` and `z` written (both poisoned with NaN before),
//! and `z` the oracle's within a tolerance of the precision's epsilon times the levels; and the
//! apply pointed at other vectors after its analyses (`set_operands`, as the baseline's solvers use
//! it), with its refusals. Without a GPU the test says why it skips (see `skip.rs`).

use crate::skip;
use crate::spsv_apply;
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::{CsrRef, Gpu, Scalar};
use rand::{Rng, SeedableRng};
use spmv_bench::cusparse::{Handle, PreparedIluApply};
use spmv_bench::solve_study::max_relative_difference;

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

/// The analyses depend on the factors alone: pointed at other vectors (slices of a longer buffer, as
/// GMRES's basis columns are), the apply solves those, leaves the result vector of its analyses as
/// it was, and agrees with the oracle; an operand that is the result, or too short, is refused.
#[test]
fn gpu_cusparse_ilu_apply_on_other_operands() {
    let test = "gpu_cusparse_ilu_apply_on_other_operands";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let seed = std::env::var("SPMV_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{test}: seed {seed} (SPMV_TEST_SEED replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let handle = Handle::new(&gpu).unwrap();
    let a = convection_diffusion::<f64>(37, 41, 100.0).unwrap();
    let factors = IluFactors::new(CsrRef::from(&a)).unwrap();
    let n = factors.n();
    let (offsets, cols, values) = factors.csr();
    let df = gpu.upload_csr_parts(n, n, offsets, cols, values).unwrap();
    let zeros = vec![0.0f64; n];
    let (r, y, z) =
        (gpu.upload_vector(&zeros).unwrap(), gpu.zeros::<f64>(n).unwrap(), gpu.zeros::<f64>(n).unwrap());
    let prepared = PreparedIluApply::new(&gpu, &handle, &df, &r, &y, &z).unwrap();
    let z_before = z.to_host(&gpu).unwrap();
    // Two columns of a basis-like buffer: the operand in the second, the result in the first.
    let operand: Vec<f64> = (0..n).map(|_| rng.random_range(-1.0..1.0)).collect();
    let mut columns = gpu.stream().alloc_zeros::<f64>(2 * n).unwrap();
    gpu.stream().memcpy_htod(&operand, &mut columns.slice_mut(n..)).unwrap();
    let (result, source) = (columns.slice(..n), columns.slice(n..));
    // SAFETY: two disjoint halves of `columns`, which outlives the apply (synchronised below).
    unsafe { prepared.set_operands(&gpu, &source, &result) }.unwrap();
    prepared.run().unwrap();
    gpu.synchronize().unwrap();
    let got = gpu.stream().clone_dtoh(&columns).unwrap();
    let mut expected = vec![0.0; n];
    factors.apply(&operand, &mut expected).unwrap();
    let difference = max_relative_difference(&expected, &got[..n]);
    let levels = factors.lower_levels().count() + factors.upper_levels().count();
    let tolerance = 10.0 * f64::EPSILON * levels as f64;
    assert!(difference <= tolerance, "max |z - z_cpu| / max |z_cpu| = {difference:e} over {tolerance:e}");
    assert_eq!(&got[n..], &operand[..], "the operand was written");
    assert_eq!(z.to_host(&gpu).unwrap(), z_before, "the analyses' result was written");
    // SAFETY: refused before the descriptors change (one buffer, then a short one); no apply runs.
    let same = unsafe { prepared.set_operands(&gpu, &source, &source) }.unwrap_err();
    assert!(format!("{same:#}").contains("one buffer"), "{same:#}");
    let short = columns.slice(..n - 1);
    // SAFETY: as above.
    let short = unsafe { prepared.set_operands(&gpu, &short, &result) }.unwrap_err();
    assert!(format!("{short:#}").contains("elements"), "{short:#}");
    println!("{test}: {levels} levels, max rel. difference {difference:.2e} (tolerance {tolerance:.2e})");
}
