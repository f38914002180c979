//! Timing products for the planner with CUDA events, on scratch vectors of its own.

use crate::device::{DeviceVector, Gpu};
use crate::enqueue::DeviceMatrix;
use crate::scalar::Scalar;
use crate::{Error, Result};
use cudarc::driver::CudaEvent;

/// Products run before the timed ones: the first products after an upload meet cold caches and TLB
/// entries, and a GPU that was idle may still be raising its clocks.
pub const PLAN_WARMUP_PRODUCTS: usize = 3;

/// Products timed per format; the planner keeps their median, which up to four slow ones (another
/// process on the GPU, a clock change) do not move. With the warm-up, a format costs the planner
/// 12 products.
pub const PLAN_TIMED_PRODUCTS: usize = 9;

/// Times products `y = A * x` (`alpha = 1`, `beta = 0`) on an `x` and a `y` that the planner made, so
/// no caller buffer is touched.
#[derive(Debug)]
pub(super) struct ProductTimer<T> {
    /// One event before the first timed product and one after each.
    events: Vec<CudaEvent>,
    /// All ones: finite and non-zero, as a caller's data would be.
    x: DeviceVector<T>,
    y: DeviceVector<T>,
}

impl<T: Scalar> ProductTimer<T> {
    /// A timer for matrices of `nrows` x `ncols`.
    pub(super) fn new(gpu: &Gpu, nrows: usize, ncols: usize) -> Result<Self> {
        let events = (0..=PLAN_TIMED_PRODUCTS).map(|_| gpu.timing_event()).collect::<Result<_>>()?;
        let x = gpu.upload_vector(&vec![T::from_f64(1.0); ncols])?;
        Ok(Self { events, x, y: gpu.zeros(nrows)? })
    }

    /// The median time of one product with `a`, in milliseconds. The products are enqueued back to
    /// back, an event between each two, so the GPU runs them as it runs a caller's loop and the
    /// times leave out the launch latency an idle GPU would show. Waits for them: a planning call
    /// synchronises once per format.
    pub(super) fn median_ms<A: DeviceMatrix<T> + ?Sized>(&mut self, gpu: &Gpu, a: &A) -> Result<f64> {
        let one = T::from_f64(1.0);
        let plan = gpu.plan(a, Default::default())?;
        for _ in 0..PLAN_WARMUP_PRODUCTS {
            plan.spmv(one, &self.x, T::ZERO, &mut self.y)?;
        }
        self.events[0].record(gpu.stream())?;
        for event in &self.events[1..] {
            plan.spmv(one, &self.x, T::ZERO, &mut self.y)?;
            event.record(gpu.stream())?;
        }
        let mut times = self
            .events
            .windows(2)
            .map(|w| Ok(f64::from(w[0].elapsed_ms(&w[1])?)))
            .collect::<Result<Vec<f64>, Error>>()?;
        times.sort_by(f64::total_cmp);
        Ok(times[times.len() / 2])
    }
}
