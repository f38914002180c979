//! [`Gpu`]: a CUDA context, the stream every product runs on, and the kernels' module.

use crate::scalar::{Precision, Scalar};
use crate::{Error, Result};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, sys};
use cudarc::nvrtc::Ptx;
use kernels_gpu::abi::CSR_VECTOR_COOPS;
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
    sm_count: u32,
    name: String,
}

/// The PTX entries of one element type, looked up once when the module loads.
#[derive(Debug)]
pub(crate) struct KernelTable {
    pub csr_scalar: CudaFunction,
    /// Indexed like [`CSR_VECTOR_COOPS`].
    pub csr_vector: Vec<CudaFunction>,
    pub scale: CudaFunction,
}

impl KernelTable {
    fn load(module: &Arc<CudaModule>, ty: &str) -> Result<Self> {
        let entry = |name: String| module.load_function(&name);
        let csr_vector = CSR_VECTOR_COOPS
            .iter()
            .map(|coop| entry(format!("spmv_csr_vector_c{coop}_{ty}")))
            .collect::<std::result::Result<_, _>>()?;
        Ok(Self {
            csr_scalar: entry(format!("spmv_csr_scalar_{ty}"))?,
            csr_vector,
            scale: entry(format!("spmv_scale_{ty}"))?,
        })
    }
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

    pub(crate) fn kernels<T: Scalar>(&self) -> &KernelTable {
        match T::PRECISION {
            Precision::Single => &self.f32_kernels,
            Precision::Double => &self.f64_kernels,
        }
    }
}
