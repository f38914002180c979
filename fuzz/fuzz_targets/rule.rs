//! Auto's choice (`Kernel::auto_for`) from any row statistics and GPU, consistent or not (NaN
//! means, a longest row past the entries, no SMs, no L2): it never panics, is the same on every
//! call, takes the column panels exactly where `rule::panels_term` does (and then its kernel), only
//! where the bench times them (`rule::panels_timed`), the ELL copy exactly where `rule::ell_copy_term`
//! does and the panel term does not, only for rows of at most `rule::ELL_COPY_MAX_ROW` entries, and
//! `Kernel::auto_without_terms` never takes either; `rule::dia_copy_term` (whether Auto's plan asks
//! the device for a DIA copy) never panics, is the same on every call, and holds only for a matrix
//! with entries and no row longer than DIA's diagonals; `rule::compressed_copy_term` (whether it
//! asks the device how its columns compress) never panics, is the same on every call, and holds
//! only for a matrix with entries whose rule kernel gives rows a thread or a group, at that width,
//! one the compressed-index kernel is compiled for. A width leaf (`rule::width_kernel`) at any
//! entries per lane and share of the GPU to fill (NaN, negative, infinite) gives a thread per row
//! or a vector width the kernel is compiled for, and never fewer lanes for a larger share.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::formats::DIA_MAX_DIAGONALS;
use gpu_spmv::rule::{
    ELL_COPY_MAX_ROW, Target, compressed_copy_term, dia_copy_term, ell_copy_term, panels_term, panels_timed,
    width_kernel,
};
use gpu_spmv::{Kernel, Regime, RowStats};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    rows: u32,
    cols: u32,
    nnz: u64,
    mean: f64,
    std_dev: f64,
    max: u32,
    empty_rows: u32,
    sm_count: u16,
    l2_bytes: u32,
    value_bytes: u8,
    regime: u8,
    entries_per_lane: u32,
    fills: [f64; 2],
}

fuzz_target!(|input: Input| {
    let stats = RowStats {
        rows: input.rows as usize,
        cols: input.cols as usize,
        nnz: usize::try_from(input.nnz).unwrap_or(usize::MAX),
        mean: input.mean,
        std_dev: input.std_dev,
        max: input.max as usize,
        empty_rows: input.empty_rows as usize,
    };
    let target = Target { sm_count: u32::from(input.sm_count), l2_bytes: u64::from(input.l2_bytes) * 64 };
    let regime = [Regime::Cold, Regime::Hot, Regime::Graph][usize::from(input.regime % 3)];
    let value_bytes = usize::from(input.value_bytes % 17);
    let chosen = Kernel::auto_for(&stats, value_bytes, target, regime);
    assert_eq!(chosen, Kernel::auto_for(&stats, value_bytes, target, regime), "deterministic");
    let without = Kernel::auto_without_terms(&stats, value_bytes, target, regime);
    assert!(
        !matches!(without, Kernel::CsrPanels { .. } | Kernel::CsrEllCopy),
        "{without:?} without the terms"
    );
    match (panels_term(&stats, value_bytes, target), ell_copy_term(&stats, value_bytes, target)) {
        (Some(panels), _) => {
            assert!(panels_timed(&stats, value_bytes), "Auto's panels where the bench does not time them");
            assert_eq!(chosen, panels);
        }
        (None, Some(copy)) => {
            assert!(stats.max <= ELL_COPY_MAX_ROW, "the ELL copy for rows of {}", stats.max);
            assert_eq!(chosen, copy);
        }
        (None, None) => assert_eq!(chosen, without),
    }
    let look = dia_copy_term(&stats, value_bytes, target);
    assert_eq!(look, dia_copy_term(&stats, value_bytes, target), "deterministic");
    if look {
        assert!(stats.nnz > 0, "a DIA look at a matrix without entries");
        assert!(stats.max <= DIA_MAX_DIAGONALS, "a DIA look at rows of {}", stats.max);
    }
    let compressed = compressed_copy_term(chosen, &stats, value_bytes, target);
    assert_eq!(compressed, compressed_copy_term(chosen, &stats, value_bytes, target), "deterministic");
    if let Some(copy) = compressed {
        assert!(stats.nnz > 0, "a look at the compressed columns of a matrix without entries");
        let width = match chosen {
            Kernel::CsrScalar { .. } => 1,
            Kernel::CsrVector { coop, .. } => coop,
            other => panic!("a look at the compressed columns from {other:?}"),
        };
        assert_eq!(copy, Kernel::CsrCompressedCopy { coop: width });
        assert!(Kernel::COMPRESSED_COOPS.contains(&width), "{copy:?}");
    }
    let width = |min_fill: f64| width_kernel(input.entries_per_lane, min_fill, &stats, target.sm_count);
    let lanes = |min_fill: f64| match width(min_fill) {
        Kernel::CsrScalar { .. } => 1,
        Kernel::CsrVector { coop, .. } if Kernel::VECTOR_COOPS.contains(&coop) => coop,
        other => panic!("a width leaf filling {min_fill} gave {other:?}"),
    };
    let [a, b] = input.fills;
    assert_eq!(lanes(a), lanes(a), "deterministic");
    if a <= b {
        assert!(lanes(a) <= lanes(b), "fewer lanes filling {b} than {a}");
    }
});
