//! Products captured into a CUDA graph (`Gpu::capture`) and replayed, for every kernel family and
//! format, checked against the f64 reference; and what may not be captured failing cleanly. Without
//! a GPU these tests print why and pass, unless `SPMV_REQUIRE_GPU=1`.

use crate::common::{Case, Csr, check, gpu_or_skip, random_vector, rng, tolerance};
use gpu_spmv::formats::{Brc, Coo, DENSE_WINDOW, DenseBlocks, Ell, Hyb, Sell, brc_model_b2};
use gpu_spmv::{BrcCombine, CooKernel, DeviceMatrix, Error, Gpu, HotLaunch, Kernel, Plan, Regime, Scalar};

/// Captures `per_replay` products `y = A x + y` with `plan`, replays the graph twice, and checks
/// `y = y0 + 2 per_replay A x`.
fn replayed<T: Scalar, A: DeviceMatrix<T>>(
    gpu: &Gpu,
    what: &str,
    plan: &Plan<'_, T, A>,
    a: &Csr<T>,
    x: &[T],
) {
    const PER_REPLAY: usize = 5;
    let mut rng = rng(what);
    let y0 = random_vector::<T>(&mut rng, a.nrows);
    let dx = gpu.upload_vector(x).unwrap();
    let mut dy = gpu.upload_vector(&y0).unwrap();
    let graph = gpu
        .capture(|| {
            for _ in 0..PER_REPLAY {
                plan.spmv(T::from_f64(1.0), &dx, T::from_f64(1.0), &mut dy)?;
            }
            Ok(())
        })
        .unwrap();
    assert_eq!(dy.to_host(gpu).unwrap(), y0, "{what}: the capture ran the products");
    graph.launch().unwrap();
    graph.launch().unwrap();
    let alpha = T::from_f64((2 * PER_REPLAY) as f64);
    check(what, a, alpha, x, T::from_f64(1.0), &y0, &dy.to_host(gpu).unwrap());
}

#[test]
fn gpu_products_in_graphs() {
    let test = "gpu_products_in_graphs";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 9_001, 7_003, true, |r| if r % 1000 == 3 { 2_500 } else { r % 19 });
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let csr = gpu.upload_csr_ref(a.view()).unwrap();
    for kernel in [
        Kernel::Auto,
        Kernel::CsrScalar { block_size: 128 },
        Kernel::CsrVector { coop: 4, block_size: 128 },
        Kernel::CsrAligned { group: 8, cached_x: false, block_size: 64 },
        Kernel::CsrParam { coop: 2, repeat: 2, block_size: 128, split_long_rows: true },
        Kernel::CsrBalanced { block_size: 256 },
        Kernel::CsrMerge { block_size: 128 },
    ] {
        replayed(&gpu, &format!("{kernel:?}"), &gpu.plan(&csr, kernel).unwrap(), &a, &x);
    }
    // The formats on rows of 0 to 18 entries: ELL would refuse the long rows' padding.
    let a = Csr::<f64>::random(&mut rng, 9_001, 7_003, true, |r| r % 19);
    let view = a.view();
    let ell = gpu.upload_ell(&Ell::try_from_csr(view).unwrap()).unwrap();
    replayed(&gpu, "ELL", &gpu.plan(&ell, ()).unwrap(), &a, &x);
    let sell = gpu.upload_sell(&Sell::try_from_csr(view).unwrap()).unwrap();
    replayed(&gpu, "SELL", &gpu.plan(&sell, ()).unwrap(), &a, &x);
    let coo = gpu.upload_coo(&Coo::try_from_csr(view).unwrap()).unwrap();
    replayed(&gpu, "COO", &gpu.plan(&coo, CooKernel::Segmented).unwrap(), &a, &x);
    let hyb = gpu.upload_hyb(&Hyb::try_from_csr(view).unwrap()).unwrap();
    replayed(&gpu, "HYB", &gpu.plan(&hyb, CooKernel::Atomic).unwrap(), &a, &x);
    let brc = gpu.upload_brc(&Brc::try_from_csr(view, brc_model_b2(&view.stats(), 1)).unwrap()).unwrap();
    replayed(&gpu, "BRC", &gpu.plan(&brc, BrcCombine::Deterministic).unwrap(), &a, &x);
    let dense = gpu.upload_dense_blocks(&DenseBlocks::try_from_csr(view, DENSE_WINDOW).unwrap()).unwrap();
    replayed(&gpu, "dense blocks", &gpu.plan(&dense, CooKernel::Segmented).unwrap(), &a, &x);
}

