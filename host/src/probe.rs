//! Measuring the device: a streaming-read kernel whose bandwidth is the floor every SpMV kernel is
//! compared with (no kernel that reads a matrix once can beat a kernel that only reads).

use crate::device::{DeviceVector, Gpu};
use crate::{Result, launch};

/// Threads per block of the probe, and blocks per SM: enough loads in flight to saturate HBM.
const PROBE_BLOCK: u32 = 512;
const PROBE_BLOCKS_PER_SM: u32 = 4;

/// Enqueues one read of all of `data` (its length rounded down to a multiple of 4) on `gpu`'s stream.
/// `sink` (at least one element) is never written in practice; it keeps the loads alive. Time it with
/// events on [`Gpu::stream`]; the bytes moved are `4 * (data.len() / 4) * 4`.
pub fn stream_read(gpu: &Gpu, data: &DeviceVector<f32>, sink: &mut DeviceVector<f32>) -> Result<()> {
    launch::probe_stream_read(gpu, data, sink, gpu.sm_count() * PROBE_BLOCKS_PER_SM, PROBE_BLOCK)
}
