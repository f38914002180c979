//! A [`Dia`] matrix on the device ([`DeviceDia`]), made by [`Gpu::upload_dia`].

use super::Gpu;
use super::memory::addr;
use crate::Result;
use crate::formats::Shape;
use crate::formats::compressed::ValueStorage;
use crate::formats::convert::narrow;
use crate::formats::dia::Dia;
use crate::scalar::Scalar;
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::DiaArgs;
use std::marker::PhantomData;

/// A DIA matrix of `T` with values stored as `V` on the device. Its product is one launch of
/// `spmv_dia_*`, a thread per row.
#[derive(Debug)]
pub struct DeviceDia<T, V = T> {
    offsets: CudaSlice<i64>,
    present: CudaSlice<u32>,
    values: CudaSlice<V>,
    nnz: usize,
    max_rounding: f64,
    args: DiaArgs<V>,
    _matrix: PhantomData<fn() -> T>,
}

impl Gpu {
    /// Uploads a DIA matrix (its conversion checked every dimension and entry).
    pub fn upload_dia<T: Scalar, V: ValueStorage<T>>(&self, a: &Dia<T, V>) -> Result<DeviceDia<T, V>> {
        let rows = narrow("the row count", a.nrows())?;
        let cols = narrow("the column count", a.ncols())?;
        let diagonals = narrow("the diagonal count", a.offsets().len())?;
        let offsets = self.upload(a.offsets())?;
        let present = self.upload(a.present())?;
        let values = self.upload(a.values())?;
        let parts = (offsets, present, values);
        Ok(DeviceDia::from_device_parts(self, parts, (rows, cols, diagonals), a.nnz(), a.max_rounding()))
    }
}

impl<T: Scalar, V: ValueStorage<T>> DeviceDia<T, V> {
    /// A DIA matrix of `rows` rows, `cols` columns and `diagonals` diagonals over its offsets,
    /// presence words and values (`diagonals`, `dia_presence_words(diagonals) * rows` and
    /// `diagonals * rows` elements), holding `nnz` entries, its values rounded by at most
    /// `max_rounding`, whose arrays the caller has filled or fills on the stream before any product
    /// reads them (the DIA copy of a CSR matrix, `enqueue/csr/ell_copy.rs`).
    pub(crate) fn from_device_parts(
        gpu: &Gpu,
        (offsets, present, values): (CudaSlice<i64>, CudaSlice<u32>, CudaSlice<V>),
        (rows, cols, diagonals): (u32, u32, u32),
        nnz: usize,
        max_rounding: f64,
    ) -> Self {
        let args = DiaArgs {
            offsets: addr(&offsets, gpu),
            present: addr(&present, gpu),
            values: addr(&values, gpu),
            rows,
            cols,
            diagonals,
        };
        DeviceDia { offsets, present, values, nnz, max_rounding, args, _matrix: PhantomData }
    }

    /// Its rows, columns and stored entries.
    pub fn shape(&self) -> Shape {
        Shape { nrows: self.args.rows as usize, ncols: self.args.cols as usize, nnz: self.nnz }
    }

    crate::formats::shape_accessors!();

    /// The diagonals' count.
    pub fn diagonals(&self) -> usize {
        self.args.diagonals as usize
    }

    /// The conversion's largest relative rounding of a value (see [`Dia::max_rounding`]).
    pub fn max_rounding(&self) -> f64 {
        self.max_rounding
    }

    /// The diagonals' offsets on the device.
    pub fn offsets(&self) -> &CudaSlice<i64> {
        &self.offsets
    }

    /// The rows' presence words on the device, word-major (see [`Dia::present`]).
    pub fn present(&self) -> &CudaSlice<u32> {
        &self.present
    }

    /// The `diagonals * nrows` values on the device, stored as `V`.
    pub fn values(&self) -> &CudaSlice<V> {
        &self.values
    }

    /// Bytes of the matrix on the device.
    pub fn device_bytes(&self) -> usize {
        self.values.len() * size_of::<V>() + self.present.len() * 4 + self.offsets.len() * 8
    }

    pub(crate) fn args(&self) -> DiaArgs<V> {
        self.args
    }

    pub(crate) fn belongs_to(&self, gpu: &Gpu) -> bool {
        gpu.owns(self.present.context())
    }
}