/// Products chained through their vectors (`v[k + 1] = A v[k]`), enqueued back to back with no
/// wait between them, then captured and replayed: each product must read the `x` the one before it
/// wrote. On Hopper the balanced and vector kernels are launched before the product ahead of them
/// has finished (programmatic stream serialization), so this checks that they wait for it: every `v[k]`
/// past the first is poisoned with NaN first, and each step is checked against the reference on the
/// `v[k]` the GPU produced.
#[test]
fn gpu_chained_products_read_the_vector_before_them() {
    const STEPS: usize = 8;
    let test = "gpu_chained_products_read_the_vector_before_them";
    let Some(gpu) = gpu_or_skip(test) else { return };
    // Which path ran: before Hopper every product waits for the one ahead as any launch does.
    let programmatic = gpu.has_stream_engine();
    eprintln!("{test}: programmatic launches: {programmatic}");
    let mut rng = rng(test);
    let a =
        Csr::<f32>::random(&mut rng, 20_011, 20_011, true, |r| if r % 4001 == 7 { 3_000 } else { r % 37 });
    let csr = gpu.upload_csr_ref(a.view()).unwrap();
    let v0 = random_vector::<f32>(&mut rng, a.ncols);
    let poison = vec![f32::NAN; a.nrows];
    let (alpha, zero) = (0.125, 0.0);
    for kernel in [
        Kernel::Auto,
        Kernel::CsrBalanced { block_size: 128 },
        Kernel::CsrBalanced { block_size: 256 },
        Kernel::CsrVector { coop: 8, block_size: 128 },
        Kernel::CsrVector { coop: 32, block_size: 256 },
    ] {
        let plan = gpu.plan(&csr, kernel).unwrap();
        let mut v: Vec<_> = std::iter::once(gpu.upload_vector(&v0).unwrap())
            .chain((0..STEPS).map(|_| gpu.upload_vector(&poison).unwrap()))
            .collect();
        let chain = |v: &mut Vec<_>| -> gpu_spmv::Result<()> {
            for k in 0..STEPS {
                let (done, next) = v.split_at_mut(k + 1);
                plan.spmv(alpha, &done[k], zero, &mut next[0])?;
            }
            Ok(())
        };
        let check_steps = |v: &[_], how: &str| {
            let host: Vec<Vec<f32>> =
                v.iter().map(|d: &gpu_spmv::DeviceVector<f32>| d.to_host(&gpu).unwrap()).collect();
            for k in 0..STEPS {
                check(
                    &format!("{kernel:?} {how} step {k}"),
                    &a,
                    alpha,
                    &host[k],
                    zero,
                    &poison,
                    &host[k + 1],
                );
            }
        };
        chain(&mut v).unwrap();
        check_steps(&v, "on the stream");
        for d in &mut v[1..] {
            d.copy_from_host(&gpu, &poison).unwrap();
        }
        let graph = gpu.capture(|| chain(&mut v)).unwrap();
        graph.launch().unwrap();
        check_steps(&v, "in a graph");
    }
}

/// What cannot be captured fails the capture with a typed error and leaves the stream working: an
/// upload, a plan that would build its strategy data, reading back, waiting for the stream.
#[test]
fn gpu_capture_refuses_what_cannot_be_captured() {
    let Some(gpu) = gpu_or_skip("gpu_capture_refuses") else { return };
    let err = gpu.capture(|| gpu.upload_vector(&[1.0f32; 1000]).map(drop)).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let long = gpu
        .upload_csr_parts(
            2,
            300,
            &[0, 300, 301],
            &(0..301).map(|c| c % 300).collect::<Vec<_>>(),
            &[1.0f32; 301],
        )
        .unwrap();
    let err = gpu.capture(|| gpu.plan(&long, Kernel::CsrBalanced { block_size: 128 }).map(drop)).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let v = gpu.zeros::<f32>(10).unwrap();
    let err = gpu.capture(|| v.to_host(&gpu).map(drop)).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let err = gpu.capture(|| gpu.synchronize()).unwrap_err();
    assert!(matches!(err, Error::Unsupported(_)), "{err}");
    let a = gpu.upload_csr_parts(1, 1, &[0, 1], &[0], &[3.0f32]).unwrap();
    let x = gpu.upload_vector(&[2.0f32]).unwrap();
    let mut y = gpu.zeros::<f32>(1).unwrap();
    gpu.spmv(1.0, &a, &x, 0.0, &mut y).unwrap();
    assert_eq!(y.to_host(&gpu).unwrap(), [6.0]);
}

