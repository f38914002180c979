//! The only inline PTX of the crate: thread ids, warp shuffles and global loads.

use core::arch::asm;
use core::arch::nvptx;

/// Index of the calling thread in the whole (one-dimensional) grid.
#[inline(always)]
pub fn global_thread() -> u64 {
    // SAFETY: reading the special registers %ctaid, %ntid and %tid has no preconditions.
    unsafe { nvptx::_block_idx_x() as u64 * nvptx::_block_dim_x() as u64 + nvptx::_thread_idx_x() as u64 }
}

/// Threads in the whole (one-dimensional) grid.
#[inline(always)]
pub fn grid_threads() -> u64 {
    // SAFETY: reading the special registers %nctaid and %ntid has no preconditions.
    unsafe { nvptx::_grid_dim_x() as u64 * nvptx::_block_dim_x() as u64 }
}

/// `shfl.sync.bfly` of a 32-bit word: the value held by lane `lane ^ mask`. Every lane of the warp must
/// execute it (full member mask).
#[inline(always)]
pub fn shfl_xor_b32(value: u32, mask: u32) -> u32 {
    let out: u32;
    // SAFETY: the shuffle reads only registers; callers keep the whole warp converged (see `index`).
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {out}, {v}, {m}, 0x1f, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value, m = in(reg32) mask,
            options(pure, nomem, nostack),
        );
    }
    out
}

/// Global loads of one element through the read-only (texture) data path, legal only for data no thread
/// writes during the kernel. The explicit `.global` states the address space, which the generic
/// pointers of the parameter struct cannot tell LLVM.
pub trait Load: Copy {
    /// # Safety
    /// `p` is a valid, aligned global address of a `Self` that no thread writes during the kernel.
    unsafe fn load_nc(p: *const Self) -> Self;
}

macro_rules! impl_load {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl Load for $t {
            #[inline(always)]
            unsafe fn load_nc(p: *const Self) -> Self {
                let v: $t;
                // SAFETY: the caller guarantees `p` is valid, aligned and read-only for the kernel.
                unsafe {
                    asm!(concat!("ld.global.nc.", $ptx, " {v}, [{p}];"),
                        v = out($class) v, p = in(reg64) p, options(pure, readonly, nostack));
                }
                v
            }
        }
    };
}

impl_load!(u32, "u32", reg32);
impl_load!(f32, "f32", reg32);
impl_load!(f64, "f64", reg64);
