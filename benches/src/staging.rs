//! The ceilings of an upload from `u32` raw parts (`Gpu::upload_csr_u32`), measured on the same
//! bytes as the upload: what the host alone and the link alone reach through pinned staging buffers
//! of the library's size, in its chunks (`gpu_spmv::formats::{STAGE_BYTES, STAGES, stage_chunks}`).
//! The upload overlaps its host pass with the link, so its time is at best the slower of the two
//! (docs/PERF.md, section 20); these say which one it is, and how far the upload is from it.

pub mod trials;

use anyhow::Result;
use cudarc::driver::{CudaEvent, CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits};
use gpu_spmv::formats::{
    STAGE_BYTES, STAGES, copy_checked, first_decrease, offsets_copy, offsets_stats, stage_chunks,
};
use gpu_spmv::{Gpu, Scalar};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// Each ceiling is the best of this many passes: the first may still fault the source's pages into
/// the caches' reach, and one pass of a large matrix is a few milliseconds.
const PASSES: usize = 3;

/// Milliseconds of the three arrays of an upload from `u32` (offsets, columns, values), chunk by
/// chunk through pinned stages as the library cuts them, each part alone.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct StageCeilings {
    /// (a) The bytes copied into the stages by all cores with the C library's `memcpy`, nothing
    /// checked, no link: the host's copy ceiling.
    pub memcpy_ms: f64,
    /// (b) The library's own pass over each chunk (`gpu_spmv::formats::copy_checked`: the columns
    /// checked below the column count as they are copied, the offsets and values copied), no link:
    /// the host's share of the upload. The offsets' own work before it (their check, statistics and
    /// host copy) is not in it.
    pub pass_ms: f64,
    /// (c) The chunks copied from the stages to the device back to back, nothing written into the
    /// stages between them: the link's rate in the library's chunks.
    pub link_ms: f64,
}

/// Measures [`StageCeilings`] on the arrays of an upload from `u32`, valid by construction.
pub fn stage_ceilings<T: Scalar>(
    gpu: &Gpu,
    ncols: usize,
    offsets: &[u32],
    cols: &[u32],
    values: &[T],
) -> Result<StageCeilings> {
    let ncols = u32::try_from(ncols)?;
    let (mut index_stages, mut value_stages) = (Stages::<u32>::pin(gpu)?, Stages::<T>::pin(gpu)?);
    let memcpy_ms = best(|| {
        index_stages.fill(offsets, memcpy)?;
        index_stages.fill(cols, memcpy)?;
        value_stages.fill(values, memcpy)?;
        Ok(())
    })?;
    let pass_ms = best(|| {
        index_stages.fill(offsets, |s, d| copy_checked(s, d, |_| false))?;
        let bad = index_stages.fill(cols, |s, d| copy_checked(s, d, |c| c >= ncols))?;
        anyhow::ensure!(bad.is_none(), "the bench's own column indices failed the check");
        value_stages.fill(values, |s, d| copy_checked(s, d, |_| false))?;
        Ok(())
    })?;
    let stream = gpu.stream();
    let mut device = (stream.alloc_zeros::<u32>(offsets.len())?, stream.alloc_zeros::<u32>(cols.len())?);
    let mut device_values = stream.alloc_zeros::<T>(values.len())?;
    gpu.synchronize()?;
    let link_ms = best(|| {
        index_stages.send(gpu, &mut device.0)?;
        index_stages.send(gpu, &mut device.1)?;
        value_stages.send(gpu, &mut device_values)?;
        Ok(gpu.synchronize()?)
    })?;
    Ok(StageCeilings { memcpy_ms, pass_ms, link_ms })
}

