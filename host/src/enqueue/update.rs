//! New values for a [`DeviceCsr`] of the same pattern, from the host or from a device buffer: a copy
//! on the stream, and the launches that carry them into the transpose and the ELL copy where a plan
//! has built them. No allocation; from a device buffer, nothing but stream work, so it may be
//! captured into a CUDA graph with the products and solves that follow it.

use super::csr::refresh_ell_copy;
use super::launch::{copy, copy_from_host, gather};
use crate::device::{DeviceCsr, Gpu, VectorRef};
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use kernels_gpu::abi::DevicePtr as AbiPtr;

impl<T: Scalar> DeviceCsr<T> {
    /// Replaces the values by `values` (one per entry, in the order of the matrix's column indices),
    /// keeping the pattern, in stream order: products enqueued before it read the old values, those
    /// enqueued after it the new ones.
    ///
    /// Plans of this matrix stay valid, the transposed product's and `Kernel::CsrEllCopy`'s included
    /// (their copies of the values are refreshed on the stream), and `Kernel::CsrCompressedCopy`'s
    /// (its columns read the matrix's own values). A solver's Jacobi diagonal, given
    /// on the host, is not: the solver refuses to run with [`Error::StaleValues`] until it is given
    /// the new one ([`Cg::set_diagonal`](crate::solve::Cg::set_diagonal)).
    ///
    /// Refused before anything is enqueued: a matrix of another [`Gpu`]
    /// ([`Error::ForeignBuffer`]), `values` of another length than the entry count
    /// ([`Error::DimensionMismatch`]), a stream that is capturing a graph ([`Error::Unsupported`]:
    /// a graph would read the host memory again at every replay; capture
    /// [`DeviceCsr::update_values_from`] instead).
    pub fn update_values(&self, gpu: &Gpu, values: &[T]) -> Result<()> {
        self.check_matrix(gpu)?;
        if values.len() != self.nnz() {
            return Err(Error::DimensionMismatch {
                what: "the new values",
                expected: self.nnz(),
                got: values.len(),
            });
        }
        gpu.not_capturing("a copy from the host while the stream captures a graph")?;
        // SAFETY: the matrix's values hold `nnz` elements of `gpu`'s context (checked above), the
        // length of `values`.
        unsafe { copy_from_host(gpu, self.args().values, values)? };
        self.refresh_derived(gpu)
    }

    /// As [`DeviceCsr::update_values`], from a buffer on the device: a [`DeviceVector`](crate::DeviceVector)
    /// or the caller's `CudaSlice`, `CudaView` or `CudaViewMut` of the [`Gpu`]'s context, read in
    /// stream order (a buffer written on another stream must be ordered before, as for a product's
    /// `x`). Enqueues only device work, so it may be captured into a graph; the graph refreshes
    /// the copies of the values that existed when it was captured (the transpose, the ELL copy),
    /// so capture it after the plans that build them.
    ///
    /// Refused before anything is enqueued: a matrix or buffer of another [`Gpu`]
    /// ([`Error::ForeignBuffer`]), a buffer of another length than the entry count
    /// ([`Error::DimensionMismatch`]).
    pub fn update_values_from<V: VectorRef<T> + ?Sized>(&self, gpu: &Gpu, values: &V) -> Result<()> {
        self.check_matrix(gpu)?;
        gpu.check_operand("the new values", values, self.nnz())?;
        let (source, _guard) = values.read(gpu.stream());
        let target = self.args().values;
        // The matrix's own values (`self.values()`, or a view of all of them) are already in place.
        if source != target.addr() {
            let nnz = narrow("the entry count", self.nnz())?;
            // SAFETY: both hold `nnz` elements of `gpu`'s context (checked above), and a buffer that
            // is not the matrix's values does not overlap them: no view reaches into a buffer the
            // matrix owns but the whole of it, whose address is `target`'s.
            unsafe { copy(gpu, target, AbiPtr::new(source), nnz)? };
        }
        self.refresh_derived(gpu)
    }

    fn check_matrix(&self, gpu: &Gpu) -> Result<()> {
        if self.belongs_to(gpu) { Ok(()) } else { Err(Error::ForeignBuffer("the matrix")) }
    }

    /// Carries the new values into the transpose and the ELL copies (the matrix's and the
    /// transpose's), where plans have built them, and counts the update, which the value copy made
    /// whatever a refresh answers.
    pub(super) fn refresh_derived(&self, gpu: &Gpu) -> Result<()> {
        let refreshed = self.refresh_copies(gpu);
        self.values_updated();
        refreshed
    }

    fn refresh_copies(&self, gpu: &Gpu) -> Result<()> {
        if let Some((t, sources)) = self.built_transpose_sources() {
            let nnz = narrow("the entry count", self.nnz())?;
            // SAFETY: `sources` holds `nnz` indices, each an entry of this matrix (the transpose's
            // construction wrote a permutation of `0 .. nnz`), and `Aᵀ`'s values `nnz` elements, a
            // buffer of its own: all of `gpu`'s context, which owns this matrix (checked by the caller).
            unsafe { gather(gpu, gpu.stream(), t.args().values, self.args().values, sources, nnz)? };
            refresh_ell_copy(t, gpu)?;
        }
        refresh_ell_copy(self, gpu)
    }
}
