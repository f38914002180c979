//! ILU(0) and IC(0) factorised on the device (`solve::Ilu0::on_device`, `Ic0::on_device`) against the
//! CPU: in f64 the applies of the device's factors equal the oracle's (`reference::ilu::IluFactors`)
//! bit for bit, since the factors are the oracle's; in f32 they equal the applies of the CPU model of
//! the device factorisation (`reference::ilu_pattern::FactorPattern::factorise`) bit for bit, and the
//! oracle's to within rounding that grows with the levels. On convection–diffusion grids (Péclet 0,
//! 100, 1000, sides off every multiple), a Q1-like 9-point stencil, and random sparse matrices with
//! full diagonals (unsorted, repeated entries, and levels wider than a block); `refactor` after
//! `update_values` equals a fresh setup bit for bit, on the stream and replayed from a graph; zero
//! pivots and NaN are reported as the oracle reports them, naming the row; two factorisations agree
//! bit for bit. Fresh random inputs (seed printed). Without a GPU these tests print why and pass,
//! unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{dominant_irregular, gpu_or_skip, random_vector, rng};
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::reference::ilu_pattern::{FactorKind, FactorPattern};
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{Ic0, Ilu0, Precondition, SolveError};
use gpu_spmv::{CsrRef, DeviceCsr, Error, Gpu, Result, Scalar};
use nalgebra_sparse::CsrMatrix;
use rand::Rng;
use rand_chacha::ChaCha8Rng;

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|x| x.to_f64().to_bits()).collect()
}

/// A matrix's CSR arrays.
type Arrays<T> = (Vec<usize>, Vec<usize>, Vec<T>);

/// The 9-point stencil of a bilinear (Q1) element's Laplacian on an `nx × ny` grid: 8 on the
/// diagonal, -1 to each neighbour; symmetric positive definite, rows of up to 4 entries a side.
fn q1_like<T: Scalar>(nx: usize, ny: usize) -> Arrays<T> {
    let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
    for y in 0..ny {
        for x in 0..nx {
            for dy in [-1isize, 0, 1] {
                for dx in [-1isize, 0, 1] {
                    let (cx, cy) = (x as isize + dx, y as isize + dy);
                    if (0..nx as isize).contains(&cx) && (0..ny as isize).contains(&cy) {
                        cols.push(cy as usize * nx + cx as usize);
                        values.push(T::from_f64(if dx == 0 && dy == 0 { 8.0 } else { -1.0 }));
                    }
                }
            }
            offsets.push(cols.len());
        }
    }
    (offsets, cols, values)
}

/// The problems: name, arrays, and whether IC(0) applies (symmetric positive definite).
fn problems<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Arrays<T>, bool)> {
    let mut out = Vec::new();
    for (nx, ny, pe) in [(37, 29, 0.0), (67, 45, 100.0), (19, 130, 1000.0), (1, 1, 0.0)] {
        let a: CsrMatrix<T> = convection_diffusion(nx, ny, pe).unwrap();
        let (o, c, v) = a.csr_data();
        out.push((format!("cd {nx} x {ny} Pe {pe}"), (o.to_vec(), c.to_vec(), v.to_vec()), pe == 0.0));
    }
    out.push(("q1-like 33 x 21".to_owned(), q1_like(33, 21), true));
    for n in [2, 301, 4099] {
        out.push((format!("random {n}"), dominant_irregular(rng, n), false));
    }
    out
}

/// `z = M⁻¹ r` on the device.
fn apply<T: Scalar, P: Precondition<T>>(gpu: &Gpu, pre: &mut P, r: &[T]) -> Vec<T> {
    let dr = gpu.upload_vector(r).unwrap();
    let mut dz = gpu.upload_vector(&vec![T::from_f64(f64::NAN); r.len()]).unwrap();
    pre.apply(gpu, &dr, &mut dz).unwrap();
    dz.to_host(gpu).unwrap()
}

fn cpu_apply<T: Scalar>(factors: &IluFactors<T>, r: &[T]) -> Vec<T> {
    let mut z = vec![T::ZERO; r.len()];
    factors.apply(r, &mut z).unwrap();
    z
}

