//! CSR on the streaming engine: windows of consecutive rows (the row blocks of CSR-Adaptive,
//! Greathouse & Daga, SC 2014, section 3, sized for a block and a bulk copy rather than a warp),
//! each moved into a stage of the block's [`Ring`] by three bulk copies: its row offsets, column
//! indices and values.
//!
//! A window of rows `r0 .. r1` holding entries `e0 .. e1` (at most [`STREAM_WINDOW_ENTRIES`] and
//! [`STREAM_WINDOW_ROWS`]) is consumed by the block's eight consumer warps in two steps:
//! 1. *products*: thread `c` takes entries `e0 + c + 256 j`, reads their columns from the stage,
//!    gathers their `x` (all of its gathers issued before the first is used) and overwrites each value
//!    with its product; meanwhile the threads of the window's rows load their `y` (when `beta != 0`);
//! 2. *rows*, after a barrier of the consumers: groups of `width` threads (the host's choice per
//!    window, so that a group takes at most 8 entries of the window's longest row) sum a row's
//!    products, lane `l` of the group the entries `l, l + width, ...`, then a butterfly, and lane 0
//!    writes `y`.
//!
//! The producer fills the ring ahead of them. Rows too long for a window take the long-row chunk
//! path of `csr/long_rows.rs` in the launch's first blocks, as in the balanced kernel.
//!
//! Deterministic: a row's sum depends on the pattern alone (its window's width). Bytes read from DRAM
//! are those of one pass over the arrays: windows copy whole 16-byte units, so neighbouring windows
//! share at most a unit at each edge, which L2 serves the second time.

use super::{Ring, Span};
use crate::abi::{
    CsrStreamParams, STREAM_BLOCK_SIZE, STREAM_CONSUMER_WARPS, STREAM_WINDOW_ENTRIES, STREAM_WINDOW_WORDS,
    WARP_SIZE, stream_window_unshape,
};
use crate::arch::hopper::named_barrier;
use crate::arch::{Load, block_idx, grid_dim, sync_threads, thread_idx};
use crate::csr::long_rows::{Batched, long_row_chunk};
use crate::real::Real;

const CONSUMERS: u32 = STREAM_CONSUMER_WARPS * WARP_SIZE;
/// Entries of a window per consumer thread in the products step.
const STEPS: usize = (STREAM_WINDOW_ENTRIES / CONSUMERS) as usize;
/// The hardware barrier the consumers meet at between the two steps (0 is the block's).
const CONSUMER_BARRIER: u32 = 1;

/// # Safety
/// `p` describes a validated CSR matrix, vectors of matching lengths, windows and a long-row split
/// built by the host as [`CsrStreamParams`] says, `stages > 0`; the arrays are 16-byte aligned; the
/// block has [`STREAM_BLOCK_SIZE`] threads and
/// [`StreamStage::block_bytes`](crate::abi::StreamStage::block_bytes)`(size_of::<T>(), stages)` bytes
/// of dynamic shared memory; the grid has `chunk_blocks` blocks, a warp for each chunk, then the
/// window blocks.
#[inline(always)]
unsafe fn csr_stream<T: Real>(p: CsrStreamParams<T>) {
    let block = block_idx();
    let warp = thread_idx() / WARP_SIZE;
    // SAFETY: forwarded from the caller; the branch is block-uniform, so every thread of a window
    // block reaches the block barrier.
    unsafe {
        if block < p.chunk_blocks {
            let chunk = block * (STREAM_BLOCK_SIZE / WARP_SIZE) + warp;
            if chunk < p.long.chunks {
                long_row_chunk::<T, Batched>(&p.a, &p.op, &p.long, chunk as usize);
            }
            return;
        }
        let ring = Ring::new(size_of::<T>() as u32, p.stages);
        if thread_idx() == 0 {
            ring.init();
        }
        sync_threads();
        let (first, stride) = (block - p.chunk_blocks, grid_dim() - p.chunk_blocks);
        if warp == STREAM_CONSUMER_WARPS {
            if thread_idx() % WARP_SIZE == 0 {
                produce(&p, &ring, first, stride);
            }
        } else {
            consume(&p, &ring);
        }
    }
}

