//! The only inline PTX of the crate: thread ids, warp shuffles and votes, global loads, barriers and
//! atomics, and, built for sm_90 only, a warp's OR in one instruction (`redux_or_b32`), the wait for
//! the grids a programmatic launch depends on (`wait_for_prerequisite_grids`) and (`hopper`) the
//! bulk copy engine with its transaction barriers.

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
    // Not `pure`: LLVM would then treat it as a plain computation and may sink it into a branch that
    // only some lanes take (say, `if lane == 0 { store(sum) }`), where the full-mask shuffle is
    // undefined. With side effects it stays where the source puts it, on the converged path.
    unsafe {
        asm!(
            "shfl.sync.bfly.b32 {out}, {v}, {m}, 0x1f, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value, m = in(reg32) mask,
            options(nomem, nostack),
        );
    }
    out
}

/// `vote.sync.ballot.b32`: bit `l` set where lane `l`'s `predicate` holds, in every lane. Every
/// lane of the warp must execute it (full member mask).
#[inline(always)]
pub fn ballot(predicate: bool) -> u32 {
    let out: u32;
    // SAFETY: reads only registers; callers keep the whole warp converged. Not `pure`, for the
    // reason `shfl_xor_b32` gives.
    unsafe {
        asm!(
            "{{ .reg .pred p; setp.ne.u32 p, {v}, 0; vote.sync.ballot.b32 {out}, p, 0xffffffff; }}",
            out = out(reg32) out, v = in(reg32) u32::from(predicate),
            options(nomem, nostack),
        );
    }
    out
}

/// `griddepcontrol.wait` (sm_90, so only in the sm_90 module): returns once the grids this one was
/// launched to depend on (programmatically) have completed and their writes are visible; at once
/// when it was launched without that. Not `nomem`: no memory access may move above it.
#[cfg(target_feature = "sm_90")]
#[inline(always)]
pub fn wait_for_prerequisite_grids() {
    // SAFETY: no operands; it only orders this thread after the prerequisite grids.
    unsafe { asm!("griddepcontrol.wait;", options(nostack)) };
}

/// `redux.sync.or.b32` (sm_80, so only in the sm_90 module): the OR of `value` over the warp, in
/// every lane, in one instruction where a butterfly takes five shuffles and five ORs. Every lane of
/// the warp must execute it (full member mask).
#[cfg(target_feature = "sm_80")]
#[inline(always)]
pub fn redux_or_b32(value: u32) -> u32 {
    let out: u32;
    // SAFETY: reads only registers; callers keep the whole warp converged. Not `pure`, for the
    // reason `shfl_xor_b32` gives.
    unsafe {
        asm!(
            "redux.sync.or.b32 {out}, {v}, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value,
            options(nomem, nostack),
        );
    }
    out
}

/// Global loads of one element through the read-only (texture) data path, legal only for data no thread
/// writes during the kernel. A grid launched programmatically may be resident while the kernel ahead
/// still writes its `x`: its loads come after its `griddepcontrol.wait`, past which those writes are
/// done and visible (`wait_for_prerequisite_grids`). The explicit `.global` states the address space,
/// which the generic pointers of the parameter struct cannot tell LLVM.
pub trait Load: Copy {
    /// # Safety
    /// `p` is a valid, aligned global address of a `Self` that no thread writes during the kernel.
    unsafe fn load_nc(p: *const Self) -> Self;

    /// [`Load::load_nc`] marked to leave L1 first (`ld.global.nc.L1::evict_first`, PTX ISA 7.4), for
    /// data of which a warp takes a whole line at once and never reads again (a CSR matrix's column
    /// indices and values under groups of 16 or 32 lanes): the lines of the matrix's stream then give
    /// way to those of `x`, which the gathers read again. On the power-law and circuit matrices,
    /// whose gathers keep the L2 busy, that is 2-13% of a product (docs/PERF.md, section 35).
    ///
    /// # Safety
    /// As [`Load::load_nc`].
    unsafe fn load_nc_evict_first(p: *const Self) -> Self;

