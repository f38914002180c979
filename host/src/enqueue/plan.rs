//! [`Plan`]: products with one matrix and one strategy, prepared once; and the product entry points
//! of [`Gpu`], which all go through a plan.

use super::DeviceMatrix;
use super::product::run;
use super::replay::{HotLaunch, Replays};
use crate::device::{Gpu, VectorMut, VectorRef};
use crate::scalar::Scalar;
use crate::{Error, Result};
use std::fmt;

/// How a plan's products will run, which may change the fastest kernel: [`Kernel::Auto`](
/// crate::Kernel::Auto)'s rule and the tuner ([`TunedSpmv`](crate::tune::TunedSpmv)) choose for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Regime {
    /// Products far apart, or over a working set larger than the L2: each reads the matrix from
    /// HBM. The default.
    #[default]
    Cold,
    /// Products back to back with the same operands: a matrix that fits in L2 is read from it, and
    /// the host's enqueue overlaps the previous product.
    ///
    /// A plan made for it ([`Gpu::plan_for`](crate::Gpu::plan_for)) also replays its products from
    /// CUDA graphs, which costs the host about a third of a product's launch (PERF section 17): the
    /// second product with the same `x`, `y`, `alpha` and `beta` captures one (on a stream of its
    /// own), and later ones replay it; the plan keeps the graphs of its last four sets of
    /// operands. On Hopper a direct launch overlaps the product ahead instead (PERF section 47), so
    /// the plan times its next 128 products with a graph both ways, in turns, and keeps the faster
    /// ([`Plan::hot_launch`]); nothing waits for that timing. Inside a caller's capture its
    /// products are enqueued as any plan's.
    Hot,
    /// Products captured in a CUDA graph and replayed: hot, and the host's cost gone, so only the
    /// kernels and the GPU's gaps between them count. Outside a capture, a plan made for it runs as
    /// a [`Regime::Hot`] one, with the graph rule's kernel.
    Graph,
}

/// Products `y = alpha * A * x + beta * y` with one matrix and one strategy, prepared once by
/// [`Gpu::plan`]: the strategy resolved ([`Kernel::Auto`](crate::Kernel::Auto) replaced by its
/// choice) and checked, the data it needs built (a CSR matrix's long-row split or row tasks, the
/// first time any plan needs them), the launches' entries, grids and argument structs made.
///
/// A product with a plan checks its operands and enqueues its launches: no allocation, no host
/// synchronisation, nothing formatted, so it may be captured into a CUDA graph
/// ([`Gpu::stream`] in capture mode). Products with one matrix share its scratch (the long-row
/// partial sums, BRC's split-row slots), so they must be ordered: one stream orders them.
pub struct Plan<'a, T: Scalar, A: DeviceMatrix<T> + ?Sized> {
    gpu: &'a Gpu,
    matrix: &'a A,
    kernel: A::Kernel,
    launch: A::Launch,
    /// The graphs a plan of the hot or graph regime replays its products from, and its trial of
    /// replaying against launching directly (`replay.rs`).
    replays: Option<Box<Replays>>,
}

impl<'a, T: Scalar, A: DeviceMatrix<T> + ?Sized> Plan<'a, T, A> {
    /// `y = alpha * A * x + beta * y`, enqueued on the plan's [`Gpu::stream`]. As in BLAS, `y` is
    /// not read when `beta == 0` (NaN in `y` does not leak), and neither `A` nor `x` is read when
    /// `alpha == 0`. Every check runs before anything is launched: on error `y` is as it was.
    pub fn spmv<X, Y>(&self, alpha: T, x: &X, beta: T, y: &mut Y) -> Result<()>
    where
        X: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        run(self.gpu, self.matrix, &self.launch, self.replays.as_deref(), alpha, x, beta, y)
    }

    /// The strategy the products run, resolved: never [`Kernel::Auto`](crate::Kernel::Auto).
    pub fn kernel(&self) -> A::Kernel {
        self.kernel
    }

    /// The matrix.
    pub fn matrix(&self) -> &'a A {
        self.matrix
    }

    /// How many sets of operands the plan keeps a captured graph for: 0 for a plan of the cold
    /// regime, and for a hot one until the second product with the same operands (see
    /// [`Regime::Hot`]). For tests and diagnostics: a hot plan whose count stays 0, or whose
    /// [`Plan::hot_launch`] is [`HotLaunch::Direct`], runs its products as a cold one does (its
    /// graphs stay kept).
    pub fn kept_graphs(&self) -> usize {
        self.replays.as_ref().map_or(0, |r| r.kept())
    }

    /// How the products of a hot plan are launched ([`Regime::Hot`]): `None` for a plan of the cold
    /// regime; [`HotLaunch::Measuring`] until the plan has timed its products replayed and launched
    /// directly, then the faster. For tests and diagnostics.
    pub fn hot_launch(&self) -> Option<HotLaunch> {
        self.replays.as_ref().map(|r| r.launch())
    }

    /// The [`Gpu`] the products run on.
    pub fn gpu(&self) -> &'a Gpu {
        self.gpu
    }

    pub(crate) fn prepared(&self) -> &A::Launch {
        &self.launch
    }

    /// The plan for products in `regime`: one that replays them from graphs, but for
    /// [`Regime::Cold`].
    pub(crate) fn in_regime(self, regime: Regime) -> Self {
        let replays = (regime != Regime::Cold).then(Box::default);
        Self { replays, ..self }
    }
}

