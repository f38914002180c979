//! What the report records about the machine: device, driver, clocks, the bandwidths measured at
//! the start of the run (the streaming read, the floor's denominator; a device-to-device copy; the
//! row-run reads; the host link) and the host's launch costs.

use crate::measure::{host_enqueue_us, time_gpu};
use anyhow::Result;
use cudarc::driver::sys;
use gpu_spmv::{DeviceVector, Gpu, probe};
use nvml_wrapper::Nvml;
use nvml_wrapper::enum_wrappers::device::{Clock, TemperatureSensor};
use serde::{Deserialize, Serialize};
use std::num::NonZeroU32;

/// Bytes the bandwidth probes move: far beyond the 50 MB L2, so they measure HBM.
const PROBE_BYTES: usize = 2 << 30;

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceInfo {
    pub name: String,
    pub driver_version: String,
    pub sm_count: u32,
    pub l2_bytes: usize,
    /// SM and memory clocks (MHz) and temperature (°C) at the start and at the end of the run, from
    /// NVML (without it, and in older runs, `nvidia-smi`'s clocks alone), if readable.
    pub clocks_start: Option<String>,
    pub clocks_end: Option<String>,
    /// Our streaming-read kernel: bytes read per second (GB/s, 1e9).
    pub read_gbps: f64,
    /// `cuMemcpyDtoD`: bytes read plus bytes written per second (GB/s).
    pub copy_gbps: f64,
    /// Two arrays read the way a warp per row reads a CSR matrix's column indices and values
    /// (`probe::row_runs`), for each run length of [`ROW_RUNS`]: what that access pattern alone
    /// reaches, beside the one-front streaming read. Absent in older runs.
    #[serde(default)]
    pub row_runs: Vec<RowRunRead>,
    /// Host time of one bare kernel launch (the streaming-read probe over 4 floats),
    /// timed as the products' host enqueue is: the driver's share of every product's enqueue, which
    /// no library on the driver API can go below. Absent in older runs.
    #[serde(default)]
    pub launch_us: Option<f64>,
    /// Host time of one launch of a graph holding that one kernel, captured once (`Graph::launch`):
    /// the cheaper host path a hot plan could take if it is (issue 23, item 4). Absent in older runs.
    #[serde(default)]
    pub graph_launch_us: Option<f64>,
    /// The host link: `cuMemcpyHtoD` from pinned host memory, bytes per second (GB/s), what an
    /// upload is measured against. Absent in older runs.
    #[serde(default)]
    pub h2d_pinned_gbps: Option<f64>,
}

/// One run length of the row-run probe and the bandwidth it reached.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct RowRunRead {
    /// Elements (4 bytes) of each array a warp reads in one run: the entries of a row.
    pub run: u32,
    /// Bytes read per second (GB/s, 1e9), both arrays.
    pub gbps: f64,
}

/// The row-run probe's run lengths: 32 (a warp reads one 128-byte line of each array a run, one step
/// and a wait), 128 (one batch of four steps: the grid moves as one front, as the streaming read
/// does, with 4-byte loads), rows of the wide-400 matrix's 400 entries (three batches and a half-full
/// step), 384 and 416 beside it (three batches; three and a full step), 1,024 and 4,096.
pub const ROW_RUNS: [NonZeroU32; 7] = {
    const fn run(n: u32) -> NonZeroU32 {
        NonZeroU32::new(n).expect("a run holds at least one element")
    }
    [run(32), run(128), run(384), run(400), run(416), run(1024), run(4096)]
};

impl DeviceInfo {
    pub fn measure(gpu: &Gpu) -> Result<Self> {
        let clocks_start = clocks(gpu);
        let l2 = gpu.context().attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE)?;
        // One buffer for the two read probes.
        let data = gpu.upload_vector(&vec![1.0f32; PROBE_BYTES / 4])?;
        let (read_gbps, row_runs) = (read_bandwidth(gpu, &data)?, row_run_bandwidths(gpu, &data)?);
        drop(data);
        Ok(Self {
            name: gpu.name().to_owned(),
            driver_version: driver_version()?,
            sm_count: gpu.sm_count(),
            l2_bytes: usize::try_from(l2).unwrap_or(0),
            clocks_start,
            clocks_end: None,
            read_gbps,
            copy_gbps: copy_bandwidth(gpu)?,
            row_runs,
            launch_us: Some(launch_cost(gpu)?),
            graph_launch_us: Some(graph_launch_cost(gpu)?),
            h2d_pinned_gbps: Some(h2d_pinned_bandwidth(gpu)?),
        })
    }

    pub fn finish(&mut self, gpu: &Gpu) {
        self.clocks_end = clocks(gpu);
    }
}

