//! The product entry points, [`Gpu::spmv`] and [`Gpu::spmv_with`].

use crate::Result;
use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::launch::{self, Product};
use crate::plan::Kernel;
use crate::scalar::Scalar;

impl Gpu {
    /// `y = alpha * A * x + beta * y` with the kernel [`Kernel::Auto`] picks.
    ///
    /// As in BLAS, `y` is not read when `beta == 0`, and neither `A` nor `x` is read when
    /// `alpha == 0`. Enqueued on [`Gpu::stream`]; returns without waiting. On error nothing is launched.
    pub fn spmv<T: Scalar>(
        &self,
        alpha: T,
        a: &DeviceCsr<T>,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        self.spmv_with(Kernel::Auto, alpha, a, x, beta, y)
    }

    /// `y = alpha * A * x + beta * y` with a given kernel; otherwise as [`Gpu::spmv`].
    pub fn spmv_with<T: Scalar>(
        &self,
        kernel: Kernel,
        alpha: T,
        a: &DeviceCsr<T>,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        let product = Product::new(self, alpha, a, x, beta, y)?;
        let kernel = kernel.resolve(a.stats())?;
        if a.nrows() == 0 {
            return Ok(());
        }
        if alpha == T::ZERO || a.nnz() == 0 {
            return launch::scale(self, &product);
        }
        match kernel {
            Kernel::CsrScalar { block_size } => launch::csr_scalar(self, &product, block_size),
            Kernel::CsrVector { coop, block_size } => launch::csr_vector(self, &product, coop, block_size),
            Kernel::Auto => unreachable!("resolve() replaces Auto"),
        }
    }
}
