//! Device buffers: uploads, zeroed allocations and the raw addresses the kernels' argument structs
//! hold. Every buffer of this crate is allocated here, on the [`Gpu`]'s stream.

use super::Gpu;
use crate::formats::{STAGE_BYTES, STAGES, stage_chunks};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::{
    CudaEvent, CudaSlice, DevicePtr, DevicePtrMut, DeviceRepr, DriverError, PinnedHostSlice, ValidAsZeroBits,
    result, sys,
};
use kernels_gpu::abi::DevicePtr as AbiPtr;
use std::sync::{Mutex, MutexGuard, TryLockError};

impl Gpu {
    /// Refuses work that must not be captured into a graph while [`Gpu::stream`] captures one: an
    /// allocation or a copy from host memory would be recorded to replay later, reading host memory
    /// the caller may have freed by then.
    ///
    /// A check, then the act, and CUDA offers no way to make the two one step: a capture that
    /// another thread begins on the same stream (one shared through [`Gpu::from_stream`]) after
    /// this check would take in the copies enqueued after it, which then never run, and replay them
    /// later from host memory that holds other data by then. Beginning a capture on a stream that
    /// another thread uploads through is the caller's to rule out.
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
    /// allocations of zero bytes. The copy completes in the stream's order (the driver has read
    /// `data` when this returns).
    pub(crate) fn upload<E: DeviceRepr>(&self, data: &[E]) -> Result<CudaSlice<E>> {
        self.not_capturing("an upload while the stream captures a graph")?;
        if data.is_empty() {
            return Ok(self.stream().null()?);
        }
        self.stream().clone_htod(data).map_err(|e| out_of_memory(e, size_of_val(data)))
    }

    /// Refuses page-locked memory of another `Gpu`'s context, by identity as [`Gpu::check_context`]
    /// refuses device buffers ([`Error::ForeignBuffer`], naming it as `what`): memory pinned without
    /// `CU_MEMHOSTALLOC_PORTABLE` is page-locked for the context that allocated it only, and another
    /// context would copy it as pageable memory, through the driver's own staging.
    pub(crate) fn check_pinned<E>(&self, what: &'static str, data: &PinnedHostSlice<E>) -> Result<()> {
        if self.owns(data.context()) { Ok(()) } else { Err(Error::ForeignBuffer(what)) }
    }

    /// Zeroed page-locked host memory of `len` elements, of this `Gpu`'s context: the arrays
    /// [`Gpu::upload_csr_pinned`] copies at the link's rate, with no pass of the host's over them.
    /// Build or read a matrix straight into it (`as_mut_slice`), then upload it. Ordinary (cached)
    /// page-locked memory, which the host's cores read at their usual speed (upload_csr_pinned reads
    /// the row offsets on the host), not cudarc's write-combined `alloc_pinned`. Page-locked memory
    /// is the host's to give: a large request may fail where pageable memory would not, with the
    /// driver's error.
    ///
    /// Refused before anything is allocated: no elements ([`Error::Unsupported`]: cudarc makes no
    /// page-locked slice of zero elements; a matrix with no entries takes
    /// [`Gpu::upload_csr_u32`]), more than the kernels' 32-bit indices address ([`Error::TooLarge`]:
    /// more than `upload_csr_pinned` takes).
    pub fn pinned_zeroed<E: DeviceRepr + ValidAsZeroBits>(&self, len: usize) -> Result<PinnedHostSlice<E>> {
        if len == 0 {
            return Err(Error::Unsupported("a page-locked buffer of no elements"));
        }
        let limit = u32::MAX as usize;
        if len > limit {
            return Err(Error::TooLarge { what: "the elements of a page-locked buffer", value: len, limit });
        }
        // SAFETY: flag 0 asks for ordinary page-locked memory; every byte is zeroed below before the
        // slice is returned, and `E: ValidAsZeroBits` makes zero bytes a valid element. The size,
        // at most `u32::MAX` elements of a device type, is far inside cudarc's `isize` assertion.
        let mut pinned = unsafe { self.context().alloc_pinned_with_flags::<E>(len, 0) }?;
        let start = pinned.as_mut_ptr()?;
        // SAFETY: `start` heads the `len` elements just allocated, which nothing else references.
        unsafe { std::ptr::write_bytes(start, 0, len) };
        Ok(pinned)
    }

    /// Copies `data`, page-locked host memory of this `Gpu`'s context ([`Gpu::check_pinned`]), to a
    /// new device buffer by the copy engine straight from it: no pass over it on the host, no
    /// staging. Returns once the copy is enqueued, while the copy engine may still read `data`: the
    /// caller waits for the stream before `data` may be written or freed (with event tracking off,
    /// as on [`Gpu::new`]'s context, cudarc records no event on `data` that would order it). cudarc
    /// makes no page-locked slice of zero elements, so `data` is never empty.
    pub(crate) fn upload_pinned<E: DeviceRepr>(
        &self,
        what: &'static str,
        data: &PinnedHostSlice<E>,
    ) -> Result<CudaSlice<E>> {
        self.check_pinned(what, data)?;
        self.not_capturing("an upload while the stream captures a graph")?;
        self.stream().clone_htod(data).map_err(|e| out_of_memory(e, data.num_bytes()))
    }