    /// The same element through the ordinary global path (`ld.global`, cached as the GPU caches any
    /// global load): the baseline against which the read-only path is measured.
    ///
    /// # Safety
    /// `p` is a valid, aligned global address of a `Self` that no thread writes during the kernel.
    unsafe fn load_global(p: *const Self) -> Self;

    /// [`Load::load_nc`] when `live`, else zero without touching memory: a predicated load
    /// (`@p ld.global.nc`), so that a batch of loads, some of them dead (the gathers of padding
    /// slots), is one basic block with no branch and no request for the dead ones.
    ///
    /// # Safety
    /// When `live`, `p` is a valid, aligned global address of a `Self` that no thread writes during
    /// the kernel; when not, `p` is not dereferenced and may be any address.
    unsafe fn load_nc_or_zero(p: *const Self, live: bool) -> Self;
}

/// One load method of [`Load`]: the instruction `$op` (`ld.global.nc.` and so on, up to the type),
/// of type `$ptx` into a register of class `$class`.
macro_rules! load_method {
    ($name:ident, $op:literal, $t:ty, $ptx:literal, $class:ident) => {
        #[inline(always)]
        unsafe fn $name(p: *const Self) -> Self {
            let v: $t;
            // SAFETY: the caller guarantees `p` is valid, aligned and read-only for the kernel.
            unsafe {
                asm!(concat!($op, $ptx, " {v}, [{p}];"),
                    v = out($class) v, p = in(reg64) p, options(pure, readonly, nostack));
            }
            v
        }
    };
}

macro_rules! impl_load {
    ($t:ty, $ptx:literal, $bits:literal, $class:ident) => {
        impl Load for $t {
            load_method!(load_nc, "ld.global.nc.", $t, $ptx, $class);
            load_method!(load_nc_evict_first, "ld.global.nc.L1::evict_first.", $t, $ptx, $class);
            load_method!(load_global, "ld.global.", $t, $ptx, $class);

            #[inline(always)]
            unsafe fn load_nc_or_zero(p: *const Self, live: bool) -> Self {
                let v: $t;
                // SAFETY: the caller guarantees `p` is valid, aligned and read-only for the kernel.
                unsafe {
                    asm!(concat!("{{ .reg .pred live; setp.ne.u32 live, {live}, 0; mov.b", $bits,
                        " {v}, 0; @live ld.global.nc.", $ptx, " {v}, [{p}]; }}"),
                        v = out($class) v, p = in(reg64) p, live = in(reg32) u32::from(live),
                        options(pure, readonly, nostack));
                }
                v
            }
        }
    };
}

impl_load!(u16, "u16", "16", reg16);
impl_load!(i16, "s16", "16", reg16);
impl_load!(u32, "u32", "32", reg32);
impl_load!(i32, "s32", "32", reg32);
impl_load!(i64, "s64", "64", reg64);
impl_load!(u64, "u64", "64", reg64);
impl_load!(f32, "f32", "32", reg32);
impl_load!(f64, "f64", "64", reg64);

/// Four consecutive floats in one 16-byte read-only load (`ld.global.nc.v4.f32`).
///
/// # Safety
/// `p` is a valid, 16-byte aligned global address of four floats no thread writes during the kernel.
#[inline(always)]
pub unsafe fn load_nc_v4_f32(p: *const f32) -> [f32; 4] {
    let (a, b, c, d): (f32, f32, f32, f32);
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("ld.global.nc.v4.f32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) p, options(pure, readonly, nostack));
    }
    [a, b, c, d]
}

