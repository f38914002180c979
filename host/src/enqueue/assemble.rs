//! A [`DeviceCsr`] assembled from COO triples already on the device, repeated (row, column) pairs
//! summed in a fixed order (`kernels-gpu/src/assemble.rs` describes the launches). The assembly
//! keeps its sort, so that new values of the same triples reach the matrix by one launch that may
//! be captured into a graph: what a finite element code needs when it assembles every time step or
//! Newton step (PETSc's `MatSetPreallocationCOO` and `MatSetValuesCOO` are the same pair).

use super::launch::{copy, launch};
use super::transpose::{exclusive_scan, radix_pass};
use crate::device::{DeviceCsr, Gpu, VectorRef, addr};
use crate::formats::coo::{check_triple_sizes, triple_index_verdict};
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaSlice;
use kernels_gpu::abi::{
    self as abi, BLOCK_SIZE, CHECK_BLOCK_SIZE, CHECK_COLUMN, CHECK_NONE, CHECK_SLOTS, CooCompactParams,
    CooHeadsParams, CooIotaParams, CooKeysParams, CooSumParams, CsrCheckParams, DevicePtr as AbiPtr,
    RADIX_BITS, RADIX_DIGITS, RadixParams, ScanParams, TransposeOffsetsParams,
};
use kernels_gpu::index::{grid_blocks, radix_passes, radix_tiles};

/// A CSR matrix assembled on the device from COO triples, with what sums new values of the same
/// triples into it: the triples' sorted order (4 bytes a triple) and where each distinct pair's run
/// of repeats starts (4 bytes an entry).
///
/// ```no_run
/// use gpu_spmv::{CooAssembly, Gpu};
///
/// # fn main() -> Result<(), gpu_spmv::Error> {
/// let gpu = Gpu::new()?;
/// // Two elements' contributions to a 3 x 3 matrix: (1, 1) is assembled from both.
/// let rows = gpu.stream().clone_htod(&[0u32, 0, 1, 1, 1, 2, 2, 1])?;
/// let cols = gpu.stream().clone_htod(&[0u32, 1, 0, 1, 1, 2, 1, 2])?;
/// let values = gpu.upload_vector(&[2.0f64, -1.0, -1.0, 1.0, 1.0, 2.0, -1.0, -1.0])?;
/// let assembly = CooAssembly::new(&gpu, (3, 3), &rows, &cols, &values)?;
/// assert_eq!(assembly.matrix().nnz(), 7);
/// // The next step's values of the same triples: one launch, capturable.
/// let next = gpu.upload_vector(&[4.0f64, -2.0, -2.0, 2.0, 2.0, 4.0, -2.0, -2.0])?;
/// assembly.set_values(&gpu, &next)?;
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct CooAssembly<T> {
    matrix: DeviceCsr<T>,
    triples: usize,
    /// The sum's launch but for the values it reads, which each call gives.
    sum: CooSumParams<T>,
    /// Buffers of `sum`'s addresses: the triples in sorted order, and `distinct + 1` run starts.
    _perm: CudaSlice<u32>,
    _run_starts: CudaSlice<u32>,
}

impl<T: Scalar> CooAssembly<T> {
    /// The matrix of `dims` (rows, columns) whose entries are the triples
    /// `(rows[k], cols[k], values[k])`, each array one of `gpu`'s buffers (a
    /// [`DeviceVector`](crate::DeviceVector) or a `CudaSlice`, `CudaView` or `CudaViewMut`), read in
    /// stream order and left as they are. Each row's entries come sorted by column; the values of a repeated
    /// (row, column) pair are summed in the order of the triples, the same way on every run and as
    /// the CPU reference [`reference::assemble::assemble`](crate::reference::assemble::assemble)
    /// sums them, bit for bit (but for a NaN's payload: the GPU's is canonical). A pair repeated `m` times is summed by one thread in `m` steps.
    ///
    /// Refused before anything is allocated or enqueued, as the CPU reference refuses: arrays of
    /// other lengths ([`Error::DimensionMismatch`]), sizes past the kernels' ([`Error::TooLarge`]);
    /// then an array of another [`Gpu`] ([`Error::ForeignBuffer`]), a stream that is capturing a
    /// graph ([`Error::Unsupported`]: the entry count comes back to the host); then, after a check
    /// on the device, the first triple with a row or column out of range
    /// ([`Error::IndexOutOfRange`]). Waits for the stream (the check's verdict, the entry count and
    /// the row offsets come back to the host).
    pub fn new<R, C, V>(gpu: &Gpu, dims: (usize, usize), rows: &R, cols: &C, values: &V) -> Result<Self>
    where
        R: VectorRef<u32> + ?Sized,
        C: VectorRef<u32> + ?Sized,
        V: VectorRef<T> + ?Sized,
    {
        let [nrows, ncols, n] = check_triple_sizes(dims, [rows.len(), cols.len(), values.len()])?;
        gpu.check_context("the row indices", rows)?;
        gpu.check_context("the column indices", cols)?;
        gpu.check_context("the values", values)?;
        gpu.not_capturing("an assembly while the stream captures a graph")?;
        let (rows_ptr, _rows_guard) = rows.read(gpu.stream());
        let (cols_ptr, _cols_guard) = cols.read(gpu.stream());
        let (values_ptr, _values_guard) = values.read(gpu.stream());
        let input = Triples { rows: AbiPtr::new(rows_ptr), cols: AbiPtr::new(cols_ptr), n, nrows, ncols };
        input.check(gpu, dims)?;
        let sorted = input.sort(gpu)?;
        let distinct = sorted.distinct;
        let (matrix, perm, run_starts) = sorted.compact(gpu, &input, dims)?;
        let sum = CooSumParams {
            perm: addr(&perm, gpu),
            run_starts: addr(&run_starts, gpu),
            values: AbiPtr::new(0),
            out_values: matrix.args().values,
            distinct,
        };
        let assembly = Self { matrix, triples: n as usize, sum, _perm: perm, _run_starts: run_starts };
        assembly.sum(gpu, AbiPtr::new(values_ptr))?;
        Ok(assembly)
    }

