//! The local matrix approach on the device ([`DeviceLma`]), made by [`Gpu::upload_lma`].

use super::Gpu;
use super::memory::addr;
use crate::formats::Shape;
use crate::formats::convert::narrow;
use crate::formats::lma::Lma;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{LMA_NODES_PER_ELEMENT, LmaArgs};

/// An [`Lma`] operator on the device: its element matrices and element-to-node map, entry-major,
/// elements stored by colour. Its product is `y = beta * y` (`spmv_scale_*`), then the element
/// products of the chosen [`LmaKernel`](crate::LmaKernel): one atomic launch, or one launch per
/// colour.
#[derive(Debug)]
pub struct DeviceLma<T> {
    nodes: CudaSlice<u32>,
    values: CudaSlice<T>,
    node_count: usize,
    nodes_per_element: usize,
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
        let nodes = self.upload(a.nodes())?;
        let values = self.upload(a.values())?;
        let args = LmaArgs { nodes: addr(&nodes, self), values: addr(&values, self), elements };
        Ok(DeviceLma {
            nodes,
            values,
            node_count: a.node_count(),
            nodes_per_element: a.nodes_per_element(),
            colour_offsets,
            args,
        })
    }
}

impl<T: Scalar> DeviceLma<T> {
    /// `node_count × node_count` (the unknowns), and as entries those of the element matrices
    /// (`elements * m^2`, Dirichlet rows and columns included).
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

    /// Bytes of the operator on the device.
    pub fn device_bytes(&self) -> usize {
        self.nodes.len() * 4 + self.values.len() * size_of::<T>()
    }

    pub(crate) fn args(&self) -> LmaArgs<T> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
