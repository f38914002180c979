//! The local matrix approach's kernels on the GPU (a group of lanes per element, the element
//! matrices whole or as the upper triangles of symmetric ones), both variants, against the f64
//! product of the same element matrices by relative error, on fresh random meshes of Q1 to Q4
//! elements with Dirichlet slots, with `y` poisoned where `beta == 0`; the coloured kernel bit for
//! bit against the CPU's `Lma::spmv`, and the two storages of one symmetric operator bit for bit
//! against each other. Edge cases: one element, elements naming a node twice, an element with no
//! unknown, a star (a colour per element), a colouring too lopsided to go round, meshes past one
//! wave of the GPU. Without a GPU these tests print why and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::formats::{Lma, LmaStorage, NO_NODE};
use gpu_spmv::reference::max_relative_error;
use gpu_spmv::{DeviceLma, Gpu, LmaKernel, Scalar};
use rand::Rng;
use rand_chacha::ChaCha8Rng;

/// An operator's input: the node count, nodes per element, the element-to-node map and the element
/// matrices (row-major, element after element), already rounded to the element type under test, so
/// that the f64 reference sees the very values the kernels do.
struct Input {
    nodes: usize,
    m: usize,
    map: Vec<usize>,
    values: Vec<f64>,
}

impl Input {
    fn lma<T: Scalar>(&self) -> Lma<T> {
        let values: Vec<T> = self.values.iter().map(|&v| T::from_f64(v)).collect();
        Lma::try_new(self.nodes, self.m, &self.map, &values).unwrap()
    }

    /// The most elements at one node times the nodes per element: the longest sum a `y` entry is.
    fn longest_sum(&self) -> usize {
        let mut at = vec![0usize; self.nodes];
        for &n in self.map.iter().filter(|&&n| n != NO_NODE) {
            at[n] += 1;
        }
        at.into_iter().max().unwrap_or(0) * self.m
    }

    /// `alpha A x + beta y0` in f64 (`y0` not read when `beta == 0`), and the scale of its rounding
    /// errors, `|alpha| |A| |x| + |beta| |y0|`.
    fn reference<T: Scalar>(&self, alpha: T, x: &[T], beta: T, y0: &[T]) -> (Vec<f64>, Vec<f64>) {
        let f64s = |v: &[T]| v.iter().map(|e| e.to_f64()).collect::<Vec<f64>>();
        let (x, y0) = (f64s(x), f64s(y0));
        let exact = Lma::try_new(self.nodes, self.m, &self.map, &self.values).unwrap();
        let mut reference = y0.clone();
        exact.spmv(alpha.to_f64(), &x, beta.to_f64(), &mut reference).unwrap();
        let abs: Vec<f64> = self.values.iter().map(|v| v.abs()).collect();
        let magnitude = Lma::try_new(self.nodes, self.m, &self.map, &abs).unwrap();
        let mut scale: Vec<f64> = y0.iter().map(|v| if beta == T::ZERO { 0.0 } else { v.abs() }).collect();
        let x_abs: Vec<f64> = x.iter().map(|v| v.abs()).collect();
        magnitude.spmv(alpha.to_f64().abs(), &x_abs, beta.to_f64().abs(), &mut scale).unwrap();
        (reference, scale)
    }
}

/// A mesh of `nx` x `ny` quadrilaterals of degree `k` (`(k + 1)^2` nodes each, numbered row by row
/// on a `(k nx + 1) x (k ny + 1)` grid), the boundary nodes Dirichlet ([`NO_NODE`]), with random
/// element matrices: symmetric bit for bit (mirrored), or not. Every `repeat`-th element (0: none)
/// names its slot-0 node in slot 1 as well.
fn mesh<T: Scalar>(
    rng: &mut ChaCha8Rng,
    nx: usize,
    ny: usize,
    k: usize,
    symmetric: bool,
    repeat: usize,
) -> Input {
    let (gx, gy) = (k * nx + 1, k * ny + 1);
    let interior = |i: usize, j: usize| i > 0 && j > 0 && i + 1 < gx && j + 1 < gy;
    let number = |i: usize, j: usize| if interior(i, j) { (j - 1) * (gx - 2) + (i - 1) } else { NO_NODE };
    let m = (k + 1) * (k + 1);
    let (mut map, mut values) = (Vec::new(), Vec::new());
    for ey in 0..ny {
        for ex in 0..nx {
            let first = map.len();
            for b in 0..=k {
                for a in 0..=k {
                    map.push(number(k * ex + a, k * ey + b));
                }
            }
            if repeat > 0 && (ey * nx + ex).is_multiple_of(repeat) && map[first] != NO_NODE {
                map[first + 1] = map[first];
            }
            values.extend(random_matrix::<T>(rng, m, symmetric));
        }
    }
    Input { nodes: (gx - 2) * (gy - 2), m, map, values }
}

