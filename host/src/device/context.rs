//! [`Gpu`]: a CUDA context, the stream every product runs on, and the kernels' module.

use super::format_kernels::FormatKernels;
use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, sys};
use cudarc::nvrtc::Ptx;
use kernels_gpu::abi::{CSR_ALIGNED_GROUPS, CSR_PARAM_COOPS, CSR_VECTOR_COOPS};
use std::sync::Arc;

/// The kernels, built by `cargo xtask ptx` (virtual architecture sm_70; the driver compiles it for
/// the GPU at hand when the module loads).
const PTX: &str = include_str!("../../ptx/kernels.ptx");

/// A GPU ready to run products: its context, one stream, and the loaded kernels.
#[derive(Debug)]
pub struct Gpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    f32_kernels: KernelTable,
    f64_kernels: KernelTable,
    probe_stream_read: CudaFunction,
    sm_count: u32,
    name: String,
}

/// The PTX entries of one element type, looked up once when the module loads.
#[derive(Debug)]
pub(crate) struct KernelTable {
    pub csr_scalar: CudaFunction,
    /// Indexed like [`CSR_VECTOR_COOPS`].
    pub csr_vector: Vec<CudaFunction>,
    /// Indexed like [`CSR_ALIGNED_GROUPS`]; x through the read-only data cache.
    pub csr_aligned_nc: Vec<CudaFunction>,
    /// Indexed like [`CSR_ALIGNED_GROUPS`]; x with plain global loads.
    pub csr_aligned_plain: Vec<CudaFunction>,
    /// Indexed like [`CSR_PARAM_COOPS`].
    pub csr_param: Vec<CudaFunction>,
    pub csr_balanced: CudaFunction,
    pub scale: CudaFunction,
    /// The kernels of the formats beyond CSR.
    pub formats: FormatKernels,
}

impl KernelTable {
    fn load(module: &Arc<CudaModule>, ty: &str) -> Result<Self> {
        let entry = |name: String| module.load_function(&name);
        let csr_vector = CSR_VECTOR_COOPS
            .iter()
            .map(|coop| entry(format!("spmv_csr_vector_c{coop}_{ty}")))
            .collect::<std::result::Result<_, _>>()?;
        let aligned = |x: &str| {
            entries(module, CSR_ALIGNED_GROUPS.iter().map(|g| format!("spmv_csr_aligned_g{g}_{x}_{ty}")))
        };
        Ok(Self {
            csr_scalar: entry(format!("spmv_csr_scalar_{ty}"))?,
            csr_vector,
            csr_aligned_nc: aligned("nc")?,
            csr_aligned_plain: aligned("plain")?,
            csr_param: entries(module, CSR_PARAM_COOPS.iter().map(|c| format!("spmv_csr_param_c{c}_{ty}")))?,
            csr_balanced: entry(format!("spmv_csr_balanced_{ty}"))?,
            scale: entry(format!("spmv_scale_{ty}"))?,
            formats: FormatKernels::load(module, ty)?,
        })
    }
}

/// The entries of `names`, in order.
fn entries(module: &Arc<CudaModule>, names: impl Iterator<Item = String>) -> Result<Vec<CudaFunction>> {
    Ok(names.map(|name| module.load_function(&name)).collect::<std::result::Result<_, _>>()?)
}

impl Gpu {
    /// The first GPU.
    pub fn new() -> Result<Self> {
        Self::with_ordinal(0)
    }

    /// GPU number `ordinal`. Fails with [`Error::NoDevice`] when the CUDA driver library cannot be
    /// loaded or reports too few devices, so callers can fall back to the CPU.
    pub fn with_ordinal(ordinal: usize) -> Result<Self> {
        // SAFETY: only tries to open the driver library by its usual names; nothing is called in it.
        if !unsafe { sys::is_culib_present() } {
            return Err(Error::NoDevice("the CUDA driver library (libcuda) was not found".into()));
        }
        let count = CudaContext::device_count().map_err(|e| Error::NoDevice(e.to_string()))?;
        if ordinal >= usize::try_from(count).unwrap_or(0) {
            return Err(Error::NoDevice(format!("GPU {ordinal} asked for, the driver reports {count}")));
        }
        let ctx = CudaContext::new(ordinal)?;
        // SAFETY: every operation of this library runs on the one stream below, so cudarc's events
        // that order buffer use across streams are not needed.
        unsafe { ctx.disable_event_tracking() };
        let stream = ctx.new_stream()?;
        let module = ctx.load_module(Ptx::from_src(PTX))?;
        let sm_count = ctx.attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
        Ok(Self {
            f32_kernels: KernelTable::load(&module, f32::NAME)?,
            f64_kernels: KernelTable::load(&module, f64::NAME)?,
            probe_stream_read: module.load_function("probe_stream_read")?,
            sm_count: u32::try_from(sm_count).unwrap_or(1),
            name: ctx.name()?,
            ctx,
            stream,
        })
    }

    /// The device's name, as the driver reports it.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Streaming multiprocessors on the device.
    pub fn sm_count(&self) -> u32 {
        self.sm_count
    }

    /// The CUDA context (for interoperation, e.g. timing events or another library on [`Gpu::stream`]).
    pub fn context(&self) -> &Arc<CudaContext> {
        &self.ctx
    }

    /// The stream every product and copy of this `Gpu` is enqueued on.
    pub fn stream(&self) -> &Arc<CudaStream> {
        &self.stream
    }

    /// Waits until all work enqueued so far has finished.
    pub fn synchronize(&self) -> Result<()> {
        Ok(self.stream.synchronize()?)
    }

    pub(crate) fn probe_stream_read(&self) -> &CudaFunction {
        &self.probe_stream_read
    }

    pub(crate) fn kernels<T: Scalar>(&self) -> &KernelTable {
        match T::PRECISION {
            Precision::Single => &self.f32_kernels,
            Precision::Double => &self.f64_kernels,
        }
    }
}
