//! The distributed product against the f64 reference, and the distributed solvers (the solver
//! tier's PCG, pipelined CG, BiCGSTAB and GMRES over the distributed space) against the CPU oracles, in
//! both run modes and by both routes of the exchange: one process driving every GPU (its ghosts
//! over NCCL, and gathered in place by peer access), and one process per GPU (NCCL only; this test
//! binary re-executes itself once per rank, the ranks joining through an NCCL unique id in a file).
//! Needs at least two GPUs: with fewer the tests print why and pass, unless `SPMV_REQUIRE_GPU=2`
//! (or more), which makes them fail instead.
//! Run with `NCCL_NVLS_ENABLE=0` on machines whose NVLink multicast must stay off.
//!
//! Each test has the GPUs to itself while it runs (`common::alone_on_the_gpus`), no other test of this
//! binary beside it: the communicators of two tests interleaving their NCCL kernels on the same GPUs
//! in different orders may wait for each other forever, and so may NCCL's launches across the GPUs
//! and another test's thread synchronising a device (a `cuMemFree`, NCCL's known hang).

use crate::common::{
    Case, Csr, alone_on_the_gpus, edge_cases, five_point, random_vector, rng, say, skipped, skipped_without,
    tolerance,
};
use gpu_spmv::distributed::{
    DistributedBicgstab, DistributedCsr, DistributedGmres, DistributedPcg, DistributedPipelinedCg, Exchange,
    Ranks, UniqueId,
};
use gpu_spmv::reference::LinearOperator;
use gpu_spmv::reference::bicgstab::bicgstab;
use gpu_spmv::reference::cg::{cg, pipelined_cg};
use gpu_spmv::reference::gmres::gmres;
use gpu_spmv::reference::max_relative_error;
use gpu_spmv::reference::problems::convection_diffusion;
use gpu_spmv::solve::{Preconditioner, SolveError, SolverOptions, Stop};
use gpu_spmv::{CsrRef, DeviceVector, Error, Gpu, Kernel, Scalar};
use rand_chacha::ChaCha8Rng;
use std::process::Command;

/// The GPUs of this machine (up to 8), or `None` after saying why there are fewer than two.
fn gpus_or_skip(test: &str) -> Option<usize> {
    let count = (0..8).take_while(|&i| Gpu::with_ordinal(i).is_ok()).count();
    if count >= 2 {
        say(&format!("{test}: running on {count} GPUs"));
        return Some(count);
    }
    skipped(test, 2, &format!("{count} GPU(s) found"));
    None
}

/// The matrices of every distributed test: the edge cases of the single-GPU tests (no rows, empty
/// rows, one huge row, wide and tall, unsorted and repeated columns) and a stencil.
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(&'static str, Csr<T>)> {
    let mut all = edge_cases::<T>(rng);
    all.push((
        "5-point stencil 301 x 301",
        five_point(301, |r, c| T::from_f64(if r == c { 4.0 } else { -1.0 })),
    ));
    all
}

/// The products checked for each matrix: `beta == 0` on a poisoned `y` (NaN must not leak, every
/// element must be written) and a general one.
fn scalars<T: Scalar>() -> [(T, T, bool); 2] {
    [(T::from_f64(1.0), T::ZERO, true), (T::from_f64(-0.75), T::from_f64(1.25), false)]
}

/// Checks this process's parts of `y = alpha A x + beta y0` on `ranks`, the ghosts by `exchange`,
/// against the reference. `x` is overwritten between products without waiting on the host, so that
/// a product still reading the last `x` on another GPU would be caught.
fn check_parts<T: Scalar>(name: &str, ranks: &Ranks, a: &Csr<T>, rng: &mut ChaCha8Rng, exchange: Exchange) {
    let d = DistributedCsr::upload(ranks, a.view()).unwrap_or_else(|e| panic!("{name}: {e}"));
    let mut plan = d.plan_with(ranks, Kernel::Auto, exchange).unwrap();
    let members = ranks.members();
    let mut xs: Vec<DeviceVector<T>> =
        members.iter().enumerate().map(|(i, m)| m.gpu().zeros(d.cols(i).len()).unwrap()).collect();
    for (alpha, beta, poison) in scalars::<T>() {
        let x = random_vector::<T>(rng, a.ncols);
        for (i, (m, xi)) in members.iter().zip(&mut xs).enumerate() {
            xi.copy_from_host(m.gpu(), &x[d.cols(i)]).unwrap();
        }
        let y0 = if poison { vec![T::from_f64(f64::NAN); a.nrows] } else { random_vector(rng, a.nrows) };
        let case = Case::new(a, &x, alpha, beta, y0.clone());
        let mut ys: Vec<DeviceVector<T>> =
            members.iter().enumerate().map(|(i, m)| m.gpu().upload_vector(&y0[d.rows(i)]).unwrap()).collect();
        plan.spmv(alpha, &xs, beta, &mut ys).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_parts(&format!("{name}, alpha {alpha}, beta {beta}"), ranks, &d, a, &ys, &case);
    }
}

