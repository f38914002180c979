//! The staged pipeline of an upload timed chunk by chunk, in several configurations on the same
//! bytes: where its time goes (the host's pass of each chunk, the host's waits for a stage, each
//! copy on the link, the link's idle time between copies), so that the pipeline's own loss against
//! the slower of its host pass and its link (docs/PERF.md, section 20) is seen rather than guessed.
//!
//! The configurations vary what section 20 suspected: how many stages, of what size, and how a
//! stage is written (ordinary stores, which read each line before writing it, or streaming stores,
//! which do not and leave the caches to the source). The library's own configuration
//! ([`STAGES`] of [`STAGE_BYTES`], `formats::copy_checked`) is the first.

use anyhow::Result;
use cudarc::driver::{CudaEvent, CudaSlice, DeviceRepr, PinnedHostSlice, ValidAsZeroBits, sys};
use gpu_spmv::formats::{STAGE_BYTES, STAGES, copy_checked};
use gpu_spmv::{Gpu, Scalar};
use rayon::prelude::*;
use serde::{Deserialize, Serialize};
use std::time::Instant;

/// How a chunk is written into its stage.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum Fill {
    /// The library's pass (`formats::copy_checked`): ordinary stores.
    Checked,
    /// Each piece checked in one read, then copied with streaming (non-temporal) stores, 16 bytes
    /// each: no read of the stage's lines before they are written, and the stage's bytes leave
    /// the caches on their way to memory, where the copy engine reads them.
    Streaming,
}

impl Fill {
    /// `source` written into the front of `stage` this way, checked by `bad` as it is written (the
    /// bench's own arrays must pass); the written part of the stage, viewed as `E`.
    fn write<'s, E: ValidAsZeroBits + Copy + Send + Sync>(
        self,
        stage: &'s mut [u8],
        source: &[E],
        bad: impl Fn(E) -> bool + Sync,
    ) -> Result<&'s mut [E]> {
        anyhow::ensure!(size_of_val(source) <= stage.len(), "a chunk larger than its stage");
        anyhow::ensure!(stage.as_ptr().cast::<E>().is_aligned(), "a stage misaligned for its elements");
        // SAFETY: the stage's first `size_of_val(source)` bytes (checked above), aligned for `E`
        // (checked above), initialised (zeroed when pinned, then written by earlier chunks), viewed
        // as `source.len()` elements of `E`, a number type every bit pattern of which is a value
        // (its zeros valid too, `ValidAsZeroBits`); the view borrows the stage exclusively.
        let view = unsafe { std::slice::from_raw_parts_mut(stage.as_mut_ptr().cast::<E>(), source.len()) };
        let found = match self {
            Fill::Checked => copy_checked(source, view, &bad)?,
            Fill::Streaming => streaming_copy(source, view, &bad),
        };
        anyhow::ensure!(found.is_none(), "the bench's own arrays failed the check");
        Ok(view)
    }
}

/// One configuration of the pipeline and what it measured on the columns and values of a matrix,
/// back to back (the upload's bulk: the offsets are a tenth of it or less).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PipelineTrial {
    pub stages: usize,
    pub stage_mib: usize,
    pub fill: Fill,
    /// From the first pass's start to the last copy's completion, best of a few runs.
    pub total_ms: f64,
    /// Bytes of the two arrays.
    pub bytes: usize,
    pub chunks: usize,
    /// Means over the best run's chunks: the host's pass into a stage, and its wait for that stage's
    /// last copy before the pass.
    pub fill_ms: f64,
    pub wait_ms: f64,
    /// The same passes with no copy running (best of a few runs, mean per chunk): what the host's
    /// pass costs when it has the host's memory to itself.
    pub fill_alone_ms: f64,
    /// Mean of each copy's time on the link (device events around it).
    pub copy_ms: f64,
    /// The link's idle time between the first copy's start and the last one's end, summed.
    pub link_idle_ms: f64,
    /// From the start to the first copy's start: the first chunk's pass and the copy's launch.
    pub first_copy_ms: f64,
}

/// The configurations timed: the library's first.
const CONFIGS: [(usize, usize, Fill); 7] = [
    (STAGES, STAGE_BYTES >> 20, Fill::Checked),
    (STAGES, STAGE_BYTES >> 20, Fill::Streaming),
    (3, STAGE_BYTES >> 20, Fill::Checked),
    (3, STAGE_BYTES >> 20, Fill::Streaming),
    (4, 8, Fill::Streaming),
    (2, 32, Fill::Checked),
    (2, 32, Fill::Streaming),
];

/// Runs of each configuration; the fastest is kept.
const RUNS: usize = 3;

