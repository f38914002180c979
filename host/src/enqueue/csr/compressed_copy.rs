//! [`Kernel::CsrCompressedCopy`](super::Kernel::CsrCompressedCopy): the matrix's column indices
//! compressed on the device as [`CompressedCsr`](crate::formats::CompressedCsr) compresses them (a
//! base column and 16-bit offsets per segment of 32 rows, plain columns where a segment spans
//! too far), the first time a plan asks for them, and kept by the [`DeviceCsr`] beside its other
//! strategies' data.
//!
//! Why: on the large regular matrices whose rows do not suit the ELL copy (rows of a few hundred
//! entries, or of unequal length), every CSR kernel, ours and cuSPARSE's, stops at 81-88% of the
//! streaming-read floor with the DRAM waiting on a warp's row (docs/PERF.md, sections 34 and 36),
//! while the compressed-index kernel reads 2 bytes a column fewer and reached 96-107% of the CSR
//! floor there (section 37). The copy holds only the columns: its product reads the matrix's own
//! row offsets and values, so it costs about 2 bytes an entry of device memory, and new values
//! need no refresh. The kernel's row walk and sums are the vector kernel's at the same width, so
//! `y` is bit for bit what [`Kernel::CsrVector`](super::Kernel::CsrVector) (or, at one lane,
//! [`Kernel::CsrScalar`](super::Kernel::CsrScalar)) gives.

use super::super::launch::launch;
use crate::Result;
use crate::device::{CompressedColumns, DeviceCsr, Gpu, addr};
use crate::formats::compressed::{SEGMENT_ROWS, SegmentTable};
use crate::scalar::Scalar;
use kernels_gpu::abi::{self, BLOCK_SIZE, CompressedColumnsParams, CompressedHeadsParams, WARP_SIZE};
use kernels_gpu::index::grid_blocks;

/// The compressed columns of `a`, built (and waited for) on the first call: any matrix converts,
/// the segments whose columns span too far keeping plain columns. Refused while the stream captures
/// a graph, which cannot allocate them.
pub(super) fn compressed_columns<'a, T: Scalar>(
    a: &'a DeviceCsr<T>,
    gpu: &Gpu,
) -> Result<&'a CompressedColumns<T>> {
    a.compressed_columns_or_build(|| {
        let heads = heads(a, gpu)?;
        build(a, gpu, &SegmentTable::new(&heads, |s| segment_entries(a, s)))
    })
}

/// Auto's look: whether `a`'s compressed columns take at most `max_column_bytes` times the 4 bytes
/// an entry of its CSR columns. Finding out costs a pass over the columns and the heads' download
/// (4 bytes a segment of 32 rows), once per matrix: where they do, the columns are built and kept;
/// where they do not, nothing is kept but the answer. Columns a plan of
/// [`Kernel::CsrCompressedCopy`](super::Kernel::CsrCompressedCopy) built before are judged by the
/// same bound.
pub(super) fn compressed_columns_pay<T: Scalar>(
    a: &DeviceCsr<T>,
    gpu: &Gpu,
    max_column_bytes: f64,
) -> Result<bool> {
    let pays = |bytes: usize| bytes as f64 <= max_column_bytes * (4 * a.nnz()) as f64;
    let columns = a.compressed_columns_if(|| {
        let heads = heads(a, gpu)?;
        let table = SegmentTable::new(&heads, |s| segment_entries(a, s));
        if pays(table.column_bytes()) { build(a, gpu, &table).map(Some) } else { Ok(None) }
    })?;
    Ok(columns.is_some_and(|built| pays(built.device_bytes())))
}

/// The entries of segment `s` of `a`, from the row offsets the matrix keeps on the host.
fn segment_entries<T: Scalar>(a: &DeviceCsr<T>, s: usize) -> usize {
    let offsets = a.host_offsets();
    let end = ((s + 1) * SEGMENT_ROWS).min(a.nrows());
    (offsets[end] - offsets[s * SEGMENT_ROWS]) as usize
}

/// The head of each segment of `a`, found on the device (`compressed_heads_from_csr`) and read
/// back.
fn heads<T: Scalar>(a: &DeviceCsr<T>, gpu: &Gpu) -> Result<Vec<u32>> {
    let segments = a.nrows().div_ceil(SEGMENT_ROWS);
    if segments == 0 {
        return Ok(Vec::new());
    }
    let heads = gpu.alloc_zeros::<u32>(segments)?;
    let params = CompressedHeadsParams { csr: a.args(), heads: addr(&heads, gpu) };
    let grid = grid_blocks(segments as u64 * u64::from(WARP_SIZE), BLOCK_SIZE);
    // SAFETY: `a` is valid CSR (by construction of `DeviceCsr`) in `gpu`'s context, as is `heads`, a
    // word for each of its segments; blocks of `BLOCK_SIZE` are whole warps, which grid-stride over
    // the segments.
    unsafe { launch(gpu, gpu.kernel::<T>(abi::COMPRESSED_HEADS_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params)? };
    Ok(gpu.stream().clone_dtoh(&heads)?)
}

/// The compressed columns of `a` laid out by `table` (made from the heads the device found for
/// `a`), written on the device and waited for: published to the matrix, they may be read on any
/// stream.
fn build<T: Scalar>(a: &DeviceCsr<T>, gpu: &Gpu, table: &SegmentTable<'_>) -> Result<CompressedColumns<T>> {
    let segments = gpu.upload(&table.segments())?;
    let (deltas, escapes) = table.streams();
    let (deltas, escapes) = (gpu.alloc_zeros::<u16>(deltas)?, gpu.alloc_zeros::<u32>(escapes)?);
    let columns = CompressedColumns::from_device_parts(gpu, a.args(), segments, deltas, escapes);
    let args = columns.args();
    let params = CompressedColumnsParams {
        csr: a.args(),
        segments: args.segments,
        deltas: args.deltas,
        escapes: args.escapes,
    };
    let grid = grid_blocks(a.nrows().div_ceil(SEGMENT_ROWS) as u64 * u64::from(WARP_SIZE), BLOCK_SIZE);
    if grid > 0 {
        // SAFETY: `a` is valid CSR in `gpu`'s context, as are the copy's arrays; the table holds
        // two words for each segment of `a`, made by `SegmentTable` from the heads
        // `compressed_heads_from_csr` found for `a`, so each entry's place lies inside the stream
        // of its segment's kind, sized by the same table, and a compressed segment's columns lie
        // within `u16::MAX` above its head. Blocks of whole warps grid-stride over the segments.
        unsafe {
            launch(gpu, gpu.kernel::<T>(abi::COMPRESSED_COLUMNS_FROM_CSR)?, grid, BLOCK_SIZE, 0, &params)?;
        }
    }
    gpu.synchronize()?;
    Ok(columns)
}
