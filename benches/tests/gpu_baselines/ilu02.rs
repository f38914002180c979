//! cuSPARSE's device ILU(0)/IC(0) factorisation (`spmv_bench::cusparse::PreparedFactorisation`:
//! `csrilu02`, `csric02`) against the CPU oracle (`IluFactors::new`, `::incomplete_cholesky`) on
//! small convection–diffusion problems of sizes that are no multiple of anything, in f32 and f64:
//! every factor entry finite and the oracle's within a tolerance of the precision's epsilon times
//! the levels, `A`'s own values untouched (the routines factorise a copy), a second factorisation
//! the same (it starts again from `A`'s values); then the factors applied by cuSPARSE's SpSV (`PreparedIluApply`) against
//! the oracle's apply, read back and uploaded, and for ILU(0) also read in place in the
//! factorisation's buffer (`PreparedIluApply::of_factorisation`, as the solver baseline applies
//! them; refused for IC(0)'s). And the zero pivots cuSPARSE reports, each naming its row. Without a
//! GPU the test says why it skips (see `skip.rs`).

use crate::skip;
use crate::spsv_apply;
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::{CsrRef, Gpu, Scalar};
use rand::{Rng, SeedableRng};
use spmv_bench::cusparse::{Factorisation, Handle, PreparedFactorisation, PreparedIluApply, ZeroPivot};
use spmv_bench::solve_study::max_relative_difference;

