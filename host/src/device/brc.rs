//! BRC on the device ([`DeviceBrc`]), made by [`Gpu::upload_brc`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::brc::Brc;
use crate::formats::convert::narrow;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{BrcArgs, BrcSplitArgs};

/// A [`Brc`] matrix on the device, with the scratch buffer of its split rows (one element per piece
/// of a split row). Its product is one or two launches on the [`Gpu`]'s stream: the block kernel,
/// and, when some row was split, the combining kernel of the chosen
/// [`BrcCombine`](crate::BrcCombine) (after the block kernel for the deterministic combine, before it
/// for the atomic one). Products with
/// one matrix are ordered by that stream, so they never share the scratch buffer.
#[derive(Debug)]
pub struct DeviceBrc<T> {
    block_ptr: CudaSlice<u32>,
    block_width: CudaSlice<u32>,
    targets: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    values: CudaSlice<T>,
    split_rows: CudaSlice<u32>,
    split_ptr: CudaSlice<u32>,
    slot_rows: CudaSlice<u32>,
    partials: CudaSlice<T>,
    nrows: usize,
    ncols: usize,
    nnz: usize,
    b2: usize,
    args: BrcArgs<T>,
    split: BrcSplitArgs<T>,
}

impl Gpu {
    /// Uploads a BRC matrix and allocates its scratch buffer.
    pub fn upload_brc<T: Scalar>(&self, a: &Brc<T>) -> Result<DeviceBrc<T>> {
        let pieces = narrow("BRC's piece count", a.targets().len())?;
        let blocks = narrow("BRC's block count", a.block_width().len())?;
        let split_count = narrow("BRC's split row count", a.split_rows().len())?;
        let slots = a.slot_rows().len();
        let block_ptr = self.upload(a.block_ptr())?;
        let block_width = self.upload(a.block_width())?;
        let targets = self.upload(a.targets())?;
        let cols = self.upload(a.cols())?;
        let values = self.upload(a.values())?;
        let split_rows = self.upload(a.split_rows())?;
        let split_ptr = self.upload(a.split_ptr())?;
        let slot_rows = self.upload(a.slot_rows())?;
        let partials = self.alloc_zeros(slots)?;
        let args = BrcArgs {
            block_ptr: addr(&block_ptr, self),
            block_width: addr(&block_width, self),
            targets: addr(&targets, self),
            cols: addr(&cols, self),
            values: addr(&values, self),
            pieces,
            blocks,
        };
        let split = BrcSplitArgs {
            split_rows: addr(&split_rows, self),
            split_ptr: addr(&split_ptr, self),
            slot_rows: addr(&slot_rows, self),
            partials: addr(&partials, self),
            split_count,
        };
        Ok(DeviceBrc {
            block_ptr,
            block_width,
            targets,
            cols,
            values,
            split_rows,
            split_ptr,
            slot_rows,
            partials,
            nrows: a.nrows(),
            ncols: a.ncols(),
            nnz: a.nnz(),
            b2: a.b2(),
            args,
            split,
        })
    }
}

impl<T: Scalar> DeviceBrc<T> {
    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.nrows, ncols: self.ncols, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// The width bound the matrix was built with.
    pub fn b2(&self) -> usize {
        self.b2
    }

    /// Rows split into pieces.
    pub fn split_row_count(&self) -> usize {
        self.split.split_count as usize
    }

    /// Bytes of the matrix on the device (scratch buffer included).
    pub fn device_bytes(&self) -> usize {
        let words = self.block_ptr.len()
            + self.block_width.len()
            + self.targets.len()
            + self.cols.len()
            + self.split_rows.len()
            + self.split_ptr.len()
            + self.slot_rows.len();
        words * 4 + (self.values.len() + self.partials.len()) * size_of::<T>()
    }

    pub(crate) fn args(&self) -> BrcArgs<T> {
        self.args
    }

    pub(crate) fn split_args(&self) -> BrcSplitArgs<T> {
        self.split
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.values.context())
    }
}