/// The device's factors of `kind` for `da`, as a preconditioner.
enum Device<T> {
    Ilu(Ilu0<T>),
    Ic(Ic0<T>),
}

impl<T: Scalar> Device<T> {
    fn new(gpu: &Gpu, kind: FactorKind, da: &DeviceCsr<T>) -> Result<Self> {
        Ok(match kind {
            FactorKind::Ilu0 => Self::Ilu(Ilu0::on_device(gpu, da)?),
            FactorKind::Ic0 => Self::Ic(Ic0::on_device(gpu, da)?),
        })
    }

    fn refactor(&mut self, gpu: &Gpu, da: &DeviceCsr<T>) -> Result<()> {
        match self {
            Self::Ilu(p) => p.refactor(gpu, da),
            Self::Ic(p) => p.refactor(gpu, da),
        }
    }

    fn verify(&self, gpu: &Gpu) -> Result<()> {
        match self {
            Self::Ilu(p) => p.verify(gpu),
            Self::Ic(p) => p.verify(gpu),
        }
    }

    fn apply(&mut self, gpu: &Gpu, r: &[T]) -> Vec<T> {
        match self {
            Self::Ilu(p) => apply(gpu, p, r),
            Self::Ic(p) => apply(gpu, p, r),
        }
    }
}

fn oracle<T: Scalar>(kind: FactorKind, a: CsrRef<'_, T>) -> Result<IluFactors<T>> {
    match kind {
        FactorKind::Ilu0 => IluFactors::new(a),
        FactorKind::Ic0 => IluFactors::incomplete_cholesky(a),
    }
}

fn factors_against_oracle<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, (o, c, v), spd) in problems::<T>(&mut rng) {
        let n = o.len() - 1;
        let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let da = gpu.upload_csr_ref(a).unwrap();
        let kinds: &[FactorKind] =
            if spd { &[FactorKind::Ilu0, FactorKind::Ic0] } else { &[FactorKind::Ilu0] };
        for &kind in kinds {
            let what = format!("{} {name} {kind:?}", T::NAME);
            let pattern = FactorPattern::new(kind, a).unwrap();
            let (model, expected) = (pattern.factorise(&v).unwrap(), oracle(kind, a).unwrap());
            let mut device = Device::new(&gpu, kind, &da).unwrap();
            let r = random_vector::<T>(&mut rng, n);
            let z = device.apply(&gpu, &r);
            // The device is the model, operation for operation, in T.
            assert_eq!(bits(&z), bits(&cpu_apply(&model, &r)), "{what}: against the model");
            let oracle_z = cpu_apply(&expected, &r);
            if T::NAME == "f64" {
                assert_eq!(bits(&z), bits(&oracle_z), "{what}: against the oracle");
            } else {
                // f32 rounded at every step against f64 rounded once: a relative error of a few
                // epsilon a level, as cuSPARSE's f32 factors were tolerated (benches/tests/gpu_baselines/ilu02.rs).
                let levels = pattern.levels().0.count() + pattern.levels().1.count();
                let scale =
                    oracle_z.iter().fold(0.0f64, |m, v| m.max(v.to_f64().abs())).max(f64::MIN_POSITIVE);
                let tol = 16.0 * levels as f64 * f64::from(f32::EPSILON) * scale;
                for (i, (g, e)) in z.iter().zip(&oracle_z).enumerate() {
                    assert!(
                        (g.to_f64() - e.to_f64()).abs() <= tol,
                        "{what}: z[{i}] {g} against {e} (tol {tol:e})"
                    );
                }
            }
            // Deterministic: a second setup, and a refactor of the same values, give the same bits.
            let mut again = Device::new(&gpu, kind, &da).unwrap();
            assert_eq!(bits(&again.apply(&gpu, &r)), bits(&z), "{what}: a second setup");
            device.refactor(&gpu, &da).unwrap();
            device.verify(&gpu).unwrap();
            assert_eq!(bits(&device.apply(&gpu, &r)), bits(&z), "{what}: a refactor");
        }
    }
}