/// The producer: windows `first, first + stride, ...`, one use of the ring each, then an end marker.
///
/// # Safety
/// As [`csr_stream`]; one thread of the block calls it, after the ring's initialisation.
#[inline(always)]
unsafe fn produce<T: Real>(p: &CsrStreamParams<T>, ring: &Ring, first: u32, stride: u32) {
    let elem = size_of::<T>() as u32;
    let layout = ring.layout();
    let bounds = p.window_bounds.as_ptr();
    // SAFETY: windows below `p.windows` have their records at `bounds`; each record's rows and
    // entries lie inside the arrays; the stage regions hold the spans (`StreamStage`).
    unsafe {
        let record = |w: u32| -> [u32; STREAM_WINDOW_WORDS] {
            let at = bounds.add(w as usize * STREAM_WINDOW_WORDS);
            core::array::from_fn(|k| u32::load_nc(at.add(k)))
        };
        let (mut w, mut use_) = (first, 0);
        // The next record is loaded a window ahead, so its latency overlaps the wait for a stage.
        let mut next = if w < p.windows { record(w) } else { [0; STREAM_WINDOW_WORDS] };
        while w < p.windows {
            let window = next;
            if w + stride < p.windows {
                next = record(w + stride);
            }
            ring.wait_empty(use_);
            let header = ring.stage(use_).cast::<u32>();
            for (k, &word) in window.iter().enumerate() {
                *header.add(k) = word;
            }
            let [r0, r1, e0, shape] = window;
            let e1 = e0 + stream_window_unshape(shape).0;
            let rows = Span::new(r0, r1 + 1, p.a.rows + 1, 4);
            let cols = Span::new(e0, e1, p.nnz, 4);
            let vals = Span::new(e0, e1, p.nnz, elem);
            ring.arrive_full(use_, rows.bytes(4) + cols.bytes(4) + vals.bytes(elem));
            ring.copy(use_, layout.offsets, p.a.row_offsets.as_ptr().cast(), rows, 4);
            ring.copy(use_, layout.cols, p.a.col_indices.as_ptr().cast(), cols, 4);
            ring.copy(use_, layout.values, p.a.values.as_ptr().cast(), vals, elem);
            w += stride;
            use_ += 1;
        }
        ring.wait_empty(use_);
        *ring.stage(use_).cast::<u32>() = END;
        ring.arrive_full(use_, 0);
    }
}

/// The first word of the header of the use after the producer's last window.
const END: u32 = u32::MAX;

/// A window as a consumer sees it in its stage: the header's rows and entries, and where each array
/// part lies.
#[derive(Clone, Copy)]
struct Window<T> {
    r0: u32,
    r1: u32,
    e0: u32,
    e1: u32,
    width: u32,
    offsets: Span,
    cols: Span,
    values: Span,
    s_offsets: *const u32,
    s_cols: *const u32,
    s_values: *mut T,
    s_y: *mut T,
}

impl<T: Real> Window<T> {
    /// The window of use `use_` once it is full, or `None` at the end marker.
    ///
    /// # Safety
    /// [`Ring::wait_full`] returned for `use_`.
    #[inline(always)]
    unsafe fn read(p: &CsrStreamParams<T>, ring: &Ring, use_: u32) -> Option<Self> {
        let elem = size_of::<T>() as u32;
        let layout = ring.layout();
        let stage = ring.stage(use_);
        // SAFETY: a full stage holds its window's header (the producer's contract); the regions lie in
        // the stage (`StreamStage`).
        unsafe {
            let header = stage.cast::<u32>();
            let r0 = *header;
            if r0 == END {
                return None;
            }
            let (r1, e0) = (*header.add(1), *header.add(2));
            let (entries, width) = stream_window_unshape(*header.add(3));
            let e1 = e0 + entries;
            Some(Self {
                r0,
                r1,
                e0,
                e1,
                width,
                offsets: Span::new(r0, r1 + 1, p.a.rows + 1, 4),
                cols: Span::new(e0, e1, p.nnz, 4),
                values: Span::new(e0, e1, p.nnz, elem),
                s_offsets: stage.add(layout.offsets as usize).cast(),
                s_cols: stage.add(layout.cols as usize).cast(),
                s_values: stage.add(layout.values as usize).cast(),
                s_y: stage.add(layout.y as usize).cast(),
            })
        }
    }

    /// Thread `c`'s gathers: `x` at the columns of entries `e0 + c + 256 j`, all issued before any is
    /// used. Entries past `e1` are clamped to `e1 - 1` so that every gather is unconditional; the
    /// caller drops their products.
    ///
    /// # Safety
    /// The window is full; its columns are below the length of `x` (host validation).
    #[inline(always)]
    unsafe fn gather(&self, p: &CsrStreamParams<T>, c: u32) -> [T; STEPS] {
        if self.e0 == self.e1 {
            return [T::ZERO; STEPS];
        }
        // SAFETY: every index is below `e1 <= nnz`, in the stage when the span has it.
        unsafe {
            let col: [u32; STEPS] = core::array::from_fn(|j| {
                let k = (self.e0 + c + j as u32 * CONSUMERS).min(self.e1 - 1);
                if self.cols.has(k) {
                    *self.s_cols.add((k - self.cols.lo) as usize)
                } else {
                    u32::load_nc(p.a.col_indices.as_ptr().add(k as usize))
                }
            });
            core::array::from_fn(|j| T::load_nc(p.op.x.as_ptr().add(col[j] as usize)))
        }
    }