/// cuSPARSE's `factorisation` of `a`, factors and apply, against the oracle.
fn agree<T: Scalar>(
    gpu: &Gpu,
    handle: &Handle,
    rng: &mut impl Rng,
    nx: usize,
    ny: usize,
    peclet: f64,
    factorisation: Factorisation,
) {
    let what = format!("{} {nx}x{ny} Pe {peclet} {}", T::NAME, factorisation.routine());
    let a = convection_diffusion::<T>(nx, ny, peclet).unwrap();
    let view = CsrRef::from(&a);
    let oracle = match factorisation {
        Factorisation::Ilu0 => IluFactors::new(view),
        Factorisation::Ic0 => IluFactors::incomplete_cholesky(view),
    }
    .unwrap();
    let (offsets, cols, expected) = oracle.csr();
    // The oracle's pattern is A's (sorted, no repeats, and symmetric at Pe 0 for IC(0)), so the
    // factors compare entry by entry.
    assert_eq!((offsets, cols), (a.row_offsets(), a.col_indices()), "{what}: the patterns differ");
    let da = gpu.upload_csr(&a).unwrap();
    let mut prepared = PreparedFactorisation::new(gpu, handle, factorisation, &da).unwrap();
    prepared.run(gpu).unwrap();
    prepared.zero_pivot().unwrap();
    let factors = prepared.factors(gpu).unwrap();
    let not_finite: Vec<usize> = (0..factors.len()).filter(|&k| !factors[k].to_f64().is_finite()).collect();
    assert!(not_finite.is_empty(), "{what}: factor entries not finite at {not_finite:?}");
    // Each pivot depends on a chain of earlier ones as long as its row's level in the lower solve,
    // each step rounding in T (the oracle rounds once, from f64): the entries agree within a few
    // roundings per level. Every entry is nonzero on these M-matrices, so each is compared to itself.
    let depth = oracle.lower_levels().count();
    let factor_tolerance = 10.0 * T::EPSILON * depth as f64;
    let (worst, difference) = expected
        .iter()
        .zip(&factors)
        .map(|(e, f)| ((e.to_f64() - f.to_f64()) / e.to_f64()).abs())
        .enumerate()
        .fold((0, 0.0f64), |(k, d), (j, e)| if e > d { (j, e) } else { (k, d) });
    assert!(
        difference <= factor_tolerance,
        "{what}: entry {worst}: cuSPARSE {:e}, oracle {:e}: relative difference {difference:e} over \
         {factor_tolerance:e}",
        factors[worst].to_f64(),
        expected[worst].to_f64()
    );
    assert_eq!(da.values().len(), a.nnz());
    assert_eq!(
        gpu.stream().clone_dtoh(da.values()).unwrap(),
        a.values(),
        "{what}: A's values were overwritten"
    );
    // What a Newton loop repeats: `run` starts again from A's values, not from the factors.
    prepared.run(gpu).unwrap();
    let again = max_relative_difference(&factors, &prepared.factors(gpu).unwrap());
    assert!(again <= factor_tolerance, "{what}: a second factorisation differs by {again:e}");

    // The factors applied by SpSV against the oracle's apply of its own: the tolerance of the apply
    // test (`ilu_spsv.rs`) on the same factors, plus the factors' own difference.
    let apply_difference = spsv_apply::difference(gpu, handle, rng, &oracle, &factors, &what);
    let levels = depth + oracle.upper_levels().count();
    let apply_tolerance = factor_tolerance + 10.0 * T::EPSILON * levels as f64;
    assert!(
        apply_difference <= apply_tolerance,
        "{what}: max |z - z_cpu| / max |z_cpu| = {apply_difference:e} over {apply_tolerance:e}"
    );
    // The same factors read in place, where the factorisation wrote them.
    let n = oracle.n();
    let r: Vec<T> = (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    let (dr, y, z) = (gpu.upload_vector(&r).unwrap(), gpu.zeros::<T>(n).unwrap(), gpu.zeros::<T>(n).unwrap());
    let in_place = PreparedIluApply::of_factorisation(gpu, &prepared, &dr, &y, &z);
    if factorisation == Factorisation::Ic0 {
        let refused = in_place.expect_err("csric02's factors refused");
        assert!(format!("{refused:#}").contains("not in ILU(0)'s layout"), "{what}: {refused:#}");
    } else {
        in_place.unwrap().run().unwrap();
        let mut expected = vec![T::ZERO; n];
        oracle.apply(&r, &mut expected).unwrap();
        let in_place_difference = max_relative_difference(&expected, &z.to_host(gpu).unwrap());
        assert!(
            in_place_difference <= apply_tolerance,
            "{what}: in place, max |z - z_cpu| / max |z_cpu| = {in_place_difference:e} over {apply_tolerance:e}"
        );
    }
    println!(
        "{what}: {depth} lower levels, factors' max rel. difference {difference:.2e} (tolerance \
         {factor_tolerance:.2e}), apply's {apply_difference:.2e} (tolerance {apply_tolerance:.2e})"
    );
}

/// The row of the [`ZeroPivot`] that `result` failed with.
fn zero_pivot_row<R>(result: anyhow::Result<R>) -> usize {
    let error = result.err().expect("a zero pivot");
    error.downcast_ref::<ZeroPivot>().unwrap_or_else(|| panic!("not a zero pivot: {error:#}")).row
}

#[test]
fn gpu_cusparse_ilu02_and_ic02_agree_with_the_oracle() {
    let test = "gpu_cusparse_ilu02_and_ic02_agree_with_the_oracle";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let seed = std::env::var("SPMV_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(rand::random);
    println!("{test}: seed {seed} (SPMV_TEST_SEED replays it)");
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let handle = Handle::new(&gpu).unwrap();
    for (nx, ny) in [(23, 19), (37, 41)] {
        for peclet in [0.0, 100.0, 1000.0] {
            agree::<f64>(&gpu, &handle, &mut rng, nx, ny, peclet, Factorisation::Ilu0);
            agree::<f32>(&gpu, &handle, &mut rng, nx, ny, peclet, Factorisation::Ilu0);
        }
        // IC(0) on the symmetric positive definite one.
        agree::<f64>(&gpu, &handle, &mut rng, nx, ny, 0.0, Factorisation::Ic0);
        agree::<f32>(&gpu, &handle, &mut rng, nx, ny, 0.0, Factorisation::Ic0);
    }
}

#[test]
fn gpu_cusparse_zero_pivots_name_their_row() {
    let test = "gpu_cusparse_zero_pivots_name_their_row";
    let Some(gpu) = skip::gpu_or_skip(test) else { return };
    let handle = Handle::new(&gpu).unwrap();
    // [[1, 1], [1, 1]]: u_11 = l_11² = 1 - 1·1 = 0, found by the factorisation.
    let singular = gpu.upload_csr_parts(2, 2, &[0, 2, 4], &[0, 1, 0, 1], &[1.0f64, 1.0, 1.0, 1.0]).unwrap();
    // Row 1 without its diagonal entry: a structural zero, found by the analysis.
    let no_diagonal = gpu.upload_csr_parts(2, 2, &[0, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap();
    for factorisation in [Factorisation::Ilu0, Factorisation::Ic0] {
        let routine = factorisation.routine();
        let mut prepared = PreparedFactorisation::new(&gpu, &handle, factorisation, &singular).unwrap();
        prepared.run(&gpu).unwrap();
        assert_eq!(zero_pivot_row(prepared.zero_pivot()), 1, "{routine}: the numerical zero");
        let structural = PreparedFactorisation::new(&gpu, &handle, factorisation, &no_diagonal);
        assert_eq!(zero_pivot_row(structural), 1, "{routine}: the structural zero");
        println!("{routine}: both zero pivots named row 1");
    }
}