/// A plan of the hot regime replays its products from graphs it captures itself (`Regime::Hot`):
/// every product is checked against the reference (`y` poisoned first where `beta == 0`) while `x`'s
/// contents change under a kept graph, two operand sets alternate, `alpha` and `beta` change, the
/// matrix's values are updated in place, and the plan runs inside a caller's capture. Kernels of
/// one launch and of several (the long rows' split, the balanced kernel's fix-up, merge path).
#[test]
fn gpu_hot_plans_replay_their_products() {
    let test = "gpu_hot_plans_replay_their_products";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let mut a =
        Csr::<f64>::random(&mut rng, 5_003, 4_001, true, |r| if r % 997 == 5 { 3_000 } else { r % 23 });
    let csr = gpu.upload_csr_ref(a.view()).unwrap();
    let (one, zero) = (1.0, 0.0);
    let poison = vec![f64::NAN; a.nrows];
    for kernel in [
        Kernel::Auto,
        Kernel::CsrVector { coop: 4, block_size: 128 },
        Kernel::CsrParam { coop: 2, repeat: 2, block_size: 128, split_long_rows: true },
        Kernel::CsrBalanced { block_size: 256 },
        Kernel::CsrMerge { block_size: 128 },
    ] {
        let what = format!("{kernel:?}");
        let hot = gpu.plan_for(&csr, kernel, Regime::Hot).unwrap();
        let mut sets: Vec<_> = (0..2)
            .map(|_| (gpu.zeros::<f64>(a.ncols).unwrap(), gpu.upload_vector(&poison).unwrap()))
            .collect();
        // Past the second product of a set its graph is replayed: new `x` each time, `y` poisoned.
        for step in 0..6 {
            for (s, (dx, dy)) in sets.iter_mut().enumerate() {
                let x = random_vector::<f64>(&mut rng, a.ncols);
                dx.copy_from_host(&gpu, &x).unwrap();
                dy.copy_from_host(&gpu, &poison).unwrap();
                hot.spmv(one, &*dx, zero, dy).unwrap();
                check(
                    &format!("{what} set {s} step {step}"),
                    &a,
                    one,
                    &x,
                    zero,
                    &poison,
                    &dy.to_host(&gpu).unwrap(),
                );
            }
        }
        assert_eq!(hot.kept_graphs(), 2, "{what}: a graph for each set of operands");
        // Other scalars are other operands; replayed from their second product on.
        let (dx, dy) = &mut sets[0];
        let x = dx.to_host(&gpu).unwrap();
        let (alpha, beta) = (-1.5, 0.25);
        for step in 0..3 {
            let y0 = random_vector::<f64>(&mut rng, a.nrows);
            dy.copy_from_host(&gpu, &y0).unwrap();
            hot.spmv(alpha, &*dx, beta, dy).unwrap();
            check(
                &format!("{what} alpha, beta step {step}"),
                &a,
                alpha,
                &x,
                beta,
                &y0,
                &dy.to_host(&gpu).unwrap(),
            );
        }
        assert_eq!(hot.kept_graphs(), 3, "{what}: a graph for the other scalars");
        // New values in place: the kept graphs read them.
        for v in &mut a.vals {
            *v = -0.5 * *v + 1.0;
        }
        csr.update_values(&gpu, &a.vals).unwrap();
        dy.copy_from_host(&gpu, &poison).unwrap();
        hot.spmv(one, &*dx, zero, dy).unwrap();
        check(&format!("{what} new values"), &a, one, &x, zero, &poison, &dy.to_host(&gpu).unwrap());
        // In a caller's capture the products join the caller's graph.
        let y0 = random_vector::<f64>(&mut rng, a.nrows);
        dy.copy_from_host(&gpu, &y0).unwrap();
        let graph = gpu.capture(|| (0..3).try_for_each(|_| hot.spmv(one, &*dx, one, dy))).unwrap();
        assert_eq!(dy.to_host(&gpu).unwrap(), y0, "{what}: the caller's capture ran the products");
        graph.launch().unwrap();
        graph.launch().unwrap();
        check(&format!("{what} in a caller's graph"), &a, 6.0, &x, one, &y0, &dy.to_host(&gpu).unwrap());
    }
}