/// Four consecutive words in one 16-byte read-only load (`ld.global.nc.v4.u32`): 16 bytes of any
/// element type, moved without being read as numbers.
///
/// # Safety
/// `p` is a valid, 16-byte aligned global address of 16 bytes no thread writes during the kernel.
#[inline(always)]
pub unsafe fn load_nc_v4_u32(p: *const u32) -> [u32; 4] {
    let (a, b, c, d): (u32, u32, u32, u32);
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("ld.global.nc.v4.u32 {{{a}, {b}, {c}, {d}}}, [{p}];",
            a = out(reg32) a, b = out(reg32) b, c = out(reg32) c, d = out(reg32) d,
            p = in(reg64) p, options(pure, readonly, nostack));
    }
    [a, b, c, d]
}

/// Asks the L2 for the line holding `p` (`prefetch.global.L2`) and goes on at once: no register
/// waits for it, so a thread may ask for many lines in a row.
///
/// # Safety
/// `p` is an address inside a global allocation.
#[inline(always)]
pub unsafe fn prefetch_l2(p: *const u8) {
    // SAFETY: guaranteed by the caller; a prefetch changes no value anyone reads.
    unsafe { asm!("prefetch.global.L2 [{p}];", p = in(reg64) p, options(readonly, nostack)) }
}

/// `shfl.sync.idx` of a 32-bit word: the value held by lane `src` of the warp. Every lane of the warp
/// must execute it (full member mask).
#[inline(always)]
pub fn shfl_idx_b32(value: u32, src: u32) -> u32 {
    let out: u32;
    // SAFETY: the shuffle reads only registers; callers keep the whole warp converged. Not `pure`,
    // for the reason given at `shfl_xor_b32`.
    unsafe {
        asm!(
            "shfl.sync.idx.b32 {out}, {v}, {s}, 0x1f, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value, s = in(reg32) src,
            options(nomem, nostack),
        );
    }
    out
}

/// `bar.warp.sync` over the whole warp (CUDA's `__syncwarp`): the lanes wait for each other, and
/// memory operations of a lane before it are visible to the other lanes after it.
#[inline(always)]
pub fn sync_warp() {
    // SAFETY: a barrier over the full warp; callers keep the whole warp converged. Not `nomem`: it
    // orders memory operations, so the compiler must not move loads or stores across it.
    unsafe { asm!("bar.warp.sync 0xffffffff;", options(nostack)) }
}

/// `fence.acq_rel.gpu` (CUDA's `__threadfence`): this thread's memory operations before it are
/// ordered, for every thread of the GPU, before those after it. Paired with an atomic it makes the
/// release and acquire patterns of the PTX memory model.
#[inline(always)]
pub fn fence_acq_rel_gpu() {
    // SAFETY: a fence has no preconditions. Not `nomem`: memory operations must not cross it.
    unsafe { asm!("fence.acq_rel.gpu;", options(nostack)) }
}

/// `atom.global.inc.u32` (relaxed, GPU scope): `*p = if old >= limit { 0 } else { old + 1 }`, returning
/// `old`. A counter incremented `limit + 1` times returns `0 ..= limit` once each and ends at 0.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u32` that the kernel changes only atomically.
#[inline(always)]
pub unsafe fn atomic_inc_u32(p: *mut u32, limit: u32) -> u32 {
    let old: u32;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("atom.global.inc.u32 {old}, [{p}], {l};",
            old = out(reg32) old, p = in(reg64) p, l = in(reg32) limit, options(nostack));
    }
    old
}

/// `atom.acq_rel.gpu.global.inc.u32`: [`atomic_inc_u32`] that also releases this thread's memory
/// operations before it and acquires those that other threads released by the same counter before
/// their increments: the two fences around a relaxed increment, in the one instruction.
///
/// # Safety
/// As [`atomic_inc_u32`].
#[inline(always)]
pub unsafe fn atomic_inc_acq_rel_u32(p: *mut u32, limit: u32) -> u32 {
    let old: u32;
    // SAFETY: guaranteed by the caller. Not `nomem`: it orders the memory operations around it.
    unsafe {
        asm!("atom.acq_rel.gpu.global.inc.u32 {old}, [{p}], {l};",
            old = out(reg32) old, p = in(reg64) p, l = in(reg32) limit, options(nostack));
    }
    old
}