/// Times every configuration of `CONFIGS` on `cols` (checked below `ncols`) then `values`.
pub fn pipeline_trials<T: Scalar>(
    gpu: &Gpu,
    ncols: usize,
    cols: &[u32],
    values: &[T],
) -> Result<Vec<PipelineTrial>> {
    let bound = u32::try_from(ncols)?;
    let stream = gpu.stream();
    let mut device_cols = stream.alloc_zeros::<u32>(cols.len())?;
    let mut device_values = stream.alloc_zeros::<T>(values.len())?;
    let mut trials = Vec::new();
    for (stages, stage_mib, fill) in CONFIGS {
        let mut pipeline = Pipeline::pin(gpu, stages, stage_mib << 20)?;
        let mut best: Option<PipelineTrial> = None;
        for _ in 0..RUNS {
            gpu.synchronize()?;
            let mut log = Log::start(gpu)?;
            pipeline.run(gpu, &mut log, cols, &mut device_cols, fill, |c| c >= bound)?;
            pipeline.run(gpu, &mut log, values, &mut device_values, fill, |_| false)?;
            let mut trial = log.finish(gpu, &mut pipeline, stage_mib, fill)?;
            trial.bytes = size_of_val(cols) + size_of_val(values);
            if best.as_ref().is_none_or(|b| trial.total_ms < b.total_ms) {
                best = Some(trial);
            }
        }
        let fill_alone_ms = (0..RUNS).try_fold(f64::INFINITY, |best, _| -> Result<f64> {
            let (a, n) = pipeline.fill_alone(cols, fill, |c| c >= bound)?;
            let (b, m) = pipeline.fill_alone(values, fill, |_| false)?;
            Ok(best.min((a + b) / (n + m).max(1) as f64))
        })?;
        trials.extend(best.map(|t| PipelineTrial { fill_alone_ms, ..t }));
    }
    Ok(trials)
}

/// Pinned stages of `bytes` each (ordinary, cached page-locked memory, as the library's), with the
/// position in the run's [`Log`] of each one's last copy.
struct Pipeline {
    stages: Vec<PinnedHostSlice<u8>>,
    copied: Vec<Option<usize>>,
    next: usize,
}

impl Pipeline {
    fn pin(gpu: &Gpu, count: usize, bytes: usize) -> Result<Self> {
        let stages = (0..count).map(|_| Ok(gpu.pinned_zeroed::<u8>(bytes)?)).collect::<Result<Vec<_>>>()?;
        Ok(Self { stages, copied: (0..count).map(|_| None).collect(), next: 0 })
    }

    /// The passes of `data` into the stages in turn with no copy: their total milliseconds and count.
    fn fill_alone<E: ValidAsZeroBits + Copy + Send + Sync>(
        &mut self,
        data: &[E],
        fill: Fill,
        bad: impl Fn(E) -> bool + Sync,
    ) -> Result<(f64, usize)> {
        let chunk = (self.stages[0].len() / size_of::<E>()).max(1);
        let (mut total, mut count, stages) = (0.0, 0, self.stages.len());
        for (k, source) in data.chunks(chunk).enumerate() {
            // No copy reads the stage: none is enqueued here, and `finish` waited for the last run's.
            let bytes = self.stages[k % stages].as_mut_slice()?;
            let start = Instant::now();
            fill.write(bytes, source, &bad)?;
            total += start.elapsed().as_secs_f64() * 1e3;
            count += 1;
        }
        Ok((total, count))
    }

    /// `data` into `device` through the stages in turn, each chunk's pass once its stage's last copy
    /// completed, each copy between two timing events; every step logged.
    fn run<E: DeviceRepr + ValidAsZeroBits + Copy + Send + Sync>(
        &mut self,
        gpu: &Gpu,
        log: &mut Log,
        data: &[E],
        device: &mut CudaSlice<E>,
        fill: Fill,
        bad: impl Fn(E) -> bool + Sync,
    ) -> Result<()> {
        let chunk = self.stages[0].len() / size_of::<E>();
        for first in (0..data.len()).step_by(chunk.max(1)) {
            let range = first..data.len().min(first + chunk);
            let i = self.next;
            self.next = (self.next + 1) % self.stages.len();
            let waited = Instant::now();
            if let Some(last) = self.copied[i].take() {
                log.chunks[last].after.synchronize()?;
            }
            let filled = Instant::now();
            // No copy reads the stage: its last one completed above.
            let stage = fill.write(self.stages[i].as_mut_slice()?, &data[range.clone()], &bad)?;
            let enqueue = Instant::now();
            let before = gpu.stream().record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            gpu.stream().memcpy_htod(&*stage, &mut device.slice_mut(range))?;
            let after = gpu.stream().record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
            self.copied[i] = Some(log.chunks.len());
            log.chunks.push(Chunk {
                wait_ms: (filled - waited).as_secs_f64() * 1e3,
                fill_ms: (enqueue - filled).as_secs_f64() * 1e3,
                before,
                after,
            });
        }
        Ok(())
    }
}

/// One chunk's host times and the events recorded before and after its copy.
struct Chunk {
    wait_ms: f64,
    fill_ms: f64,
    before: CudaEvent,
    after: CudaEvent,
}

/// A run's chunks, its start on the host and on the device.
struct Log {
    start: Instant,
    device_start: CudaEvent,
    chunks: Vec<Chunk>,
}