/// The steps of an upload from `u32` (`Gpu::upload_csr_u32`), each alone on the same arrays, best of
/// a few passes, in milliseconds: what its time goes to beyond the overlapped pass and link of
/// [`StageCeilings`]. The steps on the host are the library's own functions; the staged copies are
/// a replica of its pipeline (`Gpu::upload_staged` is the crate's own), with its chunks, pass and
/// waits, into buffers allocated beforehand.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct UploadSteps {
    /// The offsets checked non-decreasing by all cores (`formats::first_decrease`).
    pub check_ms: f64,
    /// The rows' statistics (`formats::offsets_stats`).
    pub stats_ms: f64,
    /// The matrix's host copy of the offsets into a fresh allocation (`formats::offsets_copy`):
    /// its pages faulted in on first touch.
    pub host_copy_ms: f64,
    /// The three device buffers allocated as the library allocates them (the stream's
    /// `cuMemAllocAsync` from the default pool, which the synchronisation after the last free
    /// trimmed), timed to the allocations' return on the host and then to the stream's completion.
    pub alloc_ms: f64,
    /// The three buffers freed, to the stream's completion (the pool trimmed).
    pub free_ms: f64,
    /// Each array alone through the staged pipeline (pass into a stage, copy enqueued, event
    /// recorded, a stage refilled once its last copy completed), to completion: offsets, columns
    /// (checked as copied), values.
    pub staged_ms: [f64; 3],
    /// The three arrays back to back through the same pipeline, to completion: the upload without
    /// its allocations and its host work on the offsets.
    pub staged_all_ms: f64,
    /// Pinning this replica's four stages (two buffers of `STAGE_BYTES` for the indices, two for
    /// the values), writing them once and freeing them: about twice what the first staged upload of
    /// a `Gpu` pays for the library's `STAGES` byte buffers, which all element types share; absent
    /// from runs before it was measured.
    #[serde(default)]
    pub pin_ms: Option<f64>,
}

/// Measures [`UploadSteps`] on the arrays of an upload from `u32`, valid by construction.
pub fn upload_steps<T: Scalar>(
    gpu: &Gpu,
    ncols: usize,
    offsets: &[u32],
    cols: &[u32],
    values: &[T],
) -> Result<UploadSteps> {
    let bound = u32::try_from(ncols)?;
    let check_ms = best(|| {
        anyhow::ensure!(first_decrease(offsets).is_none(), "the bench's own offsets decrease");
        Ok(())
    })?;
    let stats_ms = best(|| {
        std::hint::black_box(offsets_stats(offsets, ncols));
        Ok(())
    })?;
    // Kept until all passes are done, so that no pass times the freeing of the one before.
    let mut copies = Vec::new();
    let host_copy_ms = best(|| {
        copies.push(offsets_copy(offsets));
        Ok(())
    })?;
    drop(copies);
    let stream = gpu.stream();
    let (mut alloc_ms, mut free_ms) = (f64::INFINITY, f64::INFINITY);
    for _ in 0..PASSES {
        gpu.synchronize()?;
        let start = Instant::now();
        // SAFETY: never read: freed below without a use.
        let buffers = unsafe {
            (
                stream.alloc::<u32>(offsets.len())?,
                stream.alloc::<u32>(cols.len())?,
                stream.alloc::<T>(values.len())?,
            )
        };
        gpu.synchronize()?;
        alloc_ms = alloc_ms.min(start.elapsed().as_secs_f64() * 1e3);
        let start = Instant::now();
        drop(buffers);
        gpu.synchronize()?;
        free_ms = free_ms.min(start.elapsed().as_secs_f64() * 1e3);
    }
    let pin_ms = Some(best(|| {
        drop((Stages::<u32>::pin(gpu)?, Stages::<T>::pin(gpu)?));
        Ok(())
    })?);
    let (mut index_stages, mut value_stages) = (Stages::<u32>::pin(gpu)?, Stages::<T>::pin(gpu)?);
    let mut device = (stream.alloc_zeros::<u32>(offsets.len())?, stream.alloc_zeros::<u32>(cols.len())?);
    let mut device_values = stream.alloc_zeros::<T>(values.len())?;
    let copy = |s: &[u32], d: &mut [u32]| copy_checked(s, d, |_| false);
    let checked = |s: &[u32], d: &mut [u32]| copy_checked(s, d, |c| c >= bound);
    let copy_values = |s: &[T], d: &mut [T]| copy_checked(s, d, |_| false);
    let timed = |stage: &mut dyn FnMut() -> Result<()>| {
        best(|| {
            gpu.synchronize()?;
            stage()?;
            Ok(gpu.synchronize()?)
        })
    };
    let staged_ms = [
        timed(&mut || index_stages.pipeline(gpu, offsets, &mut device.0, copy))?,
        timed(&mut || index_stages.pipeline(gpu, cols, &mut device.1, checked))?,
        timed(&mut || value_stages.pipeline(gpu, values, &mut device_values, copy_values))?,
    ];
    let staged_all_ms = timed(&mut || {
        index_stages.pipeline(gpu, offsets, &mut device.0, copy)?;
        index_stages.pipeline(gpu, cols, &mut device.1, checked)?;
        value_stages.pipeline(gpu, values, &mut device_values, copy_values)
    })?;
    Ok(UploadSteps { check_ms, stats_ms, host_copy_ms, alloc_ms, free_ms, staged_ms, staged_all_ms, pin_ms })
}

