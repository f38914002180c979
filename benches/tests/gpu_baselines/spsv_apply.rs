//! The apply of ILU(0)/IC(0) factors by cuSPARSE's SpSV (`PreparedIluApply`) against the CPU
//! oracle's, which the tests of the apply (`ilu_spsv`) and of cuSPARSE's factorisation (`ilu02`)
//! share.

use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::{Gpu, Scalar};
use rand::Rng;
use spmv_bench::cusparse::{Handle, PreparedIluApply};
use spmv_bench::solve_study::max_relative_difference;

/// `z = U⁻¹ L⁻¹ r` by SpSV for a random `r`, of the factors `values` on `oracle`'s pattern (the
/// layout of `IluFactors::csr`), against the oracle's apply of its own factors: asserts that every
/// element of `y` and `z` was written (both poisoned with NaN before), and returns
/// `max |z - z_cpu| / max |z_cpu|`.
pub fn difference<T: Scalar>(
    gpu: &Gpu,
    handle: &Handle,
    rng: &mut impl Rng,
    oracle: &IluFactors<T>,
    values: &[T],
    what: &str,
) -> f64 {
    let n = oracle.n();
    let r: Vec<T> = (0..n).map(|_| T::from_f64(rng.random_range(-1.0..1.0))).collect();
    let mut expected = vec![T::ZERO; n];
    oracle.apply(&r, &mut expected).unwrap();
    let (offsets, cols, _) = oracle.csr();
    let df = gpu.upload_csr_parts(n, n, offsets, cols, values).unwrap();
    let nan = vec![T::from_f64(f64::NAN); n];
    let dr = gpu.upload_vector(&r).unwrap();
    let (y, z) = (gpu.upload_vector(&nan).unwrap(), gpu.upload_vector(&nan).unwrap());
    let prepared = PreparedIluApply::new(gpu, handle, &df, &dr, &y, &z).unwrap();
    prepared.run().unwrap();
    gpu.synchronize().unwrap();
    let (y, z) = (y.to_host(gpu).unwrap(), z.to_host(gpu).unwrap());
    for (name, v) in [("y", &y), ("z", &z)] {
        let unwritten: Vec<usize> = (0..n).filter(|&i| !v[i].to_f64().is_finite()).collect();
        assert!(unwritten.is_empty(), "{what}: {name} not written (or not finite) at {unwritten:?}");
    }
    max_relative_difference(&expected, &z)
}
