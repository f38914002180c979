//! A CSR matrix assembled on the device from COO triples (`CooAssembly`), on the GPU: its arrays
//! equal the CPU reference's (`reference::assemble::assemble`) bit for bit (a NaN's payload aside),
//! repeated pairs summed in
//! input order, on random triples with many repeats (counts off the radix tile, indices wide enough
//! for several radix passes) and the edge cases (no triples, empty rows, one huge row, one pair
//! repeated throughout, rectangular, NaN and infinities); its products match the f64 reference;
//! `set_values` writes every value (poisoned first), plainly and replayed from a graph; the same
//! input gives the same arrays every run; bad input gets the CPU reference's error, and the other
//! refusals are typed. Fresh random inputs (seed printed). Without a GPU these tests print why and
//! pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{Csr, check, gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::reference::assemble::assemble;
use gpu_spmv::reference::{error_scale_transposed, max_relative_error, spmv_transpose_f64};
use gpu_spmv::transpose::TransposeKernel;
use gpu_spmv::{CooAssembly, Error, Gpu, Kernel, Scalar};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// Triples of a `dims` matrix: `n` of them over `pairs` distinct random positions (so repeated
/// about `n / pairs` times each, in random order), values uniform in [-1, 1).
struct Triples<T> {
    dims: (usize, usize),
    rows: Vec<u32>,
    cols: Vec<u32>,
    values: Vec<T>,
}

impl<T: Scalar> Triples<T> {
    fn random(rng: &mut ChaCha8Rng, dims: (usize, usize), n: usize, pairs: usize) -> Self {
        let positions: Vec<(u32, u32)> = (0..pairs.max(1))
            .map(|_| (rng.random_range(0..dims.0) as u32, rng.random_range(0..dims.1) as u32))
            .collect();
        let picks: Vec<(u32, u32)> =
            (0..n).map(|_| positions[rng.random_range(0..positions.len())]).collect();
        Self {
            dims,
            rows: picks.iter().map(|p| p.0).collect(),
            cols: picks.iter().map(|p| p.1).collect(),
            values: random_vector(rng, n),
        }
    }

    fn from_pairs(dims: (usize, usize), pairs: &[(u32, u32)], values: Vec<T>) -> Self {
        Self {
            dims,
            rows: pairs.iter().map(|p| p.0).collect(),
            cols: pairs.iter().map(|p| p.1).collect(),
            values,
        }
    }

    fn assemble_on(&self, gpu: &Gpu) -> Result<CooAssembly<T>, Error> {
        let s = gpu.stream();
        let (rows, cols) = (s.clone_htod(&self.rows).unwrap(), s.clone_htod(&self.cols).unwrap());
        let values = gpu.upload_vector(&self.values).unwrap();
        CooAssembly::new(gpu, self.dims, &rows, &cols, &values)
    }
}

/// A value's bits, every NaN as one: the GPU's arithmetic gives the canonical NaN where the host's
/// propagates an operand's payload.
fn bits<T: Scalar>(v: &T) -> u64 {
    let v = v.to_f64();
    if v.is_nan() { f64::NAN.to_bits() } else { v.to_bits() }
}

/// The assembled matrix's arrays, its values as [`bits`].
fn arrays<T: Scalar>(gpu: &Gpu, a: &CooAssembly<T>) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
    let m = a.matrix();
    let s = gpu.stream();
    let values: Vec<T> = if m.nnz() == 0 { Vec::new() } else { s.clone_dtoh(m.values()).unwrap() };
    let cols = if m.nnz() == 0 { Vec::new() } else { s.clone_dtoh(m.col_indices()).unwrap() };
    (s.clone_dtoh(m.row_offsets()).unwrap(), cols, values.iter().map(bits).collect())
}

/// The CPU reference's arrays in the form of [`arrays`].
fn expected<T: Scalar>(t: &Triples<T>, values: &[T]) -> (Vec<u32>, Vec<u32>, Vec<u64>) {
    let (offsets, cols, values) = assemble(t.dims, &t.rows, &t.cols, values).unwrap();
    let narrow = |v: Vec<usize>| v.into_iter().map(|i| u32::try_from(i).unwrap()).collect();
    (narrow(offsets), narrow(cols), values.iter().map(bits).collect())
}