fn driver_version() -> Result<String> {
    let mut v = 0;
    // SAFETY: writes one int; the driver was initialised when the `Gpu` was created.
    unsafe { sys::cuDriverGetVersion(&mut v) }.result()?;
    Ok(format!("{}.{}", v / 1000, (v % 1000) / 10))
}

/// The SM and memory clocks and the temperature of `gpu`'s device, from NVML (libnvidia-ml, loaded at
/// run time), or the clocks alone from `nvidia-smi` where NVML does not load or answer.
pub fn clocks(gpu: &Gpu) -> Option<String> {
    nvml_clocks(gpu).or_else(smi_clocks)
}

/// NVML's answer, the device found by its PCI address (NVML's order of devices need not be CUDA's).
fn nvml_clocks(gpu: &Gpu) -> Option<String> {
    let attribute = |a| gpu.context().attribute(a).ok();
    let address = format!(
        "{:08x}:{:02x}:{:02x}.0",
        attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID)?,
        attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_BUS_ID)?,
        attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID)?
    );
    let nvml = Nvml::init().ok()?;
    let device = nvml.device_by_pci_bus_id(address).ok()?;
    let sm = device.clock_info(Clock::SM).ok()?;
    let memory = device.clock_info(Clock::Memory).ok()?;
    let celsius = device.temperature(TemperatureSensor::Gpu).ok()?;
    Some(format!("{sm} MHz, {memory} MHz, {celsius} °C"))
}

/// SM and memory clocks as `nvidia-smi` reports them, when it is there.
fn smi_clocks() -> Option<String> {
    let out = std::process::Command::new("nvidia-smi")
        .args(["--query-gpu=clocks.sm,clocks.mem", "--format=csv,noheader"])
        .output()
        .ok()?;
    out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

fn read_bandwidth(gpu: &Gpu, data: &DeviceVector<f32>) -> Result<f64> {
    let mut sink = gpu.zeros::<f32>(1)?;
    let t = time_gpu(gpu, |_| Ok(probe::stream_read(gpu, data, &mut sink)?))?;
    Ok(PROBE_BYTES as f64 / (t.median_us * 1e3))
}

fn row_run_bandwidths(gpu: &Gpu, data: &DeviceVector<f32>) -> Result<Vec<RowRunRead>> {
    let mut sink = gpu.zeros::<f32>(1)?;
    let mut reads = Vec::with_capacity(ROW_RUNS.len());
    for run in ROW_RUNS {
        let mut bytes = 0;
        let t = time_gpu(gpu, |_| {
            bytes = probe::row_runs(gpu, data, run, &mut sink)?;
            Ok(())
        })?;
        reads.push(RowRunRead { run: run.get(), gbps: bytes as f64 / (t.median_us * 1e3) });
    }
    Ok(reads)
}

fn launch_cost(gpu: &Gpu) -> Result<f64> {
    let data = gpu.upload_vector(&[1.0f32; 4])?;
    let mut sink = gpu.zeros::<f32>(1)?;
    host_enqueue_us(gpu, || Ok(probe::stream_read(gpu, &data, &mut sink)?))
}

fn graph_launch_cost(gpu: &Gpu) -> Result<f64> {
    let data = gpu.upload_vector(&[1.0f32; 4])?;
    let mut sink = gpu.zeros::<f32>(1)?;
    let graph = gpu.capture(|| probe::stream_read(gpu, &data, &mut sink))?;
    host_enqueue_us(gpu, || Ok(graph.launch()?))
}

/// Bytes of the host link probe: 256 MiB, long enough that the copy's start-up is noise.
const LINK_PROBE_BYTES: usize = 256 << 20;

fn h2d_pinned_bandwidth(gpu: &Gpu) -> Result<f64> {
    // SAFETY: uninitialised pinned bytes, copied but never read as anything but bytes.
    let host = unsafe { gpu.context().alloc_pinned::<u8>(LINK_PROBE_BYTES) }?;
    let mut dst = gpu.stream().alloc_zeros::<u8>(LINK_PROBE_BYTES)?;
    let t = time_gpu(gpu, |_| Ok(gpu.stream().memcpy_htod(&host, &mut dst)?))?;
    Ok(LINK_PROBE_BYTES as f64 / (t.median_us * 1e3))
}

fn copy_bandwidth(gpu: &Gpu) -> Result<f64> {
    let src = gpu.stream().alloc_zeros::<u8>(PROBE_BYTES / 2)?;
    let mut dst = gpu.stream().alloc_zeros::<u8>(PROBE_BYTES / 2)?;
    let t = time_gpu(gpu, |_| Ok(gpu.stream().memcpy_dtod(&src, &mut dst)?))?;
    Ok(PROBE_BYTES as f64 / (t.median_us * 1e3))
}
