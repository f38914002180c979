//! Reverse Cuthill–McKee as an upload option (`Gpu::upload_csr_rcm`): the product on the reordered
//! matrix, with `x` permuted in and `y` permuted out, against the f64 reference of the original, for
//! several kernels, on a scrambled 2-D grid and on random unsymmetric rows with isolated nodes.
//! Output is poisoned with NaN before each product with `beta = 0`. Without a GPU the test prints why
//! and passes (see `common::gpu_or_skip`).

use crate::common::{Case, Csr, five_point, gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::formats::{Permutation, bandwidth};
use gpu_spmv::{Gpu, Kernel, Scalar};
use rand_chacha::ChaCha8Rng;

/// The product through the reordered matrix for each kernel and case, brought back, checked.
fn reordered_products<T: Scalar>(gpu: &Gpu, name: &str, a: &Csr<T>, rng: &mut ChaCha8Rng) {
    let (da, p): (_, Permutation) = gpu.upload_csr_rcm(a.view()).unwrap();
    let x = random_vector::<T>(rng, a.ncols);
    let y0 = random_vector::<T>(rng, a.nrows);
    let dx = gpu.upload_vector(&p.to_new(&x).unwrap()).unwrap();
    let mut dy = gpu.zeros::<T>(a.nrows).unwrap();
    let tol = tolerance::<T>(a.view().stats().max);
    for (alpha, beta, start) in [
        (T::from_f64(1.0), T::ZERO, vec![T::from_f64(f64::NAN); a.nrows]),
        (T::from_f64(-1.5), T::from_f64(0.75), y0),
    ] {
        let case = Case::new(a, &x, alpha, beta, start);
        for kernel in
            [Kernel::Auto, Kernel::CsrBalanced { block_size: 128 }, Kernel::CsrMerge { block_size: 128 }]
        {
            dy.copy_from_host(gpu, &p.to_new(&case.start).unwrap()).unwrap();
            gpu.spmv_with(kernel, alpha, &da, &dx, beta, &mut dy).unwrap();
            let y = p.to_old(&dy.to_host(gpu).unwrap()).unwrap();
            case.assert_close(&format!("{name}, reordered, {kernel}"), &y, tol);
        }
    }
}

fn reordering<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // A 5-point grid numbered by a scrambling permutation: RCM must bring its band back.
    let side = 301;
    let n = side * side;
    let grid = five_point::<T>(side, |r, c| T::from_f64(if r == c { 4.0 } else { -1.0 }));
    let scramble = |v: usize| (v * 7919) % n;
    let mut scrambled = Csr { nrows: n, ncols: n, offsets: vec![0], cols: Vec::new(), vals: Vec::new() };
    let mut inverse = vec![0; n];
    for v in 0..n {
        inverse[scramble(v)] = v;
    }
    for &v in &inverse {
        let (cols, vals) = grid.view().row(v);
        let mut row: Vec<(usize, T)> = cols.iter().map(|&c| scramble(c)).zip(vals.iter().copied()).collect();
        row.sort_by_key(|&(c, _)| c);
        scrambled.cols.extend(row.iter().map(|&(c, _)| c));
        scrambled.vals.extend(row.iter().map(|&(_, v)| v));
        scrambled.offsets.push(scrambled.cols.len());
    }
    let p = Permutation::rcm(scrambled.view()).unwrap();
    let after = bandwidth(p.permute(scrambled.view()).unwrap().view());
    eprintln!("{test}: bandwidth {} scrambled, {after} after RCM", bandwidth(scrambled.view()));
    assert!(after <= 2 * side, "bandwidth {after}");
    reordered_products(&gpu, "scrambled grid", &scrambled, &mut rng);
    let random = Csr::<T>::random(&mut rng, 20_011, 20_011, true, |r| if r % 97 == 0 { 0 } else { r % 9 });
    reordered_products(&gpu, "random rows", &random, &mut rng);
}

#[test]
fn gpu_reorder_f32() {
    reordering::<f32>("gpu_reorder_f32");
}

#[test]
fn gpu_reorder_f64() {
    reordering::<f64>("gpu_reorder_f64");
}
