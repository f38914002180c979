//! The seam between a Krylov solver's recurrence and where its vectors live ([`Space`]): the
//! solvers written over it (`pcg.rs`, `pipelined_cg.rs`, `bicgstab.rs`, `gmres.rs`) are one source
//! for one GPU ([`OneGpu`], here) and for several (the distributed tier's space, over a
//! `DistributedPlan`), which differ only in how a dot product's sums reduce and how the operator
//! reaches the other GPUs' entries.

use super::krylov::{Precond, precondition};
use super::operator::Operator;
use crate::Result;
use crate::device::DeviceVector;
use crate::enqueue::krylov::{Columns, DeviceBasis, KrylovDevice, Snapshot, coef, constant};
use crate::reference::DiagonalNeed;
use crate::scalar::Scalar;
use kernels_gpu::abi::{Coef, ScalarOp};

/// Where a solve's vectors live, with the device state of its scalars: what a Krylov recurrence
/// asks of them, and nothing of how they are laid out.
///
/// Every method enqueues on the space's streams and neither allocates nor waits for the host, but
/// for [`Space::zeros`], [`Space::basis`], [`Space::keep_scalars`] and the reads ([`Space::snapshot`],
/// [`Space::scalar`], [`Space::scalars`]), so that a batch of iterations can be captured. A gated
/// op (the `gate` of `enqueue/krylov.rs`) runs only while the solve's status is in its gate; the
/// status changes only in [`Space::program`], whose inputs are the same wherever it runs, so every
/// copy of the state (one per GPU) takes the same path.
pub(crate) trait Space<T: Scalar> {
    /// A vector of the solve's length: one `DeviceVector` on one GPU, a part per GPU on several.
    type Vector: std::fmt::Debug;

    /// A zeroed vector of the solve's length.
    fn zeros(&self) -> Result<Self::Vector>;
    /// Enqueues `v = 0`, ungated.
    fn zero(&self, v: &mut Self::Vector) -> Result<()>;

    /// Enqueues `y = A x` with the solve's operator, ungated.
    fn apply(&mut self, x: &Self::Vector, y: &mut Self::Vector) -> Result<()>;
    /// Whether the solve has a preconditioner (without one, `M⁻¹` is the identity and a solver
    /// uses `r` itself, or copies it where its recurrence keeps both).
    fn has_preconditioner(&self) -> bool;
    /// Enqueues `z = M⁻¹ r`, ungated; nothing without a preconditioner.
    fn precondition(&mut self, r: &Self::Vector, z: &mut Self::Vector) -> Result<()>;

    /// `out = a * x`; `x` may be `out` (`None`).
    fn scale(&self, gate: u32, a: Coef<T>, x: Option<&Self::Vector>, out: &mut Self::Vector) -> Result<()>;
    /// `y = fma(a, x, y)`.
    fn axpy(&self, gate: u32, a: Coef<T>, x: &Self::Vector, y: &mut Self::Vector) -> Result<()>;
    /// `p = fma(a, fma(b, v, p), r)`.
    fn p_update(
        &self,
        gate: u32,
        ab: (Coef<T>, Coef<T>),
        v: &Self::Vector,
        r: &Self::Vector,
        p: &mut Self::Vector,
    ) -> Result<()>;
    /// `scalars[slot] = xᵀy` for each `(x, y, slot)`, in one pass: on several GPUs, every GPU's
    /// sums of its rows, then one reduction over the GPUs, so that every copy of the scalars holds
    /// the whole sums before the next [`Space::program`] reads them.
    fn dots(&mut self, gate: u32, pairs: &[(&Self::Vector, &Self::Vector, u32)]) -> Result<()>;
    /// Enqueues a scalar program on every copy of the scalars.
    fn program(&self, gate: u32, ops: &[ScalarOp<T>]) -> Result<()>;

    /// A GMRES basis: columns that are the space's vectors, with what the basis kernels read of them.
    type Basis: std::fmt::Debug;
    /// A zeroed basis of `columns` vectors, at most the columns the space's state was made with room
    /// for.
    fn basis(&self, columns: u32) -> Result<Self::Basis>;
    /// Column `j` of `basis`.
    fn column(basis: &Self::Basis, j: usize) -> &Self::Vector;
    /// `basis[j] = a * x`: the one write of a basis column. The basis hands out no `&mut` to a
    /// column, whose buffers its device tables hold the addresses of (`DeviceBasis`).
    fn scale_to_column(
        &self,
        gate: u32,
        a: Coef<T>,
        x: &Self::Vector,
        basis: &mut Self::Basis,
        j: usize,
    ) -> Result<()>;
    /// `scalars[first + j] = V[:, j]ᵀ w` for the first `k` columns, in one pass: reduced over the
    /// GPUs as [`Space::dots`]'s sums are.
    fn basis_dots(
        &mut self,
        gate: u32,
        basis: &Self::Basis,
        k: u32,
        first: u32,
        w: &Self::Vector,
    ) -> Result<()>;
    /// `w = (accumulate ? w : 0) + scale Σ_j scalars[first + j] V[:, j]` over the `columns`:
    /// Gram-Schmidt's `w -= Σ_j h_j V[:, j]` (`-1`, accumulating) and GMRES's `V y` (`1`, not).
    /// Each GPU's rows, nothing to reduce.
    fn basis_combine(
        &self,
        gate: u32,
        basis: &Self::Basis,
        columns: Columns,
        first: u32,
        scale_accumulate: (T, bool),
        w: &mut Self::Vector,
    ) -> Result<()>;