    /// The assembled matrix: plans, products and solvers take it like any [`DeviceCsr`].
    pub fn matrix(&self) -> &DeviceCsr<T> {
        &self.matrix
    }

    /// The matrix, without what [`CooAssembly::set_values`] needs.
    pub fn into_matrix(self) -> DeviceCsr<T> {
        self.matrix
    }

    /// How many triples the assembly sums (its values' length).
    pub fn triples(&self) -> usize {
        self.triples
    }

    /// New values of the same triples (`values[k]` for triple `k`, in the order given to
    /// [`CooAssembly::new`]), summed into the matrix's values in stream order, as by
    /// [`DeviceCsr::update_values_from`]: products enqueued after it read them, the transpose is
    /// refreshed, and a solver's Jacobi diagonal is stale until it is given anew. No allocation and
    /// nothing but stream work, so it may be captured into a graph.
    ///
    /// Refused before anything is enqueued: an assembly or values of another [`Gpu`]
    /// ([`Error::ForeignBuffer`]), values of another length than the triples
    /// ([`Error::DimensionMismatch`]), or the matrix's own values, which the sum writes
    /// ([`Error::Unsupported`]).
    pub fn set_values<V: VectorRef<T> + ?Sized>(&self, gpu: &Gpu, values: &V) -> Result<()> {
        if !self.matrix.belongs_to(gpu) {
            return Err(Error::ForeignBuffer("the assembled matrix"));
        }
        gpu.check_operand("the new values", values, self.triples)?;
        let (source, _guard) = values.read(gpu.stream());
        if source == self.sum.out_values.addr() && self.triples > 0 {
            return Err(Error::Unsupported("the assembled matrix's own values as its new values"));
        }
        self.sum(gpu, AbiPtr::new(source))?;
        self.matrix.refresh_derived(gpu)
    }

    /// Enqueues the sum of `values` (one per triple, of `gpu`'s context, not the matrix's values)
    /// into the matrix's values.
    fn sum(&self, gpu: &Gpu, values: AbiPtr<T>) -> Result<()> {
        let params = CooSumParams { values, ..self.sum };
        let grid = grid_blocks(u64::from(params.distinct), BLOCK_SIZE);
        // SAFETY: `perm` and `run_starts` are the assembly's (`distinct + 1` non-decreasing starts
        // into a permutation of the triples), `values` holds one element per triple and does not
        // overlap the matrix's `distinct` values (the callers' checks), all of `gpu`'s context.
        unsafe { launch(gpu, gpu.kernel::<T>(abi::COO_ASSEMBLE_SUM)?, grid, BLOCK_SIZE, 0, &params) }
    }
}

/// The caller's index arrays and the sizes, checked by [`check_triple_sizes`].
struct Triples {
    rows: AbiPtr<u32>,
    cols: AbiPtr<u32>,
    n: u32,
    nrows: u32,
    ncols: u32,
}

/// The triples sorted by (row, column): the sorted row indices, the permutation to the input's
/// order, and the count of distinct pairs, with the exclusive scan of the pairs' heads.
struct Sorted {
    rows: CudaSlice<u32>,
    perm: CudaSlice<u32>,
    positions: CudaSlice<u32>,
    distinct: u32,
}