    /// A new device buffer of `len` elements for [`Gpu::upload_staged`] to write, allocated
    /// apart from the copies so that a caller can allocate one array's buffer while it stages
    /// another's: an allocation from a pool the driver has trimmed maps fresh memory, a host call
    /// that costs milliseconds for the arrays of a large matrix (docs/PERF.md, section 20).
    pub(crate) fn alloc_unfilled<E: Plain>(&self, len: usize) -> Result<Unfilled<E>> {
        self.not_capturing("an allocation while the stream captures a graph")?;
        if len == 0 {
            return Ok(Unfilled(self.stream().null()?));
        }
        let bytes = byte_len::<E>(len)?;
        // SAFETY: the buffer is only reachable through `Unfilled`, which nothing reads, and which
        // `upload_staged` turns into a buffer once it has enqueued a write of every element.
        let device = unsafe { self.stream().alloc::<E>(len) }.map_err(|e| out_of_memory(e, bytes))?;
        Ok(Unfilled(device))
    }

    /// `buffer` written by `fill(first, chunk)` (element `first + i` is `chunk[i]`) a chunk at a
    /// time ([`stage_chunks`]), for arrays made on the fly (narrowed, checked): each chunk is filled
    /// in one of the pinned staging buffers ([`Staging`], kept with the `Gpu`) while the copies of
    /// the chunks before it run, so that the host's work and the link's overlap; the pace is the
    /// slower of the two (docs/PERF.md, section 20). `fill` writes every element of its chunk; an
    /// error from it ends the upload with that error.
    ///
    /// Returns once the copies are enqueued, not done: the buffer is ready in the stream's order
    /// (work enqueued on [`Gpu::stream`] after this runs after the copies; work on another stream
    /// must wait for this one first), and `fill`'s sources are no longer read. A stage is refilled
    /// only once its last copy has completed, so the next array (of this upload or the next) is
    /// filled while this one's last chunks are on the link. Until the stages are pinned (by the
    /// first array of more than one chunk), an array of one chunk or less is filled once and copied
    /// as [`Gpu::upload`] copies: small matrices pin nothing; once they are, every array goes
    /// through them.
    ///
    /// The stages are one staged upload's at a time, and an upload that finds them taken (by
    /// another thread, or by the one running this, when a rayon task of the caller's is taken up by
    /// this thread while `fill`'s pass waits for its pieces) goes the unstaged way instead: to
    /// wait for them would deadlock in the second case.
    pub(crate) fn upload_staged<E: Plain>(
        &self,
        buffer: Unfilled<E>,
        fill: impl Fn(usize, &mut [E]) -> Result<()>,
    ) -> Result<CudaSlice<E>> {
        self.not_capturing("an upload while the stream captures a graph")?;
        let Unfilled(mut device) = buffer;
        let len = device.len();
        if len == 0 {
            return Ok(device);
        }
        let Some(mut held) = take(&self.staging) else { return self.fill_unstaged(device, fill) };
        if held.is_none() && len.saturating_mul(size_of::<E>()) <= STAGE_BYTES {
            drop(held);
            return self.fill_unstaged(device, fill);
        }
        let staging = match &mut *held {
            Some(staging) => staging,
            empty => empty.insert(Stages::pin(self)?),
        };
        // The copies below are the driver's own calls: the buffer may have been allocated on
        // another thread, which made the context current there, not here.
        self.context().bind_to_thread()?;
        // The write's guard: with cudarc's event tracking on (a caller's context), it records the
        // buffer's write event after the last copy, so that cudarc orders a read of it on another
        // stream after the copies.
        let (base, guard) = device.device_ptr_mut(self.stream());
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
            let offset = u64::try_from(byte_len::<E>(range.start)?).map_err(|_| too_large(range.start))?;
            let target = base.checked_add(offset).ok_or(too_large(range.start))?;
            // SAFETY: `device` holds `len` elements, so `range` of it; `host` is pinned memory that
            // is neither written nor freed before the event recorded next has completed (waited on
            // before the stage is filled again, and before it drops), or, where it cannot be
            // recorded, before the stream has been synchronised (`unrecorded`).
            unsafe { result::memcpy_htod_async(target, host, self.stream().cu_stream()) }?;
            if let Err(e) = stage.copied.record(self.stream()) {
                return Err(self.unrecorded(&mut held, e));
            }
            stage.pending = true;
        }
        drop(guard);
        Ok(device)
    }

    /// `device` written by `fill` in one piece of pageable host memory, copied as [`Gpu::upload`]
    /// copies: the way of small arrays before any stage is pinned, and of uploads that find the
    /// stages taken.
    fn fill_unstaged<E: Plain>(
        &self,
        mut device: CudaSlice<E>,
        fill: impl Fn(usize, &mut [E]) -> Result<()>,
    ) -> Result<CudaSlice<E>> {
        let mut host = vec![E::default(); device.len()];
        fill(0, &mut host)?;
        self.stream().memcpy_htod(&host, &mut device)?;
        Ok(device)
    }

    /// The error of a copy from a stage whose event could not be recorded: the stage's event
    /// still holds an earlier copy, so waiting on it would not cover this one. The stream is
    /// waited on instead, after which the stage is free (`next_free` cleared its `pending`); where
    /// that fails too, a copy may still read any stage, and nothing can tell when it is done: the
    /// stages are leaked rather than refilled or freed under it, and the next staged upload pins
    /// new ones.
    fn unrecorded(&self, held: &mut Option<Stages>, e: DriverError) -> Error {
        if self.stream().synchronize().is_err() {
            std::mem::forget(held.take());
        }
        e.into()
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

/// A device buffer made by [`Gpu::alloc_unfilled`], none of whose elements is written yet: only
/// [`Gpu::upload_staged`] takes it, and hands back the buffer once every element's write is
/// enqueued. Dropped unfilled, it is freed as any buffer.
#[derive(Debug)]
pub(crate) struct Unfilled<E>(CudaSlice<E>);

/// [`Gpu::upload_staged`]'s pinned staging buffers ([`STAGES`] of [`STAGE_BYTES`]), made by the
/// first upload of more than one chunk and kept with the [`Gpu`]: pinning host memory costs about
/// as much as copying it through, and uploads that pinned their own ran at 3-4 GB/s of a 55 GB/s
/// link; ordinary (cached) page-locked memory, measured as fast as the write-combined kind or
/// 5-20% faster (docs/PERF.md, section 20).
pub(crate) type Staging = Mutex<Option<Stages>>;

/// The stages, or `None` where they are taken: never waits, so that a thread that holds them
/// (`held` in [`Gpu::upload_staged`]) and takes up, while its pass waits for rayon's pieces, a task
/// that uploads on the same `Gpu`, finds them taken instead of waiting for itself. A panic while
/// they were held leaves them as a finished or refused upload does (each stage's `pending` is set
/// only once its event is recorded), so poisoning is ignored.
fn take(staging: &Staging) -> Option<MutexGuard<'_, Option<Stages>>> {
    match staging.try_lock() {
        Ok(held) => Some(held),
        Err(TryLockError::Poisoned(poisoned)) => Some(poisoned.into_inner()),
        Err(TryLockError::WouldBlock) => None,
    }
}

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
            // Ordinary (cached) page-locked memory, not the write-combined kind cudarc's
            // `alloc_pinned` makes: see `Staging`.
            let buffer = gpu.pinned_zeroed::<u8>(STAGE_BYTES)?;
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