/// An `m x m` matrix of values in [-1, 1) rounded to `T`, row-major; mirrored when `symmetric`.
fn random_matrix<T: Scalar>(rng: &mut ChaCha8Rng, m: usize, symmetric: bool) -> Vec<f64> {
    let mut k: Vec<f64> = (0..m * m).map(|_| T::from_f64(rng.random_range(-1.0..1.0)).to_f64()).collect();
    if symmetric {
        for i in 0..m {
            for j in 0..i {
                k[i * m + j] = k[j * m + i];
            }
        }
    } else {
        // Random values are asymmetric already; make sure of one pair.
        k[1 % (m * m)] = T::from_f64(0.5).to_f64();
        k[m % (m * m)] = T::from_f64(-0.25).to_f64();
    }
    k
}

fn bits<T: Scalar>(v: &[T]) -> Vec<u64> {
    v.iter().map(|e| e.to_f64().to_bits()).collect()
}

/// Runs `kernel` on `a` with `alpha`, `x`, `beta` from `y0` and returns `y`.
fn product<T: Scalar>(
    gpu: &Gpu,
    a: &DeviceLma<T>,
    kernel: LmaKernel,
    alpha: T,
    x: &[T],
    beta: T,
    y0: &[T],
) -> Vec<T> {
    let dx = gpu.upload_vector(x).unwrap();
    let mut dy = gpu.upload_vector(y0).unwrap();
    gpu.spmv_with(kernel, alpha, a, &dx, beta, &mut dy).unwrap();
    dy.to_host(gpu).unwrap()
}

/// Both kernels on `input` against the f64 reference, with `beta = 0` on a poisoned `y` and with a
/// general `beta`; the coloured kernel bit for bit against the CPU, and, for a symmetric operator,
/// the packed storage bit for bit against the full one (coloured) and within the bound (atomic).
fn check<T: Scalar>(gpu: &Gpu, rng: &mut ChaCha8Rng, what: &str, input: &Input, symmetric: bool) {
    let lma = input.lma::<T>();
    let expected = if symmetric { LmaStorage::Symmetric } else { LmaStorage::Full };
    assert_eq!(lma.storage(), expected, "{what}");
    let da = gpu.upload_lma(&lma).unwrap();
    assert_eq!(da.storage(), expected, "{what}");
    let full = lma.to_full_storage();
    let df = gpu.upload_lma(&full).unwrap();
    assert_eq!(df.storage(), LmaStorage::Full, "{what}");
    let n = lma.node_count();
    let x = random_vector::<T>(rng, n);
    let tol = tolerance::<T>(input.longest_sum());
    let cases = [
        (T::from_f64(1.0), T::ZERO, vec![T::from_f64(f64::NAN); n]),
        (T::from_f64(-1.25), T::from_f64(0.5), random_vector::<T>(rng, n)),
    ];
    for (alpha, beta, y0) in cases {
        let (reference, scale) = input.reference(alpha, &x, beta, &y0);
        let mut cpu = y0.clone();
        lma.spmv(alpha, &x, beta, &mut cpu).unwrap();
        for kernel in [LmaKernel::Atomic, LmaKernel::Coloured] {
            let y = product(gpu, &da, kernel, alpha, &x, beta, &y0);
            let err = max_relative_error(&y, &reference, &scale);
            assert!(err <= tol, "{what}, {kernel:?}, beta {beta}: error {err:e} over {tol:e}");
            let y_full = product(gpu, &df, kernel, alpha, &x, beta, &y0);
            let err = max_relative_error(&y_full, &reference, &scale);
            assert!(err <= tol, "{what}, {kernel:?}, full storage, beta {beta}: error {err:e} over {tol:e}");
            if kernel == LmaKernel::Coloured {
                assert_eq!(bits(&y), bits(&cpu), "{what}, beta {beta}: coloured differs from the CPU's bits");
                assert_eq!(
                    bits(&y_full),
                    bits(&cpu),
                    "{what}, beta {beta}: full storage differs from the CPU's bits"
                );
            }
        }
    }
}

/// Every element size, symmetric and not, on a mesh whose element count is no multiple of a warp's
/// step, then one element of each size, and elements that name a node twice.
fn storages_and_sizes<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for k in 1..=4 {
        for symmetric in [true, false] {
            let input = mesh::<T>(&mut rng, 37, 23, k, symmetric, 0);
            check::<T>(&gpu, &mut rng, &format!("Q{k} 37 x 23, symmetric {symmetric}"), &input, symmetric);
            // One element, every slot an unknown.
            let m = (k + 1) * (k + 1);
            let one = Input {
                nodes: m,
                m,
                map: (0..m).collect(),
                values: random_matrix::<T>(&mut rng, m, symmetric),
            };
            check::<T>(&gpu, &mut rng, &format!("Q{k} one element, symmetric {symmetric}"), &one, symmetric);
            let repeated = mesh::<T>(&mut rng, 11, 7, k, symmetric, 3);
            assert!(repeated.lma::<T>().repeats_nodes());
            check::<T>(
                &gpu,
                &mut rng,
                &format!("Q{k} repeated nodes, symmetric {symmetric}"),
                &repeated,
                symmetric,
            );
        }
    }
}

#[test]
fn gpu_lma_storages_f32() {
    storages_and_sizes::<f32>("gpu_lma_storages_f32");
}

