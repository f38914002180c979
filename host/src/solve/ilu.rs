//! ILU(0) on the GPU: the incomplete LU factors of `A`, computed on the host by
//! [`IluFactors`](crate::reference::ilu::IluFactors) and uploaded with their level schedules, applied
//! by `kernels-gpu/src/ilu.rs` a level of rows a launch.

use super::operator::Precondition;
use crate::Result;
use crate::device::{DeviceVector, Gpu};
use crate::enqueue::krylov::DeviceIlu;
use crate::formats::csr::CsrRef;
use crate::reference::ilu::IluFactors;
use crate::scalar::Scalar;

/// ILU(0): `z = U⁻¹ L⁻¹ r`, `L U ≈ A` on `A`'s own pattern (Saad, "Iterative Methods for Sparse
/// Linear Systems", 2nd ed., section 10.3.2). Stronger than Jacobi and block-Jacobi where the
/// couplings reach beyond a block (convection along a grid, a circuit), at the cost of two
/// triangular solves an apply, each as many launches as its schedule has levels (the rows of a
/// level are solved at once): about `nx + ny` a solve on an `nx × ny` grid, so a graph, which takes
/// the launches' host cost away, suits it. The GPU apply matches
/// [`IluFactors::apply`](crate::reference::ilu::IluFactors::apply) bit for bit.
///
/// The factors are made from the host matrix and not refreshed by
/// [`DeviceCsr::update_values`](crate::DeviceCsr::update_values): make a new one for new values.
///
/// ```no_run
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// use gpu_spmv::solve::{Gmres, Ilu0, Preconditioner, SolverOptions};
/// use gpu_spmv::{CsrRef, Gpu, Kernel};
/// # let a = nalgebra_sparse::CsrMatrix::<f64>::identity(4);
/// let gpu = Gpu::new()?;
/// let device_a = gpu.upload_csr(&a)?;
/// let preconditioner = Ilu0::new(&gpu, CsrRef::from(&a))?;
/// let options = SolverOptions { rel_tol: 1e-8, max_iterations: 1000, preconditioner: Preconditioner::None };
/// let plan = gpu.plan(&device_a, Kernel::Auto)?;
/// let mut solver = Gmres::with_preconditioner(plan, options, 30, Box::new(preconditioner))?;
/// # let _ = &mut solver;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct Ilu0<T> {
    device: DeviceIlu<T>,
    levels: (usize, usize),
}

impl<T: Scalar> Ilu0<T> {
    /// Factorises `a` on the host and uploads the factors. Refused as
    /// [`IluFactors::new`](crate::reference::ilu::IluFactors::new) refuses (not square, an order
    /// past `u32`, an entry not finite, a row without a diagonal entry or a zero or non-finite
    /// pivot naming its row, a factor entry not finite in `T`), for more entries than `u32`
    /// counts, and while the stream captures a graph (it uploads).
    pub fn new(gpu: &Gpu, a: CsrRef<'_, T>) -> Result<Self> {
        let device = DeviceIlu::upload(gpu, &IluFactors::new(a)?)?;
        Ok(Self { levels: device.levels(), device })
    }

    /// The order of the matrix.
    pub fn n(&self) -> usize {
        self.device.n()
    }

    /// The levels of the lower and the upper solve: the launches an apply makes.
    pub fn levels(&self) -> (usize, usize) {
        self.levels
    }
}

impl<T: Scalar> Precondition<T> for Ilu0<T> {
    fn apply(&mut self, gpu: &Gpu, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        self.device.apply(gpu, r, z)
    }
}
