//! SpMV kernels (`y = alpha * A * x + beta * y`) for NVIDIA GPUs, written in Rust and compiled to PTX by
//! rustc's own `nvptx64-nvidia-cuda` backend.
//!
//! Two parts share this crate:
//! - [`abi`] and [`index`] compile everywhere. They hold the launch-parameter structs and the index
//!   arithmetic (grid sizing, thread-to-row mapping), so the host library uses the very definitions the
//!   kernels use and CI tests the arithmetic without a GPU.
//! - Everything else exists only for `target_arch = "nvptx64"`: the intrinsics wrapper (`arch`), the
//!   warp reductions and one module per kernel family. `cargo xtask ptx` builds it.
//!
//! PTX entry points are named `spmv_<format>_<variant>_<type>` (`csrt` for the transposed product
//! of a CSR matrix), the conjugate gradient vector kernels `cg_<step>_<variant>_<type>`, the
//! transpose's construction `csrt_build_<step>[_<type>]`, and the products with several vectors
//! `spmm_<format>_<layout>_<variant>_<type>` (with `spmm_long_rows_<type>`, which finishes their
//! long rows, and `spmm_scale_<type>`), the distributed product's pack `dist_gather_<type>`, and the
//! check of CSR index arrays on the device `csr_check_<index type>`, and the assembly of a CSR matrix
//! from COO triples on the device `coo_assemble_<step>[_<type>]`, ILU(0)'s triangular solves
//! `ilu_<lower|upper>_<type>`, and the factorisations they solve with `<ilu|ic>_factor_<type>`.
#![cfg_attr(not(test), no_std)]
// `cargo xtask ptx` builds two modules: one for sm_70, which every GPU from Volta on runs, with all
// kernels but the streaming engine; and one for sm_90 with the streaming engine (`stream`), whose
// bulk copies Hopper introduced, and the few kernels that newer instructions make faster, exported
// from both (`abi::SM90_ENTRIES`: `redux.sync`, and `griddepcontrol.wait` for programmatic
// launch). The sm_90 build compiles the other kernels' code without exporting
// it (`ptx_entry!`), so that those can share it; unexported, it is unused there.
#![cfg_attr(all(target_arch = "nvptx64", target_feature = "sm_90"), allow(dead_code, unused_imports))]
#![cfg_attr(target_arch = "nvptx64", feature(abi_ptx, stdarch_nvptx, asm_experimental_arch, core_float_math))]
// The dense-block kernel's shared memory: the intrinsic sits in `core::intrinsics::gpu`.
#![cfg_attr(
    target_arch = "nvptx64",
    feature(core_intrinsics, gpu_intrinsics, gpu_launch_sized_workgroup_mem),
    allow(internal_features)
)]

pub mod abi;
pub mod index;

#[cfg(target_arch = "nvptx64")]
mod arch;
#[cfg(target_arch = "nvptx64")]
mod assemble;
#[cfg(target_arch = "nvptx64")]
mod block_jacobi;
#[cfg(target_arch = "nvptx64")]
mod cg;
#[cfg(target_arch = "nvptx64")]
mod check;
#[cfg(target_arch = "nvptx64")]
mod csr;
#[cfg(target_arch = "nvptx64")]
mod formats;
#[cfg(target_arch = "nvptx64")]
mod gather;
#[cfg(target_arch = "nvptx64")]
mod ilu;
#[cfg(target_arch = "nvptx64")]
mod ilu_factor;
#[cfg(target_arch = "nvptx64")]
mod krylov;
#[cfg(target_arch = "nvptx64")]
mod prefetch;
#[cfg(target_arch = "nvptx64")]
mod probe;
#[cfg(target_arch = "nvptx64")]
mod real;
#[cfg(target_arch = "nvptx64")]
mod reduce;
#[cfg(target_arch = "nvptx64")]
mod scale;
#[cfg(target_arch = "nvptx64")]
mod spmm;
#[cfg(all(target_arch = "nvptx64", target_feature = "sm_90"))]
mod stream;
#[cfg(target_arch = "nvptx64")]
mod transpose;

/// A kernel that panics has a bug (all bounds are established by the host before launch): stop the
/// whole grid so the launch reports an error instead of returning a wrong `y`.
#[cfg(target_arch = "nvptx64")]
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    // SAFETY: `trap` has no preconditions; it aborts the kernel.
    unsafe { core::arch::nvptx::trap() }
}

/// Exports one monomorphised kernel as a PTX `.entry` taking its parameter struct by value: in the
/// sm_70 module; with `sm_90` first, in the sm_90 module; with `both` first, in each, built for each
/// (see the crate's attributes), the sm_90 build waiting first for the grids ahead of it.
#[cfg(target_arch = "nvptx64")]
macro_rules! ptx_entry {
    ($name:ident, $params:ty, $kernel:expr) => {
        #[cfg(not(target_feature = "sm_90"))]
        $crate::ptx_entry!(@export $name, $params, $kernel);
    };
    (sm_90 $name:ident, $params:ty, $kernel:expr) => {
        #[cfg(target_feature = "sm_90")]
        $crate::ptx_entry!(@export $name, $params, $kernel);
    };
    // The sm_90 build waits first for the grids it was launched to depend on: the host launches
    // these entries with programmatic stream serialization there (`abi::SM90_ENTRIES`).
    (both $name:ident, $params:ty, $kernel:expr) => {
        $crate::ptx_entry!(@export $name, $params, $kernel, {
            #[cfg(target_feature = "sm_90")]
            $crate::arch::wait_for_prerequisite_grids();
        });
    };
    (@export $name:ident, $params:ty, $kernel:expr) => {
        $crate::ptx_entry!(@export $name, $params, $kernel, {});
    };
    (@export $name:ident, $params:ty, $kernel:expr, { $($prologue:tt)* }) => {
        #[unsafe(no_mangle)]
        /// # Safety
        /// Launched only through the host's launch layer, with the parameters its
        /// validated device matrix and vectors produce.
        pub unsafe extern "ptx-kernel" fn $name(p: $params) {
            $($prologue)*
            // SAFETY: the host upholds the kernel's contract (see the host's `launch` module).
            unsafe { $kernel(p) }
        }
    };
}
#[cfg(target_arch = "nvptx64")]
pub(crate) use ptx_entry;