/// `red.global.min.u64` (relaxed, GPU scope): `*p = min(*p, v)`, with no value returned.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u64` that the kernel changes only atomically.
#[inline(always)]
pub unsafe fn atomic_min_u64(p: *mut u64, v: u64) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("red.global.min.u64 [{p}], {v};", p = in(reg64) p, v = in(reg64) v, options(nostack)) }
}

/// `atom.global.cas.b64` (relaxed, GPU scope): writes `new` to `*p` if it holds `expected`, and
/// returns what `*p` held before, either way.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u64` that the kernel changes only atomically.
#[inline(always)]
pub unsafe fn atomic_cas_u64(p: *mut u64, expected: u64, new: u64) -> u64 {
    let old: u64;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("atom.global.cas.b64 {old}, [{p}], {e}, {n};",
            old = out(reg64) old, p = in(reg64) p, e = in(reg64) expected, n = in(reg64) new, options(nostack));
    }
    old
}

/// `ld.relaxed.gpu.global.u64`: a value other threads change atomically, read from L2 (coherent at
/// GPU scope), not from a stale line of this SM's L1.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u64`.
#[inline(always)]
pub unsafe fn load_relaxed_u64(p: *const u64) -> u64 {
    let v: u64;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("ld.relaxed.gpu.global.u64 {v}, [{p}];", v = out(reg64) v, p = in(reg64) p, options(readonly, nostack));
    }
    v
}

/// `ld.relaxed.gpu.global.u32`: a word other threads change atomically, read from L2.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u32`.
#[inline(always)]
pub unsafe fn load_relaxed_u32(p: *const u32) -> u32 {
    let v: u32;
    // SAFETY: guaranteed by the caller.
    unsafe {
        asm!("ld.relaxed.gpu.global.u32 {v}, [{p}];", v = out(reg32) v, p = in(reg64) p, options(readonly, nostack));
    }
    v
}

/// `red.global.max.u32` (relaxed, GPU scope): `*p = max(*p, v)`, with no value returned. A slot
/// zeroed before a launch and raised to `u32::MAX - index` by every thread that finds a fault ends
/// holding the lowest faulty index, whatever the threads' order, and zero for none.
///
/// # Safety
/// `p` is a valid, aligned global address of a `u32` that the kernel changes only atomically.
#[inline(always)]
pub unsafe fn atomic_max_u32(p: *mut u32, v: u32) {
    // SAFETY: guaranteed by the caller.
    unsafe { asm!("red.global.max.u32 [{p}], {v};", p = in(reg64) p, v = in(reg32) v, options(nostack)) }
}

/// Index of the calling thread's block in the (one-dimensional) grid: `%ctaid.x`.
#[inline(always)]
pub fn block_idx() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_idx_x() }
}

/// Threads per block: `%ntid.x`.
#[inline(always)]
pub fn block_dim() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_block_dim_x() }
}

/// Index of the calling thread in its block: `%tid.x`.
#[inline(always)]
pub fn thread_idx() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_thread_idx_x() }
}

/// `%laneid`: the calling thread's lane in its warp. Read with side effects (not `pure`), so that
/// LLVM neither hoists it out of a loop nor reuses it across iterations: what a kernel derives from
/// it is computed again where it is used, instead of dozens of lane-dependent addresses being kept
/// in registers for the whole kernel.
#[inline(always)]
pub fn lane_id() -> u32 {
    let lane: u32;
    // SAFETY: reading a special register has no preconditions.
    unsafe { asm!("mov.u32 {l}, %laneid;", l = out(reg32) lane, options(nomem, nostack)) };
    lane
}

