//! Measuring the device: a streaming-read kernel whose bandwidth is the floor every SpMV kernel is
//! compared with (no kernel that reads a matrix once can beat a kernel that only reads), and a
//! row-run kernel that reads two arrays the way a warp per row reads a CSR matrix, to tell what
//! that pattern costs by itself. Their entries are looked up with the module's others.

use super::launch;
use crate::device::{DeviceVector, Gpu, Operand, OperandMut};
use crate::{Error, Result};
use kernels_gpu::abi::{PROBE_BLOCK_SIZE, PROBE_BLOCKS_PER_SM, RowRunsParams, StreamReadParams};
use std::num::NonZeroU32;

/// Enqueues one read of all of `data` (its length rounded down to a multiple of 4) on `gpu`'s stream.
/// `sink` (at least one element) is never written in practice; it keeps the loads alive. Time it with
/// events on [`Gpu::stream`]; the bytes moved are `4 * (data.len() / 4) * 4`.
pub fn stream_read(gpu: &Gpu, data: &DeviceVector<f32>, sink: &mut DeviceVector<f32>) -> Result<()> {
    check_operands(gpu, data, sink)?;
    let (data_addr, _data_guard) = data.read(gpu.stream());
    let (sink_addr, _sink_guard) = sink.write(gpu.stream());
    let params = StreamReadParams {
        data: kernels_gpu::abi::DevicePtr::new(data_addr),
        sink: kernels_gpu::abi::DevicePtr::new(sink_addr),
        len4: (data.len() / 4) as u64,
        sentinel: f32::NEG_INFINITY,
    };
    // SAFETY: `data` holds at least `4 * len4` floats, `sink` at least one, both in `gpu`'s context;
    // device allocations are 256-byte aligned, as the 16-byte loads need.
    unsafe { launch::probe_stream_read(gpu, &params, probe_grid(gpu), PROBE_BLOCK_SIZE) }
}

/// Enqueues one read of `data` as two arrays, its first and second half, each cut into runs of `run`
/// elements that a warp reads 32 consecutive elements a step, both arrays at the same offsets (a
/// warp per row of a CSR matrix whose rows hold `run` entries: the column indices and the values).
/// Only whole runs are read; returns the bytes read, `8 * run * (data.len() / 2 / run)`. Time it with
/// events on [`Gpu::stream`]. `sink` as in [`stream_read`].
pub fn row_runs(
    gpu: &Gpu,
    data: &DeviceVector<f32>,
    run: NonZeroU32,
    sink: &mut DeviceVector<f32>,
) -> Result<u64> {
    check_operands(gpu, data, sink)?;
    let half = (data.len() / 2) as u64;
    let pairs = half - half % u64::from(run.get());
    let (data_addr, _data_guard) = data.read(gpu.stream());
    let (sink_addr, _sink_guard) = sink.write(gpu.stream());
    let params = RowRunsParams {
        // The second array starts `pairs` elements in, so both are read from the same offsets.
        data: kernels_gpu::abi::DevicePtr::new(data_addr),
        sink: kernels_gpu::abi::DevicePtr::new(sink_addr),
        pairs,
        run: run.get(),
        sentinel: f32::NEG_INFINITY,
    };
    // SAFETY: `data` holds at least `2 * pairs` floats and `run > 0` divides `pairs`; `sink` holds at
    // least one float; both are in `gpu`'s context, and the block size is whole warps (`abi`).
    unsafe { launch::probe_row_runs(gpu, &params, probe_grid(gpu), PROBE_BLOCK_SIZE) }?;
    Ok(8 * pairs)
}

/// Both probes' operands: `data` and `sink` in `gpu`'s context, `sink` not empty.
fn check_operands(gpu: &Gpu, data: &DeviceVector<f32>, sink: &DeviceVector<f32>) -> Result<()> {
    gpu.check_context("the probe's data", data)?;
    gpu.check_context("the probe's sink", sink)?;
    if sink.is_empty() {
        return Err(Error::DimensionMismatch { what: "the probe's sink", expected: 1, got: 0 });
    }
    Ok(())
}

/// Both probes' grid: [`PROBE_BLOCKS_PER_SM`] blocks of [`PROBE_BLOCK_SIZE`] on every SM.
fn probe_grid(gpu: &Gpu) -> u32 {
    gpu.sm_count() * PROBE_BLOCKS_PER_SM
}