/// This process's parts of `ys` against `case`'s reference, within the products' tolerance.
fn assert_parts<T: Scalar>(
    what: &str,
    ranks: &Ranks,
    d: &DistributedCsr<T>,
    a: &Csr<T>,
    ys: &[DeviceVector<T>],
    case: &Case<T>,
) {
    let tol = tolerance::<T>(a.view().stats().max);
    for (i, m) in ranks.members().iter().enumerate() {
        let y = ys[i].to_host(m.gpu()).unwrap();
        let rows = d.rows(i);
        let err = max_relative_error(&y, &case.reference[rows.clone()], &case.scale[rows.clone()]);
        assert!(err <= tol, "{what}, rank {}, rows {rows:?}: relative error {err:e} over {tol:e}", m.rank());
    }
}

/// A product captured into one graph over the GPUs (`DistributedPlan::capture`), replayed twice
/// with new `x` and `y` written between the replays on each GPU's stream, without waiting on the
/// host: each replay against the reference.
fn check_graph<T: Scalar>(name: &str, ranks: &Ranks, a: &Csr<T>, rng: &mut ChaCha8Rng, exchange: Exchange) {
    let d = DistributedCsr::upload(ranks, a.view()).unwrap();
    let mut plan = d.plan_with(ranks, Kernel::Auto, exchange).unwrap();
    let members = ranks.members();
    let parts = |len: &dyn Fn(usize) -> usize| -> Vec<DeviceVector<T>> {
        members.iter().enumerate().map(|(i, m)| m.gpu().zeros(len(i)).unwrap()).collect()
    };
    let mut xs = parts(&|i| d.cols(i).len());
    let mut ys = parts(&|i| d.rows(i).len());
    let (alpha, beta) = (T::from_f64(-0.75), T::from_f64(1.25));
    let graph = plan.capture(alpha, &xs, beta, &mut ys).unwrap_or_else(|e| panic!("{name}: capture: {e}"));
    for replay in 0..2 {
        let x = random_vector::<T>(rng, a.ncols);
        let y0 = random_vector::<T>(rng, a.nrows);
        for (i, m) in members.iter().enumerate() {
            xs[i].copy_from_host(m.gpu(), &x[d.cols(i)]).unwrap();
            ys[i].copy_from_host(m.gpu(), &y0[d.rows(i)]).unwrap();
        }
        graph.launch().unwrap();
        let case = Case::new(a, &x, alpha, beta, y0);
        assert_parts(&format!("{name}, replay {replay}"), ranks, &d, a, &ys, &case);
    }
}

/// The 2D 5-point Laplacian of an `n` x `n` grid, row and column `r` scaled by `1 + r % 7` so that
/// Jacobi matters: SPD (as in `solve.rs`).
fn laplacian<T: Scalar>(n: usize) -> Csr<T> {
    let s = |r: usize| 1.0 + (r % 7) as f64;
    five_point(n, |r, c| T::from_f64(if c == r { 4.0 * s(r) * s(r) } else { -s(r) * s(c) }))
}

/// The distributed CGs: the one-GPU recurrences run over the distributed space (`DistributedPcg`,
/// `DistributedPipelinedCg`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Solver {
    Pcg,
    Pipelined,
}

