//! [`DeviceGather`]: an index list on the device whose every entry was checked against the length
//! of the vector it indexes, so that the pack kernel (`dist_gather_*`) may read `x[indices[i]]`
//! without a bounds check.

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
}
