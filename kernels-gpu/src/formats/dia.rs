//! DIA with presence words per row (`DiaArgs`): one thread per row, its diagonals a batch of up to
//! 8 at a time, or 16 in the wide walk (Bell & Garland, "Efficient Sparse Matrix-Vector
//! Multiplication on CUDA", NVIDIA TR 2008, section 4.1).
//!
//! Why: ELL's walk, even with 2-byte column offsets (`compressed_ell.rs`), waits twice a row: for
//! the slots' columns, then for the gathers of `x` they address. On a stencil's rows of 5-7 slots
//! that wait, not the bytes, sets the pace: bfloat16 values ran no faster than f32 there (docs/PERF.md,
//! section 30). A matrix whose entries lie on a few diagonals needs no column per entry: entry `d` of
//! row `r` is column `r + offsets[d]`, the offsets being one small array every warp reads from L1.
//! So a row's value loads, its presence word and its gathers of `x` all leave at once, and only the
//! values and a word a row per 32 diagonals stream from memory (4 bytes a row per 32 diagonals,
//! where ELL's offsets take 2 a slot).
//!
//! Bell & Garland store a zero where a row has no entry on a diagonal and multiply it like any
//! other; here the presence bit keeps such a slot out of the sum, so an infinite or NaN `x` there
//! cannot turn the row's result into NaN (the rule every format of the crate keeps). Its gather is
//! still issued (in bounds), since waiting for the word first would bring the second wait back.

use super::widen::Widen;
use crate::abi::{
    Bf16, DIA_EMPTY_SLOT, DIA_MAX_DIAGONALS, DIA_OFFSET_TABLE, DIA_WORD_BITS, DiaFromCsrParams,
    DiaOffsetsParams, DiaParams, F16, dia_presence_words,
};
use crate::arch::{
    Load, atomic_cas_u64, atomic_inc_u32, atomic_max_u32, global_thread, grid_threads, load_relaxed_u32,
    load_relaxed_u64,
};
use crate::real::{Real, store_axpby};

/// Diagonals a thread loads together at most: their values and gathers all in flight at once. 8,
/// or in the wide walk (`abi::DIA_WIDE`) 64 bytes of widened values, 16 diagonals in f32, so that
/// a row of many diagonals waits on fewer rounds of loads; the wide batch's registers cost the
/// matrices of few diagonals more than that gains them, hence two walks (docs/PERF.md, section 31).
/// In f64 the batch's loads leave together only under the register budgets of
/// `abi::REGISTER_BUDGETS`, which a change of the batch must measure again (section 32).
const fn batch<T>(wide: bool) -> usize {
    if wide { 64 / size_of::<T>() } else { 8 }
}
const _: () = assert!(DIA_WORD_BITS as usize % batch::<f32>(true) == 0, "a batch spans one presence word");
const _: () = assert!(DIA_WORD_BITS as usize % batch::<f32>(false) == 0, "a batch spans one presence word");

/// The batch of `$n` diagonals, `$n` one of the sizes listed or the last, largest, one.
macro_rules! sized {
    ($walk:expr, $args:expr, $n:expr; $($size:literal)+; $largest:literal) => {{
        let (sum, offsets, bits, values) = $args;
        match $n {
            $($size => $walk.batch::<V, $size>(sum, offsets, bits, values),)+
            _ => $walk.batch::<V, $largest>(sum, offsets, bits, values),
        }
    }};
}

