//! Finite element input through `Lma::try_new`: refused as documented, or an operator whose
//! colouring is valid and whose diagonal and product are those of its own assembly.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::NO_NODE;
use gpu_spmv_fuzz::properties::lma::check_lma;
use libfuzzer_sys::fuzz_target;

/// A node count, small or far past the limit of declared counts; nodes per element (0 too); the
/// map, 255 for a Dirichlet slot; element matrices of small integers whose length is off by
/// `values_off_by` from the map's; `x`.
#[derive(Debug, Arbitrary)]
struct Input {
    nodes: Nodes,
    m: u8,
    map: Vec<u8>,
    values_off_by: i8,
    values: Vec<i8>,
    x: Vec<i8>,
}

#[derive(Debug, Arbitrary)]
enum Nodes {
    Small(u8),
    Huge(u32),
}

fuzz_target!(|input: Input| {
    let node_count = match input.nodes {
        Nodes::Small(n) => usize::from(n),
        Nodes::Huge(n) => (1 << 30) + n as usize,
    };
    let m = usize::from(input.m % 6);
    let map: Vec<usize> =
        input.map.iter().map(|&n| if n == 255 { NO_NODE } else { usize::from(n) }).collect();
    let elements = map.len().checked_div(m).unwrap_or(0);
    let len = (elements * m * m).saturating_add_signed(isize::from(input.values_off_by % 2));
    let values: Vec<f64> =
        (0..len).map(|k| f64::from(input.values.get(k).copied().unwrap_or(1) % 8)).collect();
    let x: Vec<f64> = input.x.iter().map(|&v| f64::from(v % 4)).collect();
    check_lma(node_count, m, &map, &values, &x);
});
