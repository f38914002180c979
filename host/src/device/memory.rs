//! Device buffers: uploads, zeroed allocations and the raw addresses the kernels' argument structs
//! hold. Every buffer of this crate is allocated here, on the [`Gpu`]'s stream.

use super::Gpu;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{
    CudaEvent, CudaSlice, DevicePtr, DeviceRepr, DriverError, PinnedHostSlice, ValidAsZeroBits, result, sys,
};
use kernels_gpu::abi::DevicePtr as AbiPtr;
use std::sync::{Mutex, PoisonError};

impl Gpu {
    /// Refuses work that must not be captured into a graph while [`Gpu::stream`] captures one: an
    /// allocation or a copy from host memory would be recorded to replay later, reading host memory
    /// the caller may have freed by then.
    pub(crate) fn not_capturing(&self, what: &'static str) -> Result<()> {
        if self.capturing()? { Err(Error::Unsupported(what)) } else { Ok(()) }
    }

    /// Whether [`Gpu::stream`] is capturing a graph (or its capture was invalidated and not yet
    /// ended), by any thread.
    pub(crate) fn capturing(&self) -> Result<bool> {
        let status = self.stream().capture_status()?;
        Ok(status != sys::CUstreamCaptureStatus::CU_STREAM_CAPTURE_STATUS_NONE)
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

    /// A new device buffer of `len` elements written by `fill(first, chunk)` (element `first + i`
    /// is `chunk[i]`) a chunk at a time, for arrays made on the fly (narrowed, checked): each chunk
    /// is filled in one of two pinned staging buffers ([`Staging`], kept with the `Gpu`) while the
    /// other's copy runs, so that the host's work and the link's overlap; the pace is the slower of
    /// the two (docs/PERF.md, section 20). `fill` writes every element of its chunk. Arrays of one
    /// chunk or less are filled once and copied as [`Gpu::upload`] copies (no pinned memory for
    /// small matrices). Returns once the copies are done.
    pub(crate) fn upload_staged<E: Plain>(
        &self,
        len: usize,
        fill: impl Fn(usize, &mut [E]) -> Result<()>,
    ) -> Result<CudaSlice<E>> {
        let chunk = (STAGE_BYTES / size_of::<E>().max(1)).max(1);
        if len <= chunk {
            let mut host = vec![E::default(); len];
            fill(0, &mut host)?;
            return self.upload(&host);
        }
        self.not_capturing("an upload while the stream captures a graph")?;
        let bytes = len.saturating_mul(size_of::<E>());
        // SAFETY: every element is written by the chunks' copies below before the buffer is used.
        let device = unsafe { self.stream().alloc::<E>(len) }.map_err(|e| out_of_memory(e, bytes))?;
        // Held until every copy from the stages has completed (below): one staged upload at a time.
        let mut held = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
        let stages = match &mut *held {
            Some(stages) => stages,
            empty => empty.insert([pin_stage(self)?, pin_stage(self)?]),
        };
        let mut copied: [Option<CudaEvent>; 2] = [None, None];
        let (base, guard) = device.device_ptr(self.stream());
        let staged = (|| -> Result<()> {
            for (i, first) in (0..len).step_by(chunk).enumerate() {
                let n = chunk.min(len - first);
                if let Some(event) = copied[i % 2].take() {
                    event.synchronize()?;
                }
                // SAFETY: a stage holds `STAGE_BYTES` of initialised bytes (zeroed when pinned, then
                // written by earlier chunks), page-aligned, so `n <= chunk` elements of `E`, a
                // number type every bit pattern of which is a value (`Plain`); no copy reads it (the
                // event of its last one was waited on above), and the guard `held` keeps other
                // uploads out.
                let host =
                    unsafe { std::slice::from_raw_parts_mut(stages[i % 2].as_mut_ptr()?.cast::<E>(), n) };
                fill(first, host)?;
                let target = base + (first * size_of::<E>()) as u64;
                // SAFETY: `device` holds `len` elements, so `first .. first + n` of it; `host` is
                // pinned memory that is neither written nor freed before the event recorded next
                // has completed (waited on before the stage is filled again and before it drops).
                unsafe { result::memcpy_htod_async(target, host, self.stream().cu_stream()) }?;
                copied[i % 2] = Some(self.stream().record_event(None)?);
            }
            Ok(())
        })();
        // Every copy waited for before the lock is released, whatever failed: a later upload may
        // fill the stages at once.
        let waited: Vec<_> = copied.iter().flatten().map(CudaEvent::synchronize).collect();
        staged?;
        waited.into_iter().collect::<std::result::Result<(), _>>()?;
        drop(guard);
        Ok(device)
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

/// The buffer of `i32` indices as the `u32`s they are, without a copy: for cuSPARSE-style arrays
/// once a check has found none of them negative (the same bits then). Freed as it would have been,
/// on the stream it was allocated on.
pub(crate) fn nonnegative_as_u32(indices: CudaSlice<i32>) -> CudaSlice<u32> {
    let stream = indices.stream().clone();
    let len = indices.len();
    let raw = indices.leak();
    // SAFETY: `raw` is the allocation of `len` `i32`s that `indices` owned, released by `leak` to
    // the slice made here, which owns it alone from now on and frees it on the same stream;
    // `u32` has the size and alignment of `i32`, and every bit pattern is a valid `u32`.
    unsafe { stream.upgrade_device_ptr(raw, len) }
}

/// Bytes of each of [`Gpu::upload_staged`]'s two pinned staging buffers: large enough that a
/// chunk's copy (~0.3 ms at 50 GB/s) dwarfs its launch, small enough to keep with the [`Gpu`].
const STAGE_BYTES: usize = 16 << 20;

/// [`Gpu::upload_staged`]'s two pinned staging buffers, made by the first upload of more than one
/// chunk and kept with the [`Gpu`]: pinning host memory costs about as much as copying it through,
/// and uploads that pinned their own ran at 3-4 GB/s of a 55 GB/s link; ordinary (cached)
/// page-locked memory, measured as fast as the write-combined kind or 5-20% faster (docs/PERF.md,
/// section 20).
pub(crate) type Staging = Mutex<Option<[PinnedHostSlice<u8>; 2]>>;

/// One staging buffer of [`STAGE_BYTES`], zeroed, so that its bytes are initialised before any
/// chunk is viewed in them.
fn pin_stage(gpu: &Gpu) -> Result<PinnedHostSlice<u8>> {
    // SAFETY: uninitialised bytes, every one of them written (zeroed) below before any is read.
    // Ordinary (cached) page-locked memory, not the write-combined kind `alloc_pinned` makes: see
    // `Staging`.
    let mut stage = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(STAGE_BYTES, 0) }?;
    // SAFETY: the `STAGE_BYTES` bytes of the allocation just made, which nothing else uses yet.
    unsafe { std::ptr::write_bytes(stage.as_mut_ptr()?, 0, STAGE_BYTES) };
    Ok(stage)
}

/// The element types [`Gpu::upload_staged`] views in a stage's bytes: numbers, every bit pattern
/// of which is a value. Sealed by its visibility.
pub(crate) trait Plain: DeviceRepr + ValidAsZeroBits + Default + Clone {}
impl Plain for u32 {}
impl<T: Scalar> Plain for T {}

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
