//! ILU(0) and IC(0) factorised on the device (`kernels-gpu/src/ilu_factor.rs`) into the layout the
//! solves read ([`DeviceIlu`]): the pattern data of `reference::ilu_pattern` uploaded once, then a
//! factorisation is the zeroing of the fault slots and the lower solve's launches
//! (`ilu_launches`: a wide level a launch, a run of narrow levels one block), nothing allocated and
//! nothing read back, so that it can be repeated for new values of the same pattern on the stream
//! and captured in a graph. The faults are read by [`DeviceFactorisation::verify`], which waits for
//! the stream.

use super::krylov::{DeviceIlu, largest_block};
use super::launch::launch;
use crate::device::{DeviceCsr, Gpu, addr};
use crate::reference::ilu_pattern::{FactorKind, FactorPattern, verdict};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{self as abi, ILU_FAULTS, IluFactorParams};

/// The device side of a factorisation's pattern ([`FactorPattern`]) and its work pattern's values.
#[derive(Debug)]
pub(crate) struct DeviceFactorisation<T> {
    kind: FactorKind,
    n: usize,
    a_nnz: usize,
    /// The work pattern's diagonal positions, for the pivot a fault names.
    diagonal: Vec<u32>,
    /// `FactorPattern::device_arrays`, in its order.
    sources: CudaSlice<u32>,
    offsets: CudaSlice<u32>,
    cols: CudaSlice<u32>,
    diagonals: CudaSlice<u32>,
    lower_at: CudaSlice<u32>,
    pivot_at: CudaSlice<u32>,
    upper_slots: CudaSlice<u32>,
    work: CudaSlice<T>,
    faults: CudaSlice<u32>,
}

impl<T: Scalar> DeviceFactorisation<T> {
    /// The pattern data of `a` (its column indices read back, the stream waited for), the solves'
    /// layout of its factors, and `a` factorised into it and checked. Refused: `a` of another
    /// `Gpu`, the pattern as [`FactorPattern::new`] refuses it, the factorisation as
    /// [`DeviceFactorisation::verify`] does, and while the stream captures a graph.
    pub fn new(gpu: &Gpu, kind: FactorKind, a: &DeviceCsr<T>) -> Result<(Self, DeviceIlu<T>)> {
        gpu.not_capturing("a factorisation's setup while the stream captures a graph")?;
        check_matrix(gpu, a)?;
        let cols = gpu.stream().clone_dtoh(a.col_indices())?;
        let pattern = FactorPattern::of_device(kind, a.nrows(), a.ncols(), a.host_offsets(), &cols)?;
        let (lower, upper) = pattern.levels();
        let mut ilu =
            DeviceIlu::upload_scheduled(gpu, &pattern.zero_factors::<T>(), lower.clone(), upper.clone())?;
        let [sources, offsets, cols, diagonals, lower_at, pivot_at, upper_slots] =
            pattern.device_arrays().map(|array| gpu.upload(array));
        let mut factorisation = Self {
            kind,
            n: pattern.n(),
            a_nnz: pattern.a_nnz(),
            diagonal: pattern.diagonal().to_vec(),
            sources: sources?,
            offsets: offsets?,
            cols: cols?,
            diagonals: diagonals?,
            lower_at: lower_at?,
            pivot_at: pivot_at?,
            upper_slots: upper_slots?,
            work: gpu.alloc_zeros(pattern.work_nnz())?,
            faults: gpu.alloc_zeros(ILU_FAULTS)?,
        };
        factorisation.enqueue(gpu, &mut ilu, a)?;
        factorisation.verify(gpu, &ilu)?;
        Ok((factorisation, ilu))
    }

