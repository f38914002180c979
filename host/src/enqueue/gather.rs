//! The index launches of the distributed product: its pack, `out[i] = x[indices[i]]`, the same
//! gather from another GPU's `x` (the peer exchange's pull), and the addition of its remote block's
//! rows, `y[indices[i]] += v[i]`, with index lists checked when they were uploaded ([`DeviceGather`],
//! [`DeviceScatter`]), and the operands checked here.

use super::launch::{gather, scatter_add};
use crate::device::{DeviceGather, DeviceScatter, Gpu, PeerAccess, VectorMut, VectorRef};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaStream;
use kernels_gpu::abi::DevicePtr as AbiPtr;

impl Gpu {
    /// Enqueues `out[i] = x[map[i]]`. Refused before anything is launched: `x` or `out` of another
    /// context, `x` of another length than the map indexes, `out` of another length than the map.
    pub(crate) fn gather<T, X, Y>(&self, map: &DeviceGather, x: &X, out: &mut Y) -> Result<()>
    where
        T: Scalar,
        X: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        self.check_context("the gather's index list", &map.indices)?;
        self.check_operand("the gathered vector", x, map.source_len)?;
        self.check_operand("the gather's output", out, map.len as usize)?;
        if map.len == 0 {
            return Ok(());
        }
        let (x, _x_guard) = x.read(self.stream());
        let (out, _out_guard) = out.write(self.stream());
        let (indices, _i_guard) = cudarc::driver::DevicePtr::device_ptr(&map.indices, self.stream());
        // SAFETY: `indices` and `out` hold `map.len` elements and every index is below `x.len()`
        // (checked by `upload_gather` and above), all of this context; `out` is a buffer of its own
        // (`VectorMut` is a unique borrow), so it overlaps neither.
        unsafe {
            gather::<T>(self, self.stream(), AbiPtr::new(out), AbiPtr::new(x), AbiPtr::new(indices), map.len)
        }
    }

    /// Enqueues `out[i] = x[map[i]]` on `stream`, where `x` is `owner`'s and this GPU's kernel reads
    /// it in place, as `access` allows: the gather of [`Gpu::gather`] with the copy between the GPUs
    /// folded into it. Nothing orders it with `owner`'s stream: the caller makes `stream` wait for
    /// `x` and `owner` wait for the gather before `x` changes. Refused before anything is launched:
    /// `stream`, the map or `out` of another context than this GPU's, `x` of another than `owner`'s,
    /// `access` not for these two GPUs, and the lengths as [`Gpu::gather`] refuses them.
    pub(crate) fn pull<T, X, Y>(
        &self,
        stream: &CudaStream,
        access: &PeerAccess,
        map: &DeviceGather,
        (owner, x): (&Gpu, &X),
        out: &mut Y,
    ) -> Result<()>
    where
        T: Scalar,
        X: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        if !self.owns(stream.context()) {
            return Err(Error::ForeignBuffer("the pull's stream"));
        }
        if !access.covers(self, owner) {
            return Err(Error::ForeignBuffer("the pull's owner (no peer access to it)"));
        }
        self.check_context("the gather's index list", &map.indices)?;
        owner.check_operand("the gathered vector", x, map.source_len)?;
        self.check_operand("the gather's output", out, map.len as usize)?;
        if map.len == 0 {
            return Ok(());
        }
        // `x` is borrowed on its own context's stream (cudarc records a buffer's use only on streams
        // of its context); the caller's events order the owner's stream with `stream`.
        let (x, _x_guard) = x.read(owner.stream());
        let (out, _out_guard) = out.write(stream);
        let (indices, _i_guard) = cudarc::driver::DevicePtr::device_ptr(&map.indices, stream);
        // SAFETY: `stream`, `indices` and `out` (`map.len` elements each) are this context's; every
        // index is below `x.len()` (checked by `upload_gather`, whose source length is `x`'s, above);
        // `x` is `owner`'s, whose memory this context reads by `access`; `out` is a buffer of its
        // own (`VectorMut` is a unique borrow), so it overlaps neither `x` nor the indices.
        unsafe { gather::<T>(self, stream, AbiPtr::new(out), AbiPtr::new(x), AbiPtr::new(indices), map.len) }
    }

    /// Enqueues `y[map[i]] += v[i]`. Refused before anything is launched: `v` or `y` of another
    /// context, `y` of another length than the map indexes, `v` of another length than the map.
    pub(crate) fn scatter_add<T, V, Y>(&self, map: &DeviceScatter, v: &V, y: &mut Y) -> Result<()>
    where
        T: Scalar,
        V: VectorRef<T> + ?Sized,
        Y: VectorMut<T> + ?Sized,
    {
        let map = &map.0;
        self.check_context("the scatter's index list", &map.indices)?;
        self.check_operand("the scatter's output", y, map.source_len)?;
        self.check_operand("the scattered vector", v, map.len as usize)?;
        if map.len == 0 {
            return Ok(());
        }
        let (v, _v_guard) = v.read(self.stream());
        let (y, _y_guard) = y.write(self.stream());
        let (indices, _i_guard) = cudarc::driver::DevicePtr::device_ptr(&map.indices, self.stream());
        // SAFETY: `indices` and `v` hold `map.len` elements, the indices strictly increasing and
        // below `y.len()` (checked by `upload_scatter` and above), all of this context; `y` is a
        // buffer of its own (`VectorMut` is a unique borrow), so it overlaps neither.
        unsafe { scatter_add::<T>(self, AbiPtr::new(y), AbiPtr::new(v), AbiPtr::new(indices), map.len) }
    }
}
