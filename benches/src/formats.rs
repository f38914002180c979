//! The storage formats beyond CSR, as the bench runs them: timed conversion from CSR on the CPU,
//! upload, and the product through `Gpu::spmv`.

use gpu_spmv::formats::{
    Brc, CompressedCsr, CompressedEll, Coo, DENSE_WINDOW, DenseBlocks, Dia, Ell, Hyb, Sell, Storage,
    ValueStorage, bf16, brc_b2_candidates, brc_model_b2, f16,
};
use gpu_spmv::{
    BrcCombine, CompressedKernel, CooKernel, CsrRef, DeviceMatrix, DeviceVector, Gpu, Plan, Precision,
    RowStats, Scalar,
};
use std::time::Instant;

/// One format configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    Ell,
    /// SELL-32: ELL's slots, padded per slice of 32 rows.
    Sell,
    Coo(CooKernel),
    Hyb,
    Brc {
        b2: usize,
        combine: BrcCombine,
    },
    DenseBlocks,
    /// Compressed column indices, values stored as `values` (the product's own type, or a narrower
    /// one), `CompressedKernel::Auto`.
    Compressed {
        values: Storage,
    },
    /// ELL with 16-bit column offsets from the row, values stored as `values`.
    CompressedEll {
        values: Storage,
    },
    /// DIA with presence words per row, values stored as `values`.
    Dia {
        values: Storage,
    },
}

impl Format {
    /// The short key of reports: `ell`, `sell`, `coo-atomic`, `coo-segmented`, `hyb`, `brc-b<B2>` (with
    /// `-atomic` when split rows are combined by atomics), `dense-blocks`, `compressed-<storage>`
    /// (`compressed-f32`, `compressed-bf16`, ...: the storage type of the values) and
    /// `compressed-ell-<storage>` and `dia-<storage>`.
    pub fn key(&self) -> String {
        match *self {
            Format::Ell => "ell".into(),
            Format::Sell => "sell".into(),
            Format::Coo(CooKernel::Atomic) => "coo-atomic".into(),
            Format::Coo(CooKernel::Segmented) => "coo-segmented".into(),
            Format::Hyb => "hyb".into(),
            Format::Brc { b2, combine: BrcCombine::Deterministic } => format!("brc-b{b2}"),
            Format::Brc { b2, combine: BrcCombine::Atomic } => format!("brc-b{b2}-atomic"),
            Format::DenseBlocks => "dense-blocks".into(),
            Format::Compressed { values } => format!("compressed-{}", values.name()),
            Format::CompressedEll { values } => format!("compressed-ell-{}", values.name()),
            Format::Dia { values } => format!("dia-{}", values.name()),
        }
    }
}

/// A device matrix of any format, with the strategy its products run.
pub trait FormatMatrix<T: Scalar> {
    /// The plan of the matrix's products on `gpu`.
    fn plan<'a>(&'a self, gpu: &'a Gpu) -> gpu_spmv::Result<Box<dyn FormatPlan<T> + 'a>>;
}

/// A [`Plan`] of any format.
pub trait FormatPlan<T: Scalar> {
    fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> gpu_spmv::Result<()>;
}

impl<T: Scalar, A: DeviceMatrix<T>> FormatPlan<T> for Plan<'_, T, A> {
    fn spmv(&self, alpha: T, x: &DeviceVector<T>, beta: T, y: &mut DeviceVector<T>) -> gpu_spmv::Result<()> {
        Plan::spmv(self, alpha, x, beta, y)
    }
}

/// A device matrix and the strategy of its products.
struct WithKernel<T: Scalar, A: DeviceMatrix<T>> {
    matrix: A,
    kernel: A::Kernel,
}

impl<T: Scalar, A: DeviceMatrix<T>> FormatMatrix<T> for WithKernel<T, A> {
    fn plan<'a>(&'a self, gpu: &'a Gpu) -> gpu_spmv::Result<Box<dyn FormatPlan<T> + 'a>> {
        Ok(Box::new(gpu.plan(&self.matrix, self.kernel)?))
    }
}

/// A matrix converted to a format and uploaded `copies` times.
pub struct Converted<T> {
    /// Wall time of the conversion from CSR on the CPU (rayon), upload excluded.
    pub conversion_ms: f64,
    pub copies: Vec<Box<dyn FormatMatrix<T>>>,
}

impl<T> std::fmt::Debug for Converted<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Converted")
            .field("conversion_ms", &self.conversion_ms)
            .field("copies", &self.copies.len())
            .finish()
    }
}

/// The formats the bench runs on a matrix of these statistics: each format once, BRC at every
/// candidate B2 around the model's value (deterministic combination), and at the model's B2 with
/// atomics; compressed column indices, compressed ELL and DIA with the values in the product's type
/// `precision`, and in bf16 and f16 (and f32 for f64 products).
pub fn formats(stats: &RowStats, sm_count: u32, precision: Precision) -> Vec<Format> {
    let mut all = vec![
        Format::Ell,
        Format::Sell,
        Format::Coo(CooKernel::Atomic),
        Format::Coo(CooKernel::Segmented),
        Format::Hyb,
    ];
    all.extend(
        brc_b2_candidates(stats, sm_count)
            .into_iter()
            .map(|b2| Format::Brc { b2, combine: BrcCombine::Deterministic }),
    );
    all.push(Format::Brc { b2: brc_model_b2(stats, sm_count), combine: BrcCombine::Atomic });
    all.push(Format::DenseBlocks);
    let storages = match precision {
        Precision::Single => [Storage::F32, Storage::Bf16, Storage::F16].as_slice(),
        // Narrow storage for f64 products too: a half or a quarter of the value bytes, each value
        // exact in the narrow type or not.
        Precision::Double => [Storage::F64, Storage::F32, Storage::Bf16, Storage::F16].as_slice(),
    };
    all.extend(storages.iter().map(|&values| Format::Compressed { values }));
    all.extend(storages.iter().map(|&values| Format::CompressedEll { values }));
    all.extend(storages.iter().map(|&values| Format::Dia { values }));
    all
}