/// # Safety
/// `p` describes a DIA matrix built by the host (`diagonals <= DIA_MAX_DIAGONALS` increasing
/// offsets, `diagonals * rows` values, `dia_presence_words(diagonals) * rows` presence words with
/// no bit at or past `diagonals`, every present entry's column inside `0 .. cols`) and vectors of
/// matching lengths.
///
/// The walk issues few instructions a row, since at 2-4 bytes an entry the instructions, not the
/// bytes, bound it (Nsight Compute in docs/PERF.md, section 31): the value address is a running
/// pointer, a column one 32-bit add and a clamp, and no load is predicated (see [`Walk::batch`]).
#[inline(always)]
unsafe fn dia<V: Widen<T>, T: Real, const WIDE: bool>(p: DiaParams<V, T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let rows = p.a.rows as usize;
    // No column means no entry (every presence word is 0), and no element of `x` to clamp into.
    let diagonals = if p.a.cols == 0 { 0 } else { p.a.diagonals };
    let last_col = p.a.cols.wrapping_sub(1);
    while row < u64::from(p.a.rows) {
        let r = row as usize;
        let walk = Walk { rows, row: r as u32, last_col, x: p.op.x.as_ptr() };
        // The row's entry on diagonal 0 (no address at all where there are no diagonals, and the
        // values may then be a null slice: wrapping, never loaded).
        let mut values = p.a.values.as_ptr().wrapping_add(r);
        let mut sum = T::ZERO;
        let mut first = 0;
        let mut present = 0;
        while first < diagonals {
            // A batch starts at a multiple of its size, so it never spans two presence words.
            if first % DIA_WORD_BITS == 0 {
                let word = (first / DIA_WORD_BITS) as usize;
                // SAFETY: `word < dia_presence_words(diagonals)`, and `r < rows`.
                present = unsafe { u32::load_nc(p.a.present.as_ptr().add(word * rows + r)) };
            }
            // SAFETY: the batch's diagonals `first .. first + min(batch, diagonals - first)` exist,
            // `values` is at diagonal `first`, and `present`'s bits at or past `diagonals` are clear.
            unsafe {
                let offsets = p.a.offsets.as_ptr().add(first as usize);
                let bits = present >> (first % DIA_WORD_BITS);
                let n = (diagonals - first).min(batch::<T>(WIDE) as u32);
                let args = (sum, offsets, bits, &mut values);
                // `WIDE` is a constant: one match is compiled in, its arms up to its batch alone.
                sum = if WIDE {
                    const { assert!(!WIDE || batch::<T>(true) == 16, "the wide walk is for f32 products") };
                    sized!(walk, args, n; 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; 16)
                } else {
                    sized!(walk, args, n; 1 2 3 4 5 6 7; 8)
                };
            }
            first += batch::<T>(WIDE) as u32;
        }
        // SAFETY: `r < rows`, and row `r` belongs to this thread alone.
        unsafe { store_axpby(p.op.y.as_mut_ptr(), r, p.op.alpha, sum, p.op.beta) };
        row += stride;
    }
}

/// One row's walk: what every batch of its diagonals needs.
#[derive(Clone, Copy)]
struct Walk<T> {
    rows: usize,
    row: u32,
    last_col: u32,
    x: *const T,
}

impl<T: Real> Walk<T> {
    /// `sum` plus the row's present entries on the `N <= 16` consecutive diagonals whose
    /// offsets are at `offsets` and whose presence bits are the low bits of `bits`, in order;
    /// `values` enters at the row's value on the first of them and leaves `N` diagonals further.
    /// `N` is a constant, so that a batch has no dead steps to predicate off: the walk of a
    /// matrix of 5 diagonals is one batch of 5.
    ///
    /// A column is the row plus the offset's low word, modulo 2^32, clamped to `last_col`: an
    /// entry's true column lies in `0 ..= last_col` and is that sum itself; the gather of a step
    /// without an entry reads some element of `x` that its presence bit keeps out of the sum.
    ///
    /// # Safety
    /// The `N` diagonals exist, `*values` is the row's value on the first, `last_col` is the last
    /// column of `x` (at least one), and every bit of `bits` below `N` is set only for an entry.
    #[inline(always)]
    unsafe fn batch<V: Widen<T>, const N: usize>(
        self,
        mut sum: T,
        offsets: *const i64,
        bits: u32,
        values: &mut *const V,
    ) -> T {
        let mut vs = [T::ZERO; N];
        let mut xs = [T::ZERO; N];
        for j in 0..N {
            // SAFETY: offset `j < N` exists; its low word comes first (the target is little-endian).
            let offset = unsafe { u32::load_nc(offsets.add(j).cast()) };
            let col = self.row.wrapping_add(offset).min(self.last_col);
            // SAFETY: `*values` is the row's value on a diagonal that exists; `col <= last_col`.
            unsafe {
                vs[j] = V::load_widened(*values);
                xs[j] = T::load_nc(self.x.add(col as usize));
            }
            // The next diagonal's value lies `rows` further (past the array after the last
            // diagonal, where it is never loaded).
            *values = values.wrapping_add(self.rows);
        }
        for j in 0..N {
            // Predicated, not branched on: a branch would let the compiler sink this step's loads
            // into it, behind the later steps' products.
            sum = vs[j].fma_if(xs[j], sum, bits >> j & 1 != 0);
        }
        sum
    }
}

