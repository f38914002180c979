//! The local matrix approach on the device ([`DeviceLma`]), made by [`Gpu::upload_lma`].

use super::Gpu;
use super::memory::addr;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::lma::{Lma, LmaStorage};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{DevicePtr, LMA_NODES_PER_ELEMENT, LmaArgs};

/// An [`Lma`] operator on the device: its element matrices (whole, or the upper triangles of
/// symmetric ones, as [`Lma::storage`] chose) and element-to-node map, element-major, elements
/// stored by colour. Its product is `y = beta * y` (`spmv_scale_*`), then the element products of
/// the chosen [`LmaKernel`](crate::LmaKernel): one atomic launch, or one launch per colour.
#[derive(Debug)]
pub struct DeviceLma<T> {
    nodes: CudaSlice<u32>,
    values: CudaSlice<T>,
    /// The colour offsets, then `[0, elements]`: the kernels' element ranges (`LmaParams::ranges`).
    ranges: CudaSlice<u32>,
    ranges_addr: DevicePtr<u32>,
    node_count: usize,
    nodes_per_element: usize,
    storage: LmaStorage,
    /// Where each colour's elements start, then the element count.
    colour_offsets: Vec<u32>,
    args: LmaArgs<T>,
}

impl Gpu {
    /// Uploads an LMA operator. Its elements must have one of the node counts the kernels are
    /// compiled for (4, 9, 16, 25: Q1 to Q4 quadrilaterals), or [`Error::InvalidKernel`] says so.
    pub fn upload_lma<T: Scalar>(&self, a: &Lma<T>) -> Result<DeviceLma<T>> {
        let m = narrow("the nodes per element", a.nodes_per_element())?;
        if !LMA_NODES_PER_ELEMENT.contains(&m) {
            return Err(Error::InvalidKernel(format!(
                "{m} nodes per element: the LMA kernels exist for {LMA_NODES_PER_ELEMENT:?}"
            )));
        }
        narrow("the node count", a.node_count())?;
        let elements = narrow("the element count", a.elements())?;
        let colour_offsets =
            a.colour_offsets().iter().map(|&o| narrow("a colour offset", o)).collect::<Result<Vec<_>>>()?;
        let ranges: Vec<u32> = colour_offsets.iter().copied().chain([0, elements]).collect();
        let nodes = self.upload(a.nodes())?;
        let values = self.upload(a.values())?;
        let ranges = self.upload(&ranges)?;
        let ranges_addr = addr(&ranges, self);
        let args = LmaArgs {
            nodes: addr(&nodes, self),
            values: addr(&values, self),
            elements,
            repeated_nodes: u32::from(a.repeats_nodes()),
        };
        Ok(DeviceLma {
            nodes,
            values,
            ranges,
            ranges_addr,
            node_count: a.node_count(),
            nodes_per_element: a.nodes_per_element(),
            storage: a.storage(),
            colour_offsets,
            args,
        })
    }
}

impl<T: Scalar> DeviceLma<T> {
    /// `node_count × node_count` (the unknowns), and as entries the element matrices' stored values
    /// (`elements * m^2`, or `elements * m (m + 1) / 2` for symmetric ones; Dirichlet rows and
    /// columns included).
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.node_count, ncols: self.node_count, nnz: self.values.len() }
    }

    crate::formats::shape_accessors!();

    pub fn nodes_per_element(&self) -> usize {
        self.nodes_per_element
    }

    /// Where each colour's elements start, then the element count.
    pub fn colour_offsets(&self) -> &[u32] {
        &self.colour_offsets
    }

    /// How the element matrices are stored (that of the [`Lma`] uploaded).
    pub fn storage(&self) -> LmaStorage {
        self.storage
    }

    /// Bytes of the operator on the device.
    pub fn device_bytes(&self) -> usize {
        (self.nodes.len() + self.ranges.len()) * 4 + self.values.len() * size_of::<T>()
    }

    pub(crate) fn args(&self) -> LmaArgs<T> {
        self.args
    }

    /// The device address of offset `k` of the element ranges: the colour offsets from `k = 0`
    /// (`colours() + 1` of them), then `0` and the element count at `k = colours() + 1`.
    pub(crate) fn range_at(&self, k: usize) -> DevicePtr<u32> {
        assert!(k < self.ranges.len(), "LMA range offset {k} of {}", self.ranges.len());
        DevicePtr::new(self.ranges_addr.addr() + 4 * k as u64)
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