/// Converts `a` to `format` (timed) and uploads it `copies` times. `Ok(Err(reason))` when the format
/// refuses the matrix (ELL's or SELL's padding limit, say): a result to report, not a failure of the run.
pub fn convert<T: Scalar>(
    gpu: &Gpu,
    format: Format,
    a: CsrRef<'_, T>,
    copies: usize,
) -> anyhow::Result<Result<Converted<T>, String>>
where
    f32: ValueStorage<T>,
{
    let start = Instant::now();
    match format {
        Format::Ell => converted(start, Ell::try_from_csr(a), copies, (), |h| gpu.upload_ell(h)),
        Format::Sell => converted(start, Sell::try_from_csr(a), copies, (), |h| gpu.upload_sell(h)),
        Format::Coo(kernel) => converted(start, Coo::try_from_csr(a), copies, kernel, |h| gpu.upload_coo(h)),
        Format::Hyb => {
            converted(start, Hyb::try_from_csr(a), copies, CooKernel::Segmented, |h| gpu.upload_hyb(h))
        }
        Format::Brc { b2, combine } => {
            converted(start, Brc::try_from_csr(a, b2), copies, combine, |h| gpu.upload_brc(h))
        }
        Format::DenseBlocks => {
            converted(start, DenseBlocks::try_from_csr(a, DENSE_WINDOW), copies, CooKernel::Segmented, |h| {
                gpu.upload_dense_blocks(h)
            })
        }
        Format::Compressed { values: Storage::F16 } => {
            let host = CompressedCsr::<T, f16>::try_from_csr(a);
            converted(start, host, copies, CompressedKernel::Auto, |h| gpu.upload_compressed(h))
        }
        Format::Compressed { values: Storage::Bf16 } => {
            let host = CompressedCsr::<T, bf16>::try_from_csr(a);
            converted(start, host, copies, CompressedKernel::Auto, |h| gpu.upload_compressed(h))
        }
        Format::Compressed { values: Storage::F32 } => {
            let host = CompressedCsr::<T, f32>::try_from_csr(a);
            converted(start, host, copies, CompressedKernel::Auto, |h| gpu.upload_compressed(h))
        }
        Format::Compressed { values: Storage::F64 } => {
            let host = CompressedCsr::<T>::try_from_csr(a);
            converted(start, host, copies, CompressedKernel::Auto, |h| gpu.upload_compressed(h))
        }
        Format::CompressedEll { values: Storage::F16 } => {
            let host = CompressedEll::<T, f16>::try_from_csr(a);
            converted(start, host, copies, (), |h| gpu.upload_compressed_ell(h))
        }
        Format::CompressedEll { values: Storage::Bf16 } => {
            let host = CompressedEll::<T, bf16>::try_from_csr(a);
            converted(start, host, copies, (), |h| gpu.upload_compressed_ell(h))
        }
        Format::CompressedEll { values: Storage::F32 } => {
            let host = CompressedEll::<T, f32>::try_from_csr(a);
            converted(start, host, copies, (), |h| gpu.upload_compressed_ell(h))
        }
        Format::CompressedEll { values: Storage::F64 } => {
            let host = CompressedEll::<T>::try_from_csr(a);
            converted(start, host, copies, (), |h| gpu.upload_compressed_ell(h))
        }
        Format::Dia { values: Storage::F16 } => {
            converted(start, Dia::<T, f16>::try_from_csr(a), copies, (), |h| gpu.upload_dia(h))
        }
        Format::Dia { values: Storage::Bf16 } => {
            converted(start, Dia::<T, bf16>::try_from_csr(a), copies, (), |h| gpu.upload_dia(h))
        }
        Format::Dia { values: Storage::F32 } => {
            converted(start, Dia::<T, f32>::try_from_csr(a), copies, (), |h| gpu.upload_dia(h))
        }
        Format::Dia { values: Storage::F64 } => {
            converted(start, Dia::<T>::try_from_csr(a), copies, (), |h| gpu.upload_dia(h))
        }
    }
}

/// The conversion's outcome, timed from `start`, uploaded `copies` times with `upload`, to be
/// multiplied with `kernel`.
fn converted<T: Scalar, H, D: DeviceMatrix<T> + 'static>(
    start: Instant,
    host: gpu_spmv::Result<H>,
    copies: usize,
    kernel: D::Kernel,
    upload: impl Fn(&H) -> gpu_spmv::Result<D>,
) -> anyhow::Result<Result<Converted<T>, String>> {
    let host = match host {
        Ok(host) => host,
        Err(refused) => return Ok(Err(refused.to_string())),
    };
    let conversion_ms = start.elapsed().as_secs_f64() * 1e3;
    let copies = (0..copies)
        .map(|_| -> anyhow::Result<Box<dyn FormatMatrix<T>>> {
            Ok(Box::new(WithKernel { matrix: upload(&host)?, kernel }))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    Ok(Ok(Converted { conversion_ms, copies }))
}
