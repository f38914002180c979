//! One product, checked once: [`run`] makes every check a product needs, handles the products that
//! need no matrix, and only then hands a [`Product`] to the format's launches.

use super::DeviceMatrix;
use super::launch::scale;
use super::replay::{Operands, Replays};
use crate::Result;
use crate::device::{Gpu, VectorMut, VectorRef};
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use kernels_gpu::abi::{Accumulate, Axpby, DevicePtr as AbiPtr};

/// The operands of one product, checked against its matrix and the [`Gpu`]: `x` has the matrix's
/// column count and `y` its row count, both in the matrix's context, the matrix has rows and entries,
/// and `alpha != 0`. Only [`run`] makes one.
#[derive(Debug)]
pub struct Product<T> {
    alpha: T,
    beta: T,
    x: AbiPtr<T>,
    y: AbiPtr<T>,
    rows: u32,
}

impl<T: Scalar> Product<T> {
    /// The kernels' view for `y = alpha * A * x + beta * y`.
    pub(crate) fn axpby(&self) -> Axpby<T> {
        Axpby { x: self.x, y: self.y, alpha: self.alpha, beta: self.beta }
    }

    /// The kernels' view for `y += alpha * A * x`, after [`Product::scale_y`].
    pub(crate) fn accumulate(&self) -> Accumulate<T> {
        Accumulate { x: self.x, y: self.y, alpha: self.alpha }
    }

    /// Enqueues `y = beta * y`: the first launch of the products whose later kernels accumulate.
    pub(crate) fn scale_y(&self, gpu: &Gpu) -> Result<()> {
        // SAFETY: `y` was checked to hold `rows` elements of `gpu`'s context.
        unsafe { scale(gpu, self.y, self.beta, self.rows) }
    }
}

/// `y = alpha * A * x + beta * y` with `a`'s prepared `launch`, `a` of `gpu` (its plan checked that
/// when it was made, and holds both): the operands' checks first, so that an error leaves `y` as it
/// was and launches nothing; then nothing at all for a matrix without rows, and
/// `y = beta * y` alone when `A * x` contributes nothing (`alpha == 0`, where BLAS reads neither `A`
/// nor `x`, or a matrix without entries); otherwise the format's launches, replayed from a graph or
/// launched directly as the plan's `replays` decide, where it keeps them (a hot plan's).
#[allow(clippy::too_many_arguments)] // a plan's parts and a product's operands, each named
pub(crate) fn run<T, A, X, Y>(
    gpu: &Gpu,
    a: &A,
    launch: &A::Launch,
    replays: Option<&Replays>,
    alpha: T,
    x: &X,
    beta: T,
    y: &mut Y,
) -> Result<()>
where
    T: Scalar,
    A: DeviceMatrix<T> + ?Sized,
    X: VectorRef<T> + ?Sized,
    Y: VectorMut<T> + ?Sized,
{
    gpu.check_operand("x", x, a.ncols())?;
    gpu.check_operand("y", y, a.nrows())?;
    let rows = narrow("the row count", a.nrows())?;
    if rows == 0 {
        return Ok(());
    }
    // The guards live until the launches are enqueued (see `VectorRef`).
    let (x, _x_guard) = x.read(gpu.stream());
    let (y, _y_guard) = y.write(gpu.stream());
    let p = Product { alpha, beta, x: AbiPtr::new(x), y: AbiPtr::new(y), rows };
    if alpha == T::ZERO || a.nnz() == 0 {
        return p.scale_y(gpu);
    }
    match replays {
        Some(replays) => {
            let operands = Operands { x, y, alpha: alpha.to_f64().to_bits(), beta: beta.to_f64().to_bits() };
            replays.run(gpu, operands, |on| a.enqueue(on, launch, &p))
        }
        None => a.enqueue(gpu, launch, &p),
    }
}