/// A hot plan times its products replayed and launched directly, and keeps the faster: every
/// product of the trial and after it runs once, whichever way it went, and the plan has decided once
/// the trial's last product has run. Which way wins is the machine's (PERF section 49), so the test
/// prints it: a small matrix, where the host's launch sets the rate, and a larger one, where the
/// kernel does.
#[test]
fn gpu_hot_plan_keeps_the_faster_launch() {
    let test = "gpu_hot_plan_keeps_the_faster_launch";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (rows, row) in [(2_003, 9), (200_003, 17)] {
        let a = Csr::<f64>::random(&mut rng, rows, rows, true, |r| r % row + 1);
        let csr = gpu.upload_csr_ref(a.view()).unwrap();
        let x = random_vector::<f64>(&mut rng, a.ncols);
        let y0 = random_vector::<f64>(&mut rng, a.nrows);
        let (dx, mut dy) = (gpu.upload_vector(&x).unwrap(), gpu.upload_vector(&y0).unwrap());
        let hot = gpu.plan_for(&csr, Kernel::Auto, Regime::Hot).unwrap();
        assert_eq!(hot.hot_launch(), Some(HotLaunch::Measuring), "{rows} rows: before any product");
        // The trial's 128 products start at the second; the product after its last has run decides.
        const TRIAL: usize = 150;
        const AFTER: usize = 20;
        for _ in 0..TRIAL {
            hot.spmv(1.0, &dx, 1.0, &mut dy).unwrap();
        }
        gpu.synchronize().unwrap();
        for _ in 0..AFTER {
            hot.spmv(1.0, &dx, 1.0, &mut dy).unwrap();
        }
        let way = hot.hot_launch().unwrap();
        println!("{test}: {rows} rows of up to {row} entries, {:?}: {way:?}", hot.kernel());
        assert_ne!(way, HotLaunch::Measuring, "{rows} rows: decided once the trial has run");
        assert_eq!(hot.kept_graphs(), 1, "{rows} rows: the graph stays kept either way");
        let products = (TRIAL + AFTER) as f64;
        let accumulated = tolerance::<f64>(a.view().stats().max) + products * f64::EPSILON;
        Case::new(&a, &x, products, 1.0, y0).assert_close(
            &format!("{rows} rows, {products} products"),
            &dy.to_host(&gpu).unwrap(),
            accumulated,
        );
    }
    let small = gpu.upload_csr_ref(Csr::<f64>::random(&mut rng, 5, 5, true, |_| 2).view()).unwrap();
    assert_eq!(gpu.plan(&small, Kernel::Auto).unwrap().hot_launch(), None, "a cold plan");
}

/// A hot plan captures on a stream of its own, so products that another thread enqueues on the
/// `Gpu`'s stream meanwhile run, once each, and are not taken into the hot plan's graphs.
#[test]
fn gpu_hot_plan_captures_take_no_other_threads_work() {
    let test = "gpu_hot_plan_captures_take_no_other_threads_work";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f32>::random(&mut rng, 3_001, 3_001, true, |r| r % 17);
    let csr = gpu.upload_csr_ref(a.view()).unwrap();
    let x = random_vector::<f32>(&mut rng, a.ncols);
    let y0 = random_vector::<f32>(&mut rng, a.nrows);
    let dx = gpu.upload_vector(&x).unwrap();
    let (mut hot_y, mut cold_y) = (gpu.zeros::<f32>(a.nrows).unwrap(), gpu.upload_vector(&y0).unwrap());
    const PRODUCTS: usize = 200;
    std::thread::scope(|s| {
        s.spawn(|| {
            let hot = gpu.plan_for(&csr, Kernel::Auto, Regime::Hot).unwrap();
            for _ in 0..PRODUCTS {
                hot.spmv(1.0, &dx, 0.0, &mut hot_y).unwrap();
            }
            assert_eq!(hot.kept_graphs(), 1, "the hot plan replays");
        });
        s.spawn(|| {
            let cold = gpu.plan(&csr, Kernel::Auto).unwrap();
            for _ in 0..PRODUCTS {
                cold.spmv(1.0, &dx, 1.0, &mut cold_y).unwrap();
            }
            assert_eq!(cold.kept_graphs(), 0, "a cold plan keeps no graph");
        });
    });
    // The cold thread's `y` is the sum of 200 products, rounded to f32 after each: on top of one
    // product's tolerance, each addition may round by an epsilon of the running sum, which stays
    // below the reference's scale. A lost or doubled product is off by 1/200 of it, far above.
    let accumulated = tolerance::<f32>(a.view().stats().max) + PRODUCTS as f64 * f64::from(f32::EPSILON);
    Case::new(&a, &x, PRODUCTS as f32, 1.0, y0.clone()).assert_close(
        "products of another thread",
        &cold_y.to_host(&gpu).unwrap(),
        accumulated,
    );
    check("the hot plan's", &a, 1.0, &x, 0.0, &y0, &hot_y.to_host(&gpu).unwrap());
}

/// Work that panics inside a capture leaves neither the stream nor the thread capturing: uploads and
/// products work after it.
#[test]
fn gpu_capture_ends_when_its_work_panics() {
    let Some(gpu) = gpu_or_skip("gpu_capture_ends_when_its_work_panics") else { return };
    let panicked = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        gpu.capture(|| panic!("inside the capture")).map(drop)
    }));
    assert!(panicked.is_err(), "the work's panic reaches the caller");
    let x = gpu.upload_vector(&[1.0f64, 2.0, 3.0]).unwrap();
    assert_eq!(x.to_host(&gpu).unwrap(), [1.0, 2.0, 3.0], "the stream works after the panic");
}
