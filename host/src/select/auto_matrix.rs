//! [`AutoMatrix`]: a matrix on the device in the format the planner chose.

use super::selection::AutoFormat;
use crate::Result;
use crate::device::{DeviceCoo, DeviceCsr, DeviceEll, DeviceHyb, Gpu};
use crate::operator::DeviceMatrix;
use crate::operator::sealed::{Launch, Operands};
use crate::scalar::Scalar;

/// A matrix on the device in the format that minimises the total time of the products the caller
/// announced, conversion included ([`Gpu::upload_for_products`]). [`Gpu::spmv`] takes it like any
/// format; each variant's product is that format's (see its type).
#[derive(Debug)]
#[non_exhaustive]
#[allow(clippy::large_enum_variant)] // one per matrix: boxing would add an indirection to every product
pub enum AutoMatrix<T> {
    Csr(DeviceCsr<T>),
    Coo(DeviceCoo<T>),
    Hyb(DeviceHyb<T>),
    Ell(DeviceEll<T>),
}

impl<T: Scalar> AutoMatrix<T> {
    /// The format the matrix is in.
    pub fn format(&self) -> AutoFormat {
        match self {
            AutoMatrix::Csr(_) => AutoFormat::Csr,
            AutoMatrix::Coo(_) => AutoFormat::CooSegmented,
            AutoMatrix::Hyb(_) => AutoFormat::Hyb,
            AutoMatrix::Ell(_) => AutoFormat::Ell,
        }
    }

    fn inner(&self) -> &dyn DeviceMatrix<T> {
        match self {
            AutoMatrix::Csr(a) => a,
            AutoMatrix::Coo(a) => a,
            AutoMatrix::Hyb(a) => a,
            AutoMatrix::Ell(a) => a,
        }
    }
}

impl<T: Scalar> Launch<T> for AutoMatrix<T> {
    fn belongs_to(&self, gpu: &Gpu) -> bool {
        self.inner().belongs_to(gpu)
    }

    fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()> {
        self.inner().launch(gpu, op)
    }
}

impl<T: Scalar> DeviceMatrix<T> for AutoMatrix<T> {
    fn nrows(&self) -> usize {
        self.inner().nrows()
    }

    fn ncols(&self) -> usize {
        self.inner().ncols()
    }

    fn nnz(&self) -> usize {
        self.inner().nnz()
    }
}
