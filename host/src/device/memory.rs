//! Device buffers: uploads, zeroed allocations and the raw addresses the kernels' argument structs
//! hold. Every buffer of this crate is allocated here, on the [`Gpu`]'s stream.

use super::Gpu;
use crate::{Error, Result};
use cudarc::driver::{CudaSlice, DevicePtr, DeviceRepr, DriverError, ValidAsZeroBits, sys};
use kernels_gpu::abi::DevicePtr as AbiPtr;

impl Gpu {
    /// Refuses work that must not be captured into a graph while [`Gpu::stream`] captures one: an
    /// allocation or a copy from host memory would be recorded to replay later, reading host memory
    /// the caller may have freed by then.
    pub(crate) fn not_capturing(&self, what: &'static str) -> Result<()> {
        match self.stream().capture_status()? {
            sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE => Ok(()),
            _ => Err(Error::Unsupported(what)),
        }
    }

    /// Copies `data` to a new device buffer. Empty data gets cudarc's empty slice: the driver refuses
    /// allocations of zero bytes.
    pub(crate) fn upload<E: DeviceRepr>(&self, data: &[E]) -> Result<CudaSlice<E>> {
        self.not_capturing("an upload while the stream captures a graph")?;
        if data.is_empty() {
            return Ok(self.stream().null()?);
        }
        self.stream().clone_htod(data).map_err(|e| out_of_memory(e, size_of_val(data)))
    }

    /// A new device buffer of `len` zeros; empty when `len == 0`, as for [`Gpu::upload`].
    pub(crate) fn alloc_zeros<E: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<CudaSlice<E>> {
        self.not_capturing("an allocation while the stream captures a graph")?;
        if len == 0 {
            return Ok(self.stream().null()?);
        }
        self.stream().alloc_zeros(len).map_err(|e| out_of_memory(e, len.saturating_mul(size_of::<E>())))
    }
}

/// The driver's error for an allocation of `bytes`, as [`Error::DeviceMemory`] when the device is
/// out of memory (the one failure a caller can act on), else as it came.
fn out_of_memory(e: DriverError, bytes: usize) -> Error {
    if e.0 == sys::cudaError_enum::CUDA_ERROR_OUT_OF_MEMORY {
        Error::DeviceMemory { bytes }
    } else {
        e.into()
    }
}

/// The address of a buffer of this crate, for a kernel's argument struct. Stable for the buffer's
/// lifetime, so the structs are built once, when the buffer is made.
pub(crate) fn addr<E>(slice: &CudaSlice<E>, gpu: &Gpu) -> AbiPtr<E> {
    // The guard orders other streams after this one when cudarc tracks events; the buffers reached
    // through these addresses are used on `gpu`'s stream only, which orders them by itself.
    let (addr, _guard) = slice.device_ptr(gpu.stream());
    AbiPtr::new(addr)
}
