//! [`PeerAccess`]: one GPU's kernels reading another GPU's memory directly, over NVLink or PCIe
//! (CUDA's peer access, *CUDA Driver API*, "Peer Context Memory Access"). The distributed product's
//! peer exchange rests on it: each GPU gathers its ghost entries of `x` straight from their owners'
//! vectors, where the NCCL exchange packs, sends and receives them (issue 26).

use super::Gpu;
use crate::Result;
use cudarc::driver::{CudaContext, DriverError, sys};
use std::sync::Arc;

/// Proof that kernels of `reader`'s context may dereference addresses of `owner`'s: made only by
/// [`PeerAccess::enable`], which asked the driver. Peer access stays enabled while both contexts
/// live, and the token holds both. It covers the buffers cudarc allocates in the owner's context
/// (`cuMemAlloc`'s, by peer access, and `cuMemAllocAsync`'s from the device's current pool, by the
/// pool's access list), which are all the crate's vectors; not memory from another pool, from
/// `cuMemCreate` or from another process.
#[derive(Debug, Clone)]
pub(crate) struct PeerAccess {
    reader: Arc<CudaContext>,
    owner: Arc<CudaContext>,
}

impl PeerAccess {
    /// Enables `reader`'s access to `owner`'s memory: `cuCtxEnablePeerAccess` between two contexts,
    /// and the reader's access to the owner's memory pool between two devices; nothing when both are
    /// one context (two `Gpu`s of one device share its primary context). `None` when the driver says the devices
    /// cannot (`cuDeviceCanAccessPeer`: no NVLink or PCIe peer path, or a platform that forbids it);
    /// an error when asking fails. Enabling twice is no error.
    pub(crate) fn enable(reader: &Gpu, owner: &Gpu) -> Result<Option<Self>> {
        let (reader_ctx, owner_ctx) = (reader.context(), owner.context());
        let same_context = reader_ctx.cu_ctx() == owner_ctx.cu_ctx();
        let same_device = reader_ctx.cu_device() == owner_ctx.cu_device();
        if !same_device {
            let mut can = 0;
            // SAFETY: `can` is a valid out-pointer; both devices are the live contexts' own.
            unsafe { sys::cuDeviceCanAccessPeer(&mut can, reader_ctx.cu_device(), owner_ctx.cu_device()) }
                .result()?;
            if can == 0 {
                return Ok(None);
            }
        }
        if !same_context {
            // The call enables access for the thread's current context.
            reader_ctx.bind_to_thread()?;
            // SAFETY: `owner_ctx.cu_ctx()` is a live context (the `Arc` holds it); flags must be 0.
            let enabled = unsafe { sys::cuCtxEnablePeerAccess(owner_ctx.cu_ctx(), 0) }.result();
            match enabled {
                Err(DriverError(sys::cudaError_enum::CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED)) | Ok(()) => {}
                Err(e) => return Err(e.into()),
            }
        }
        let pools = sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED;
        if !same_device && owner_ctx.attribute(pools)? > 0 {
            // cudarc allocates from the device's memory pool (`cuMemAllocAsync`) where the device has
            // one, and the pool's own access list governs those buffers: peer access between the
            // contexts covers only `cuMemAlloc`'s (*CUDA Programming Guide*, "Stream Ordered Memory
            // Allocator", "Device accessibility for multi-GPU support").
            let mut pool = std::ptr::null_mut();
            // SAFETY: `pool` is a valid out-pointer; the device is the live owner context's.
            unsafe { sys::cuDeviceGetMemPool(&mut pool, owner_ctx.cu_device()) }.result()?;
            let desc = sys::CUmemAccessDesc {
                location: sys::CUmemLocation {
                    type_: sys::CUmemLocationType::CU_MEM_LOCATION_TYPE_DEVICE,
                    id: reader_ctx.cu_device(),
                },
                // Pools grant read and write together or nothing.
                flags: sys::CUmemAccess_flags::CU_MEM_ACCESS_FLAGS_PROT_READWRITE,
            };
            // SAFETY: `pool` is the owner's current pool, `desc` one valid descriptor.
            unsafe { sys::cuMemPoolSetAccess(pool, &desc, 1) }.result()?;
        }
        Ok(Some(Self { reader: reader_ctx.clone(), owner: owner_ctx.clone() }))
    }

    /// Whether this token lets `reader`'s kernels read `owner`'s memory.
    pub(crate) fn covers(&self, reader: &Gpu, owner: &Gpu) -> bool {
        reader.owns(&self.reader) && owner.owns(&self.owner)
    }
}
