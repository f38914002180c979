//! The kernels of every format beyond CSR against the f64 reference, on fresh random and edge-case
//! matrices, with the output poisoned before each launch where `beta == 0`. Without a GPU these tests
//! print why and pass, unless `SPMV_REQUIRE_GPU=1`, which makes them fail instead.

use crate::common::{Case, Csr, banded, edge_cases, gpu_or_skip, random_vector, rng, slice_edges, tolerance};
use gpu_spmv::formats::{
    Brc, Coo, DENSE_WINDOW, DenseBlocks, Ell, Hyb, Sell, brc_b2_candidates, brc_model_b2,
};
use gpu_spmv::{BrcCombine, CooKernel, DeviceMatrix, DeviceVector, Error, FormatError, Gpu, Scalar};
use rand_chacha::ChaCha8Rng;

/// A format with the parameters of its conversion and kernels.
#[derive(Debug, Clone, Copy)]
enum Variant {
    Ell,
    Sell,
    Coo(CooKernel),
    /// HYB with the model's ELL width, or with this one.
    Hyb(Option<usize>),
    /// BRC with the model's B2, or with the smallest candidate (many split rows).
    Brc {
        smallest_b2: bool,
        combine: BrcCombine,
    },
    DenseBlocks {
        window: usize,
    },
}

/// The SM count BRC's B2 model is given: one, so that on these small matrices its occupancy cap still
/// leaves blocks wider than one entry and both whole and split rows are exercised.
const MODEL_SMS: u32 = 1;

const VARIANTS: [Variant; 11] = [
    Variant::Ell,
    Variant::Sell,
    Variant::Coo(CooKernel::Atomic),
    Variant::Coo(CooKernel::Segmented),
    Variant::Hyb(None),
    Variant::Hyb(Some(2)),
    Variant::Brc { smallest_b2: false, combine: BrcCombine::Deterministic },
    Variant::Brc { smallest_b2: false, combine: BrcCombine::Atomic },
    Variant::Brc { smallest_b2: true, combine: BrcCombine::Deterministic },
    Variant::DenseBlocks { window: DENSE_WINDOW },
    Variant::DenseBlocks { window: 64 },
];