#[test]
fn gpu_lma_storages_f64() {
    storages_and_sizes::<f64>("gpu_lma_storages_f64");
}

/// Colourings the atomic launch takes in each of its two orders, elements without unknowns, and
/// meshes of more warps than the GPU holds at once (the grid strides).
fn colourings_and_waves<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // A star: 70 Q1 elements all at node 0, a colour each (the launch goes round 70 ranges of one
    // element), plus one element with no unknown at all.
    let mut star = Input { nodes: 211, m: 4, map: Vec::new(), values: Vec::new() };
    for e in 0..70 {
        star.map.extend([0, 3 * e + 1, 3 * e + 2, 3 * e + 3]);
        star.values.extend(random_matrix::<T>(&mut rng, 4, true));
    }
    star.map.extend([NO_NODE; 4]);
    star.values.extend(random_matrix::<T>(&mut rng, 4, true));
    assert_eq!(star.lma::<T>().colours(), 70);
    check::<T>(&gpu, &mut rng, "star", &star, true);

    // Lopsided: the star's elements first take 40 colours, then a mesh fills colours 0 to 3 (the
    // launch walks the elements in stored order).
    let mut lopsided = mesh::<T>(&mut rng, 60, 50, 1, false, 0);
    let hub = lopsided.nodes;
    lopsided.nodes += 1 + 3 * 40;
    let (mut map, mut values) = (Vec::new(), Vec::new());
    for e in 0..40 {
        map.extend([hub, hub + 3 * e + 1, hub + 3 * e + 2, hub + 3 * e + 3]);
        values.extend(random_matrix::<T>(&mut rng, 4, false));
    }
    map.append(&mut lopsided.map);
    values.append(&mut lopsided.values);
    (lopsided.map, lopsided.values) = (map, values);
    let offsets = lopsided.lma::<T>().colour_offsets().to_vec();
    assert!(offsets.len() > 40 && offsets[1] > 100 * (offsets[5] - offsets[4]), "{offsets:?}");
    check::<T>(&gpu, &mut rng, "lopsided colours", &lopsided, false);

    // Past one wave: 22,500 Q4 elements, a warp each; 40,000 Q1 elements, 32 a warp.
    let q4 = mesh::<T>(&mut rng, 150, 150, 4, true, 0);
    check::<T>(&gpu, &mut rng, "Q4 150 x 150", &q4, true);
    let q1 = mesh::<T>(&mut rng, 200, 200, 1, true, 0);
    check::<T>(&gpu, &mut rng, "Q1 200 x 200", &q1, true);
}

#[test]
fn gpu_lma_colourings_and_waves_f32() {
    colourings_and_waves::<f32>("gpu_lma_colourings_and_waves_f32");
}

#[test]
fn gpu_lma_colourings_and_waves_f64() {
    colourings_and_waves::<f64>("gpu_lma_colourings_and_waves_f64");
}

/// The storages of the study's kind of operator in a CG solve: the same iterations and iterates,
/// bit for bit, on the coloured kernel (every product the same bits), whichever the storage.
fn cg_on_both_storages<T: Scalar>(test: &str) {
    use gpu_spmv::solve::{Cg, Preconditioner, SolverOptions};
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut input = mesh::<T>(&mut rng, 30, 20, 3, true, 0);
    // Symmetric positive definite: a dominant diagonal on the mirrored random entries.
    for e in 0..input.map.len() / input.m {
        for i in 0..input.m {
            let d = &mut input.values[(e * input.m + i) * input.m + i];
            *d = T::from_f64(*d + 2.0 * input.m as f64).to_f64();
        }
    }
    let lma = input.lma::<T>();
    assert_eq!(lma.storage(), LmaStorage::Symmetric);
    let full = lma.to_full_storage();
    let b = random_vector::<T>(&mut rng, lma.node_count());
    let db = gpu.upload_vector(&b).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-4, max_iterations: 500, preconditioner: Preconditioner::Jacobi };
    let diagonal = lma.diagonal();
    let mut solutions = Vec::new();
    for a in [&lma, &full] {
        let da = gpu.upload_lma(a).unwrap();
        let mut cg = Cg::new(gpu.plan(&da, LmaKernel::Coloured).unwrap(), options, Some(&diagonal)).unwrap();
        let mut x = gpu.zeros::<T>(lma.node_count()).unwrap();
        let outcome = cg.solve(&db, &mut x).unwrap();
        assert!(outcome.relative_residual <= options.rel_tol, "{outcome:?}");
        solutions.push((outcome.iterations, bits(&x.to_host(&gpu).unwrap())));
    }
    assert_eq!(solutions[0], solutions[1], "CG differs between the storages");
}

#[test]
fn gpu_lma_cg_on_both_storages_f32() {
    cg_on_both_storages::<f32>("gpu_lma_cg_on_both_storages_f32");
}

#[test]
fn gpu_lma_cg_on_both_storages_f64() {
    cg_on_both_storages::<f64>("gpu_lma_cg_on_both_storages_f64");
}
