//! What the library promises beyond correct products: which types cross threads, a failed device
//! allocation that leaves the `Gpu` usable, two `Gpu`s that do not interfere, dropping a matrix
//! while its products are queued, and which paths give the same bits on every run. Without a GPU
//! the GPU tests print why and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{Csr, alone_on_the_gpus, check, gpu_or_skip, random_vector, rng};
use gpu_spmv::formats::{Brc, Ell, Lma, NO_NODE, Sell, brc_model_b2};
use gpu_spmv::solve::Cg;
use gpu_spmv::solve::{Preconditioner, SolverOptions};
use gpu_spmv::{
    BrcCombine, DeviceBrc, DeviceCsr, DeviceEll, DeviceLma, DeviceMatrix, DeviceSell, DeviceVector, Error,
    Gpu, Kernel, LmaKernel, Plan, Scalar,
};

fn send_and_sync<T: Send + Sync>() {}

/// The device types may be shared between threads and moved across them; products enqueued from
/// several threads on one `Gpu` run in the order the driver receives them.
#[test]
fn device_types_are_send_and_sync() {
    send_and_sync::<Gpu>();
    send_and_sync::<DeviceVector<f32>>();
    send_and_sync::<DeviceCsr<f64>>();
    send_and_sync::<DeviceEll<f32>>();
    send_and_sync::<DeviceSell<f64>>();
    send_and_sync::<DeviceBrc<f64>>();
    send_and_sync::<DeviceLma<f32>>();
    send_and_sync::<Plan<'static, f64, DeviceCsr<f64>>>();
    send_and_sync::<Cg<'static, f32, DeviceLma<f32>>>();
}

/// Device memory runs out with a typed error naming the size, and the `Gpu` goes on working. Alone
/// on the GPU: while it holds every byte it can, another test's allocation would fail.
#[test]
fn gpu_out_of_memory_is_typed_and_recoverable() {
    let Some(gpu) = gpu_or_skip("gpu_out_of_memory") else { return };
    let _alone = alone_on_the_gpus();
    // The largest vector the kernels index, 34 GB in f64: a few fill any GPU of this decade.
    let len = u32::MAX as usize;
    let mut held = Vec::new();
    let err = loop {
        match gpu.zeros::<f64>(len) {
            Ok(v) => held.push(v),
            Err(e) => break e,
        }
        assert!(held.len() < 64, "64 x 34 GB allocated without running out");
    };
    assert!(matches!(err, Error::DeviceMemory { bytes } if bytes == len * 8), "{err}");
    drop(held);
    let a = gpu.upload_csr_parts(2, 2, &[0, 1, 2], &[1, 0], &[2.0f64, 3.0]).unwrap();
    let x = gpu.upload_vector(&[1.0, 10.0]).unwrap();
    let mut y = gpu.zeros::<f64>(2).unwrap();
    gpu.spmv(1.0, &a, &x, 0.0, &mut y).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), [20.0, 3.0]);
}

/// Two `Gpu`s, each in its own thread with its own matrices, products at the same time: both right.
#[test]
fn gpu_two_gpus_in_two_threads() {
    let test = "gpu_two_gpus_in_two_threads";
    let Some(_probe) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let matrices: Vec<Csr<f32>> =
        (0..2).map(|t| Csr::random(&mut rng, 30_011 + t, 20_003, true, |r| 1 + (r + t) % 40)).collect();
    std::thread::scope(|s| {
        for (t, a) in matrices.iter().enumerate() {
            let seed_x = random_vector::<f32>(&mut rng, a.ncols);
            s.spawn(move || {
                let gpu = Gpu::new().unwrap();
                let da = gpu.upload_csr_ref(a.view()).unwrap();
                let dx = gpu.upload_vector(&seed_x).unwrap();
                let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
                let plan = gpu.plan(&da, Kernel::Auto).unwrap();
                for _ in 0..200 {
                    plan.spmv(1.0, &dx, 0.0, &mut dy).unwrap();
                }
                let y = dy.to_host(&gpu).unwrap();
                check(&format!("thread {t}"), a, 1.0, &seed_x, 0.0, &vec![0.0; a.nrows], &y);
            });
        }
    });
}

/// A matrix and `x` dropped right after their products are enqueued: the buffers are freed in the
/// stream's order (cudarc frees a buffer on the stream it was allocated on), after the products.
#[test]
fn gpu_drop_while_products_are_queued() {
    let test = "gpu_drop_while_products_are_queued";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 200_003, 100_019, true, |r| 1 + r % 30);
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    {
        let da = gpu.upload_csr_ref(a.view()).unwrap();
        let dx = gpu.upload_vector(&x).unwrap();
        for _ in 0..20 {
            gpu.spmv(1.0, &da, &dx, 0.0, &mut dy).unwrap();
        }
    }
    check("after the drop", &a, 1.0, &x, 0.0, &vec![0.0; a.nrows], &dy.to_host(&gpu).unwrap());
}