    /// Enqueues the factorisation of `a`'s values into `ilu`, the layout [`DeviceFactorisation::new`]
    /// made with this: the fault slots zeroed, then the lower schedule's launches. Nothing is
    /// allocated or read back. Refused before anything is enqueued: `a` or `ilu` of another `Gpu`,
    /// `a` of another order or entry count than the pattern's. `a` is read through the pattern's
    /// map of its entries, so it must have the pattern the factorisation was made for (its values
    /// updated, [`DeviceCsr::update_values`]); one of the same order and entry count with another
    /// pattern is read safely, into wrong factors.
    pub fn enqueue(&mut self, gpu: &Gpu, ilu: &mut DeviceIlu<T>, a: &DeviceCsr<T>) -> Result<()> {
        gpu.check_context("the factorisation's pattern", &self.work)?;
        gpu.check_context("the ILU(0) factors", &ilu.lower.rows)?;
        check_matrix(gpu, a)?;
        for (what, expected, got) in
            [("the matrix's rows", self.n, a.nrows()), ("the matrix's entries", self.a_nnz, a.nnz())]
        {
            if got != expected {
                return Err(Error::DimensionMismatch { what, expected, got });
            }
        }
        gpu.stream().memset_zeros(&mut self.faults)?;
        let entry = match self.kind {
            FactorKind::Ilu0 => abi::ILU_FACTOR,
            FactorKind::Ic0 => abi::IC_FACTOR,
        };
        let kernel = gpu.kernel::<T>(entry)?;
        let most = largest_block(kernel)?;
        let base = IluFactorParams {
            rows: addr(&ilu.lower.rows, gpu),
            starts: addr(&ilu.lower.starts, gpu),
            first_level: 0,
            levels: 0,
            a_offsets: addr(a.row_offsets(), gpu),
            a_values: addr(a.values(), gpu),
            sources: addr(&self.sources, gpu),
            offsets: addr(&self.offsets, gpu),
            cols: addr(&self.cols, gpu),
            diagonal: addr(&self.diagonals, gpu),
            work: addr(&self.work, gpu),
            lower_at: addr(&self.lower_at, gpu),
            pivot_at: addr(&self.pivot_at, gpu),
            upper_slots: addr(&self.upper_slots, gpu),
            lower_values: addr(&ilu.lower.values, gpu),
            upper_values: addr(&ilu.upper.values, gpu),
            pivots: addr(&ilu.upper.pivots, gpu),
            faults: addr(&self.faults, gpu),
        };
        for l in &ilu.lower.launches {
            let params = IluFactorParams { first_level: l.first_level, levels: l.levels, ..base };
            // SAFETY: the arrays of one `FactorPattern` (this type's only maker) and the layout
            // `DeviceIlu::upload_scheduled` made of its factors' pattern and schedules (`ilu` is
            // the one `new` returned: the caller's contract, every slot inside its arrays); the
            // lower schedule is the work pattern's (a row's `L` part names rows of earlier
            // levels, launched before on the stream or before a barrier of a run's one block);
            // `a` has the pattern's order and entry count (checked above), so its offsets bound
            // the sources and values; every buffer is of `gpu`'s context and a buffer of its
            // own; the fault slots were zeroed before on the stream. Any block size serves: the
            // threads stride over each level.
            unsafe { launch(gpu, kernel, l.grid, l.block.min(most), 0, &params)? };
        }
        Ok(())
    }

    /// Waits for the stream and reads the last factorisation's faults: refused as the host
    /// factorisation refuses values (an entry not finite, [`Error::InvalidNumber`]; the first row
    /// whose pivot is zero or not finite or has no finite inverse in `T`,
    /// [`SolveError::ZeroPivot`](crate::solve::SolveError::ZeroPivot), or for IC(0) is not positive,
    /// [`SolveError::NonPositivePivot`](crate::solve::SolveError::NonPositivePivot), naming the row
    /// and the pivot; a factor entry not finite, [`Error::InvalidNumber`]), and while the stream
    /// captures a graph.
    pub fn verify(&self, gpu: &Gpu, ilu: &DeviceIlu<T>) -> Result<()> {
        gpu.not_capturing("a check of the factorisation while the stream captures a graph")?;
        let stream = gpu.stream();
        let faults: [u32; ILU_FAULTS] = stream
            .clone_dtoh(&self.faults)?
            .try_into()
            .map_err(|_| Error::LayoutMismatch("the fault slots"))?;
        let work = |k: usize| Ok(stream.clone_dtoh(&self.work.slice(k..=k))?[0].to_f64());
        let first_nonfinite = || {
            let mut all = Vec::new();
            for values in [&ilu.lower.values, &ilu.upper.pivots, &ilu.upper.values] {
                all.extend(stream.clone_dtoh(values)?);
            }
            Ok(all.iter().map(|v| v.to_f64()).find(|v| !v.is_finite()).unwrap_or(f64::NAN))
        };
        verdict(self.kind, &self.diagonal, faults, work, first_nonfinite)
    }
}

/// `a` is of `gpu`'s context ([`Error::ForeignBuffer`]).
fn check_matrix<T: Scalar>(gpu: &Gpu, a: &DeviceCsr<T>) -> Result<()> {
    gpu.check_context("the matrix", a.values())
}