/// `shfl.sync.up` of a 32-bit word: the value held by lane `lane - delta`, or the lane's own value
/// when `lane < delta`. Every lane of the warp must execute it (full member mask).
#[inline(always)]
pub fn shfl_up_b32(value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: the shuffle reads only registers; callers keep the whole warp converged. Not `pure`,
    // for the reason given at `shfl_xor_b32`. A clamp of 0 keeps the source inside the warp.
    unsafe {
        asm!(
            "shfl.sync.up.b32 {out}, {v}, {d}, 0x0, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value, d = in(reg32) delta,
            options(nomem, nostack),
        );
    }
    out
}

/// `shfl.sync.down` of a 32-bit word: the value held by lane `lane + delta`, or the lane's own value
/// when that is past lane 31. Every lane of the warp must execute it (full member mask).
#[inline(always)]
pub fn shfl_down_b32(value: u32, delta: u32) -> u32 {
    let out: u32;
    // SAFETY: as for `shfl_up_b32`.
    unsafe {
        asm!(
            "shfl.sync.down.b32 {out}, {v}, {d}, 0x1f, 0xffffffff;",
            out = out(reg32) out, v = in(reg32) value, d = in(reg32) delta,
            options(nomem, nostack),
        );
    }
    out
}

/// Atomic addition to an element in global memory (relaxed, GPU scope): `atom.global.add.f32`, and
/// `atom.global.add.f64`, which needs sm_60 (the PTX targets sm_70).
pub trait AtomicAdd: Copy {
    /// `*p += v` atomically; the old value is discarded.
    ///
    /// # Safety
    /// `p` is a valid, aligned global address of a `Self` that the kernel changes only atomically.
    unsafe fn atomic_add(p: *mut Self, v: Self);
}

macro_rules! impl_atomic_add {
    ($t:ty, $ptx:literal, $class:ident) => {
        impl AtomicAdd for $t {
            #[inline(always)]
            unsafe fn atomic_add(p: *mut Self, v: Self) {
                let _old: $t;
                // SAFETY: the caller guarantees `p` is valid, aligned and changed only atomically.
                unsafe {
                    asm!(concat!("atom.global.add.", $ptx, " {old}, [{p}], {v};"),
                        old = out($class) _old, p = in(reg64) p, v = in($class) v, options(nostack));
                }
            }
        }
    };
}

impl_atomic_add!(f32, "f32", reg32);
impl_atomic_add!(f64, "f64", reg64);

/// Blocks in the (one-dimensional) grid: `%nctaid.x`.
#[inline(always)]
pub fn grid_dim() -> u32 {
    // SAFETY: reading a special register has no preconditions.
    unsafe { nvptx::_grid_dim_x() }
}

/// The block's dynamic shared memory (its size is set at launch), as elements of `T`.
#[inline(always)]
pub fn dynamic_shared<T>() -> *mut T {
    core::intrinsics::gpu::gpu_launch_sized_workgroup_mem::<T>()
}

/// `bar.sync 0` (CUDA's `__syncthreads`): every thread of the block waits for the others, and its
/// shared-memory writes before it are visible to them after it.
///
/// # Safety
/// Every thread of the block reaches the same call (block-uniform control flow).
#[inline(always)]
pub unsafe fn sync_threads() {
    // SAFETY: guaranteed by the caller.
    unsafe { nvptx::_syncthreads() }
}

/// `bar.red.or.pred` (CUDA's `__syncthreads_or`): a `bar.sync 0` that also returns, in every thread
/// of the block, whether `pred` held in any of them.
///
/// # Safety
/// Every thread of the block reaches the same call (block-uniform control flow).
#[inline(always)]
pub unsafe fn sync_threads_or(pred: bool) -> bool {
    let any: u32;
    // SAFETY: guaranteed by the caller. Not `nomem`: like `bar.sync`, it orders memory operations.
    unsafe {
        asm!(
            "{{ .reg .pred %or_in, %or_out;",
            "setp.ne.u32 %or_in, {p}, 0;",
            "bar.red.or.pred %or_out, 0, %or_in;",
            "selp.u32 {any}, 1, 0, %or_out; }}",
            any = out(reg32) any, p = in(reg32) u32::from(pred),
            options(nostack),
        );
    }
    any != 0
}