    /// Thread `c`'s products, in place of their values, and `y` at the window's row `c` when
    /// `beta != 0`.
    ///
    /// # Safety
    /// As [`Window::gather`], with `xs` its result; the window's rows are this block's.
    #[inline(always)]
    unsafe fn products(&self, p: &CsrStreamParams<T>, c: u32, xs: [T; STEPS]) {
        // SAFETY: every index is below `e1 <= nnz`; the slot of entry `k` is `k - values.lo`, inside
        // the values region; row `r0 + c` is below `r1 <= rows`.
        unsafe {
            for (j, &xj) in xs.iter().enumerate() {
                let k = self.e0 + c + j as u32 * CONSUMERS;
                if k < self.e1 {
                    let slot = self.s_values.add((k - self.values.lo) as usize);
                    let v = if self.values.has(k) {
                        *slot
                    } else {
                        T::load_nc(p.a.values.as_ptr().add(k as usize))
                    };
                    *slot = v * xj;
                }
            }
            if p.op.beta != T::ZERO && self.r0 + c < self.r1 {
                *self.s_y.add(c as usize) = *p.op.y.as_ptr().add((self.r0 + c) as usize);
            }
        }
    }

    /// The rows: `CONSUMERS / width` groups, a row each per pass, lane `l` of a group summing the
    /// row's products `l, l + width, ...`, then a butterfly; lane 0 writes `y`. The pass count is the
    /// same for every thread, so every lane reaches the shuffles.
    ///
    /// # Safety
    /// Every consumer's [`Window::products`] of this window is ordered before (a consumer barrier);
    /// the window's rows are written by this block alone.
    #[inline(always)]
    unsafe fn rows(&self, p: &CsrStreamParams<T>, c: u32) {
        let offset = |r: u32| {
            // SAFETY: `r <= r1 <= rows`, in the stage when the span has it.
            unsafe {
                if self.offsets.has(r) {
                    *self.s_offsets.add((r - self.offsets.lo) as usize)
                } else {
                    u32::load_nc(p.a.row_offsets.as_ptr().add(r as usize))
                }
            }
        };
        let width = self.width;
        let groups = CONSUMERS / width;
        let (group, lane) = (c / width, c % width);
        let rows = self.r1 - self.r0;
        let mut base = 0;
        while base < rows {
            let row = base + group;
            let mut sum = T::ZERO;
            if row < rows {
                let (start, end) = (offset(self.r0 + row), offset(self.r0 + row + 1));
                let mut k = start + lane;
                while k < end {
                    // SAFETY: entries of the window's rows are in `e0 .. e1`, their slots in the region.
                    sum = sum + unsafe { *self.s_values.add((k - self.values.lo) as usize) };
                    k += width;
                }
            }
            let mut step = width / 2;
            while step > 0 {
                sum = sum + sum.shfl_xor(step);
                step /= 2;
            }
            if row < rows && lane == 0 {
                // SAFETY: row `r0 + row < r1 <= rows`, this thread's alone; `s_y` holds `y` at the
                // window's rows when `beta != 0`.
                unsafe {
                    let out = p.op.y.as_mut_ptr().add((self.r0 + row) as usize);
                    *out = if p.op.beta == T::ZERO {
                        p.op.alpha * sum
                    } else {
                        p.op.alpha.fma(sum, p.op.beta * *self.s_y.add(row as usize))
                    };
                }
            }
            base += groups;
        }
    }
}

/// A consumer thread: the ring's uses in order until the end marker, software-pipelined by one
/// window: the gathers of use `i + 1` are issued before the rows of use `i` are summed, so that their
/// latency, the consumers' longest wait, overlaps that work instead of adding to it.
///
/// # Safety
/// As [`csr_stream`]; every consumer thread of the block calls it.
#[inline(always)]
unsafe fn consume<T: Real>(p: &CsrStreamParams<T>, ring: &Ring) {
    let c = thread_idx();
    let mut use_ = 0;
    // SAFETY: each use is read after it is full and released after the thread's last access to it;
    // every consumer thread takes the same uses and barriers, in the same order.
    unsafe {
        ring.wait_full(use_);
        let Some(mut window) = Window::read(p, ring, use_) else { return };
        let mut xs = window.gather(p, c);
        loop {
            window.products(p, c, xs);
            named_barrier(CONSUMER_BARRIER, CONSUMERS);
            ring.wait_full(use_ + 1);
            let next = Window::read(p, ring, use_ + 1);
            if let Some(next) = &next {
                xs = next.gather(p, c);
            }
            window.rows(p, c);
            ring.release(use_);
            use_ += 1;
            match next {
                Some(next) => window = next,
                None => return,
            }
        }
    }
}

crate::ptx_entry!(sm_90 spmv_csr_stream_f32, CsrStreamParams<f32>, csr_stream::<f32>);
crate::ptx_entry!(sm_90 spmv_csr_stream_f64, CsrStreamParams<f64>, csr_stream::<f64>);