#[test]
fn gpu_ilu_device_factors_against_oracle_f32() {
    factors_against_oracle::<f32>("gpu_ilu_device_factors_against_oracle_f32");
}

#[test]
fn gpu_ilu_device_factors_against_oracle_f64() {
    factors_against_oracle::<f64>("gpu_ilu_device_factors_against_oracle_f64");
}

/// A Newton loop's step: new values of the same pattern (each entry scaled, the diagonal kept
/// dominant), `update_values`, then `refactor` on the stream, directly and replayed from a graph
/// captured once: the applies equal a fresh setup's from the new values bit for bit.
fn refactor_is_a_fresh_setup<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, (o, c, v), spd) in problems::<T>(&mut rng) {
        let n = o.len() - 1;
        let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
        let kinds: &[FactorKind] =
            if spd { &[FactorKind::Ilu0, FactorKind::Ic0] } else { &[FactorKind::Ilu0] };
        for &kind in kinds {
            let what = format!("{} {name} {kind:?}", T::NAME);
            let da = gpu.upload_csr_ref(a).unwrap();
            let mut device = Device::new(&gpu, kind, &da).unwrap();
            // IC(0) reads the lower triangle as the mirror of the upper: scale symmetrically.
            let factor: Vec<f64> = (0..n).map(|_| rng.random_range(0.5..2.0)).collect();
            let rows: Vec<usize> = (0..n).flat_map(|r| std::iter::repeat_n(r, o[r + 1] - o[r])).collect();
            let new: Vec<T> = (0..v.len())
                .map(|e| {
                    let (r, col) = (rows[e], c[e]);
                    let s =
                        if kind == FactorKind::Ic0 { (factor[r] * factor[col]).sqrt() } else { factor[r] };
                    T::from_f64(v[e].to_f64() * s)
                })
                .collect();
            let r = random_vector::<T>(&mut rng, n);
            let fresh = {
                let fresh = gpu.upload_csr_ref(CsrRef::try_new(n, n, &o, &c, &new).unwrap()).unwrap();
                Device::new(&gpu, kind, &fresh).unwrap().apply(&gpu, &r)
            };
            da.update_values(&gpu, &new).unwrap();
            device.refactor(&gpu, &da).unwrap();
            device.verify(&gpu).unwrap();
            assert_eq!(bits(&device.apply(&gpu, &r)), bits(&fresh), "{what}: refactor");

            // Back to the old values, then the new ones again through a captured refactor.
            da.update_values(&gpu, &v).unwrap();
            device.refactor(&gpu, &da).unwrap();
            let graph = gpu.capture(|| device.refactor(&gpu, &da)).unwrap();
            da.update_values(&gpu, &new).unwrap();
            graph.launch().unwrap();
            device.verify(&gpu).unwrap();
            assert_eq!(bits(&device.apply(&gpu, &r)), bits(&fresh), "{what}: refactor in a graph");
            graph.launch().unwrap();
            assert_eq!(bits(&device.apply(&gpu, &r)), bits(&fresh), "{what}: the graph again");
        }
    }
}

#[test]
fn gpu_ilu_device_refactor_is_a_fresh_setup_f32() {
    refactor_is_a_fresh_setup::<f32>("gpu_ilu_device_refactor_is_a_fresh_setup_f32");
}

#[test]
fn gpu_ilu_device_refactor_is_a_fresh_setup_f64() {
    refactor_is_a_fresh_setup::<f64>("gpu_ilu_device_refactor_is_a_fresh_setup_f64");
}

