//! Dense vectors on the device: [`DeviceVector`], and the operand traits through which a product
//! also takes a caller's own cudarc buffers, in place.

use super::Gpu;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{
    CudaContext, CudaSlice, CudaStream, CudaView, CudaViewMut, DevicePtr, DevicePtrMut, DeviceSlice,
    SyncOnDrop,
};
use std::sync::Arc;

/// A dense vector on the device, allocated by a [`Gpu`].
#[derive(Debug)]
pub struct DeviceVector<T> {
    data: CudaSlice<T>,
}

pub(crate) mod sealed {
    use super::*;

    /// The crate-private half of [`VectorRef`](super::VectorRef): the buffer's length, context and
    /// address for a read on a stream.
    pub trait Operand<T> {
        fn len(&self) -> usize;
        fn context(&self) -> &Arc<CudaContext>;
        /// The address for reads enqueued on `stream`. The guard must live until they are enqueued:
        /// with cudarc's event tracking on, its drop records them for other streams to wait on.
        fn read<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
    }

    /// The crate-private half of [`VectorMut`](super::VectorMut).
    pub trait OperandMut<T>: Operand<T> {
        /// As [`Operand::read`], for reads and writes.
        fn write<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>);
    }
}

/// What a product reads as `x`: a [`DeviceVector`], or a caller's `CudaSlice`, `CudaView` or
/// `CudaViewMut` of the [`Gpu`]'s context, used in place (no copy).
///
/// The product is enqueued on [`Gpu::stream`]: a buffer written on another stream must be ordered
/// before it, by the caller (an event, a stream wait) or by cudarc's event tracking where the
/// context has it on. The buffer must live until the product has run: cudarc frees a `CudaSlice` in
/// the order of its own stream, so dropping it right after the call is safe only when that stream
/// is the `Gpu`'s (or tracking orders the two).
pub trait VectorRef<T>: sealed::Operand<T> {}

/// What a product writes as `y`: a [`DeviceVector`], or a caller's `CudaSlice` or `CudaViewMut`, as
/// for [`VectorRef`].
pub trait VectorMut<T>: VectorRef<T> + sealed::OperandMut<T> {}

/// cudarc's buffers, used in place.
macro_rules! cudarc_operand {
    ($($buffer:ty),+; $($buffer_mut:ty),+) => {
        $(
            impl<T> sealed::Operand<T> for $buffer {
                fn len(&self) -> usize {
                    DeviceSlice::len(self)
                }

                fn context(&self) -> &Arc<CudaContext> {
                    self.stream().context()
                }

                fn read<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                    self.device_ptr(stream)
                }
            }

            impl<T> VectorRef<T> for $buffer {}
        )+
        $(
            impl<T> sealed::OperandMut<T> for $buffer_mut {
                fn write<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
                    self.device_ptr_mut(stream)
                }
            }

            impl<T> VectorMut<T> for $buffer_mut {}
        )+
    };
}

cudarc_operand!(CudaSlice<T>, CudaView<'_, T>, CudaViewMut<'_, T>; CudaSlice<T>, CudaViewMut<'_, T>);

impl<T> sealed::Operand<T> for DeviceVector<T> {
    fn len(&self) -> usize {
        self.data.len()
    }

    fn context(&self) -> &Arc<CudaContext> {
        self.data.context()
    }

    fn read<'a>(&'a self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.data.device_ptr(stream)
    }
}

impl<T> sealed::OperandMut<T> for DeviceVector<T> {
    fn write<'a>(&'a mut self, stream: &'a CudaStream) -> (u64, SyncOnDrop<'a>) {
        self.data.device_ptr_mut(stream)
    }
}

impl<T> VectorRef<T> for DeviceVector<T> {}
impl<T> VectorMut<T> for DeviceVector<T> {}

impl<T: Scalar> DeviceVector<T> {
    pub fn len(&self) -> usize {
        self.data.len()
    }

    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The elements on the device, for interoperation.
    pub fn as_slice(&self) -> &CudaSlice<T> {
        &self.data
    }

    /// The elements on the device, for interoperation.
    pub fn as_mut_slice(&mut self) -> &mut CudaSlice<T> {
        &mut self.data
    }

    /// Copies the vector to the host, after all work enqueued before on `gpu`'s stream.
    pub fn to_host(&self, gpu: &Gpu) -> Result<Vec<T>> {
        gpu.check_context("a vector", &self.data)?;
        gpu.not_capturing("reading a vector back while the stream captures a graph")?;
        if self.is_empty() {
            return Ok(Vec::new());
        }
        Ok(gpu.stream().clone_dtoh(&self.data)?)
    }

    /// Overwrites the vector with `values` (of the same length), in stream order.
    pub fn copy_from_host(&mut self, gpu: &Gpu, values: &[T]) -> Result<()> {
        gpu.check_context("a vector", &self.data)?;
        gpu.not_capturing("a copy from the host while the stream captures a graph")?;
        if values.len() != self.len() {
            return Err(Error::DimensionMismatch {
                what: "host values",
                expected: self.len(),
                got: values.len(),
            });
        }
        if !values.is_empty() {
            gpu.stream().memcpy_htod(values, &mut self.data)?;
        }
        Ok(())
    }
}

impl Gpu {
    /// The one check of a caller's buffer that a launch reads or writes, named `what` in the
    /// error: of this `Gpu`'s context ([`Error::ForeignBuffer`]). Every enqueue that takes a buffer
    /// calls it or [`Gpu::check_operand`], before anything is launched.
    pub(crate) fn check_context<E>(
        &self,
        what: &'static str,
        buffer: &(impl sealed::Operand<E> + ?Sized),
    ) -> Result<()> {
        if self.owns(buffer.context()) { Ok(()) } else { Err(Error::ForeignBuffer(what)) }
    }

    /// [`Gpu::check_context`], then `expected` elements ([`Error::DimensionMismatch`]).
    pub(crate) fn check_operand<E>(
        &self,
        what: &'static str,
        buffer: &(impl sealed::Operand<E> + ?Sized),
        expected: usize,
    ) -> Result<()> {
        self.check_context(what, buffer)?;
        let got = buffer.len();
        if got != expected {
            return Err(Error::DimensionMismatch { what, expected, got });
        }
        Ok(())
    }

    /// Uploads a dense vector.
    pub fn upload_vector<T: Scalar>(&self, values: &[T]) -> Result<DeviceVector<T>> {
        narrow("the vector length", values.len())?;
        Ok(DeviceVector { data: self.upload(values)? })
    }

    /// A device vector of `len` zeros.
    pub fn zeros<T: Scalar>(&self, len: usize) -> Result<DeviceVector<T>> {
        narrow("the vector length", len)?;
        Ok(DeviceVector { data: self.alloc_zeros(len)? })
    }
}