impl Triples {
    /// The device check of both index arrays against their bounds (`csr_check_u32` on each as a
    /// column list), and the verdict on the first fault.
    fn check(&self, gpu: &Gpu, dims: (usize, usize)) -> Result<()> {
        let found = gpu.upload(&[CHECK_NONE; 2 * CHECK_SLOTS])?;
        let base = addr(&found, gpu).addr();
        let lists = [(self.rows, self.nrows), (self.cols, self.ncols)];
        for (slots, (indices, bound)) in lists.into_iter().enumerate() {
            let params = CsrCheckParams::<u32> {
                row_offsets: AbiPtr::new(0),
                offsets_len: 0,
                col_indices: indices,
                cols_len: u64::from(self.n),
                ncols: u64::from(bound),
                found: AbiPtr::new(base + (slots * CHECK_SLOTS * size_of::<u64>()) as u64),
            };
            let grid = grid_blocks(u64::from(self.n), CHECK_BLOCK_SIZE);
            // SAFETY: `indices` holds `n` elements of `gpu`'s context, `found` `CHECK_SLOTS` at the
            // offset given; with no row offsets the kernel reads only the indices and lowers slots.
            unsafe {
                launch(gpu, gpu.untyped_kernel(abi::CSR_CHECK_U32)?, grid, CHECK_BLOCK_SIZE, 0, &params)?
            };
        }
        let found = gpu.stream().clone_dtoh(&found)?;
        let first = |slots: usize, indices: AbiPtr<u32>| -> Result<Option<(usize, usize)>> {
            let position = found[slots * CHECK_SLOTS + CHECK_COLUMN];
            if position == CHECK_NONE {
                return Ok(None);
            }
            // The kernel lowers a slot only to a position it read, below `n`: anything else is a
            // broken kernel, not a bad input, and no address is formed from it.
            let entry = u32::try_from(position).ok().filter(|&p| p < self.n).ok_or_else(|| {
                Error::InvalidKernel(format!("the index check named position {position} of {}", self.n))
            })?;
            // The one index the verdict names, read back.
            let index = gpu.alloc_zeros::<u32>(1)?;
            let source = AbiPtr::new(indices.addr() + u64::from(entry) * size_of::<u32>() as u64);
            // SAFETY: `entry < n`, inside the caller's array; `index` holds one element.
            unsafe { copy(gpu, addr(&index, gpu), source, 1)? };
            let index = gpu.stream().clone_dtoh(&index)?[0];
            Ok(Some((entry as usize, index as usize)))
        };
        triple_index_verdict(dims, first(0, self.rows)?, first(1, self.cols)?)
    }

    /// The triples sorted by column, then stably by row (radix passes over each index's bits), and
    /// their distinct pairs counted.
    fn sort(&self, gpu: &Gpu) -> Result<Sorted> {
        let n = self.n as usize;
        let tiles = radix_tiles(self.n);
        let counts = RADIX_DIGITS * tiles;
        let keys = [gpu.alloc_zeros::<u32>(n)?, gpu.alloc_zeros::<u32>(n)?];
        let perms = [gpu.alloc_zeros::<u32>(n)?, gpu.alloc_zeros::<u32>(n)?];
        let counts_buffer = gpu.alloc_zeros::<u32>(counts as usize)?;
        let positions = gpu.alloc_zeros::<u32>(n + 1)?;
        let key = [addr(&keys[0], gpu), addr(&keys[1], gpu)];
        let perm = [addr(&perms[0], gpu), addr(&perms[1], gpu)];
        let grid = grid_blocks(u64::from(self.n), BLOCK_SIZE);
        // `passes` stable radix passes of the keys at `keys_in`, carrying the permutation
        // `perm[*perm_at]`; each pass writes the key buffer `keys_in` is not, and the other
        // permutation. Returns the key buffer holding the sorted keys, `None` if no pass ran.
        let radix = |keys_in: AbiPtr<u32>, perm_at: &mut usize, passes: u32| -> Result<Option<usize>> {
            let (mut keys_in, mut keys_at) = (keys_in, None);
            for pass in 0..passes {
                let to = if keys_in.addr() == key[0].addr() { 1 } else { 0 };
                let params = RadixParams {
                    keys_in,
                    perm_in: perm[*perm_at],
                    keys_out: key[to],
                    perm_out: perm[1 - *perm_at],
                    counts: addr(&counts_buffer, gpu),
                    n: self.n,
                    tiles,
                    shift: pass * RADIX_BITS,
                };
                // SAFETY: keys and permutations of `n` elements each, in and out distinct buffers,
                // the counts `RADIX_DIGITS * tiles`, all alive until the assembly ends.
                unsafe { radix_pass(gpu, &params)? };
                (keys_in, keys_at) = (key[to], Some(to));
                *perm_at = 1 - *perm_at;
            }
            Ok(keys_at)
        };
        let mut perm_at = 0;
        let iota = CooIotaParams { perm: perm[perm_at], n: self.n };
        // SAFETY: the permutation holds `n` elements.
        unsafe { launch(gpu, gpu.untyped_kernel(abi::COO_ASSEMBLE_IOTA)?, grid, BLOCK_SIZE, 0, &iota)? };
        let column_keys = radix(self.cols, &mut perm_at, radix_passes(self.ncols))?;
        // The row indices in the column order, into the key buffer the column keys are not in.
        let rows_at = if column_keys == Some(0) { 1 } else { 0 };
        let gathered =
            CooKeysParams { perm: perm[perm_at], source: self.rows, keys: key[rows_at], n: self.n };
        // SAFETY: the permutation and the keys hold `n` elements, the row indices `n`; the keys'
        // buffer is neither input.
        unsafe { launch(gpu, gpu.untyped_kernel(abi::COO_ASSEMBLE_KEYS)?, grid, BLOCK_SIZE, 0, &gathered)? };
        let rows_at = radix(key[rows_at], &mut perm_at, radix_passes(self.nrows))?.unwrap_or(rows_at);
        let heads = CooHeadsParams {
            rows: key[rows_at],
            cols: self.cols,
            perm: perm[perm_at],
            heads: addr(&positions, gpu),
            n: self.n,
        };
        let scan = ScanParams { data: heads.heads, len: self.n + 1 };
        let heads_grid = grid_blocks(u64::from(self.n) + 1, BLOCK_SIZE);
        // SAFETY: sorted rows and permutation of `n` elements, the caller's `n` columns, `n + 1`
        // heads (scanned in place by the one block of the scan).
        unsafe {
            launch(gpu, gpu.untyped_kernel(abi::COO_ASSEMBLE_HEADS)?, heads_grid, BLOCK_SIZE, 0, &heads)?;
            exclusive_scan(gpu, &scan)?;
        }
        let distinct = gpu.stream().clone_dtoh(&positions.slice(n..))?[0];
        let [k0, k1] = keys;
        let [p0, p1] = perms;
        let rows = if rows_at == 0 { k0 } else { k1 };
        let perm = if perm_at == 0 { p0 } else { p1 };
        Ok(Sorted { rows, perm, positions, distinct })
    }
}