/// `solver` on `ranks` against the CPU oracle (CG, or pipelined CG for `Pipelined`): both converge,
/// iterations within a few (the sums are added in another order), this process's parts of the
/// solution close to the CPU's.
fn check_cg<T: Scalar>(
    what: &str,
    ranks: &Ranks,
    rel_tol: f64,
    rng: &mut ChaCha8Rng,
    (exchange, solver): (Exchange, Solver),
) {
    let a = laplacian::<T>(123);
    let view = a.view();
    let b = random_vector::<T>(rng, a.nrows);
    let d = DistributedCsr::upload(ranks, view).unwrap();
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let what = format!("{what}, {solver:?}, {preconditioner:?}");
        let options = SolverOptions { rel_tol, max_iterations: 5000, preconditioner };
        let mut x_cpu = vec![T::ZERO; a.nrows];
        let cpu = if solver == Solver::Pipelined {
            pipelined_cg(&view, &b, &mut x_cpu, &options)
        } else {
            cg(&view, &b, &mut x_cpu, &options)
        }
        .unwrap();
        let diagonal = view.diagonal();
        let plan = d.plan_with(ranks, Kernel::Auto, exchange).unwrap();
        let members = ranks.members();
        let db: Vec<_> =
            members.iter().enumerate().map(|(i, m)| m.gpu().upload_vector(&b[d.rows(i)]).unwrap()).collect();
        let mut dx: Vec<_> =
            members.iter().enumerate().map(|(i, m)| m.gpu().zeros::<T>(d.rows(i).len()).unwrap()).collect();
        let outcome = match solver {
            Solver::Pcg => {
                let mut s = DistributedPcg::new(plan, options, Some(&diagonal)).unwrap();
                s.set_check_every(7);
                s.solve(&db, &mut dx)
            }
            Solver::Pipelined => {
                let mut s = DistributedPipelinedCg::new(plan, options, Some(&diagonal)).unwrap();
                s.set_check_every(7);
                s.solve(&db, &mut dx)
            }
        }
        .unwrap();
        assert_eq!(outcome.stop, Stop::Converged, "{what}: {outcome:?}");
        let slack = 2 + cpu.iterations / 50;
        assert!(
            outcome.iterations.abs_diff(cpu.iterations) <= slack,
            "{what}: GPUs {outcome:?}, CPU {cpu:?}"
        );
        assert!(outcome.relative_residual <= rel_tol, "{what}: {outcome:?}");
        let norm = x_cpu.iter().map(|v| v.to_f64().powi(2)).sum::<f64>().sqrt();
        let bound = 50.0 * rel_tol.max(T::EPSILON * 100.0) * norm;
        for (i, m) in members.iter().enumerate() {
            let x = dx[i].to_host(m.gpu()).unwrap();
            let diff = x
                .iter()
                .zip(&x_cpu[d.rows(i)])
                .map(|(a, b)| (a.to_f64() - b.to_f64()).powi(2))
                .sum::<f64>()
                .sqrt();
            assert!(diff <= bound, "{what}, rank {}: |x - x_cpu| = {diff:e} over {bound:e}", m.rank());
        }
        say(&format!(
            "{what}: {} iterations (CPU {}), rank(s) {:?}",
            outcome.iterations,
            cpu.iterations,
            members.iter().map(|m| m.rank()).collect::<Vec<_>>()
        ));
    }
}

/// The distributed solvers for nonsymmetric systems, and GMRES's restart.
#[derive(Debug, Clone, Copy)]
enum Nonsymmetric {
    Bicgstab,
    Gmres(usize),
}

