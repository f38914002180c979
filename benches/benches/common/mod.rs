//! What the benchmarks share.

use spmv_bench::suite::Size;

/// The suite's size for this run: small when benchmarking, tiny in criterion's test mode, which it
/// enters unless `--bench` alone is passed, as `cargo bench` does (`cargo test` runs each benchmark
/// once, as a smoke test that must stay quick).
pub fn size() -> Size {
    let args: Vec<String> = std::env::args().collect();
    let bench = args.iter().any(|a| a == "--bench") && !args.iter().any(|a| a == "--test");
    if bench { Size::Small } else { Size::Tiny }
}