/// The shortest of [`PASSES`] runs of `pass`, in milliseconds.
fn best(mut pass: impl FnMut() -> Result<()>) -> Result<f64> {
    (0..PASSES).try_fold(f64::INFINITY, |best, _| {
        let start = Instant::now();
        pass()?;
        Ok(best.min(start.elapsed().as_secs_f64() * 1e3))
    })
}

/// (a)'s copy: `source` into `dest` by all cores, each core's share in a few pieces of `memcpy`.
fn memcpy<E: Copy + Send + Sync>(source: &[E], dest: &mut [E]) -> gpu_spmv::Result<Option<usize>> {
    let piece = source.len().div_ceil(8 * rayon::current_num_threads()).max(1);
    dest.par_chunks_mut(piece).zip(source.par_chunks(piece)).for_each(|(d, s)| d.copy_from_slice(s));
    Ok(None)
}

/// Pinned staging buffers of `E` as the library's: [`STAGES`] of [`STAGE_BYTES`], ordinary (cached)
/// page-locked memory, filled in turn, each with the event of its last copy where
/// [`Stages::pipeline`] made one.
struct Stages<E>(Vec<PinnedHostSlice<E>>, Vec<Option<CudaEvent>>);

impl<E: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync> Stages<E> {
    fn pin(gpu: &Gpu) -> Result<Self> {
        let stage = || Ok(gpu.pinned_zeroed::<E>(STAGE_BYTES / size_of::<E>())?);
        Ok(Self((0..STAGES).map(|_| stage()).collect::<Result<_>>()?, (0..STAGES).map(|_| None).collect()))
    }

    /// `pass(chunk of data, stage)` for every chunk of `data` in order, the stages in turn; the
    /// first `Some` a pass returns, offset to its chunk.
    fn fill(
        &mut self,
        data: &[E],
        pass: impl Fn(&[E], &mut [E]) -> gpu_spmv::Result<Option<usize>>,
    ) -> Result<Option<usize>> {
        let mut first = None;
        for (k, range) in stage_chunks::<E>(data.len()).enumerate() {
            let stage = self.0[k % STAGES].as_mut_slice()?;
            let found = pass(&data[range.clone()], &mut stage[..range.len()])?;
            first = first.or(found.map(|i| range.start + i));
        }
        Ok(first)
    }

    /// `data` into `device` as the library's upload stages it: each chunk's `pass` into the next
    /// stage once that stage's last copy has completed, then its copy enqueued and an event recorded
    /// after it. Returns with the last copies enqueued, as the upload does.
    fn pipeline(
        &mut self,
        gpu: &Gpu,
        data: &[E],
        device: &mut CudaSlice<E>,
        pass: impl Fn(&[E], &mut [E]) -> gpu_spmv::Result<Option<usize>>,
    ) -> Result<()> {
        for (k, range) in stage_chunks::<E>(data.len()).enumerate() {
            let i = k % STAGES;
            if let Some(copied) = self.1[i].take() {
                copied.synchronize()?;
            }
            let stage = &mut self.0[i].as_mut_slice()?[..range.len()];
            anyhow::ensure!(
                pass(&data[range.clone()], stage)?.is_none(),
                "the bench's own arrays failed the check"
            );
            gpu.stream().memcpy_htod(&*stage, &mut device.slice_mut(range))?;
            self.1[i] = Some(gpu.stream().record_event(None)?);
        }
        Ok(())
    }

    /// Enqueues the copies of `device`'s chunks from the stages in turn, as the upload does, with
    /// nothing written into them meanwhile.
    fn send(&self, gpu: &Gpu, device: &mut CudaSlice<E>) -> Result<()> {
        for (k, range) in stage_chunks::<E>(device.len()).enumerate() {
            let stage = &self.0[k % STAGES].as_slice()?[..range.len()];
            gpu.stream().memcpy_htod(stage, &mut device.slice_mut(range))?;
        }
        Ok(())
    }
}