/// `solver` on `ranks` against the CPU oracle, on a convection-diffusion system (not symmetric),
/// plain and with Jacobi: it converges, iterations within BiCGSTAB's slack (its residual is far
/// from monotone, so the summation order moves the count more than CG's; GMRES's cycles end at a
/// step the order moves too, and each restart carries the difference on), this process's parts of
/// the solution close to the CPU's.
fn check_nonsymmetric(
    what: &str,
    ranks: &Ranks,
    rng: &mut ChaCha8Rng,
    exchange: Exchange,
    solver: Nonsymmetric,
) {
    let a = convection_diffusion::<f64>(47, 41, 50.0).unwrap();
    let view = CsrRef::from(&a);
    let b = random_vector::<f64>(rng, a.nrows());
    let d = DistributedCsr::upload(ranks, view).unwrap();
    let rel_tol = 1e-10;
    for preconditioner in [Preconditioner::None, Preconditioner::Jacobi] {
        let what = format!("{what}, {solver:?}, {preconditioner:?}");
        let options = SolverOptions { rel_tol, max_iterations: 5000, preconditioner };
        let mut x_cpu = vec![0.0; a.nrows()];
        let members = ranks.members();
        let db: Vec<_> =
            members.iter().enumerate().map(|(i, m)| m.gpu().upload_vector(&b[d.rows(i)]).unwrap()).collect();
        let mut dx: Vec<_> =
            members.iter().enumerate().map(|(i, m)| m.gpu().zeros::<f64>(d.rows(i).len()).unwrap()).collect();
        let plan = d.plan_with(ranks, Kernel::Auto, exchange).unwrap();
        let diagonal = view.diagonal();
        let (cpu, outcome) = match solver {
            Nonsymmetric::Bicgstab => {
                let cpu = bicgstab(&view, &b, &mut x_cpu, &options).unwrap();
                let mut s = DistributedBicgstab::new(plan, options, Some(&diagonal)).unwrap();
                s.set_check_every(7);
                (cpu, s.solve(&db, &mut dx).unwrap())
            }
            Nonsymmetric::Gmres(restart) => {
                let cpu = gmres(&view, &b, &mut x_cpu, &options, restart).unwrap();
                let mut s = DistributedGmres::new(plan, options, restart, Some(&diagonal)).unwrap();
                assert_eq!(s.restart(), restart, "{what}");
                s.set_check_every(2);
                (cpu, s.solve(&db, &mut dx).unwrap())
            }
        };
        assert_eq!(outcome.stop, Stop::Converged, "{what}: {outcome:?}");
        assert!(outcome.relative_residual <= rel_tol, "{what}: {outcome:?}");
        assert!(
            outcome.iterations.abs_diff(cpu.iterations) <= 3 + cpu.iterations / 8,
            "{what}: GPUs {outcome:?}, CPU {cpu:?}"
        );
        let norm = x_cpu.iter().map(|v| v * v).sum::<f64>().sqrt();
        for (i, m) in members.iter().enumerate() {
            let x = dx[i].to_host(m.gpu()).unwrap();
            let diff = x.iter().zip(&x_cpu[d.rows(i)]).map(|(a, b)| (a - b).powi(2)).sum::<f64>().sqrt();
            let bound = 50.0 * rel_tol * norm;
            assert!(diff <= bound, "{what}, rank {}: |x - x_cpu| = {diff:e} over {bound:e}", m.rank());
        }
        say(&format!("{what}: {} iterations (CPU {})", outcome.iterations, cpu.iterations));
    }
}

/// Every product and solve of one run mode on `ranks`, the ghosts by `exchange`.
fn check_all(test: &str, ranks: &Ranks, rng: &mut ChaCha8Rng, exchange: Exchange) {
    let test = format!("{test}, {exchange:?} exchange");
    for (name, a) in matrices::<f32>(rng) {
        check_parts(&format!("{test}: {name} (f32)"), ranks, &a, rng, exchange);
    }
    for (name, a) in matrices::<f64>(rng) {
        check_parts(&format!("{test}: {name} (f64)"), ranks, &a, rng, exchange);
        check_graph(&format!("{test}: {name} (f64), a graph"), ranks, &a, rng, exchange);
    }
    // Pipelined CG in f32 loses its accuracy before 1e-4 on this grid (`solve::PipelinedCg`'s doc):
    // f64 only.
    for solver in [Solver::Pcg, Solver::Pipelined] {
        if solver != Solver::Pipelined {
            check_cg::<f32>(&format!("{test}: CG (f32)"), ranks, 1e-4, rng, (exchange, solver));
        }
        check_cg::<f64>(&format!("{test}: CG (f64)"), ranks, 1e-10, rng, (exchange, solver));
    }
    // GMRES(30) takes few cycles, GMRES(7) many, so that cycles end early and restart.
    for solver in [Nonsymmetric::Bicgstab, Nonsymmetric::Gmres(30), Nonsymmetric::Gmres(7)] {
        check_nonsymmetric(&format!("{test}: (f64)"), ranks, rng, exchange, solver);
    }
}