/// Collects the offsets `column - row` of a CSR matrix's entries in a table of
/// [`DIA_OFFSET_TABLE`] slots, each once (open addressing, a multiplicative hash): the first step of
/// the DIA copy that `Kernel::CsrEllCopy` builds on the device, whose host keeps no columns. Each
/// entry reads its slot from L2 and, only where it finds the slot free, claims it with a
/// compare-and-swap, so a matrix of a few diagonals costs one read an entry and a few atomics in all.
/// A matrix of more diagonals than DIA holds stops the threads as soon as its claims show it: they
/// read the overflow word once a row.
///
/// # Safety
/// `p.csr` is valid CSR of `p.csr.rows` rows; `p.table` holds [`DIA_OFFSET_TABLE`] slots, and
/// `p.claimed` and `p.overflow` one word each, which the kernel changes only atomically.
#[inline(always)]
unsafe fn dia_offsets_from_csr<T: Real>(p: DiaOffsetsParams<T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let slots = DIA_OFFSET_TABLE as usize;
    let table = p.table.as_mut_ptr().cast::<u64>();
    // SAFETY: `overflow` is a valid word (the caller's contract).
    while row < u64::from(p.csr.rows) && unsafe { load_relaxed_u32(p.overflow.as_ptr()) } == 0 {
        let r = row as usize;
        // SAFETY: `r < rows`, so offsets `r` and `r + 1` exist, and the row's entries lie inside the
        // column array; every slot index is below `DIA_OFFSET_TABLE`.
        unsafe {
            let first = u32::load_nc(p.csr.row_offsets.as_ptr().add(r)) as usize;
            let end = u32::load_nc(p.csr.row_offsets.as_ptr().add(r + 1)) as usize;
            for e in first..end {
                let offset = (i64::from(u32::load_nc(p.csr.col_indices.as_ptr().add(e))) - r as i64) as u64;
                let hash = offset.wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let home = (hash >> (u64::BITS - DIA_OFFSET_TABLE.trailing_zeros())) as usize;
                let mut placed = false;
                for probe in 0..slots {
                    let slot = table.add((home + probe) % slots);
                    let mut seen = load_relaxed_u64(slot);
                    if seen == DIA_EMPTY_SLOT as u64 {
                        seen = atomic_cas_u64(slot, DIA_EMPTY_SLOT as u64, offset);
                        if seen == DIA_EMPTY_SLOT as u64
                            && atomic_inc_u32(p.claimed.as_mut_ptr(), u32::MAX) >= DIA_MAX_DIAGONALS
                        {
                            atomic_max_u32(p.overflow.as_mut_ptr(), 1);
                        }
                    }
                    if seen == offset || seen == DIA_EMPTY_SLOT as u64 {
                        placed = true;
                        break;
                    }
                }
                if !placed {
                    atomic_max_u32(p.overflow.as_mut_ptr(), 1);
                }
            }
        }
        row += stride;
    }
}