/// Bytes of `len` elements of `E`, refused past `usize`.
fn byte_len<E>(len: usize) -> Result<usize> {
    len.checked_mul(size_of::<E>()).ok_or(too_large(len))
}

/// The error of a buffer of `len` elements whose bytes or addresses do not fit their type.
fn too_large(len: usize) -> Error {
    Error::TooLarge { what: "the elements of a device buffer", value: len, limit: usize::MAX }
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

#[cfg(test)]
mod tests {
    use super::*;
    use rayon::prelude::*;
    use std::sync::mpsc;
    use std::time::Duration;

    /// Many uploads' tasks on one `Gpu`'s stages from a rayon pool of two threads, each holding
    /// them across a parallel pass as an upload does: a thread that waits for them while they are
    /// its own, lower on its stack, never returns; `take` must let every task finish (the ones that
    /// find the stages taken go the unstaged way). Without a GPU: no stage is pinned, the lock is
    /// what is tested.
    #[test]
    fn nested_uploads_on_one_thread_do_not_wait_for_their_own_stages() {
        let (done, finished) = mpsc::channel();
        std::thread::spawn(move || {
            let staging = Staging::default();
            let pool = rayon::ThreadPoolBuilder::new().num_threads(2).build().unwrap();
            let (staged, unstaged) = pool.install(|| {
                (0..64)
                    .into_par_iter()
                    .map(|_| match take(&staging) {
                        Some(held) => {
                            let sum: u64 = (0..1u64 << 14).into_par_iter().sum();
                            drop(held);
                            (sum, 0)
                        }
                        None => (0, 1),
                    })
                    .reduce(|| (0, 0), |a, b| (a.0 + b.0, a.1 + b.1))
            });
            done.send((staged, unstaged)).unwrap();
        });
        let (staged, unstaged) =
            finished.recv_timeout(Duration::from_secs(60)).expect("the uploads deadlocked");
        let each = (1u64 << 14) * ((1u64 << 14) - 1) / 2;
        assert_eq!(staged % each, 0);
        assert_eq!(staged / each + unstaged, 64, "every task ran, staged or not");
    }
}
