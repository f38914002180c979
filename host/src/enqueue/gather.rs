//! The index launches of the distributed product: its pack, `out[i] = x[indices[i]]`, and the
//! addition of its remote block's rows, `y[indices[i]] += v[i]`, with index lists checked when they
//! were uploaded ([`DeviceGather`], [`DeviceScatter`]), and the operands checked here.

use super::launch::{gather, scatter_add};
use crate::Result;
use crate::device::{DeviceGather, DeviceScatter, Gpu, VectorMut, VectorRef};
use crate::scalar::Scalar;
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
        unsafe { gather::<T>(self, AbiPtr::new(out), AbiPtr::new(x), AbiPtr::new(indices), map.len) }
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