/// `match.any.sync.b32` (CUDA's `__match_any_sync`, sm_70 and later): the mask of the lanes of the
/// warp whose `value` equals this lane's. Every lane of the warp must execute it (full member mask).
#[inline(always)]
pub fn match_any_b32(value: u32) -> u32 {
    let peers: u32;
    // SAFETY: reads only registers; callers keep the whole warp converged. Not `pure`, for the
    // reason given at `shfl_xor_b32`.
    unsafe {
        asm!(
            "match.any.sync.b32 {p}, {v}, 0xffffffff;",
            p = out(reg32) peers, v = in(reg32) value,
            options(nomem, nostack),
        );
    }
    peers
}

/// `a * b + c` with one rounding where `keep`, else `c`, as one predicated instruction
/// (`@p fma.rn`). A `select` of an `fma` lets the compiler branch around the `fma` instead, and
/// then sink the loads that feed it into that branch, behind the loads of later steps' products
/// that had been meant to leave together with them (docs/PERF.md, section 31).
macro_rules! fma_if {
    ($($name:ident: $t:ty, $ptx:literal, $class:ident);+) => {$(
        #[doc = concat!("`a * b + c` where `keep`, else `c`: `@p fma.rn.", $ptx, "`.")]
        #[inline(always)]
        pub fn $name(a: $t, b: $t, c: $t, keep: bool) -> $t {
            let mut sum = c;
            // SAFETY: a register-to-register operation, defined for every input.
            unsafe {
                asm!(concat!("{{ .reg .pred keep; setp.ne.u32 keep, {k}, 0; @keep fma.rn.", $ptx,
                    " {s}, {a}, {b}, {s}; }}"),
                    s = inout($class) sum, a = in($class) a, b = in($class) b, k = in(reg32) u32::from(keep),
                    options(pure, nomem, nostack));
            }
            sum
        }
    )+};
}

fma_if!(fma_if_f32: f32, "f32", reg32; fma_if_f64: f64, "f64", reg64);

/// The f32 of the binary16 value with bits `h` (`cvt.f32.f16`, exact: every binary16 is an f32).
#[inline(always)]
pub fn f16_to_f32(h: u16) -> f32 {
    let v: f32;
    // SAFETY: a register-to-register conversion, defined for every input.
    unsafe { asm!("cvt.f32.f16 {v}, {h};", v = out(reg32) v, h = in(reg16) h, options(pure, nomem, nostack)) }
    v
}

/// Hopper's asynchronous data path (PTX ISA 8.0, sm_90): the bulk copy engine (`cp.async.bulk`) and
/// the transaction-counting `mbarrier` it completes on. Only the sm_90 module (`cargo xtask ptx`
/// builds it beside the sm_70 one) compiles these; shared-memory operands are 32-bit addresses in the
/// `.shared::cta` window ([`shared_addr`]).
#[cfg(target_feature = "sm_90")]
pub mod hopper {
    use core::arch::asm;

    /// The `.shared` window address of a generic pointer into this block's shared memory.
    #[inline(always)]
    pub fn shared_addr<T>(p: *const T) -> u32 {
        let out: u32;
        // SAFETY: address arithmetic in registers; the result is used only by the shared-memory
        // operations below, whose callers guarantee `p` points into the block's shared memory.
        unsafe {
            asm!(
                "{{ .reg .b64 %sa; cvta.to.shared.u64 %sa, {p}; cvt.u32.u64 {out}, %sa; }}",
                out = out(reg32) out, p = in(reg64) p,
                options(pure, nomem, nostack),
            );
        }
        out
    }

