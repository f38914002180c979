//! Products inside a caller's CUDA work: a `Gpu` on the caller's stream, `x` and `y` the caller's own
//! cudarc buffers used in place, ordered with the caller's copies without any host synchronisation;
//! plans against the reference. Without a GPU these tests print why and pass, unless
//! `SPMV_REQUIRE_GPU=1`.

use crate::common::{Csr, check, gpu_or_skip, random_vector, rng};
use cudarc::driver::CudaContext;
use gpu_spmv::{Error, Gpu, Kernel};

/// Elements on each side of the view `y` is written through: they must keep their value.
const GUARD: usize = 37;
const GUARD_VALUE: f64 = 7.25;

#[test]
fn gpu_on_the_callers_stream_and_buffers() {
    let test = "gpu_on_the_callers_stream_and_buffers";
    let Some(own) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    // The caller's context keeps cudarc's default, event tracking on.
    let ctx = CudaContext::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let gpu = Gpu::from_stream(stream.clone()).unwrap();
    let a = Csr::<f64>::random(&mut rng, 3001, 2003, true, |r| 1 + r % 23);
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();

    // x written by the caller on its stream, y a window of a larger buffer of the caller's; nothing
    // waits between the copies and the product.
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let mut dx = stream.alloc_zeros::<f64>(a.ncols).unwrap();
    stream.memcpy_htod(&x, &mut dx).unwrap();
    let y0 = random_vector::<f64>(&mut rng, a.nrows);
    let mut host = vec![GUARD_VALUE; a.nrows + 2 * GUARD];
    host[GUARD..GUARD + a.nrows].copy_from_slice(&y0);
    let mut buffer = stream.clone_htod(&host).unwrap();
    let (alpha, beta) = (1.5, -0.5);
    {
        let mut y = buffer.slice_mut(GUARD..GUARD + a.nrows);
        gpu.spmv(alpha, &da, &dx, beta, &mut y).unwrap();
    }
    let out = stream.clone_dtoh(&buffer).unwrap();
    assert!(out[..GUARD].iter().chain(&out[GUARD + a.nrows..]).all(|&v| v == GUARD_VALUE), "guards");
    check("caller's view as y", &a, alpha, &x, beta, &y0, &out[GUARD..GUARD + a.nrows]);

    // x rewritten on a second stream of the caller: cudarc's event tracking orders the product, on
    // the `Gpu`'s stream, after the copy; a plan runs it.
    let other = ctx.new_stream().unwrap();
    let x2 = random_vector::<f64>(&mut rng, a.ncols);
    other.memcpy_htod(&x2, &mut dx).unwrap();
    let mut dy = stream.alloc_zeros::<f64>(a.nrows).unwrap();
    let plan = gpu.plan(&da, Kernel::Auto).unwrap();
    assert_ne!(plan.kernel(), Kernel::Auto);
    plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
    let y = stream.clone_dtoh(&dy).unwrap();
    check("x from another stream", &a, 1.0, &x2, 0.0, &vec![0.0; a.nrows], &y);

    // Buffers of another `Gpu`'s context are refused before anything runs.
    let foreign_x = own.upload_vector(&x).unwrap();
    let err = gpu.spmv(1.0, &da, &foreign_x, 0.0, &mut dy).unwrap_err();
    assert!(matches!(err, Error::ForeignBuffer("x")), "{err}");
    let err = own.spmv(1.0, &da, &foreign_x, 0.0, &mut own.zeros(a.nrows).unwrap()).unwrap_err();
    assert!(matches!(err, Error::ForeignBuffer("the matrix")), "{err}");
    assert!(matches!(own.plan(&da, Kernel::Auto).unwrap_err(), Error::ForeignBuffer("the matrix")));
}

/// A plan prepared once gives the same results as products planned per call, for every kernel family,
/// product after product (the long-row counters and scratch are reused).
#[test]
fn gpu_plans_repeat_products() {
    let test = "gpu_plans_repeat_products";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 5003, 4001, true, |r| if r % 1000 == 7 { 3000 } else { r % 11 });
    let da = gpu.upload_csr_parts(a.nrows, a.ncols, &a.offsets, &a.cols, &a.vals).unwrap();
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let y0 = random_vector::<f32>(&mut rng, a.nrows);
    let kernels = [
        Kernel::Auto,
        Kernel::CsrScalar { block_size: 96 },
        Kernel::CsrVector { coop: 8, block_size: 128 },
        Kernel::CsrAligned { group: 16, cached_x: true, block_size: 256 },
        Kernel::CsrParam { coop: 2, repeat: 4, block_size: 160, split_long_rows: true },
        Kernel::CsrBalanced { block_size: 64 },
    ];
    for kernel in kernels {
        let plan = gpu.plan(&da, kernel).unwrap();
        let mut dy = gpu.upload_vector(&y0).unwrap();
        for round in 0..4 {
            dy.copy_from_host(&gpu, &y0).unwrap();
            plan.spmv(2.0, &dx, 0.5, &mut dy).unwrap();
            check(
                &format!("{kernel:?} ({:?}), round {round}", plan.kernel()),
                &a,
                2.0,
                &x,
                0.5,
                &y0,
                &dy.to_host(&gpu).unwrap(),
            );
        }
    }
    let split = gpu.plan(&da, kernels[4]).unwrap();
    assert_eq!(split.split_rows(), 5, "rows of 3000 entries among rows of 0 to 10");
}