/// `y = A x` three times with `plan`, the bits of each.
fn three_runs<T: Scalar, A: DeviceMatrix<T>>(gpu: &Gpu, plan: &Plan<'_, T, A>, x: &[T]) -> Vec<Vec<u64>> {
    let dx = gpu.upload_vector(x).unwrap();
    let mut dy = gpu.zeros::<T>(plan.matrix().nrows()).unwrap();
    (0..3)
        .map(|_| {
            plan.spmv(T::from_f64(1.0), &dx, T::ZERO, &mut dy).unwrap();
            dy.to_host(gpu).unwrap().iter().map(|v| v.to_f64().to_bits()).collect()
        })
        .collect()
}

/// Every path documented as deterministic gives the same bits run after run, on a matrix with long
/// rows (split over several warps) and a heavy spread: each CSR kernel, ELL, SELL, BRC with its
/// deterministic combine, LMA by colours, and a CG solve. (COO, HYB's and dense blocks' COO part,
/// BRC's atomic combine and LMA's atomic kernel add with atomics and are not.)
#[test]
fn gpu_deterministic_paths_repeat_bit_for_bit() {
    let test = "gpu_deterministic_paths";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 20_011, 9_001, false, |r| if r % 997 == 0 { 5_000 } else { r % 13 });
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let da = gpu.upload_csr_ref(a.view()).unwrap();
    let kernels = [
        Kernel::Auto,
        Kernel::CsrScalar { block_size: 128 },
        Kernel::CsrVector { coop: 8, block_size: 256 },
        Kernel::CsrAligned { group: 16, cached_x: true, block_size: 128 },
        Kernel::CsrParam { coop: 1, repeat: 2, block_size: 128, split_long_rows: true },
        Kernel::CsrBalanced { block_size: 128 },
    ];
    let same = |what: &str, runs: Vec<Vec<u64>>| assert!(runs.windows(2).all(|w| w[0] == w[1]), "{what}");
    for kernel in kernels {
        same(&format!("{kernel:?}"), three_runs(&gpu, &gpu.plan(&da, kernel).unwrap(), &x));
    }
    // ELL and SELL on rows of at most 12 entries: they would refuse the long rows' padding (SELL's
    // slices of a 5,000-entry row take 32 times its slots).
    let short = Csr::<f32>::random(&mut rng, 20_011, 9_001, false, |r| r % 13);
    let ell = gpu.upload_ell(&Ell::try_from_csr(short.view()).unwrap()).unwrap();
    same("ELL", three_runs(&gpu, &gpu.plan(&ell, ()).unwrap(), &x));
    let sell = gpu.upload_sell(&Sell::try_from_csr(short.view()).unwrap()).unwrap();
    same("SELL", three_runs(&gpu, &gpu.plan(&sell, ()).unwrap(), &x));
    let b2 = brc_model_b2(&a.view().stats(), 1);
    let brc = gpu.upload_brc(&Brc::try_from_csr(a.view(), b2).unwrap()).unwrap();
    same("BRC", three_runs(&gpu, &gpu.plan(&brc, BrcCombine::Deterministic).unwrap(), &x));

    // Q1 elements on a 40 x 30 grid, boundary nodes Dirichlet; element matrices of the Laplacian's
    // shape (4 on the diagonal, -1 off it, plus a little), SPD on the interior.
    let (gx, gy) = (41, 31);
    let node = |i: usize, j: usize| {
        if i == 0 || j == 0 || i + 1 == gx || j + 1 == gy { NO_NODE } else { (j - 1) * (gx - 2) + (i - 1) }
    };
    let mut nodes = Vec::new();
    let mut values = Vec::new();
    for ey in 0..gy - 1 {
        for ex in 0..gx - 1 {
            nodes.extend([node(ex, ey), node(ex + 1, ey), node(ex, ey + 1), node(ex + 1, ey + 1)]);
            values.extend((0..16).map(|e| if e % 5 == 0 { 3.1f32 } else { -1.0 }));
        }
    }
    let lma = Lma::try_new((gx - 2) * (gy - 2), 4, &nodes, &values).unwrap();
    let dl = gpu.upload_lma(&lma).unwrap();
    let xl = random_vector::<f32>(&mut rng, lma.node_count());
    same("LMA coloured", three_runs(&gpu, &gpu.plan(&dl, LmaKernel::Coloured).unwrap(), &xl));

    let options = SolverOptions { rel_tol: 1e-5, max_iterations: 2000, preconditioner: Preconditioner::None };
    let mut solver = Cg::new(gpu.plan(&dl, LmaKernel::Coloured).unwrap(), options, None).unwrap();
    let b = gpu.upload_vector(&xl).unwrap();
    let solves: Vec<Vec<u32>> = (0..3)
        .map(|_| {
            let mut x = gpu.zeros::<f32>(lma.node_count()).unwrap();
            solver.solve(&b, &mut x).unwrap();
            x.to_host(&gpu).unwrap().iter().map(|v| v.to_bits()).collect()
        })
        .collect();
    assert!(solves.windows(2).all(|w| w[0] == w[1]), "CG on LMA by colours");
}
