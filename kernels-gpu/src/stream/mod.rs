//! The streaming engine (sm_90): a block's matrix data arrives through Hopper's bulk copy engine
//! instead of its threads' loads.
//!
//! Why: on matrices larger than L2 every CSR kernel of `csr/` moves the floor's bytes and no more
//! (docs/PERF.md section 15), yet reaches only 75-80% of the DRAM's peak, because a thread that loads
//! an offset, then an index and a value, then gathers `x` keeps too few requests in flight between
//! its dependent steps. Here one thread of a producer warp asks the copy engine for whole windows of
//! the arrays (`cp.async.bulk`, global to shared, completing on an `mbarrier` that counts the bytes),
//! several windows ahead of the consumer warps, which only read shared memory and gather
//! `x`. The bytes in flight then depend on the ring's depth, not on how many loads a thread can issue
//! before it needs their values.
//!
//! A [`Ring`] is `stages` stages (a launch parameter, one of
//! [`STREAM_STAGES`](crate::abi::STREAM_STAGES)) in the block's dynamic shared memory, laid out as
//! [`StreamStage`] says, each with two barriers: *full* (one arrival, the producer's, plus the bytes
//! of its copies) and *empty* (an arrival from every consumer thread). Use `i` of the ring takes stage
//! `i % stages` in phase `i / stages` of both barriers; the producer waits until the consumers have
//! emptied use `i - stages` before it fills use `i`, and the consumers wait until use `i` is full.
//! A format's consumer (`csr.rs`) decides what a window is.

pub(crate) mod csr;

use crate::abi::{BULK_COPY_ALIGN, STREAM_CONSUMER_WARPS, StreamStage, WARP_SIZE};
use crate::arch::dynamic_shared;
use crate::arch::hopper::{
    bulk_copy_to_shared, fence_barrier_init, fence_proxy_async, mbarrier_arrive, mbarrier_arrive_expect_tx,
    mbarrier_init, mbarrier_wait, shared_addr,
};

/// Consumer threads of a block: the `empty` barriers' arrival count.
const CONSUMERS: u32 = STREAM_CONSUMER_WARPS * WARP_SIZE;

/// The block's ring of stages.
#[derive(Clone, Copy)]
pub(crate) struct Ring {
    base: *mut u8,
    layout: StreamStage,
    stages: u32,
    /// Shared address of the barriers: `full` of stage `s` at `bars + 16 s`, `empty` 8 bytes after.
    bars: u32,
}

impl Ring {
    /// The ring of `stages` stages in this block's dynamic shared memory, for values of `elem` bytes.
    ///
    /// # Safety
    /// `stages > 0`; the launch gives the block [`StreamStage::block_bytes`]`(elem, stages)` bytes of
    /// dynamic shared memory.
    #[inline(always)]
    pub unsafe fn new(elem: u32, stages: u32) -> Self {
        let layout = StreamStage::new(elem);
        let base = dynamic_shared::<u8>();
        // SAFETY: the barriers follow the stages inside the block's allocation (the caller's contract).
        let bars = shared_addr(unsafe { base.add((layout.bytes * stages) as usize) });
        Self { base, layout, stages, bars }
    }

    /// Initialises the barriers. Thread 0 calls it; the block then meets at a block-wide barrier
    /// before any thread uses the ring.
    ///
    /// # Safety
    /// Called once per block, by one thread, before any use of the ring.
    #[inline(always)]
    pub unsafe fn init(&self) {
        for s in 0..self.stages {
            // SAFETY: 8-byte aligned slots after the stages (16-byte multiples), used by no one yet.
            unsafe {
                mbarrier_init(self.full(s), 1);
                mbarrier_init(self.empty(s), CONSUMERS);
            }
        }
        fence_barrier_init();
    }

    fn full(&self, use_: u32) -> u32 {
        self.bars + 16 * (use_ % self.stages)
    }

    fn empty(&self, use_: u32) -> u32 {
        self.full(use_) + 8
    }

    /// The phase parity of use `use_` of its stage.
    fn parity(&self, use_: u32) -> u32 {
        (use_ / self.stages) & 1
    }

    /// The layout of every stage.
    pub fn layout(&self) -> StreamStage {
        self.layout
    }

    /// The first byte of the stage of use `use_`.
    pub fn stage(&self, use_: u32) -> *mut u8 {
        // SAFETY: `stages` stages of `bytes` each lie inside the block's allocation.
        unsafe { self.base.add(((use_ % self.stages) * self.layout.bytes) as usize) }
    }