/// Zero and non-positive pivots, NaN, a missing diagonal: the setup refuses as the oracle does
/// (f64: the same error, row and value), and a refactor to such values is reported by `verify`.
#[test]
fn gpu_ilu_device_refusals_name_the_row() {
    let test = "gpu_ilu_device_refusals_name_the_row";
    let Some(gpu) = gpu_or_skip(test) else { return };
    // tridiag(-1, 2, -1) of order 40; then with a_{22,23} = 0 and a_{23,23} = 0, so that row 23's
    // pivot is exactly 0 - l_{23,22} · 0 (ILU(0)) and 0 - l_{23,22}² < 0 (IC(0)).
    let n: usize = 40;
    let (mut o, mut c, mut v) = (vec![0], vec![], vec![]);
    for i in 0..n {
        for (col, val) in [(i.wrapping_sub(1), -1.0f64), (i, 2.0), (i + 1, -1.0)] {
            if col < n {
                c.push(col);
                v.push(val);
            }
        }
        o.push(c.len());
    }
    let a = CsrRef::try_new(n, n, &o, &c, &v).unwrap();
    let da = gpu.upload_csr_ref(a).unwrap();
    let mut ilu = Ilu0::on_device(&gpu, &da).unwrap();
    let mut ic = Ic0::on_device(&gpu, &da).unwrap();
    let mut singular = v.clone();
    singular[o[22] + 2] = 0.0;
    singular[o[23] + 1] = 0.0;
    let s = CsrRef::try_new(n, n, &o, &c, &singular).unwrap();
    let expected = IluFactors::new(s).unwrap_err();
    assert!(matches!(expected, Error::Solve(SolveError::ZeroPivot { row: 23, .. })), "{expected:?}");
    let ds = gpu.upload_csr_ref(s).unwrap();
    let got = Ilu0::on_device(&gpu, &ds).unwrap_err();
    assert_eq!(format!("{got:?}"), format!("{expected:?}"));
    // The same through a refactor: enqueued without a fault, reported by `verify`.
    da.update_values(&gpu, &singular).unwrap();
    ilu.refactor(&gpu, &da).unwrap();
    assert_eq!(format!("{:?}", ilu.verify(&gpu).unwrap_err()), format!("{expected:?}"));
    let ic_expected = IluFactors::incomplete_cholesky(s).unwrap_err();
    assert!(
        matches!(ic_expected, Error::Solve(SolveError::NonPositivePivot { row: 23, .. })),
        "{ic_expected:?}"
    );
    ic.refactor(&gpu, &da).unwrap();
    assert_eq!(format!("{:?}", ic.verify(&gpu).unwrap_err()), format!("{ic_expected:?}"));
    // Good values again: the faults go with the next factorisation.
    da.update_values(&gpu, &v).unwrap();
    ilu.refactor(&gpu, &da).unwrap();
    ilu.verify(&gpu).unwrap();

    // NaN: the entry's error, before any pivot's.
    let mut nan = v.clone();
    nan[o[31]] = f64::NAN;
    let x = CsrRef::try_new(n, n, &o, &c, &nan).unwrap();
    let got = Ilu0::on_device(&gpu, &gpu.upload_csr_ref(x).unwrap()).unwrap_err();
    assert_eq!(format!("{got:?}"), format!("{:?}", IluFactors::new(x).unwrap_err()));
    da.update_values(&gpu, &nan).unwrap();
    ilu.refactor(&gpu, &da).unwrap();
    assert!(matches!(ilu.verify(&gpu), Err(Error::InvalidNumber { what: "an entry of the matrix", .. })));

    // A row without a diagonal: refused from the pattern, naming it.
    let no_diagonal = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 0], &[1.0f64, 1.0]).unwrap();
    let dn = gpu.upload_csr_ref(no_diagonal).unwrap();
    assert!(matches!(Ilu0::on_device(&gpu, &dn), Err(Error::Solve(SolveError::ZeroPivot { row: 1, .. }))));
    assert!(matches!(
        Ic0::on_device(&gpu, &dn),
        Err(Error::Solve(SolveError::NonPositivePivot { row: 1, .. }))
    ));
    // A refactor of factors made on the host, or with another matrix's shape, is refused.
    let mut host = Ilu0::new(&gpu, a).unwrap();
    assert!(matches!(host.refactor(&gpu, &da), Err(Error::Unsupported(_))));
    assert!(matches!(ilu.refactor(&gpu, &dn), Err(Error::DimensionMismatch { .. })));
}