#[test]
fn distributed_gmres_refuses_as_the_one_gpu_solver() {
    let test = "distributed_gmres_refuses_as_the_one_gpu_solver";
    let _alone = alone_on_the_gpus();
    let Some(count) = gpus_or_skip(test) else { return };
    let ranks = Ranks::all_local(count).unwrap();
    let a = convection_diffusion::<f64>(9, 11, 5.0).unwrap();
    let view = CsrRef::from(&a);
    let d = DistributedCsr::upload(&ranks, view).unwrap();
    let plan = || d.plan_with(&ranks, Kernel::Auto, Exchange::Nccl).unwrap();
    let diagonal = view.diagonal();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 500, preconditioner: Preconditioner::Jacobi };
    // In `solve::Gmres`'s order: the options, the restart, the diagonal.
    for restart in [0, 1025, usize::MAX] {
        let e = DistributedGmres::new(plan(), options, restart, None).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::InvalidRestart { limit: 1024, .. })), "{restart}: {e}");
        let nan = SolverOptions { rel_tol: f64::NAN, ..options };
        let e = DistributedGmres::new(plan(), nan, restart, None).unwrap_err();
        assert!(matches!(e, Error::Solve(SolveError::InvalidTolerance { .. })), "{restart}: {e}");
    }
    let e = DistributedGmres::new(plan(), options, 5, None).unwrap_err();
    assert!(matches!(e, Error::DimensionMismatch { what: "the diagonal", .. }), "{e}");
    let mut zero = diagonal.clone();
    zero[3] = 0.0;
    let e = DistributedGmres::new(plan(), options, 5, Some(&zero)).unwrap_err();
    assert!(matches!(e, Error::Solve(SolveError::SingularDiagonal { row: 3, .. })), "{e}");
    let s = DistributedGmres::new(plan(), options, 1024, Some(&diagonal)).unwrap();
    assert_eq!(s.restart(), 1024, "{test}");
    say(&format!("{test}: refusals as solve::Gmres's on {count} GPUs"));
}

/// The route `exchange` resolves to on `ranks` for a stencil, or the reason it is refused.
fn route(ranks: &Ranks, exchange: Exchange) -> Result<Exchange, Error> {
    let a: Csr<f64> = five_point(20, |r, c| if r == c { 4.0 } else { -1.0 });
    let d = DistributedCsr::upload(ranks, a.view())?;
    Ok(d.plan_with(ranks, Kernel::Auto, exchange)?.exchange_route())
}

#[test]
fn one_process_for_all_gpus() {
    let test = "one_process_for_all_gpus";
    let _alone = alone_on_the_gpus();
    let Some(count) = gpus_or_skip(test) else { return };
    let mut rng = rng(test);
    let ranks = Ranks::all_local(count).unwrap();
    check_all(test, &ranks, &mut rng, Exchange::Nccl);
    match route(&ranks, Exchange::Peer) {
        Ok(route) => {
            assert_eq!(route, Exchange::Peer);
            // Auto times both routes and keeps the faster.
            let auto = route_of_auto(&ranks);
            assert!(matches!(auto, Exchange::Peer | Exchange::Nccl), "{test}: Auto resolved to {auto:?}");
            say(&format!("{test}: Auto took the {auto:?} route on a 20 x 20 stencil"));
            check_all(test, &ranks, &mut rng, Exchange::Peer);
        }
        Err(Error::Unsupported(why)) => {
            assert_eq!(route_of_auto(&ranks), Exchange::Nccl, "{test}: Auto falls back to NCCL");
            skipped_without(&format!("{test}, Peer exchange"), "peer-access", why);
        }
        Err(e) => panic!("{test}: the peer route failed: {e}"),
    }
}

/// The route [`Exchange::Auto`] resolves to on `ranks`.
fn route_of_auto(ranks: &Ranks) -> Exchange {
    route(ranks, Exchange::Auto).unwrap()
}

#[test]
fn product_refuses_bad_operands_and_leaves_y() {
    let test = "product_refuses_bad_operands_and_leaves_y";
    let _alone = alone_on_the_gpus();
    let Some(count) = gpus_or_skip(test) else { return };
    let mut rng = rng(test);
    let ranks = Ranks::all_local(count).unwrap();
    let a: Csr<f64> = five_point(50, |r, c| if r == c { 4.0 } else { -1.0 });
    let d = DistributedCsr::upload(&ranks, a.view()).unwrap();
    let peer = route(&ranks, Exchange::Peer).is_ok();
    for exchange in [Exchange::Nccl, Exchange::Auto, Exchange::Peer] {
        if exchange == Exchange::Peer && !peer {
            skipped_without(&format!("{test}, Peer exchange"), "peer-access", "no peer access");
            continue;
        }
        refuses_bad_operands(test, &ranks, &d, exchange, &mut rng);
    }
}

