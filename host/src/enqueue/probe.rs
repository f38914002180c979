//! Measuring the device: a streaming-read kernel whose bandwidth is the floor every SpMV kernel is
//! compared with (no kernel that reads a matrix once can beat a kernel that only reads). Loaded on
//! its first use, not with the SpMV kernels.

use super::launch;
use crate::device::{DeviceVector, Gpu, Operand, OperandMut};
use crate::{Error, Result};
use kernels_gpu::abi::{PROBE_BLOCK_SIZE, PROBE_BLOCKS_PER_SM, StreamReadParams};

/// Enqueues one read of all of `data` (its length rounded down to a multiple of 4) on `gpu`'s stream.
/// `sink` (at least one element) is never written in practice; it keeps the loads alive. Time it with
/// events on [`Gpu::stream`]; the bytes moved are `4 * (data.len() / 4) * 4`.
pub fn stream_read(gpu: &Gpu, data: &DeviceVector<f32>, sink: &mut DeviceVector<f32>) -> Result<()> {
    gpu.check_context("the probe's data", data)?;
    gpu.check_context("the probe's sink", &*sink)?;
    if sink.is_empty() {
        return Err(Error::DimensionMismatch { what: "the probe's sink", expected: 1, got: 0 });
    }
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
    unsafe { launch::probe_stream_read(gpu, &params, gpu.sm_count() * PROBE_BLOCKS_PER_SM, PROBE_BLOCK_SIZE) }
}