    /// `mbarrier.init`: the 8-byte barrier at `bar` expects `count` arrivals per phase, in phase 0.
    ///
    /// # Safety
    /// `bar` is an 8-byte aligned address of this block's shared memory that no thread uses as a
    /// barrier yet; the initialisation is made visible ([`fence_barrier_init`] and a block barrier)
    /// before any other thread uses it.
    #[inline(always)]
    pub unsafe fn mbarrier_init(bar: u32, count: u32) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!("mbarrier.init.shared::cta.b64 [{b}], {c};", b = in(reg32) bar, c = in(reg32) count, options(nostack))
        }
    }

    /// `fence.mbarrier_init`: this thread's barrier initialisations are visible to the bulk copy
    /// engine (the async proxy) before anything after it.
    #[inline(always)]
    pub fn fence_barrier_init() {
        // SAFETY: a fence has no preconditions. Not `nomem`: memory operations must not cross it.
        unsafe { asm!("fence.mbarrier_init.release.cluster;", options(nostack)) }
    }

    /// `mbarrier.arrive.expect_tx`: the phase also waits for `bytes` more bytes of bulk copies, then
    /// this thread arrives (release semantics: its earlier writes are visible to whoever sees the
    /// phase complete).
    ///
    /// # Safety
    /// `bar` is an initialised barrier of this block's shared memory with an arrival pending.
    #[inline(always)]
    pub unsafe fn mbarrier_arrive_expect_tx(bar: u32, bytes: u32) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!(
                "mbarrier.arrive.expect_tx.shared::cta.b64 _, [{b}], {n};",
                b = in(reg32) bar, n = in(reg32) bytes, options(nostack),
            )
        }
    }

    /// `mbarrier.arrive` (release semantics, like [`mbarrier_arrive_expect_tx`] with no bytes).
    ///
    /// # Safety
    /// As [`mbarrier_arrive_expect_tx`].
    #[inline(always)]
    pub unsafe fn mbarrier_arrive(bar: u32) {
        // SAFETY: guaranteed by the caller.
        unsafe { asm!("mbarrier.arrive.shared::cta.b64 _, [{b}];", b = in(reg32) bar, options(nostack)) }
    }

    /// Waits until the phase of parity `parity` of `bar` has completed (acquire semantics: what the
    /// arriving threads wrote before arriving, and the bytes the phase counted, are visible after).
    ///
    /// # Safety
    /// `bar` is an initialised barrier of this block's shared memory whose phase of that parity will
    /// complete.
    #[inline(always)]
    pub unsafe fn mbarrier_wait(bar: u32, parity: u32) {
        loop {
            let done: u32;
            // SAFETY: guaranteed by the caller. `try_wait` suspends the thread for a while before it
            // answers, so the loop does not spin hot.
            unsafe {
                asm!(
                    "{{ .reg .pred %done;",
                    "mbarrier.try_wait.parity.shared::cta.b64 %done, [{b}], {p};",
                    "selp.u32 {d}, 1, 0, %done; }}",
                    d = out(reg32) done, b = in(reg32) bar, p = in(reg32) parity,
                    options(nostack),
                );
            }
            if done != 0 {
                return;
            }
        }
    }

    /// `cp.async.bulk` global to shared: the copy engine moves `bytes` from `src` to `dst` and counts
    /// them on `bar`'s current phase, which must expect them ([`mbarrier_arrive_expect_tx`]).
    ///
    /// # Safety
    /// `src` is a 16-byte aligned global address of `bytes` readable bytes that no thread writes
    /// during the kernel; `dst` is a 16-byte aligned shared address with `bytes` bytes that no thread
    /// reads or writes until the phase completes (no ordinary store of this block to it may be
    /// pending: those would need `fence.proxy.async`, the copy engine being another proxy); `bytes` is
    /// a positive multiple of 16.
    #[inline(always)]
    pub unsafe fn bulk_copy_to_shared(dst: u32, src: *const u8, bytes: u32, bar: u32) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            asm!(
                "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [{d}], [{s}], {n}, [{b}];",
                d = in(reg32) dst, s = in(reg64) src, n = in(reg32) bytes, b = in(reg32) bar,
                options(nostack),
            )
        }
    }
}