/// [`product_refuses_bad_operands_and_leaves_y`] by one route.
fn refuses_bad_operands(
    test: &str,
    ranks: &Ranks,
    d: &DistributedCsr<f64>,
    exchange: Exchange,
    rng: &mut ChaCha8Rng,
) {
    let mut plan = d.plan_with(ranks, Kernel::Auto, exchange).unwrap();
    let count = ranks.members().len();
    let members = ranks.members();
    let xs: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, m)| m.gpu().upload_vector(&random_vector(rng, d.cols(i).len())).unwrap())
        .collect();
    let y0: Vec<Vec<f64>> = (0..members.len()).map(|i| random_vector(rng, d.rows(i).len())).collect();
    let mut ys: Vec<_> = members.iter().zip(&y0).map(|(m, y)| m.gpu().upload_vector(y).unwrap()).collect();
    // A short x on the last member, and x on the wrong GPUs (members' vectors reversed).
    let mut short: Vec<_> = members
        .iter()
        .enumerate()
        .map(|(i, m)| m.gpu().zeros(d.cols(i).len()))
        .collect::<Result<_, _>>()
        .unwrap();
    short.pop();
    short.push(members[count - 1].gpu().zeros(d.cols(count - 1).len() - 1).unwrap());
    assert!(matches!(plan.spmv(1.0, &short, 0.0, &mut ys), Err(Error::DimensionMismatch { what: "x", .. })));
    let reversed: Vec<_> =
        (0..count).rev().map(|i| members[i].gpu().zeros(d.cols(count - 1 - i).len()).unwrap()).collect();
    assert!(matches!(plan.spmv(1.0, &reversed, 0.0, &mut ys), Err(Error::ForeignBuffer("x"))));
    assert!(matches!(
        plan.spmv(1.0, &xs[1..], 0.0, &mut ys),
        Err(Error::DimensionMismatch { what: "x (parts)", .. })
    ));
    for ((m, y), y0) in members.iter().zip(&ys).zip(&y0) {
        assert_eq!(&y.to_host(m.gpu()).unwrap(), y0, "{test}, {exchange:?}: y changed by a refused product");
    }
}

/// The child's environment: its rank, the rank count, the id file and the seed.
const RANK: &str = "SPMV_DIST_RANK";
const SIZE: &str = "SPMV_DIST_SIZE";
const ID_FILE: &str = "SPMV_DIST_ID_FILE";

#[test]
fn one_process_per_gpu() {
    let test = "one_process_per_gpu";
    if let Ok(rank) = std::env::var(RANK) {
        // A child: rank `rank` on GPU `rank`, the same matrices as its siblings (the same seed).
        let rank: usize = rank.parse().unwrap();
        let size: usize = std::env::var(SIZE).unwrap().parse().unwrap();
        let id = UniqueId::from_bytes(&std::fs::read(std::env::var(ID_FILE).unwrap()).unwrap()).unwrap();
        let ranks = Ranks::one_of(rank, rank, size, &id).unwrap();
        let mut rng = rng(&format!("{test} (rank {rank})"));
        let test = format!("{test} (rank {rank})");
        // Ranks in other processes: the peer route is refused, and Auto takes NCCL's.
        assert!(matches!(route(&ranks, Exchange::Peer), Err(Error::Unsupported(_))), "{test}");
        assert_eq!(route_of_auto(&ranks), Exchange::Nccl, "{test}");
        check_all(&test, &ranks, &mut rng, Exchange::Auto);
        return;
    }
    let _alone = alone_on_the_gpus();
    let Some(count) = gpus_or_skip(test) else { return };
    let seed: u64 = rand::random();
    say(&format!("{test}: seed {seed} for every rank"));
    let id_file = std::env::temp_dir().join(format!("spmv-nccl-id-{}", std::process::id()));
    std::fs::write(&id_file, UniqueId::new().unwrap().to_bytes()).unwrap();
    let exe = std::env::current_exe().unwrap();
    // The test's name in the harness: its path in the test binary, below the crate.
    let (_, module) = module_path!().split_once("::").expect("a module of the test binary");
    let name = format!("{module}::{test}");
    let children: Vec<_> = (0..count)
        .map(|rank| {
            Command::new(&exe)
                .args(["--exact", &name, "--nocapture", "--test-threads=1"])
                .env(RANK, rank.to_string())
                .env(SIZE, count.to_string())
                .env(ID_FILE, &id_file)
                .env("SPMV_TEST_SEED", seed.to_string())
                .spawn()
                .unwrap()
        })
        .collect();
    let statuses: Vec<_> = children.into_iter().map(|mut c| c.wait().unwrap()).collect();
    let _ = std::fs::remove_file(&id_file);
    for (rank, status) in statuses.iter().enumerate() {
        assert!(status.success(), "{test}: rank {rank} failed: {status}");
    }
}
