//! Device buffers: uploads, zeroed allocations and the raw addresses the kernels' argument structs
//! hold. Every buffer of this crate is allocated here, on the [`Gpu`]'s stream.

use super::Gpu;
use crate::formats::{STAGE_BYTES, STAGES, stage_chunks};
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
    /// is `chunk[i]`) a chunk at a time ([`stage_chunks`]), for arrays made on the fly (narrowed,
    /// checked): each chunk is filled in one of the pinned staging buffers ([`Staging`], kept with
    /// the `Gpu`) while the copies of the chunks before it run, so that the host's work and the
    /// link's overlap; the pace is the slower of the two (docs/PERF.md, section 20). `fill` writes
    /// every element of its chunk; an error from it ends the upload with that error.
    ///
    /// Returns once the copies are enqueued, not done: they complete in the stream's order, before
    /// any later work on it, and a stage is refilled only once its last copy has completed, so the
    /// next array (of this upload or the next) is filled while this one's last chunks are on the
    /// link. Until the stages are pinned (by the first array of more than one chunk), an array of
    /// one chunk or less is filled once and copied as [`Gpu::upload`] copies: small matrices pin
    /// nothing; once they are, every array goes through them.
    pub(crate) fn upload_staged<E: Plain>(
        &self,
        len: usize,
        fill: impl Fn(usize, &mut [E]) -> Result<()>,
    ) -> Result<CudaSlice<E>> {
        self.not_capturing("an upload while the stream captures a graph")?;
        // Held until every copy of this array is enqueued: one staged upload at a time.
        let mut held = self.staging.lock().unwrap_or_else(PoisonError::into_inner);
        if len == 0 || (held.is_none() && len.saturating_mul(size_of::<E>()) <= STAGE_BYTES) {
            drop(held);
            let mut host = vec![E::default(); len];
            fill(0, &mut host)?;
            return self.upload(&host);
        }
        let bytes = len.saturating_mul(size_of::<E>());
        // SAFETY: every element is written by the chunks' copies below before the buffer is used.
        let device = unsafe { self.stream().alloc::<E>(len) }.map_err(|e| out_of_memory(e, bytes))?;
        let staging = match &mut *held {
            Some(staging) => staging,
            empty => empty.insert(Stages::pin(self)?),
        };
        let (base, guard) = device.device_ptr(self.stream());
        for range in stage_chunks::<E>(len) {
            let stage = staging.next_free()?;
            // SAFETY: a stage holds `STAGE_BYTES` of initialised bytes (zeroed when pinned, then
            // written by earlier chunks), page-aligned, so the chunk's `range.len()` elements of
            // `E` (at most `STAGE_BYTES` bytes, `stage_chunks`), a number type every bit pattern of
            // which is a value (`Plain`); no copy reads it (`next_free` waited for its last one), and
            // the guard `held` keeps other uploads out.
            let host = unsafe {
                std::slice::from_raw_parts_mut(stage.buffer.as_mut_ptr()?.cast::<E>(), range.len())
            };
            fill(range.start, host)?;
            let target = base + (range.start * size_of::<E>()) as u64;
            // SAFETY: `device` holds `len` elements, so `range` of it; `host` is pinned memory that
            // is neither written nor freed before the event recorded next has completed (waited on
            // before the stage is filled again, and before it drops), or, where it cannot be
            // recorded, before this returns.
            unsafe { result::memcpy_htod_async(target, host, self.stream().cu_stream()) }?;
            if let Err(e) = stage.copied.record(self.stream()) {
                self.stream().synchronize()?;
                return Err(e.into());
            }
            stage.pending = true;
        }
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

/// [`Gpu::upload_staged`]'s pinned staging buffers ([`STAGES`] of [`STAGE_BYTES`]), made by the
/// first upload of more than one chunk and kept with the [`Gpu`]: pinning host memory costs about
/// as much as copying it through, and uploads that pinned their own ran at 3-4 GB/s of a 55 GB/s
/// link; ordinary (cached) page-locked memory, measured as fast as the write-combined kind or
/// 5-20% faster (docs/PERF.md, section 20).
pub(crate) type Staging = Mutex<Option<Stages>>;

/// The staging buffers, each with the event of its last copy, and the one to fill next: they are
/// filled in turn, so the next is the one whose copy was enqueued first.
#[derive(Debug)]
pub(crate) struct Stages {
    stages: [Stage; STAGES],
    next: usize,
}

/// One pinned staging buffer and the event recorded after its last copy (`pending` while that
/// copy may still read it).
#[derive(Debug)]
struct Stage {
    buffer: PinnedHostSlice<u8>,
    copied: CudaEvent,
    pending: bool,
}

impl Stages {
    /// [`STAGES`] buffers of [`STAGE_BYTES`], zeroed, so that their bytes are initialised before
    /// any chunk is viewed in them.
    fn pin(gpu: &Gpu) -> Result<Self> {
        let stage = || -> Result<Stage> {
            // SAFETY: uninitialised bytes, every one of them written (zeroed) below before any is
            // read. Ordinary (cached) page-locked memory, not the write-combined kind `alloc_pinned`
            // makes: see `Staging`.
            let mut buffer = unsafe { gpu.context().alloc_pinned_with_flags::<u8>(STAGE_BYTES, 0) }?;
            // SAFETY: the `STAGE_BYTES` bytes of the allocation just made, which nothing else uses yet.
            unsafe { std::ptr::write_bytes(buffer.as_mut_ptr()?, 0, STAGE_BYTES) };
            Ok(Stage { buffer, copied: gpu.context().new_event(None)?, pending: false })
        };
        let stages: [Stage; STAGES] = [stage()?, stage()?];
        Ok(Self { stages, next: 0 })
    }

    /// The next stage in turn, once its last copy has completed.
    fn next_free(&mut self) -> Result<&mut Stage> {
        let stage = &mut self.stages[self.next];
        self.next = (self.next + 1) % STAGES;
        if stage.pending {
            stage.copied.synchronize()?;
            stage.pending = false;
        }
        Ok(stage)
    }
}

impl Drop for Stage {
    /// The buffer is freed (as the fields drop, after this) only once no copy reads it.
    fn drop(&mut self) {
        if self.pending {
            // A failure here has nowhere to go; the context records it for its next call.
            let _ = self.copied.synchronize();
        }
    }
}

/// The element types [`Gpu::upload_staged`] views in a stage's bytes: numbers, every bit pattern
/// of which is a value. Sealed by its visibility.
pub(crate) trait Plain: DeviceRepr + ValidAsZeroBits + Default + Copy + Send + Sync {}
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
