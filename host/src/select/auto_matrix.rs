//! [`AutoMatrix`]: a matrix on the device in the format the planner chose.

use super::selection::AutoFormat;
use crate::device::{
    DeviceCompressed, DeviceCompressedEll, DeviceCoo, DeviceCsr, DeviceDia, DeviceEll, DeviceHyb, DeviceSell,
    Gpu,
};
use crate::enqueue::DeviceMatrix;
use crate::enqueue::sealed::{Enqueue, Product};
use crate::formats::Shape;
use crate::scalar::Scalar;
use crate::{Kernel, Result};

/// A matrix on the device in the format that minimises the total time of the products the caller
/// announced, conversion included ([`Gpu::upload_for_products`]). [`Gpu::spmv`] takes it like any
/// format, with the strategy the planner measured (CSR's [`Kernel::Auto`], the segmented COO
/// kernel, [`crate::CompressedKernel::Auto`]); its own strategy type is `()`.
#[derive(Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per matrix: boxing would add an indirection to every product
pub enum AutoMatrix<T> {
    Csr(DeviceCsr<T>),
    Coo(DeviceCoo<T>),
    Hyb(DeviceHyb<T>),
    Ell(DeviceEll<T>),
    Sell(DeviceSell<T>),
    Compressed(DeviceCompressed<T>),
    CompressedEll(DeviceCompressedEll<T>),
    Dia(DeviceDia<T>),
}

/// The launches of the format an [`AutoMatrix`] holds.
#[derive(Debug)]
pub enum AutoLaunch<T: Scalar> {
    Csr(<DeviceCsr<T> as Enqueue<T>>::Launch),
    Coo(<DeviceCoo<T> as Enqueue<T>>::Launch),
    Hyb(<DeviceHyb<T> as Enqueue<T>>::Launch),
    Ell(<DeviceEll<T> as Enqueue<T>>::Launch),
    Sell(<DeviceSell<T> as Enqueue<T>>::Launch),
    Compressed(<DeviceCompressed<T> as Enqueue<T>>::Launch),
    CompressedEll(<DeviceCompressedEll<T> as Enqueue<T>>::Launch),
    Dia(<DeviceDia<T> as Enqueue<T>>::Launch),
}

impl<T: Scalar> AutoMatrix<T> {
    /// The format the matrix is in.
    pub fn format(&self) -> AutoFormat {
        match self {
            AutoMatrix::Csr(_) => AutoFormat::Csr,
            AutoMatrix::Coo(_) => AutoFormat::CooSegmented,
            AutoMatrix::Hyb(_) => AutoFormat::Hyb,
            AutoMatrix::Ell(_) => AutoFormat::Ell,
            AutoMatrix::Sell(_) => AutoFormat::Sell,
            AutoMatrix::Compressed(_) => AutoFormat::Compressed,
            AutoMatrix::CompressedEll(_) => AutoFormat::CompressedEll,
            AutoMatrix::Dia(_) => AutoFormat::Dia,
        }
    }
}

/// `$body` with `$a` bound to the matrix an [`AutoMatrix`] holds, whatever its format.
macro_rules! with_inner {
    ($matrix:expr, $a:ident => $body:expr) => {
        match $matrix {
            AutoMatrix::Csr($a) => $body,
            AutoMatrix::Coo($a) => $body,
            AutoMatrix::Hyb($a) => $body,
            AutoMatrix::Ell($a) => $body,
            AutoMatrix::Sell($a) => $body,
            AutoMatrix::Compressed($a) => $body,
            AutoMatrix::CompressedEll($a) => $body,
            AutoMatrix::Dia($a) => $body,
        }
    };
}

impl<T: Scalar> Enqueue<T> for AutoMatrix<T> {
    type Kernel = ();
    type Launch = AutoLaunch<T>;

    fn belongs_to(&self, gpu: &Gpu) -> bool {
        with_inner!(self, a => a.belongs_to(gpu))
    }

    /// The held matrix's: a CSR one's values may be updated in place, and a solver's diagonal taken
    /// from them must then be refused as stale.
    fn values_generation(&self) -> u64 {
        with_inner!(self, a => a.values_generation())
    }

    fn prepare(&self, gpu: &Gpu, (): ()) -> Result<((), AutoLaunch<T>)> {
        let launch = match self {
            AutoMatrix::Csr(a) => AutoLaunch::Csr(a.prepare(gpu, Kernel::Auto)?.1),
            AutoMatrix::Coo(a) => AutoLaunch::Coo(a.prepare(gpu, Default::default())?.1),
            AutoMatrix::Hyb(a) => AutoLaunch::Hyb(a.prepare(gpu, Default::default())?.1),
            AutoMatrix::Ell(a) => AutoLaunch::Ell(a.prepare(gpu, ())?.1),
            AutoMatrix::Sell(a) => AutoLaunch::Sell(a.prepare(gpu, ())?.1),
            AutoMatrix::Compressed(a) => AutoLaunch::Compressed(a.prepare(gpu, Default::default())?.1),
            AutoMatrix::CompressedEll(a) => AutoLaunch::CompressedEll(a.prepare(gpu, ())?.1),
            AutoMatrix::Dia(a) => AutoLaunch::Dia(a.prepare(gpu, ())?.1),
        };
        Ok(((), launch))
    }

    fn enqueue(&self, gpu: &Gpu, launch: &AutoLaunch<T>, p: &Product<T>) -> Result<()> {
        match (self, launch) {
            (AutoMatrix::Csr(a), AutoLaunch::Csr(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Coo(a), AutoLaunch::Coo(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Hyb(a), AutoLaunch::Hyb(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Ell(a), AutoLaunch::Ell(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Sell(a), AutoLaunch::Sell(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Compressed(a), AutoLaunch::Compressed(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::CompressedEll(a), AutoLaunch::CompressedEll(l)) => a.enqueue(gpu, l, p),
            (AutoMatrix::Dia(a), AutoLaunch::Dia(l)) => a.enqueue(gpu, l, p),
            _ => unreachable!("`prepare` makes the launch of the matrix's own format"),
        }
    }
}

impl<T: Scalar> DeviceMatrix<T> for AutoMatrix<T> {
    fn shape(&self) -> Shape {
        with_inner!(self, a => a.shape())
    }
}