impl Sorted {
    /// The matrix's arrays from the sorted triples (its values not yet summed), with the permutation
    /// and the run starts its sums read.
    fn compact<T: Scalar>(
        self,
        gpu: &Gpu,
        input: &Triples,
        dims: (usize, usize),
    ) -> Result<(DeviceCsr<T>, CudaSlice<u32>, CudaSlice<u32>)> {
        let distinct = self.distinct as usize;
        let run_starts = gpu.alloc_zeros::<u32>(distinct + 1)?;
        let out_rows = gpu.alloc_zeros::<u32>(distinct)?;
        let col_indices = gpu.alloc_zeros::<u32>(distinct)?;
        let values = gpu.alloc_zeros::<T>(distinct)?;
        let row_offsets = gpu.alloc_zeros::<u32>(dims.0 + 1)?;
        let compact = CooCompactParams {
            rows: addr(&self.rows, gpu),
            cols: input.cols,
            perm: addr(&self.perm, gpu),
            positions: addr(&self.positions, gpu),
            n: input.n,
            run_starts: addr(&run_starts, gpu),
            out_rows: addr(&out_rows, gpu),
            out_cols: addr(&col_indices, gpu),
        };
        let offsets = TransposeOffsetsParams {
            keys: compact.out_rows,
            nnz: self.distinct,
            offsets: addr(&row_offsets, gpu),
            cols: input.nrows,
        };
        let offsets_grid = grid_blocks(u64::from(input.nrows) + 1, BLOCK_SIZE);
        // SAFETY: the sorted triples as `heads` took them, the scanned heads (`n + 1`, the last
        // `distinct`), `distinct + 1` run starts and `distinct` rows and columns out; then the
        // `distinct` sorted rows and `nrows + 1` offsets.
        unsafe {
            let grid = grid_blocks(u64::from(input.n) + 1, BLOCK_SIZE);
            launch(gpu, gpu.untyped_kernel(abi::COO_ASSEMBLE_COMPACT)?, grid, BLOCK_SIZE, 0, &compact)?;
            launch(gpu, gpu.untyped_kernel(abi::CSRT_BUILD_OFFSETS)?, offsets_grid, BLOCK_SIZE, 0, &offsets)?;
        }
        let host_offsets = gpu.stream().clone_dtoh(&row_offsets)?;
        let matrix = DeviceCsr::from_device_parts(
            gpu,
            (input.nrows, dims.1),
            host_offsets,
            [row_offsets, col_indices],
            values,
        );
        Ok((matrix, self.perm, run_starts))
    }
}