impl Log {
    fn start(gpu: &Gpu) -> Result<Self> {
        let device_start = gpu.stream().record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT))?;
        Ok(Self { start: Instant::now(), device_start, chunks: Vec::new() })
    }

    /// The run's figures, once its copies completed; `pipeline`'s stages are free again after it.
    fn finish(
        self,
        gpu: &Gpu,
        pipeline: &mut Pipeline,
        stage_mib: usize,
        fill: Fill,
    ) -> Result<PipelineTrial> {
        gpu.synchronize()?;
        let total_ms = self.start.elapsed().as_secs_f64() * 1e3;
        pipeline.copied.iter_mut().for_each(|c| *c = None);
        let at = |event: &CudaEvent| -> Result<f64> { Ok(f64::from(self.device_start.elapsed_ms(event)?)) };
        let spans =
            self.chunks.iter().map(|c| Ok((at(&c.before)?, at(&c.after)?))).collect::<Result<Vec<_>>>()?;
        let n = self.chunks.len().max(1) as f64;
        let link_idle_ms = spans.windows(2).map(|w| (w[1].0 - w[0].1).max(0.0)).sum();
        Ok(PipelineTrial {
            stages: pipeline.stages.len(),
            stage_mib,
            fill,
            total_ms,
            bytes: 0,
            fill_alone_ms: 0.0,
            chunks: self.chunks.len(),
            fill_ms: self.chunks.iter().map(|c| c.fill_ms).sum::<f64>() / n,
            wait_ms: self.chunks.iter().map(|c| c.wait_ms).sum::<f64>() / n,
            copy_ms: spans.iter().map(|(s, e)| e - s).sum::<f64>() / n,
            link_idle_ms,
            first_copy_ms: spans.first().map_or(0.0, |s| s.0),
        })
    }
}

/// Bytes of the pieces the streaming pass hands to rayon, as `copy_checked`'s.
const PIECE_BYTES: usize = 128 << 10;

/// [`Fill::Streaming`]: each piece checked in one read (it then sits in the core's cache for the
/// copy), then copied 16 bytes at a time with streaming stores where the CPU has them; the first
/// bad position, as `copy_checked` finds it.
fn streaming_copy<E: Copy + Send + Sync>(
    source: &[E],
    dest: &mut [E],
    bad: impl Fn(E) -> bool + Sync,
) -> Option<usize> {
    let piece = (PIECE_BYTES / size_of::<E>().max(1)).max(1);
    dest.par_chunks_mut(piece)
        .zip(source.par_chunks(piece))
        .enumerate()
        .filter_map(|(i, (d, s))| {
            let found = s.iter().position(|&x| bad(x)).map(|k| i * piece + k);
            stream_piece(s, d);
            found
        })
        .min()
}

/// `dest` written with `source` (equal lengths) by streaming stores, the tail and any unaligned
/// head by ordinary ones, then fenced so that the stores are globally visible before the thread's
/// task completes (rayon's join then orders them before the copy is enqueued).
#[cfg(target_arch = "x86_64")]
fn stream_piece<E: Copy>(source: &[E], dest: &mut [E]) {
    use std::arch::x86_64::{__m128i, _mm_loadu_si128, _mm_sfence, _mm_stream_si128};
    let bytes = size_of_val(source).min(size_of_val(dest));
    let (src, dst) = (source.as_ptr().cast::<u8>(), dest.as_mut_ptr().cast::<u8>());
    let head = dst.align_offset(16).min(bytes);
    let body = (bytes - head) / 16;
    // SAFETY: `src` and `dst` hold `bytes` bytes each (the shorter slice's) and do not overlap (a
    // shared and an exclusive borrow); the head and tail are plain byte copies within them; each of
    // the `body` 16-byte steps reads `src + head + 16k` unaligned and writes `dst + head + 16k`,
    // aligned to 16 by the head, all below `bytes`. SSE2 is part of x86_64.
    unsafe {
        std::ptr::copy_nonoverlapping(src, dst, head);
        for k in 0..body {
            let at = head + 16 * k;
            let v = _mm_loadu_si128(src.add(at).cast::<__m128i>());
            _mm_stream_si128(dst.add(at).cast::<__m128i>(), v);
        }
        let done = head + 16 * body;
        std::ptr::copy_nonoverlapping(src.add(done), dst.add(done), bytes - done);
        _mm_sfence();
    }
}

#[cfg(not(target_arch = "x86_64"))]
fn stream_piece<E: Copy>(source: &[E], dest: &mut [E]) {
    dest.copy_from_slice(source);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streaming_copy_copies_and_finds_the_first_bad_position() {
        let n = 3 * PIECE_BYTES / 4 + 5;
        let source: Vec<u32> = (0..n).map(|i| (i % 997) as u32).collect();
        for shift in [0, 1, 3] {
            let mut dest = vec![u32::MAX; n + shift];
            assert_eq!(streaming_copy(&source, &mut dest[shift..], |c| c >= 997), None);
            assert_eq!(&dest[shift..], &source[..], "shift {shift}");
        }
        let mut bad = source.clone();
        bad[PIECE_BYTES / 4 + 2] = 5000;
        bad[n - 1] = 5000;
        let mut dest = vec![0; n];
        assert_eq!(streaming_copy(&bad, &mut dest, |c| c >= 997), Some(PIECE_BYTES / 4 + 2));
        assert_eq!(dest, bad);
    }
}
