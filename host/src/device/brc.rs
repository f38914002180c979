//! BRC on the device ([`DeviceBrc`]), made by [`Gpu::upload_brc`], and how it combines split rows.

use super::Gpu;
use super::upload::device_addr;
use crate::Result;
use crate::formats::brc::Brc;
use crate::formats::convert::narrow;
use crate::launch::formats::brc;
use crate::operator::DeviceMatrix;
use crate::operator::sealed::{Launch, Operands};
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{BrcArgs, BrcSplitArgs, DevicePtr as AbiPtr};
use std::sync::Arc;

/// How the pieces of a split row are added up (`kernels-gpu/src/formats/brc.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BrcCombine {
    /// Each piece writes its sum to a slot of a scratch buffer; a second kernel sums each split row's
    /// slots in order. The result is the same from run to run.
    #[default]
    Deterministic,
    /// A first kernel scales the split rows by `beta`; each piece then adds its sum atomically.
    Atomic,
}

/// A [`Brc`] matrix on the device, with the scratch buffer of its split rows (one element per piece
/// of a split row). Its product is one or two launches on the [`Gpu`]'s stream: the block kernel,
/// and, when some row was split, the combining kernel of the chosen [`BrcCombine`] (after the block
/// kernel for [`BrcCombine::Deterministic`], before it for [`BrcCombine::Atomic`]). Products with
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
    combine: BrcCombine,
    args: BrcArgs<T>,
    split: BrcSplitArgs<T>,
}

impl Gpu {
    /// Uploads a BRC matrix and allocates its scratch buffer, to be multiplied with
    /// [`BrcCombine::Deterministic`] until [`DeviceBrc::set_combine`] says otherwise.
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
        let addr = |s: &CudaSlice<u32>| AbiPtr::new(device_addr(s, self));
        let args = BrcArgs {
            block_ptr: addr(&block_ptr),
            block_width: addr(&block_width),
            targets: addr(&targets),
            cols: addr(&cols),
            values: AbiPtr::new(device_addr(&values, self)),
            pieces,
            blocks,
        };
        let split = BrcSplitArgs {
            split_rows: addr(&split_rows),
            split_ptr: addr(&split_ptr),
            slot_rows: addr(&slot_rows),
            partials: AbiPtr::new(device_addr(&partials, self)),
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
            combine: BrcCombine::default(),
            args,
            split,
        })
    }
}

impl<T: Scalar> DeviceBrc<T> {
    /// How products combine the pieces of split rows.
    pub fn combine(&self) -> BrcCombine {
        self.combine
    }

    /// Chooses how later products combine the pieces of split rows.
    pub fn set_combine(&mut self, combine: BrcCombine) {
        self.combine = combine;
    }

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
}

impl<T: Scalar> Launch<T> for DeviceBrc<T> {
    fn belongs_to(&self, gpu: &Gpu) -> bool {
        Arc::ptr_eq(self.values.context(), gpu.context())
    }

    fn launch(&self, gpu: &Gpu, op: Operands<'_, T>) -> Result<()> {
        brc(gpu, self, self.combine, &op)
    }
}

impl<T: Scalar> DeviceMatrix<T> for DeviceBrc<T> {
    fn nrows(&self) -> usize {
        self.nrows
    }

    fn ncols(&self) -> usize {
        self.ncols
    }

    fn nnz(&self) -> usize {
        self.nnz
    }
}
