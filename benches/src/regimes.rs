//! The regimes a product is timed in beyond the cold one (issue 10, item 5). *Cold* is the bench's
//! default (`run.rs`): operands rotated through enough copies that each launch reads them from HBM,
//! as one product of a large working set would. A solver multiplies the same small matrix thousands
//! of times, so two more regimes time what it sees:
//!
//! - *hot*: the same operands back to back, so a matrix that fits in L2 is read from it;
//! - *graph*: [`GRAPH_PRODUCTS`] hot products captured in one CUDA graph and replayed, as solver code
//!   captures its iterations: the host's cost per product is gone, and what remains is the kernel
//!   and the GPU's gap between launches;
//!
//! and, beside them, the host time of one enqueue (what a product costs the CPU thread that issues
//! it, which bounds the hot regime of small matrices when it exceeds the kernel's time).

use crate::measure::{Timing, host_enqueue_us, time_gpu};
use anyhow::Result;
use gpu_spmv::Gpu;

/// Products per captured graph. Fifty products of 3 to 20 µs make a replay of 150 µs to 1 ms, long
/// against the ~5 µs the replay's own launch costs, so the per-product figure is the graph's steady
/// state; and a solver's iteration count between reads of its residual is of this order.
pub const GRAPH_PRODUCTS: usize = 50;

/// One variant's figures in the hot and graph regimes, and its host enqueue time.
#[derive(Debug, Clone, Copy)]
pub struct Regimes {
    pub hot: Timing,
    /// Per product (the replay's time over [`GRAPH_PRODUCTS`]).
    pub graph: Timing,
    pub host_enqueue_us: f64,
}

/// Times `enqueue` (one product on the `Gpu`'s stream, not waiting) back to back, then `replay`
/// (one launch of a graph of [`GRAPH_PRODUCTS`] captured products of the same operands), then the
/// host time of one `enqueue`.
pub fn measure(
    gpu: &Gpu,
    mut enqueue: impl FnMut() -> Result<()>,
    mut replay: impl FnMut() -> Result<()>,
) -> Result<Regimes> {
    let hot = time_gpu(gpu, |_| enqueue())?;
    let graph = time_gpu(gpu, |_| replay())?.per_product(GRAPH_PRODUCTS);
    let host_enqueue_us = host_enqueue_us(gpu, enqueue)?;
    Ok(Regimes { hot, graph, host_enqueue_us })
}