fn cases<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Triples<T>)> {
    let huge_row: Vec<(u32, u32)> = (0..9000u32).map(|k| (0, (k * 7919) % 70_001)).collect();
    let n = huge_row.len();
    let mut special = random_vector::<T>(rng, 9);
    special[1] = T::from_f64(f64::NAN);
    special[4] = T::from_f64(f64::INFINITY);
    special[7] = T::from_f64(f64::NEG_INFINITY);
    let special_pairs = [(2, 1), (0, 0), (2, 1), (1, 3), (0, 0), (0, 0), (3, 2), (1, 3), (3, 0)];
    vec![
        ("no triples, 5 x 3", Triples::from_pairs((5, 3), &[], vec![])),
        ("no triples, 0 x 0", Triples::from_pairs((0, 0), &[], vec![])),
        ("1 x 1, one triple", Triples::from_pairs((1, 1), &[(0, 0)], vec![T::from_f64(0.75)])),
        ("one pair 5000 times", Triples::random(rng, (3, 4), 5000, 1)),
        (
            "one huge row of 70,001 columns",
            Triples::from_pairs((4, 70_001), &huge_row, random_vector(rng, n)),
        ),
        ("NaN and infinities", Triples::from_pairs((4, 4), &special_pairs, special)),
        ("rectangular 300 x 90,000, tile + 1", Triples::random(rng, (300, 90_000), 4097, 1500)),
        ("square 70,000, 3 tiles - 1", Triples::random(rng, (70_000, 70_000), 3 * 4096 - 1, 9000)),
        ("tall 200,000 x 7, repeats", Triples::random(rng, (200_000, 7), 100_000, 20_000)),
        (
            "one column of 200,000 rows (no column pass), repeats",
            Triples::random(rng, (200_000, 1), 50_000, 10_000),
        ),
        (
            "one row of 70,001 columns (no row pass), repeats",
            Triples::random(rng, (1, 70_001), 20_000, 3_000),
        ),
        ("FEM-like 2^16 + 3, 250,000", Triples::random(rng, (65_539, 65_539), 250_000, 60_000)),
    ]
}

fn assembled_arrays_equal_the_reference<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, t) in cases::<T>(&mut rng) {
        let a = t.assemble_on(&gpu).unwrap();
        let want = expected(&t, &t.values);
        assert_eq!(arrays(&gpu, &a), want, "{name}");
        assert_eq!((a.matrix().nrows(), a.matrix().ncols(), a.triples()), (t.dims.0, t.dims.1, t.rows.len()));
        // The same input, the same arrays.
        assert_eq!(arrays(&gpu, &t.assemble_on(&gpu).unwrap()), want, "{name}, again");

        let (offsets, cols, values) = assemble(t.dims, &t.rows, &t.cols, &t.values).unwrap();
        let csr = Csr { nrows: t.dims.0, ncols: t.dims.1, offsets, cols, vals: values };
        if csr.vals.iter().all(|v| v.to_f64().is_finite()) {
            let x = random_vector::<T>(&mut rng, csr.ncols);
            let y0 = random_vector::<T>(&mut rng, csr.nrows);
            let (dx, mut dy) = (gpu.upload_vector(&x).unwrap(), gpu.upload_vector(&y0).unwrap());
            let (alpha, beta) = (T::from_f64(0.75), T::from_f64(-0.5));
            gpu.spmv_with(Kernel::Auto, alpha, a.matrix(), &dx, beta, &mut dy).unwrap();
            check(name, &csr, alpha, &x, beta, &y0, &dy.to_host(&gpu).unwrap());
        }

        // New values of the same triples reach every entry, plainly and from a graph, and the
        // transpose a plan built before them.
        let transposed = gpu.plan(a.matrix().transposed(), TransposeKernel::Explicit).unwrap();
        let poison = vec![T::from_f64(f64::NAN); a.matrix().nnz()];
        let generation = a.matrix().values_generation();
        for how in ["plain", "graph"] {
            a.matrix().update_values(&gpu, &poison).unwrap();
            let new_values = random_vector::<T>(&mut rng, t.rows.len());
            let staged = gpu.upload_vector(&new_values).unwrap();
            if how == "plain" {
                a.set_values(&gpu, &staged).unwrap();
            } else {
                gpu.capture(|| a.set_values(&gpu, &staged)).unwrap().launch().unwrap();
            }
            assert_eq!(arrays(&gpu, &a), expected(&t, &new_values), "{name}, set_values {how}");
            let (offsets, cols, values) = assemble(t.dims, &t.rows, &t.cols, &new_values).unwrap();
            let view = gpu_spmv::CsrRef::try_new(t.dims.0, t.dims.1, &offsets, &cols, &values).unwrap();
            let x = random_vector::<T>(&mut rng, t.dims.0);
            let mut dy = gpu.upload_vector(&vec![T::from_f64(f64::NAN); t.dims.1]).unwrap();
            transposed.spmv(T::from_f64(1.0), &gpu.upload_vector(&x).unwrap(), T::ZERO, &mut dy).unwrap();
            let zeros = vec![T::ZERO; t.dims.1];
            let want = spmv_transpose_f64(T::from_f64(1.0), view, &x, T::ZERO, &zeros).unwrap();
            let scale = error_scale_transposed(T::from_f64(1.0), view, &x, T::ZERO, &zeros).unwrap();
            let error = max_relative_error(&dy.to_host(&gpu).unwrap(), &want, &scale);
            assert!(
                error <= tolerance::<T>(t.rows.len().max(1)),
                "{name}, Aᵀx after set_values {how}: {error:e}"
            );
        }
        // An update of the poison and a sum per way: counted once each, the captured one at capture.
        assert_eq!(a.matrix().values_generation(), generation + 4, "{name}: updates counted");
    }
}