    /// Enqueues the reset of the state to not started, before a solve's start program.
    fn reset(&mut self) -> Result<()>;
    /// Replaces the state by one of `scalars` slots (a residual history's room), zeroed.
    fn keep_scalars(&mut self, scalars: u32) -> Result<()>;
    /// Reads the state and the scalars an outcome needs; waits for the stream.
    fn snapshot(&self) -> Result<Snapshot<T>>;
    /// Reads scalar `slot`; waits for the stream.
    fn scalar(&self, slot: u32) -> Result<T>;
    /// Reads `len` scalars from `first`; waits for the stream.
    fn scalars(&self, first: u32, len: u32) -> Result<Vec<T>>;

    /// `M⁻¹ v` into `out`, which a solver holds exactly when the space has a preconditioner; without
    /// one, `v` itself. The vector the recurrence goes on with.
    fn preconditioned<'v>(
        &mut self,
        v: &'v Self::Vector,
        out: Option<&'v mut Self::Vector>,
    ) -> Result<&'v Self::Vector> {
        match out {
            Some(out) => {
                self.precondition(v, out)?;
                Ok(out)
            }
            None => Ok(v),
        }
    }

    /// Preconditioned CG's update after `α` (slot `alpha`): `r -= α q`, `z = M⁻¹ r` (into `z`,
    /// which the solver holds exactly when the space has a preconditioner), `x += α p`, then
    /// `scalars[out.0] = rᵀz` and `scalars[out.1] = rᵀr` as one [`Space::dots`] pass. These ops in
    /// this order; a space whose preconditioner allows it (none, or Jacobi) overrides it with one
    /// pass that gives the same bits.
    #[allow(clippy::too_many_arguments)] // CG's five vectors and its slots, each named
    fn cg_update(
        &mut self,
        gate: u32,
        alpha: u32,
        (p, q): (&Self::Vector, &Self::Vector),
        x: &mut Self::Vector,
        r: &mut Self::Vector,
        z: Option<&mut Self::Vector>,
        out: (u32, u32),
    ) -> Result<()> {
        cg_update_in_passes(self, gate, alpha, (p, q), x, r, z, out)
    }

    /// `out = M⁻¹ v`, or a copy of `v` (a gated `scale` by one) without a preconditioner, for a
    /// recurrence that keeps both vectors.
    fn precondition_or_copy(&mut self, gate: u32, v: &Self::Vector, out: &mut Self::Vector) -> Result<()> {
        if self.has_preconditioner() {
            self.precondition(v, out)
        } else {
            self.scale(gate, constant(T::from_f64(1.0)), Some(v), out)
        }
    }
}

/// [`Space::cg_update`] as its ops, one pass each: `r -= α q`, `z = M⁻¹ r`, the sums, `x += α p`.
#[allow(clippy::too_many_arguments)] // as `Space::cg_update`
fn cg_update_in_passes<T: Scalar, S: Space<T> + ?Sized>(
    space: &mut S,
    gate: u32,
    alpha: u32,
    (p, q): (&S::Vector, &S::Vector),
    x: &mut S::Vector,
    r: &mut S::Vector,
    z: Option<&mut S::Vector>,
    out: (u32, u32),
) -> Result<()> {
    let (one, minus_one) = (T::from_f64(1.0), T::from_f64(-1.0));
    space.axpy(gate, coef(minus_one, alpha), q, r)?;
    let z = space.preconditioned(r, z)?;
    space.dots(gate, &[(r, z, out.0), (r, r, out.1)])?;
    space.axpy(gate, coef(one, alpha), p, x)
}

/// One GPU: the operator's, with the solve's preconditioner and device state
/// (`enqueue/krylov.rs`'s `KrylovDevice`, whose launches each method is).
#[derive(Debug)]
pub(crate) struct OneGpu<'a, T: Scalar, A: Operator<T>> {
    pub op: A,
    pub precond: Precond<'a, T>,
    pub device: KrylovDevice<T>,
    /// The solve's length.
    pub n: usize,
    /// What the recurrence needs of a Jacobi diagonal: CG a positive one, the others a non-zero one.
    pub need: DiagonalNeed,
}

