//! The check of CSR index arrays that are already on the device (a matrix assembled there, or a
//! cuSPARSE user's arrays), so that they need not come back to the host to be checked: each thread
//! looks at one position of the row offsets and one of the column indices (grid stride) and lowers
//! the slot of each fault it sees to its position. The slots end at the first position of each kind
//! of fault whatever the schedule, so the host names the same row or entry as its own check would.
//! Faults are rare and `red.min` returns nothing, so valid arrays cost two coalesced reads.

use crate::abi::{
    CHECK_COLUMN, CHECK_DECREASE, CHECK_NEGATIVE_COLUMN, CHECK_NEGATIVE_OFFSET, CsrCheckParams,
};
use crate::arch::{Load, atomic_min_u64, global_thread, grid_threads};

/// An index type of the arrays checked: `u32` (this crate's) or `i32` (cuSPARSE's).
trait Index: Load + PartialOrd {
    fn is_negative(self) -> bool;
    /// The index as a `u64`; meaningful where it is not negative.
    fn widen(self) -> u64;
}

impl Index for u32 {
    #[inline(always)]
    fn is_negative(self) -> bool {
        false
    }

    #[inline(always)]
    fn widen(self) -> u64 {
        u64::from(self)
    }
}

impl Index for i32 {
    #[inline(always)]
    fn is_negative(self) -> bool {
        self < 0
    }

    #[inline(always)]
    fn widen(self) -> u64 {
        self as u64
    }
}

/// # Safety
/// `p.row_offsets` holds `p.offsets_len` elements, `p.col_indices` `p.cols_len`, `p.found`
/// `CHECK_SLOTS`, changed by nothing else during the kernel.
#[inline(always)]
unsafe fn check<I: Index>(p: CsrCheckParams<I>) {
    let (mut i, stride) = (global_thread(), grid_threads());
    let items = if p.offsets_len > p.cols_len { p.offsets_len } else { p.cols_len };
    // SAFETY (every slot below): `found` holds `CHECK_SLOTS` elements, changed only atomically.
    let slot = |s: usize| unsafe { p.found.as_mut_ptr().add(s) };
    while i < items {
        let i_ = i as usize;
        if i < p.offsets_len {
            // SAFETY: `i < offsets_len`, and `i + 1` below it where read.
            unsafe {
                let offset = I::load_nc(p.row_offsets.as_ptr().add(i_));
                if offset.is_negative() {
                    atomic_min_u64(slot(CHECK_NEGATIVE_OFFSET), i);
                }
                if i + 1 < p.offsets_len && offset > I::load_nc(p.row_offsets.as_ptr().add(i_ + 1)) {
                    atomic_min_u64(slot(CHECK_DECREASE), i);
                }
            }
        }
        if i < p.cols_len {
            // SAFETY: `i < cols_len`.
            unsafe {
                let col = I::load_nc(p.col_indices.as_ptr().add(i_));
                if col.is_negative() {
                    atomic_min_u64(slot(CHECK_NEGATIVE_COLUMN), i);
                } else if col.widen() >= p.ncols {
                    atomic_min_u64(slot(CHECK_COLUMN), i);
                }
            }
        }
        i += stride;
    }
}

crate::ptx_entry!(csr_check_u32, CsrCheckParams<u32>, check::<u32>);
crate::ptx_entry!(csr_check_i32, CsrCheckParams<i32>, check::<i32>);