/// Writes a CSR matrix's values (and, with `pattern`, its presence words) into the DIA copy whose
/// increasing offsets `p.dia.offsets` the host found with `dia_offsets_from_csr`: a thread per row,
/// each entry's diagonal by a binary search of the offsets (at most 128, in L1). A row whose
/// diagonals do not increase entry by entry (a repeated or an out-of-order column) raises
/// `*disordered`: DIA would sum it in another order than CSR's, and the host falls back. Since a
/// row's diagonals increase, its presence words are complete, and written, word by word.
///
/// # Safety
/// `p.csr` is valid CSR of `p.dia.rows` rows; `p.dia.offsets` holds `diagonals` increasing offsets
/// that include every entry's `column - row`; `p.dia` holds `diagonals * rows` values and
/// `dia_presence_words(diagonals) * rows` presence words, written by this kernel alone; with
/// `pattern`, `p.disordered` is one word the kernel changes only atomically.
#[inline(always)]
unsafe fn dia_from_csr<T: Real>(p: DiaFromCsrParams<T>) {
    let (mut row, stride) = (global_thread(), grid_threads());
    let rows = p.dia.rows as usize;
    let words = dia_presence_words(p.dia.diagonals);
    while row < u64::from(p.dia.rows) {
        let r = row as usize;
        // The presence word being built, and its index; the words before it are written.
        let (mut word, mut at) = (0u32, 0u32);
        // SAFETY: `r < rows`; the row's entries lie inside the CSR arrays; every entry's offset is
        // among the `diagonals` offsets, so the search ends on one, `d < diagonals`, and its slot
        // `d * rows + r` lies inside the values, written by this thread alone, as are the row's
        // words `at * rows + r`, `at < words`.
        unsafe {
            let first = u32::load_nc(p.csr.row_offsets.as_ptr().add(r)) as usize;
            let end = u32::load_nc(p.csr.row_offsets.as_ptr().add(r + 1)) as usize;
            let mut next = 0usize;
            for e in first..end {
                let offset = i64::from(u32::load_nc(p.csr.col_indices.as_ptr().add(e))) - r as i64;
                let (mut lo, mut hi) = (0usize, p.dia.diagonals as usize);
                while lo < hi {
                    let mid = (lo + hi) / 2;
                    if i64::load_nc(p.dia.offsets.as_ptr().add(mid)) < offset {
                        lo = mid + 1;
                    } else {
                        hi = mid;
                    }
                }
                *p.dia.values.as_mut_ptr().add(lo * rows + r) = T::load_nc(p.csr.values.as_ptr().add(e));
                if p.pattern != 0 {
                    if lo < next {
                        // The copy is discarded: what the words hold no longer matters.
                        atomic_max_u32(p.disordered.as_mut_ptr(), 1);
                    }
                    let d = lo as u32;
                    while at < d / DIA_WORD_BITS {
                        *p.dia.present.as_mut_ptr().add(at as usize * rows + r) = word;
                        (word, at) = (0, at + 1);
                    }
                    word |= 1 << (d % DIA_WORD_BITS);
                }
                next = lo + 1;
            }
            if p.pattern != 0 {
                while at < words {
                    *p.dia.present.as_mut_ptr().add(at as usize * rows + r) = word;
                    (word, at) = (0, at + 1);
                }
            }
        }
        row += stride;
    }
}

/// The entries of one storage type, product type and walk (wide or not).
macro_rules! dia_entries {
    ($($name:ident: $v:ty, $t:ty, $wide:literal);+ $(;)?) => {$(
        crate::ptx_entry!($name, DiaParams<$v, $t>, dia::<$v, $t, $wide>);
    )+};
}

dia_entries!(
    spmv_dia_f32: f32, f32, false;
    spmv_dia_f64: f64, f64, false;
    spmv_dia_f32_f64: f32, f64, false;
    spmv_dia_f16_f32: F16, f32, false;
    spmv_dia_f16_f64: F16, f64, false;
    spmv_dia_bf16_f32: Bf16, f32, false;
    spmv_dia_bf16_f64: Bf16, f64, false;
    spmv_dia_wide_f32: f32, f32, true;
    spmv_dia_wide_f16_f32: F16, f32, true;
    spmv_dia_wide_bf16_f32: Bf16, f32, true;
    // In f64 a batch of 64 bytes is the narrow walk's 8 diagonals: the wide entry runs that walk
    // under a register budget of its own (`abi::REGISTER_BUDGETS`).
    spmv_dia_wide_f64: f64, f64, false;
);
crate::ptx_entry!(dia_offsets_from_csr_f32, DiaOffsetsParams<f32>, dia_offsets_from_csr::<f32>);
crate::ptx_entry!(dia_offsets_from_csr_f64, DiaOffsetsParams<f64>, dia_offsets_from_csr::<f64>);
crate::ptx_entry!(dia_from_csr_f32, DiaFromCsrParams<f32>, dia_from_csr::<f32>);
crate::ptx_entry!(dia_from_csr_f64, DiaFromCsrParams<f64>, dia_from_csr::<f64>);