impl<T: Scalar, A: Operator<T>> Space<T> for OneGpu<'_, T, A> {
    type Vector = DeviceVector<T>;

    fn zeros(&self) -> Result<DeviceVector<T>> {
        self.op.gpu().zeros(self.n)
    }

    fn zero(&self, v: &mut DeviceVector<T>) -> Result<()> {
        Ok(self.op.gpu().stream().memset_zeros(v.as_mut_slice())?)
    }

    fn apply(&mut self, x: &DeviceVector<T>, y: &mut DeviceVector<T>) -> Result<()> {
        self.op.apply(x, y)
    }

    fn has_preconditioner(&self) -> bool {
        !matches!(self.precond, Precond::None)
    }

    fn precondition(&mut self, r: &DeviceVector<T>, z: &mut DeviceVector<T>) -> Result<()> {
        precondition(&mut self.precond, self.op.gpu(), r, z)
    }

    fn scale(
        &self,
        gate: u32,
        a: Coef<T>,
        x: Option<&DeviceVector<T>>,
        out: &mut DeviceVector<T>,
    ) -> Result<()> {
        self.device.scale(self.op.gpu(), gate, a, x, out)
    }

    fn axpy(&self, gate: u32, a: Coef<T>, x: &DeviceVector<T>, y: &mut DeviceVector<T>) -> Result<()> {
        self.device.axpy(self.op.gpu(), gate, a, x, y)
    }

    fn p_update(
        &self,
        gate: u32,
        ab: (Coef<T>, Coef<T>),
        v: &DeviceVector<T>,
        r: &DeviceVector<T>,
        p: &mut DeviceVector<T>,
    ) -> Result<()> {
        self.device.p_update(self.op.gpu(), gate, ab, v, r, p)
    }

    fn dots(&mut self, gate: u32, pairs: &[(&DeviceVector<T>, &DeviceVector<T>, u32)]) -> Result<()> {
        self.device.dots(self.op.gpu(), gate, pairs)
    }

    fn program(&self, gate: u32, ops: &[ScalarOp<T>]) -> Result<()> {
        self.device.program(self.op.gpu(), gate, ops)
    }

    type Basis = DeviceBasis<T>;

    fn basis(&self, columns: u32) -> Result<DeviceBasis<T>> {
        DeviceBasis::new(&[self.op.gpu()], columns, || self.zeros())
    }

    fn column(basis: &DeviceBasis<T>, j: usize) -> &DeviceVector<T> {
        basis.column(j)
    }

    fn scale_to_column(
        &self,
        gate: u32,
        a: Coef<T>,
        x: &DeviceVector<T>,
        basis: &mut DeviceBasis<T>,
        j: usize,
    ) -> Result<()> {
        self.device.scale_to_column(self.op.gpu(), gate, a, x, basis, (j, 0))
    }

    fn basis_dots(
        &mut self,
        gate: u32,
        basis: &DeviceBasis<T>,
        k: u32,
        first: u32,
        w: &DeviceVector<T>,
    ) -> Result<()> {
        self.device.basis_dots(self.op.gpu(), gate, basis.part(0)?, Columns::First(k), first, w)
    }

    fn basis_combine(
        &self,
        gate: u32,
        basis: &DeviceBasis<T>,
        columns: Columns,
        first: u32,
        (scale, accumulate): (T, bool),
        w: &mut DeviceVector<T>,
    ) -> Result<()> {
        let part = basis.part(0)?;
        self.device.basis_combine(self.op.gpu(), gate, part, columns, first, scale, accumulate, w)
    }

    fn cg_update(
        &mut self,
        gate: u32,
        alpha: u32,
        pq: (&DeviceVector<T>, &DeviceVector<T>),
        x: &mut DeviceVector<T>,
        r: &mut DeviceVector<T>,
        z: Option<&mut DeviceVector<T>>,
        out: (u32, u32),
    ) -> Result<()> {
        let jacobi = match (&self.precond, z) {
            (Precond::None, None) => None,
            (Precond::Jacobi(j), Some(z)) => Some((j.inverse(), z)),
            // A caller's preconditioner runs between the update of `r` and the sums.
            (_, z) => return cg_update_in_passes(self, gate, alpha, pq, x, r, z, out),
        };
        self.device.cg_update(self.op.gpu(), gate, alpha, pq, x, r, jacobi, out)
    }

    fn reset(&mut self) -> Result<()> {
        self.device.reset(self.op.gpu())
    }

    fn keep_scalars(&mut self, scalars: u32) -> Result<()> {
        self.device = KrylovDevice::new(self.op.gpu(), self.n, scalars, self.device.columns())?;
        Ok(())
    }

    fn snapshot(&self) -> Result<Snapshot<T>> {
        self.device.snapshot(self.op.gpu())
    }

    fn scalar(&self, slot: u32) -> Result<T> {
        self.device.scalar(self.op.gpu(), slot)
    }

    fn scalars(&self, first: u32, len: u32) -> Result<Vec<T>> {
        self.device.scalars(self.op.gpu(), first, len)
    }
}
