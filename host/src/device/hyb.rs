//! HYB on the device ([`DeviceHyb`]), made by [`Gpu::upload_hyb`].

use super::Gpu;
use super::coo::DeviceCoo;
use super::ell::DeviceEll;
use crate::Result;
use crate::formats::Shape;
use crate::formats::hyb::Hyb;
use crate::scalar::Scalar;

/// A [`Hyb`] matrix on the device. Its product is the ELL kernel, which writes `y = alpha * A_ell *
/// x + beta * y` (every row, `y` unread when `beta == 0`), then, when the COO part has entries, the
/// COO kernel adding `alpha * A_coo * x`: two launches on the [`Gpu`]'s stream, in order.
#[derive(Debug)]
pub struct DeviceHyb<T> {
    ell: DeviceEll<T>,
    coo: DeviceCoo<T>,
}

impl Gpu {
    /// Uploads a HYB matrix.
    pub fn upload_hyb<T: Scalar>(&self, a: &Hyb<T>) -> Result<DeviceHyb<T>> {
        Ok(DeviceHyb { ell: self.upload_ell(a.ell())?, coo: self.upload_coo(a.coo())? })
    }
}

impl<T: Scalar> DeviceHyb<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.ell.nrows(), ncols: self.ell.ncols(), nnz: self.ell.nnz() + self.coo.nnz() }
    }

    crate::formats::shape_accessors!();

    /// The ELL part.
    pub fn ell(&self) -> &DeviceEll<T> {
        &self.ell
    }

    /// The COO part.
    pub fn coo(&self) -> &DeviceCoo<T> {
        &self.coo
    }

    /// Bytes of the matrix on the device, padding included.
    pub fn device_bytes(&self) -> usize {
        self.ell.device_bytes() + self.coo.device_bytes()
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        self.ell.belongs_to(gpu) && self.coo.belongs_to(gpu)
    }
}