    /// Producer: waits until the consumers have emptied the stage of use `use_` (its previous use),
    /// so that it can be filled again.
    ///
    /// # Safety
    /// The ring is initialised; the producer's uses are numbered in order from 0.
    #[inline(always)]
    pub unsafe fn wait_empty(&self, use_: u32) {
        if use_ >= self.stages {
            // SAFETY: the consumers arrive once per thread at every use they take, so the phase of
            // use `use_ - stages` completes.
            unsafe { mbarrier_wait(self.empty(use_), self.parity(use_) ^ 1) }
        }
    }

    /// Producer: marks use `use_` full once `bytes` more bytes of copies (issued after this call with
    /// [`Ring::copy`]) have landed. Ordinary stores to the stage before it (its header) are visible to
    /// the consumers after their [`Ring::wait_full`].
    ///
    /// # Safety
    /// [`Ring::wait_empty`] returned for this use, and exactly `bytes` bytes of copies follow.
    #[inline(always)]
    pub unsafe fn arrive_full(&self, use_: u32, bytes: u32) {
        // SAFETY: guaranteed by the caller.
        unsafe {
            if bytes == 0 {
                mbarrier_arrive(self.full(use_));
            } else {
                mbarrier_arrive_expect_tx(self.full(use_), bytes);
            }
        }
    }

    /// Producer: copies `span` of the global array at `src` (elements of `elem` bytes) to byte
    /// `offset` of the stage of use `use_`, counted on its full barrier.
    ///
    /// # Safety
    /// [`Ring::arrive_full`] of this use counted the span's bytes; `src` is a 16-byte aligned array
    /// with at least `span.hi` elements that no thread writes during the kernel; the span fits the
    /// stage's region at `offset`.
    #[inline(always)]
    pub unsafe fn copy(&self, use_: u32, offset: u32, src: *const u8, span: Span, elem: u32) {
        let bytes = span.bytes(elem);
        if bytes > 0 {
            // SAFETY: guaranteed by the caller; both addresses are 16-byte aligned (`span.lo` is a
            // multiple of the unit, the stage and its regions are 16-byte multiples) and `bytes` is a
            // multiple of 16.
            unsafe {
                let dst = shared_addr(self.stage(use_).add(offset as usize));
                bulk_copy_to_shared(dst, src.add((span.lo * elem) as usize), bytes, self.full(use_));
            }
        }
    }

    /// Consumer: waits until use `use_` is full.
    ///
    /// # Safety
    /// The ring is initialised; the consumer's uses are numbered in order from 0, as the producer's.
    #[inline(always)]
    pub unsafe fn wait_full(&self, use_: u32) {
        // SAFETY: the producer arrives once at every use.
        unsafe { mbarrier_wait(self.full(use_), self.parity(use_)) }
    }

    /// Consumer: this thread is done with use `use_`; ordinary stores it made to the stage are
    /// ordered before the copy engine's next fill of it.
    ///
    /// # Safety
    /// Every consumer thread calls it once per use, after its last access to the stage.
    #[inline(always)]
    pub unsafe fn release(&self, use_: u32) {
        fence_proxy_async();
        // SAFETY: guaranteed by the caller.
        unsafe { mbarrier_arrive(self.empty(use_)) }
    }
}

/// The part of the elements `a .. b` of an array of `len` elements that a stage receives by bulk copy:
/// `lo .. hi`, whole 16-byte units, `lo` the unit at or below `a`. `hi` is the unit at or above `b`,
/// unless that passes the array's last whole unit: then the elements from `hi` on (at most a unit less
/// one, the array's tail) are read from global memory ([`Span::has`]).
#[derive(Clone, Copy)]
pub(crate) struct Span {
    pub lo: u32,
    pub hi: u32,
}

impl Span {
    #[inline(always)]
    pub fn new(a: u32, b: u32, len: u32, elem: u32) -> Self {
        let unit = BULK_COPY_ALIGN / elem;
        let lo = a - a % unit;
        let hi = b.next_multiple_of(unit).min(len - len % unit).max(lo);
        Self { lo, hi }
    }

    /// Whether element `k` (of the span's range) is in the stage, at slot `k - lo`.
    #[inline(always)]
    pub fn has(self, k: u32) -> bool {
        k < self.hi
    }

    /// Bytes of the copy (what [`Ring::arrive_full`] expects for it).
    #[inline(always)]
    pub fn bytes(self, elem: u32) -> u32 {
        (self.hi - self.lo) * elem
    }
}