impl<T: Scalar, A: DeviceMatrix<T> + ?Sized> fmt::Debug for Plan<'_, T, A> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Plan")
            .field("kernel", &self.kernel)
            .field("launch", &self.launch)
            .field("replays", &self.replays.is_some())
            .finish()
    }
}

impl Gpu {
    /// Prepares products with `a` by `kernel` (the format's strategy type; see [`DeviceMatrix`]):
    /// checks and resolves it, builds what it needs, and returns the reusable [`Plan`]. The cost of
    /// the first plan of a CSR strategy that cuts rows is an O(rows) pass on the host and an upload;
    /// of the first plan of [`Kernel::CsrEllCopy`](crate::Kernel::CsrEllCopy) (which Auto takes for
    /// large matrices of rows of one length), the copy's allocation, about the matrix's bytes
    /// again and kept with it, and a launch that fills it, waited for; of the first plan of
    /// [`Kernel::Auto`](crate::Kernel::Auto) for a large matrix of rows of at most 128 entries
    /// ([`dia_copy_term`](crate::rule::dia_copy_term)), a launch that counts its diagonals, waited
    /// for, and the copy where it is DIA small enough; of the first plan of
    /// [`Kernel::CsrCompressedCopy`](crate::Kernel::CsrCompressedCopy), or of Auto for a large
    /// matrix whose rows the rule gives a thread or a group each
    /// ([`compressed_copy_term`](crate::rule::compressed_copy_term)), a launch that finds each
    /// segment's span, waited for, and where the columns compress (always, for the kernel asked
    /// for by name) their allocation, about 2 bytes an entry kept with the matrix, and a launch
    /// that fills them, waited for (0.5-15 ms on the suite's matrices on an H100); every other plan
    /// costs a few hundred nanoseconds.
    pub fn plan<'a, T: Scalar, A: DeviceMatrix<T> + ?Sized>(
        &'a self,
        a: &'a A,
        kernel: A::Kernel,
    ) -> Result<Plan<'a, T, A>> {
        if !a.belongs_to(self) {
            return Err(Error::ForeignBuffer("the matrix"));
        }
        let (kernel, launch) = a.prepare(self, kernel)?;
        Ok(Plan { gpu: self, matrix: a, kernel, launch, replays: None })
    }

    /// `y = alpha * A * x + beta * y` with the format's default strategy ([`Kernel::Auto`](
    /// crate::Kernel::Auto) for CSR): [`Gpu::plan`] and [`Plan::spmv`] in one call. `x` and `y` may
    /// be [`DeviceVector`](crate::DeviceVector)s or the caller's cudarc buffers ([`VectorRef`]).
    /// Enqueued on [`Gpu::stream`]; returns without waiting, but for what the first product of a
    /// matrix whose strategy builds data waits for, as [`Gpu::plan`] says. On error no product is
    /// launched (that first product may have built its data).
    pub fn spmv<T, A, X, Y>(&self, alpha: T, a: &A, x: &X, beta: T, y: &mut Y) -> Result<()>
    where
        T: Scalar,
        A: DeviceMatrix<T> + ?Sized,
        X: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        self.spmv_with(A::Kernel::default(), alpha, a, x, beta, y)
    }

    /// `y = alpha * A * x + beta * y` with a given strategy; otherwise as [`Gpu::spmv`].
    pub fn spmv_with<T, A, X, Y>(
        &self,
        kernel: A::Kernel,
        alpha: T,
        a: &A,
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
        self.plan(a, kernel)?.spmv(alpha, x, beta, y)
    }
}