/// A device matrix of any format with the strategy of its products.
trait Product<T: Scalar> {
    fn spmv(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> gpu_spmv::Result<()>;
    fn shape(&self) -> (usize, usize, usize);
}

struct WithKernel<T: Scalar, A: DeviceMatrix<T>>(A, A::Kernel);

impl<T: Scalar, A: DeviceMatrix<T>> Product<T> for WithKernel<T, A> {
    fn spmv(
        &self,
        gpu: &Gpu,
        alpha: T,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> gpu_spmv::Result<()> {
        gpu.spmv_with(self.1, alpha, &self.0, x, beta, y)
    }

    fn shape(&self) -> (usize, usize, usize) {
        (self.0.nrows(), self.0.ncols(), self.0.nnz())
    }
}

/// `a` converted and uploaded as `variant`; `None` when ELL or SELL refuses it for its padding (the
/// only refusals these matrices may meet).
fn upload<T: Scalar>(gpu: &Gpu, variant: Variant, a: &Csr<T>) -> Option<Box<dyn Product<T>>> {
    let view = a.view();
    let stats = view.stats();
    let m: Box<dyn Product<T>> = match variant {
        Variant::Ell => match Ell::try_from_csr(view) {
            Ok(ell) => Box::new(WithKernel(gpu.upload_ell(&ell).unwrap(), ())),
            Err(Error::Format(FormatError::EllPadding { .. })) => return None,
            Err(e) => panic!("ELL: {e}"),
        },
        Variant::Sell => match Sell::try_from_csr(view) {
            Ok(sell) => Box::new(WithKernel(gpu.upload_sell(&sell).unwrap(), ())),
            Err(Error::Format(FormatError::SellPadding { .. })) => return None,
            Err(e) => panic!("SELL: {e}"),
        },
        Variant::Coo(kernel) => {
            Box::new(WithKernel(gpu.upload_coo(&Coo::try_from_csr(view).unwrap()).unwrap(), kernel))
        }
        Variant::Hyb(width) => {
            let hyb = match width {
                Some(w) => Hyb::try_from_csr_with_width(view, w),
                None => Hyb::try_from_csr(view),
            };
            match hyb {
                Ok(hyb) => Box::new(WithKernel(gpu.upload_hyb(&hyb).unwrap(), CooKernel::Segmented)),
                Err(Error::Format(FormatError::EllPadding { .. })) if width.is_some() => return None,
                Err(e) => panic!("HYB: {e}"),
            }
        }
        Variant::Brc { smallest_b2, combine } => {
            let b2 = if smallest_b2 {
                brc_b2_candidates(&stats, MODEL_SMS)[0]
            } else {
                brc_model_b2(&stats, MODEL_SMS)
            };
            Box::new(WithKernel(gpu.upload_brc(&Brc::try_from_csr(view, b2).unwrap()).unwrap(), combine))
        }
        Variant::DenseBlocks { window } => {
            let blocks = DenseBlocks::try_from_csr(view, window).unwrap();
            Box::new(WithKernel(gpu.upload_dense_blocks(&blocks).unwrap(), CooKernel::Segmented))
        }
    };
    assert_eq!(m.shape(), (a.nrows, a.ncols, a.vals.len()), "{variant:?}: shape");
    Some(m)
}

/// The products every format runs on `a` with `x`: `beta = 0` with `y` poisoned by NaN (so an
/// unwritten element shows), `beta != 0`, `alpha = 0`, and both 0.
fn cases<T: Scalar>(a: &Csr<T>, x: &[T], rng: &mut ChaCha8Rng) -> Vec<Case<T>> {
    let y0 = random_vector::<T>(rng, a.nrows);
    let poison = vec![T::from_f64(f64::NAN); a.nrows];
    let scalars = [
        (T::from_f64(1.0), T::ZERO, &poison),
        (T::from_f64(-1.5), T::from_f64(0.75), &y0),
        (T::ZERO, T::from_f64(3.0), &y0),
        (T::ZERO, T::ZERO, &poison),
    ];
    scalars.into_iter().map(|(alpha, beta, start)| Case::new(a, x, alpha, beta, start.clone())).collect()
}

/// Runs every case on `m` (holding `a`) and checks it against the reference.
fn check_product<T: Scalar>(
    gpu: &Gpu,
    what: &str,
    m: &dyn Product<T>,
    a: &Csr<T>,
    x: &[T],
    cases: &[Case<T>],
) {
    let dx = gpu.upload_vector(x).unwrap();
    let tol = tolerance::<T>(a.view().stats().max);
    for case in cases {
        let mut dy = gpu.upload_vector(&case.start).unwrap();
        m.spmv(gpu, case.alpha, &dx, case.beta, &mut dy).unwrap();
        case.assert_close(what, &dy.to_host(gpu).unwrap(), tol);
    }
}

/// The matrices: the shared edge cases and row counts around SELL's slices, and shapes that exercise
/// each format's paths (a band that dense blocks hold in their windows, a row with half the entries
/// for BRC's splits, enough rows for HYB's model to choose an ELL part).
fn matrices<T: Scalar>(rng: &mut ChaCha8Rng) -> Vec<(String, Csr<T>)> {
    let mut all: Vec<(String, Csr<T>)> =
        edge_cases(rng).into_iter().chain(slice_edges(rng)).map(|(n, a)| (n.to_string(), a)).collect();
    all.push(("banded 5001 x 5013".into(), banded(rng, 5001, 5013, 48, 3)));
    all.push((
        "one row holds half the entries".into(),
        Csr::random(rng, 4099, 7001, false, |r| if r == 4000 { 6000 } else { r % 3 }),
    ));
    let lens: Vec<usize> = (0..20_011).map(|_| rand::Rng::random_range(rng, 0..64)).collect();
    all.push((
        "random 20011 x 20011, 0..64 per row".into(),
        Csr::random(rng, 20_011, 20_011, true, |r| lens[r]),
    ));
    all
}

fn all_formats<T: Scalar>(test: &str) {
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    for (name, a) in matrices::<T>(&mut rng) {
        let x = random_vector::<T>(&mut rng, a.ncols);
        let cases = cases(&a, &x, &mut rng);
        for variant in VARIANTS {
            if let Some(m) = upload(&gpu, variant, &a) {
                check_product(&gpu, &format!("{name}, {variant:?}"), m.as_ref(), &a, &x, &cases);
            }
        }
    }
}

#[test]
fn gpu_formats_f32() {
    all_formats::<f32>("gpu_formats_f32");
}

#[test]
fn gpu_formats_f64() {
    all_formats::<f64>("gpu_formats_f64");
}

/// Padding never reads `x`: a NaN or an infinity in `x` reaches exactly the rows with an entry in its
/// column, in every format (a padding slot of value 0 at a real column would make NaN of either in
/// other rows).
#[test]
fn gpu_formats_nan_reaches_exactly_the_rows_that_read_it() {
    let Some(gpu) = gpu_or_skip("gpu_formats_nan") else { return };
    let mut rng = rng("gpu_formats_nan");
    let a = Csr::<f64>::random(&mut rng, 3001, 2000, true, |r| if r == 5 { 700 } else { r % 40 });
    let mut x = random_vector::<f64>(&mut rng, 2000);
    x[0] = f64::NAN;
    x[777] = f64::INFINITY;
    let view = a.view();
    let dx = gpu.upload_vector(&x).unwrap();
    for variant in VARIANTS {
        let Some(m) = upload(&gpu, variant, &a) else { continue };
        let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
        m.spmv(&gpu, 1.0, &dx, 0.0, &mut dy).unwrap();
        for (r, v) in dy.to_host(&gpu).unwrap().iter().enumerate() {
            let reads = view.row(r).0.iter().any(|&c| c == 0 || c == 777);
            assert_eq!(!v.is_finite(), reads, "{variant:?}, row {r}");
        }
    }
}

/// BRC's deterministic combination gives the same bits every run, split rows included.
#[test]
fn gpu_brc_deterministic_repeats_bit_for_bit() {
    let Some(gpu) = gpu_or_skip("gpu_brc_deterministic") else { return };
    let mut rng = rng("gpu_brc_deterministic");
    let a = Csr::<f32>::random(&mut rng, 2000, 5000, true, |r| if r % 100 == 0 { 3000 } else { 1 + r % 9 });
    let brc = Brc::try_from_csr(a.view(), 8).unwrap();
    assert!(!brc.split_rows().is_empty());
    let m = gpu.upload_brc(&brc).unwrap();
    assert_eq!(gpu.plan(&m, Default::default()).unwrap().kernel(), BrcCombine::Deterministic);
    let dx = gpu.upload_vector(&random_vector::<f32>(&mut rng, a.ncols)).unwrap();
    let run = || {
        let mut dy = gpu.zeros::<f32>(a.nrows).unwrap();
        gpu.spmv(1.0, &m, &dx, 0.0, &mut dy).unwrap();
        dy.to_host(&gpu).unwrap()
    };
    let first = run();
    for _ in 0..5 {
        assert!(run().iter().zip(&first).all(|(a, b)| a.to_bits() == b.to_bits()));
    }
}

/// BRC's B2 tuner: it starts at the model's B2, times only widths of the candidate ladder, keeps the
/// fastest it timed, and its matrix computes the product (NaN-poisoned `y`, `beta = 0`, then
/// `beta != 0`); a matrix without entries is refused.
#[test]
fn gpu_brc_tuned_b2() {
    let test = "gpu_brc_tuned_b2";
    let Some(gpu) = gpu_or_skip(test) else { return };
    let mut rng = rng(test);
    let a = Csr::<f64>::random(&mut rng, 30_011, 20_000, true, |r| if r % 97 == 0 { 2_000 } else { r % 13 });
    let (m, tuning) = gpu.upload_brc_tuned(a.view()).unwrap();
    let stats = a.view().stats();
    let ladder = brc_b2_candidates(&stats, gpu.sm_count());
    assert_eq!(tuning.model_b2, brc_model_b2(&stats, gpu.sm_count()));
    assert_eq!(tuning.trials.first().map(|t| t.0), Some(tuning.model_b2), "{tuning:?}");
    assert!(tuning.trials.iter().all(|(b2, ms)| ladder.contains(b2) && *ms > 0.0), "{tuning:?}");
    let fastest = tuning.trials.iter().min_by(|p, q| p.1.total_cmp(&q.1)).unwrap();
    assert_eq!(fastest.0, tuning.b2, "{tuning:?}");
    assert_eq!(m.b2(), tuning.b2);
    eprintln!("{test}: ladder {ladder:?}, {tuning:?}");
    let x = random_vector::<f64>(&mut rng, a.ncols);
    let dx = gpu.upload_vector(&x).unwrap();
    let mut dy = gpu.zeros::<f64>(a.nrows).unwrap();
    for (alpha, beta, start) in
        [(1.0, 0.0, vec![f64::NAN; a.nrows]), (-0.5, 2.0, random_vector::<f64>(&mut rng, a.nrows))]
    {
        let case = Case::new(&a, &x, alpha, beta, start);
        dy.copy_from_host(&gpu, &case.start).unwrap();
        gpu.spmv(alpha, &m, &dx, beta, &mut dy).unwrap();
        case.assert_close("tuned BRC", &dy.to_host(&gpu).unwrap(), tolerance::<f64>(stats.max));
    }
    let empty = Csr::<f64>::random(&mut rng, 10, 10, true, |_| 0);
    assert!(matches!(gpu.upload_brc_tuned(empty.view()), Err(Error::Unsupported(_))));
}

/// Every format checks its operands before launching anything: `y` stays as it was.
#[test]
fn gpu_format_errors_leave_y_untouched() {
    let Some(gpu) = gpu_or_skip("gpu_format_errors") else { return };
    let a = Csr::<f32> { nrows: 2, ncols: 3, offsets: vec![0, 1, 2], cols: vec![0, 2], vals: vec![1.0, 2.0] };
    let x_short = gpu.upload_vector(&[1.0f32, 2.0]).unwrap();
    let mut y = gpu.upload_vector(&[4.0f32, 5.0]).unwrap();
    let mut y_long = gpu.upload_vector(&[4.0f32, 5.0, 6.0]).unwrap();
    let x = gpu.upload_vector(&[1.0f32, 2.0, 3.0]).unwrap();
    for variant in VARIANTS {
        let m = upload(&gpu, variant, &a).unwrap();
        let err = m.spmv(&gpu, 1.0, &x_short, 0.0, &mut y).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "x", .. }), "{variant:?}: {err}");
        let err = m.spmv(&gpu, 1.0, &x, 0.0, &mut y_long).unwrap_err();
        assert!(matches!(err, Error::DimensionMismatch { what: "y", .. }), "{variant:?}: {err}");
    }
    assert_eq!(y.to_host(&gpu).unwrap(), [4.0, 5.0]);
    assert_eq!(y_long.to_host(&gpu).unwrap(), [4.0, 5.0, 6.0]);
}
