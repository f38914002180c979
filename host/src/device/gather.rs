//! Index lists on the device whose every entry was checked against the length of the vector it
//! indexes: [`DeviceGather`], so that the pack kernel (`dist_gather_*`) may read `x[indices[i]]`
//! without a bounds check, and [`DeviceScatter`], strictly increasing too, so that
//! `dist_scatter_add_*` may add into `y[indices[i]]` with no two threads on one element.

use super::Gpu;
use crate::formats::convert::narrow;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;

/// `indices` into a vector of `source_len` elements, each checked below it.
#[derive(Debug)]
pub(crate) struct DeviceGather {
    pub indices: CudaSlice<u32>,
    pub len: u32,
    pub source_len: usize,
}

/// A [`DeviceGather`] whose indices are strictly increasing: distinct targets of a scatter.
#[derive(Debug)]
pub(crate) struct DeviceScatter(pub DeviceGather);

impl Gpu {
    /// Uploads `indices` into a vector of `source_len` elements; refuses an index past it
    /// ([`Error::IndexOutOfRange`], naming `what` and the entry) before allocating anything.
    pub(crate) fn upload_gather(
        &self,
        what: &'static str,
        indices: &[u32],
        source_len: usize,
    ) -> Result<DeviceGather> {
        let len = narrow("an index list's length", indices.len())?;
        if let Some((entry, &index)) = indices.iter().enumerate().find(|&(_, &i)| i as usize >= source_len) {
            return Err(Error::IndexOutOfRange { what, entry, index: index as usize, len: source_len });
        }
        Ok(DeviceGather { indices: self.upload(indices)?, len, source_len })
    }

    /// Uploads strictly increasing `indices` into a vector of `target_len` elements; refuses an
    /// index past it or one not above its predecessor ([`Error::IndexOutOfRange`]).
    pub(crate) fn upload_scatter(
        &self,
        what: &'static str,
        indices: &[u32],
        target_len: usize,
    ) -> Result<DeviceScatter> {
        if let Some(entry) = indices.windows(2).position(|w| w[1] <= w[0]) {
            let index = indices[entry + 1] as usize;
            return Err(Error::IndexOutOfRange { what, entry: entry + 1, index, len: target_len });
        }
        Ok(DeviceScatter(self.upload_gather(what, indices, target_len)?))
    }
}