#[test]
fn gpu_assembly_equals_the_reference_f32() {
    assembled_arrays_equal_the_reference::<f32>("gpu_assembly_equals_the_reference_f32");
}

#[test]
fn gpu_assembly_equals_the_reference_f64() {
    assembled_arrays_equal_the_reference::<f64>("gpu_assembly_equals_the_reference_f64");
}

/// Triples with indices out of range, near and far apart in long arrays: the device names the
/// triple the CPU reference names, with the same error.
#[test]
fn gpu_assembly_refuses_what_the_reference_refuses() {
    let test = "gpu_assembly_refuses_what_the_reference_refuses";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for case in 0..300 {
        let dims = (rng.random_range(0..50usize), rng.random_range(0..50usize));
        let n = if case % 10 == 0 { 300_000 } else { rng.random_range(0..40usize) };
        let mut t = Triples::<f32> {
            dims,
            rows: (0..n).map(|_| rng.random_range(0..dims.0.max(1)) as u32).collect(),
            cols: (0..n).map(|_| rng.random_range(0..dims.1.max(1)) as u32).collect(),
            values: random_vector(&mut rng, n),
        };
        for _ in 0..rng.random_range(0..4) {
            if n > 0 {
                let k = rng.random_range(0..n);
                let bad = rng.random_range(0..3u32);
                if rng.random_bool(0.5) {
                    t.rows[k] = dims.0 as u32 + bad;
                } else {
                    t.cols[k] = dims.1 as u32 + bad;
                }
            }
        }
        let want = assemble(t.dims, &t.rows, &t.cols, &t.values).map(|_| ()).map_err(|e| e.to_string());
        let got = t.assemble_on(&gpu).map(|_| ()).map_err(|e| e.to_string());
        assert_eq!(got, want, "case {case}: {dims:?}, {n} triples");
    }
}

#[test]
fn gpu_assembly_refusals_are_typed() {
    let test = "gpu_assembly_refusals_are_typed";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let other = Gpu::new().unwrap();
    let (s, o) = (gpu.stream(), other.stream());
    let (rows, cols) = (s.clone_htod(&[0u32, 1, 1]).unwrap(), s.clone_htod(&[1u32, 0, 0]).unwrap());
    let values = gpu.upload_vector(&[1.0f64, 2.0, 3.0]).unwrap();
    let short = gpu.upload_vector(&[1.0f64, 2.0]).unwrap();
    let result = CooAssembly::new(&gpu, (2, 2), &rows, &cols, &short);
    assert!(matches!(result, Err(Error::DimensionMismatch { what: "the values", expected: 3, got: 2 })));
    let foreign = o.clone_htod(&[1u32, 0, 0]).unwrap();
    let result = CooAssembly::new(&gpu, (2, 2), &rows, &foreign, &values);
    assert!(matches!(result, Err(Error::ForeignBuffer("the column indices"))), "{result:?}");
    let result = CooAssembly::new(&gpu, (1 << 40, 2), &rows, &cols, &values);
    assert!(matches!(result, Err(Error::TooLarge { .. })), "{result:?}");
    let mut refused = None;
    drop(gpu.capture(|| {
        refused = CooAssembly::new(&gpu, (2, 2), &rows, &cols, &values).err();
        Ok(())
    }));
    assert!(matches!(refused, Some(Error::Unsupported(_))), "{refused:?}");

    let a = CooAssembly::new(&gpu, (2, 2), &rows, &cols, &values).unwrap();
    assert_eq!(s.clone_dtoh(a.matrix().values()).unwrap(), [1.0, 5.0]);
    let result = a.set_values(&gpu, &short);
    assert!(matches!(result, Err(Error::DimensionMismatch { what: "the new values", .. })), "{result:?}");
    let foreign = other.upload_vector(&[1.0f64, 2.0, 3.0]).unwrap();
    assert!(matches!(a.set_values(&gpu, &foreign), Err(Error::ForeignBuffer(_))));
    // Distinct pairs only: the matrix's own values have the triples' length.
    let (r, c) = (s.clone_htod(&[0u32, 1]).unwrap(), s.clone_htod(&[1u32, 0]).unwrap());
    let own = CooAssembly::new(&gpu, (2, 2), &r, &c, &short).unwrap();
    assert!(matches!(own.set_values(&gpu, own.matrix().values()), Err(Error::Unsupported(_))));
    assert_eq!(own.into_matrix().nnz(), 2);
}
