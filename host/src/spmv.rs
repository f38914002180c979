//! The product entry points, [`Gpu::spmv`] and [`Gpu::spmv_with`].

use crate::Result;
use crate::device::{DeviceCsr, DeviceVector, Gpu};
use crate::launch::{self, Product};
use crate::operator::{self, DeviceMatrix};
use crate::plan::{Kernel, Resolved};
use crate::scalar::Scalar;

impl Gpu {
    /// `y = alpha * A * x + beta * y` for a matrix in any format: a [`DeviceCsr`] with the kernel
    /// [`Kernel::Auto`] picks, or an ELL, COO, HYB, BRC or dense-block matrix with its own kernels
    /// (each device type's doc says which, and how many launches). `y` comes out in the caller's row
    /// order whatever the format.
    ///
    /// As in BLAS, `y` is not read when `beta == 0`, and neither `A` nor `x` is read when
    /// `alpha == 0`. Enqueued on [`Gpu::stream`]; returns without waiting. On error nothing is launched.
    pub fn spmv<T: Scalar, A: DeviceMatrix<T> + ?Sized>(
        &self,
        alpha: T,
        a: &A,
        x: &DeviceVector<T>,
        beta: T,
        y: &mut DeviceVector<T>,
    ) -> Result<()> {
        operator::spmv(self, alpha, a, x, beta, y)
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
        if let Some(done) = operator::without_matrix(self, alpha, (a.nrows(), a.nnz()), beta, y) {
            return done;
        }
        match kernel {
            Resolved::CsrScalar { block_size } => launch::csr_scalar(self, &product, block_size),
            Resolved::CsrVector { coop, block_size } => launch::csr_vector(self, &product, coop, block_size),
            Resolved::CsrAligned { group, cached_x, block_size } => {
                launch::csr_aligned(self, &product, group, cached_x, block_size)
            }
            Resolved::CsrParam { coop, repeat, block_size, split_long_rows } => {
                launch::csr_param(self, &product, coop, repeat, block_size, split_long_rows)
            }
            Resolved::CsrBalanced { block_size } => launch::csr_balanced(self, &product, block_size),
        }
    }
}
