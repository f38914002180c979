//! Property tests (proptest) of what no input may break: `CsrRef::try_new` on raw arrays, every
//! conversion from CSR with its parameters, the Matrix Market reader on generated and on damaged
//! files, the LMA operator, the row partition, the sprs and faer conversions, the CPU references and
//! their dense views, the reordering, CG's options, BiCGSTAB and GMRES on random systems, block-Jacobi's setup, the
//! convection–diffusion generator, the assembly from COO triples, and Auto's rule on any row statistics. The properties themselves live in
//! `properties/`, shared with the fuzz targets; this file generates inputs for them, small and many,
//! so the suite takes a few seconds. A failure prints the shrunk input. Every test runs under the
//! 4 GiB cap on the address space (`common::cap_memory`), so an over-allocation fails it.

mod common;
mod properties;

use common::cap_memory;
use gpu_spmv::formats::{MAX_PARTS, MAX_ROWS_PER_ENTRY, MAX_ROWS_WITHOUT_ENTRIES, NO_NODE};
use gpu_spmv::io::{parse_matrix_market, pattern_value};
use gpu_spmv::reference::block_jacobi::MAX_BLOCK;
use gpu_spmv::reference::gmres::MAX_RESTART;
use gpu_spmv::reference::ilu::IluFactors;
use gpu_spmv::rule::Target;
use gpu_spmv::solve::{EigenBounds, Preconditioner, SolverOptions};
use gpu_spmv::{CsrRef, Scalar};
use gpu_spmv::{Kernel, Regime, RowStats};
use properties::assemble::check_assemble;
use properties::block_jacobi::check_block_jacobi;
use properties::cg::check_cg_options;
use properties::chebyshev::{check_chebyshev, check_spectral_radius, dense_to_csr, symmetric_gershgorin};
use properties::ilu::{check_device_pattern, check_ic0, check_ilu0};
use properties::krylov::{Krylov, check_convection_diffusion, check_krylov};
use properties::lma::check_lma;
use properties::partition::check_partition;
use properties::references::{check_dense_view, check_references};
use properties::reorder::check_rcm;
use properties::staging::{check_copy_checked, check_offsets_passes};
use properties::{FormatParams, check_conversions, check_csr_try_new, check_matrix_market};
use proptest::prelude::*;
use std::collections::BTreeMap;

/// Cases per property: enough to cover the shapes below in a few seconds of a debug build.
const CASES: u32 = 256;

/// A valid CSR matrix with small integer values (sums exact in f32), as rows of (column, value).
#[derive(Debug, Clone)]
struct Matrix {
    ncols: usize,
    rows: Vec<Vec<(usize, i8)>>,
}

impl Matrix {
    fn arrays<T: Scalar>(&self) -> (Vec<usize>, Vec<usize>, Vec<T>) {
        let mut offsets = vec![0];
        let (mut cols, mut values) = (Vec::new(), Vec::new());
        for row in &self.rows {
            for &(c, v) in row {
                cols.push(c);
                values.push(T::from_f64(f64::from(v)));
            }
            offsets.push(cols.len());
        }
        (offsets, cols, values)
    }
}

/// Matrices of up to 80 rows (a few of them long, so that BRC splits and ELL refuses), columns from
/// none to past the kernels' 32-bit limit, entries in any order with repeats.
fn matrix() -> impl Strategy<Value = Matrix> {
    let ncols = prop_oneof![3 => 0usize..70, 1 => Just((1usize << 32) + 5)];
    (ncols, 0usize..80).prop_flat_map(|(ncols, nrows)| {
        let len = if ncols == 0 { 0..1usize } else { 0..40usize };
        let row = prop::collection::vec((0..ncols.max(1), any::<i8>()), len);
        let rows = prop::collection::vec(row, nrows);
        rows.prop_map(move |rows| Matrix { ncols, rows })
    })
}

fn params() -> impl Strategy<Value = FormatParams> {
    let b2 = prop_oneof![Just(0usize), 1usize..50, Just(usize::MAX)];
    let window = prop_oneof![
        Just(0usize),
        1usize..200,
        Just(6144),
        Just(6145),
        Just(12288),
        Just(1 << 61),
        Just(usize::MAX)
    ];
    let hyb_width = prop_oneof![Just(None), (0usize..50).prop_map(Some), Just(Some(usize::MAX))];
    (b2, window, hyb_width).prop_map(|(b2, window, hyb_width)| FormatParams { b2, window, hyb_width })
}

/// The node count of an LMA input: small, or at one of the limits it must be refused at.
#[derive(Debug, Clone, Copy)]
enum Nodes {
    Small(usize),
    U32Max,
    PastTheDeclaredLimit,
}

/// LMA input: node count, nodes per element (0 too), a map with nodes past the count and Dirichlet
/// slots (sometimes one slot too many), element matrices of small integers (sometimes one short or
/// one over), and `x`.
fn lma_input() -> impl Strategy<Value = (usize, usize, Vec<usize>, Vec<f64>, Vec<f64>)> {
    let nodes = prop_oneof![8 => (0usize..12).prop_map(Nodes::Small), 1 => Just(Nodes::U32Max), 1 => Just(Nodes::PastTheDeclaredLimit)];
    (
        nodes,
        0usize..5,
        0usize..10,
        prop_oneof![6 => Just(0usize), 1 => Just(1)],
        prop_oneof![6 => Just(0isize), 1 => -1isize..2],
    )
        .prop_flat_map(|(nodes, m, elements, extra_slot, value_delta)| {
            let slot = prop_oneof![8 => 0usize..14, 1 => Just(NO_NODE)];
            let slots = elements * m + extra_slot;
            let values = (elements * m * m).saturating_add_signed(value_delta);
            (
                Just((nodes, m)),
                prop::collection::vec(slot, slots),
                prop::collection::vec((-5i8..5).prop_map(f64::from), values),
                prop::collection::vec((-3i8..3).prop_map(f64::from), 12),
            )
        })
        .prop_map(|((nodes, m), map, values, x)| {
            let node_count = match nodes {
                Nodes::Small(n) => n,
                Nodes::U32Max => u32::MAX as usize,
                Nodes::PastTheDeclaredLimit => MAX_ROWS_WITHOUT_ENTRIES + MAX_ROWS_PER_ENTRY * map.len() + 1,
            };
            (node_count, m, map, values, x)
        })
}

/// A square matrix of up to 40 rows, entries in any order with repeats.
fn square() -> impl Strategy<Value = Matrix> {
    (0usize..40).prop_flat_map(|n| {
        let row = prop::collection::vec((0..n.max(1), any::<i8>()), if n == 0 { 0..1 } else { 0..6 });
        prop::collection::vec(row, n).prop_map(move |rows| Matrix { ncols: n, rows })
    })
}

fn cg_options() -> impl Strategy<Value = SolverOptions> {
    let rel_tol = prop_oneof![
        Just(f64::NAN),
        Just(f64::INFINITY),
        Just(-1e-9),
        Just(0.0),
        Just(1.0),
        Just(1.0 + 1e-12),
        0.0..1.0f64,
        -2.0..3.0f64
    ];
    let max_iterations =
        prop_oneof![4 => 0usize..40, 1 => Just(u32::MAX as usize + 1), 1 => Just(usize::MAX)];
    let preconditioner = prop_oneof![Just(Preconditioner::None), Just(Preconditioner::Jacobi)];
    (rel_tol, max_iterations, preconditioner).prop_map(|(rel_tol, max_iterations, preconditioner)| {
        SolverOptions { rel_tol, max_iterations, preconditioner }
    })
}

/// BiCGSTAB, or GMRES with a restart length that is usual, 0, or past the limit.
fn krylov() -> impl Strategy<Value = Krylov> {
    let restart =
        prop_oneof![8 => 1usize..40, 1 => Just(0usize), 1 => Just(MAX_RESTART + 1), 1 => Just(usize::MAX)];
    prop_oneof![Just(Krylov::Bicgstab), restart.prop_map(|restart| Krylov::Gmres { restart })]
}

/// A length of `b` or `x` for a system of order `n`: mostly `n`, sometimes one off.
fn length_near(n: usize) -> impl Strategy<Value = usize> {
    prop_oneof![8 => Just(n), 1 => Just(n + 1), 1 => Just(n.saturating_sub(1))]
}

/// A grid: small, or past the 32-bit limits by its unknowns, its entries or `usize` (never a large
/// grid within them, which would be allocated).
fn grid() -> impl Strategy<Value = (usize, usize)> {
    let small = (0usize..25, 0usize..25);
    let huge = prop_oneof![
        Just((1usize << 16, 1usize << 16)),
        Just((1 << 15, 1 << 15)),
        Just((usize::MAX, 2)),
        Just((3, usize::MAX))
    ];
    prop_oneof![8 => small, 1 => huge]
}

/// A dimension or stride: small, or past every limit.
fn extent() -> impl Strategy<Value = usize> {
    prop_oneof![8 => 0usize..9, 1 => Just(1usize << 33), 1 => Just(usize::MAX)]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: CASES, failure_persistence: None, ..ProptestConfig::default() })]

    #[test]
    fn lma_is_refused_as_documented_or_agrees_with_its_assembly((n, m, map, values, x) in lma_input()) {
        cap_memory();
        check_lma(n, m, &map, &values, &x);
    }

    #[test]
    fn row_partitions_are_refused_as_documented_or_give_the_matrix_back(
        a in matrix(),
        parts in prop_oneof![8 => 0usize..10, 1 => Just(MAX_PARTS), 1 => Just(MAX_PARTS + 1), 1 => Just(usize::MAX)],
    ) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f64>();
        check_partition(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), parts);
    }

    #[test]
    fn references_keep_the_gpu_contract(a in matrix(), alpha in prop_oneof![Just(0.0), Just(1.5), Just(-2.0)], beta in prop_oneof![Just(0.0), Just(0.5)]) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f32>();
        let view = CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap();
        check_references(view, alpha as f32, beta as f32);
        let (offsets, cols, values) = a.arrays::<f64>();
        check_references(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), alpha, beta);
    }

    #[test]
    fn dense_views_hold_exactly_their_data(len in 0usize..40, rows in extent(), cols in extent(), rs in extent(), cs in extent()) {
        cap_memory();
        check_dense_view(len, rows, cols, rs, cs);
    }

    #[test]
    fn rcm_numbers_every_node_once_and_permutes_the_matrix(a in prop_oneof![3 => square(), 1 => matrix()]) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f64>();
        check_rcm(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap());
    }

    #[test]
    fn cg_options_are_refused_as_documented_or_stop_the_solve_as_they_say(n in 0usize..20, options in cg_options()) {
        cap_memory();
        check_cg_options(n, options);
    }

    /// Block-Jacobi's setup on square and rectangular matrices, block sizes from 0 to past the
    /// limit, diagonal blocks dominant, singular or empty, entries scaled by powers of two far from 1.
    #[test]
    fn block_jacobi_refuses_as_documented_or_inverts_every_block(
        (a, ncols) in square().prop_flat_map(|a| {
            let n = a.rows.len();
            (Just(a), prop_oneof![4 => Just(n), 1 => Just(n + 1)])
        }),
        block in prop_oneof![8 => 1usize..12, 1 => Just(0usize), 1 => Just(MAX_BLOCK), 1 => Just(MAX_BLOCK + 1)],
        dominance in prop_oneof![Just(0.0), Just(1e3), -4.0..4.0f64],
        scale in -40i32..40,
        r in prop::collection::vec(-8i8..8, 0..8),
    ) {
        cap_memory();
        let n = a.rows.len();
        let (mut offsets, mut cols, mut values) = (vec![0], vec![], vec![]);
        for (i, row) in a.rows.iter().enumerate() {
            for &(c, v) in row.iter().chain([(i.min(ncols.saturating_sub(1)), 0)].iter().filter(|_| ncols > 0)) {
                cols.push(c);
                let value = if c == i && v == 0 { dominance } else { f64::from(v) };
                values.push(value * 2f64.powi(scale));
            }
            offsets.push(cols.len());
        }
        let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        let (r64, r32): (Vec<f64>, Vec<f32>) = (r.iter().map(|&v| f64::from(v)).collect(), r.iter().map(|&v| f32::from(v)).collect());
        check_block_jacobi(CsrRef::try_new(n, ncols, &offsets, &cols, &values).unwrap(), block, &r64);
        check_block_jacobi(CsrRef::try_new(n, ncols, &offsets, &cols, &values32).unwrap(), block, &r32);
    }

    #[test]
    fn krylov_solvers_refuse_as_documented_or_stop_within_their_limits(
        (a, b, x0) in square().prop_flat_map(|a| {
            let n = a.rows.len();
            let values = |len| prop::collection::vec(-8i8..8, len);
            (Just(a), length_near(n).prop_flat_map(values), length_near(n).prop_flat_map(values))
        }),
        options in cg_options(),
        solver in krylov(),
    ) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f32>();
        let view = CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap();
        let (b32, x32): (Vec<f32>, Vec<f32>) = (b.iter().map(|&v| f32::from(v)).collect(), x0.iter().map(|&v| f32::from(v)).collect());
        check_krylov(solver, view, &b32, &x32, options);
        let (offsets, cols, values) = a.arrays::<f64>();
        let view = CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap();
        let (b64, x64): (Vec<f64>, Vec<f64>) = (b.iter().map(|&v| f64::from(v)).collect(), x0.iter().map(|&v| f64::from(v)).collect());
        check_krylov(solver, view, &b64, &x64, options);
    }

    #[test]
    fn convection_diffusion_is_refused_as_documented_or_an_m_matrix(
        (nx, ny) in grid(),
        peclet in prop_oneof![4 => 0.0..1000.0f64, 1 => Just(f64::NAN), 1 => Just(-1.0), 1 => Just(f64::INFINITY), 1 => Just(1e40), 1 => Just(f64::MAX)],
    ) {
        cap_memory();
        check_convection_diffusion::<f32>(nx, ny, peclet);
        check_convection_diffusion::<f64>(nx, ny, peclet);
    }

    #[test]
    fn sprs_and_faer_matrices_are_taken_as_their_crates_accept_them(a in matrix(), lead in 0usize..3, spare in 0usize..3, slack in 0usize..3) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f64>();
        let view = CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap();
        #[cfg(feature = "faer")]
        properties::interop::check_faer(view, (lead, spare, slack));
        #[cfg(feature = "sprs")]
        properties::interop::check_sprs(view);
        let _ = (view, lead, spare, slack);
    }

    #[test]
    fn conversions_round_trip_or_refuse_with_their_error(a in matrix(), p in params()) {
        cap_memory();
        let (offsets, cols, values) = a.arrays::<f32>();
        check_conversions(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), p);
        let (offsets, cols, values) = a.arrays::<f64>();
        check_conversions(CsrRef::try_new(a.rows.len(), a.ncols, &offsets, &cols, &values).unwrap(), p);
    }

    /// Raw arrays near a valid matrix: a few offsets or columns changed, or lengths cut.
    #[test]
    fn csr_validation_names_the_first_fault(
        a in matrix(),
        nrows_delta in prop_oneof![4 => Just(0isize), 1 => -2isize..3],
        damage in prop::collection::vec((any::<prop::sample::Index>(), 0usize..100, any::<bool>()), 0..3),
        drop_value in any::<bool>(),
    ) {
        cap_memory();
        let (mut offsets, mut cols, mut values) = a.arrays::<f64>();
        for (at, value, in_offsets) in damage {
            if in_offsets {
                let i = at.index(offsets.len());
                offsets[i] = value;
            } else if !cols.is_empty() {
                let i = at.index(cols.len());
                cols[i] = value;
            }
        }
        if drop_value {
            values.pop();
        }
        let nrows = a.rows.len().saturating_add_signed(nrows_delta);
        check_csr_try_new(nrows, a.ncols, &offsets, &cols, &values);
    }

    /// Generated files of every kind, with comments, blank lines and spacing, against the matrix
    /// they describe.
    #[test]
    fn matrix_market_reads_what_was_written(
        (n, entries) in (1usize..30).prop_flat_map(|n| (Just(n), prop::collection::vec((0..n, 0..n, -50i32..50), 0..60))),
        kind in 0usize..4,
        spacing in prop::collection::vec(prop_oneof![Just(" "), Just("\t"), Just("  "), Just(" \t ")], 3),
        comment_every in 1usize..7,
        crlf in any::<bool>(),
    ) {
        cap_memory();
        let (field, symmetry) = [("real", "general"), ("integer", "symmetric"), ("pattern", "symmetric"), ("real", "skew-symmetric")][kind];
        // The entries the file may hold: the lower triangle for symmetric, the strict one for skew.
        let entries: Vec<_> = entries
            .into_iter()
            .filter(|&(r, c, _)| match symmetry { "general" => true, "symmetric" => c <= r, _ => c < r })
            .collect();
        let eol = if crlf { "\r\n" } else { "\n" };
        let mut text = format!("%%MatrixMarket matrix coordinate {field} {symmetry}{eol}% generated{eol}{eol}");
        text += &format!("{n}{}{n}{}{}{eol}", spacing[0], spacing[1], entries.len());
        let mut expected = BTreeMap::new();
        for (k, &(r, c, v)) in entries.iter().enumerate() {
            if k % comment_every == 0 {
                text += &format!("% entry {k} follows{eol}");
            }
            let value = if field == "pattern" { pattern_value(r, c) } else { f64::from(v) };
            if field == "pattern" {
                text += &format!("{}{}{}{eol}", r + 1, spacing[2], c + 1);
            } else {
                text += &format!("{}{}{}{}{v}{eol}", r + 1, spacing[2], c + 1, spacing[0]);
            }
            *expected.entry((r, c)).or_insert(0.0) += value;
            if r != c && symmetry != "general" {
                let mirrored = if symmetry == "skew-symmetric" { -value } else { value };
                *expected.entry((c, r)).or_insert(0.0) += mirrored;
            }
        }
        let m = parse_matrix_market::<f64>(&text).unwrap();
        prop_assert_eq!((m.nrows(), m.ncols()), (n, n));
        let got: Vec<_> = m.triplet_iter().map(|(r, c, &v)| (r, c, v)).collect();
        let expected: Vec<_> = expected.into_iter().map(|((r, c), v)| (r, c, v)).collect();
        prop_assert_eq!(got, expected);
        check_matrix_market(text.as_bytes());
    }

    /// Damaged files: bytes changed, inserted or cut anywhere in a valid one.
    #[test]
    fn damaged_matrix_market_files_are_refused_cleanly(
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0u8..3), 1..6),
    ) {
        cap_memory();
        let mut bytes = b"%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 5\n1 1 2.5\n2 1 -1\n3 3 1e3\n4 2 7\n4 4 .5\n".to_vec();
        for (at, byte, how) in edits {
            let i = at.index(bytes.len() + 1);
            match how {
                0 if i < bytes.len() => bytes[i] = byte,
                1 => bytes.insert(i, byte),
                _ => bytes.truncate(i),
            }
        }
        check_matrix_market(&bytes);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// The assembly from COO triples: any dimensions (a few past the limits), indices mostly in
    /// range, values whose sums round (so the order of the sums shows) and now and then NaN or an
    /// infinity, lengths now and then unequal.
    #[test]
    fn assembly_from_triples_sums_repeats_in_input_order_or_refuses(
        dims in prop_oneof![8 => (0usize..30, 0usize..30), 1 => Just((1usize << 40, 3)), 1 => Just((3, 1usize << 40))],
        triples in prop::collection::vec(
            (0u32..32, 0u32..32, prop_oneof![8 => -1e8..1e8f64, 8 => -1.0..1.0f64, 1 => Just(f64::NAN), 1 => Just(f64::INFINITY), 1 => Just(f64::NEG_INFINITY)]),
            0..120,
        ),
        (cut_cols, cut_values) in prop_oneof![8 => Just((0usize, 0usize)), 1 => (0usize..2, 0usize..2)],
    ) {
        cap_memory();
        let rows: Vec<u32> = triples.iter().map(|t| t.0).collect();
        let cols: Vec<u32> = triples.iter().skip(cut_cols).map(|t| t.1).collect();
        let values: Vec<f64> = triples.iter().skip(cut_values).map(|t| t.2).collect();
        check_assemble(dims, &rows, &cols, &values);
        let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        check_assemble(dims, &rows, &cols, &values32);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// ILU(0) on any small matrix (most rows with a diagonal entry, some diagonally dominant so that
    /// the factorisation exists, repeated and unsorted entries, now and then a row more than columns).
    #[test]
    fn ilu0_is_refused_as_documented_or_reproduces_a_on_its_pattern(
        rows in prop::collection::vec(prop::collection::vec((any::<u8>(), any::<i8>()), 0..8), 0..40),
        shift in prop_oneof![Just(0.0), 1.0..50.0f64, 500.0..2000.0f64],
        diagonal_rows in 0usize..45,
        wide in prop_oneof![4 => Just(false), 1 => Just(true)],
    ) {
        cap_memory();
        let n = rows.len();
        let ncols = n + usize::from(wide);
        // Columns modulo the order; the first `diagonal_rows` rows get `shift` on their diagonal.
        let (mut o, mut c, mut v) = (vec![0], vec![], vec![]);
        for (r, row) in rows.iter().enumerate() {
            for &(col, value) in row {
                c.push(usize::from(col) % ncols.max(1));
                v.push(f64::from(value));
            }
            if r < diagonal_rows {
                c.push(r);
                v.push(shift);
            }
            o.push(c.len());
        }
        let view = CsrRef::try_new(n, ncols, &o, &c, &v).unwrap();
        check_ilu0(view);
        check_ic0(view);
        check_device_pattern(view);
        let v32: Vec<f32> = v.iter().map(|&x| x as f32).collect();
        check_ilu0(CsrRef::try_new(n, ncols, &o, &c, &v32).unwrap());
        check_ic0(CsrRef::try_new(n, ncols, &o, &c, &v32).unwrap());
        check_device_pattern(CsrRef::try_new(n, ncols, &o, &c, &v32).unwrap());
    }

    /// IC(0) on symmetric matrices, some diagonally dominant (so that it exists), and on the same
    /// matrices with their upper triangle spoilt, which it must not read.
    #[test]
    fn ic0_of_a_symmetric_matrix_is_refused_as_documented_or_reproduces_it(
        n in 1usize..16,
        entries in prop::collection::vec((0usize..16, 0usize..16, any::<i8>()), 0..60),
        shift in prop_oneof![0.0..10.0f64, 500.0..4000.0f64],
        spoil in prop_oneof![Just(None), Just(Some(f64::NAN)), Just(Some(1e300))],
    ) {
        cap_memory();
        let (offsets, cols, mut values) = symmetric(n, &entries, shift);
        let a = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
        check_ic0(a);
        let clean = format!("{:?}", IluFactors::incomplete_cholesky(a));
        if let Some(bad) = spoil {
            for r in 0..n {
                for k in offsets[r]..offsets[r + 1] {
                    if cols[k] > r {
                        values[k] = bad;
                    }
                }
            }
            let spoilt = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
            check_ic0(spoilt);
            prop_assert_eq!(format!("{:?}", IluFactors::incomplete_cholesky(spoilt)), clean);
        }
        let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        check_ic0(CsrRef::try_new(n, n, &offsets, &cols, &values32).unwrap());
    }
}

/// A symmetric matrix of order `n`: `B + Bᵀ` for the entries of `B`, plus `shift` on the diagonal
/// (diagonally dominant, so positive definite, where `shift` exceeds every row's sum of moduli).
fn symmetric(n: usize, entries: &[(usize, usize, i8)], shift: f64) -> (Vec<usize>, Vec<usize>, Vec<f64>) {
    let mut dense = vec![0.0; n * n];
    for &(r, c, v) in entries {
        let (r, c) = (r % n, c % n);
        dense[r * n + c] += f64::from(v);
        dense[c * n + r] += f64::from(v);
    }
    (0..n).for_each(|r| dense[r * n + r] += shift);
    dense_to_csr(n, n, &dense)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// The Chebyshev oracle on symmetric matrices (some dominant, so the Chebyshev bound applies on
    /// their Gershgorin interval, widened or not) and on any matrix with any interval, degree and
    /// `r`; the power iteration's radius on the same matrices.
    #[test]
    fn chebyshev_is_refused_as_documented_or_bounded(
        n in 1usize..12,
        entries in prop::collection::vec((0usize..12, 0usize..12, any::<i8>()), 0..40),
        shift in prop_oneof![0.0..10.0f64, 500.0..4000.0f64],
        widen in prop_oneof![Just(None), (0.0..0.5f64, 1.0..3.0f64).prop_map(Some)],
        raw_bounds in (prop_oneof![Just(-1.0), Just(0.0), 1e-3..10.0f64, Just(f64::NAN)], prop_oneof![1e-3..1e4f64, Just(f64::INFINITY)]),
        degree in prop_oneof![0usize..20, Just(64), Just(65)],
        r in prop::collection::vec(-100i8..100, 0..13),
        steps in prop_oneof![Just(0usize), 1usize..40, Just(1001)],
        cut in prop_oneof![4 => Just(0usize), 1 => Just(1)],
    ) {
        cap_memory();
        let (offsets, cols, values) = symmetric(n, &entries, shift);
        let a = CsrRef::try_new(n, n, &offsets, &cols, &values).unwrap();
        let bounds = match (widen, symmetric_gershgorin(a)) {
            (Some((low, high)), Some((lo, hi))) if lo > 0.0 => EigenBounds { min: lo * (1.0 - low), max: hi * high },
            _ => EigenBounds { min: raw_bounds.0, max: raw_bounds.1 },
        };
        let r: Vec<f64> = r.iter().take(n + 1).skip(cut).map(|&v| f64::from(v)).collect();
        check_chebyshev(a, bounds, degree, &r);
        let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
        let a32 = CsrRef::try_new(n, n, &offsets, &cols, &values32).unwrap();
        let r32: Vec<f32> = r.iter().map(|&v| v as f32).collect();
        check_chebyshev(a32, bounds, degree, &r32);
        check_spectral_radius(a, steps);
        check_spectral_radius(a32, steps);
        let wide = CsrRef::try_new(n, n + 1, &offsets, &cols, &values).unwrap();
        check_chebyshev(wide, bounds, degree, &r);
        check_spectral_radius(wide, steps);
    }
}

/// The grid shapes whose systems are worst conditioned among those the convection–diffusion property
/// solves, lines of 100 unknowns (the small grids above reach 24), and longer ones, which it only
/// builds. Found by the `krylov` fuzz target: f32 on a 1 × 238 line stalls at a true residual of
/// 1.5e-4, above a fixed 1e-4 tolerance.
#[test]
fn convection_diffusion_on_long_lines_converges_to_what_the_precision_attains() {
    cap_memory();
    for (nx, ny) in [(1, 100), (100, 1), (4, 100), (1, 238), (238, 1), (1, 400), (2, 200)] {
        for peclet in [0.0, 1000.0] {
            check_convection_diffusion::<f32>(nx, ny, peclet);
            check_convection_diffusion::<f64>(nx, ny, peclet);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// Auto's fitted rule answers a kernel for any statistics, GPU and regime, however absurd (NaN and
    /// infinite means, counts near `usize::MAX`, no SMs, no L2): never `Auto` itself, never a panic,
    /// always a width the kernels are compiled for.
    #[test]
    fn auto_answers_for_any_statistics(
        (rows, cols, nnz, max) in (any::<usize>(), any::<usize>(), any::<usize>(), any::<usize>()),
        mean in prop_oneof![any::<f64>(), 0.0..1e4],
        std_dev in prop_oneof![any::<f64>(), 0.0..1e4],
        value_bytes in prop_oneof![Just(4usize), Just(8)],
        (sm_count, l2_bytes) in (any::<u32>(), any::<u64>()),
        regime in prop_oneof![Just(Regime::Cold), Just(Regime::Hot), Just(Regime::Graph)],
    ) {
        let stats = RowStats { rows, cols, nnz, mean, std_dev, max, empty_rows: 0 };
        let kernel = Kernel::auto_for(&stats, value_bytes, Target { sm_count, l2_bytes }, regime);
        match kernel {
            Kernel::Auto => prop_assert!(false, "Auto answered Auto"),
            Kernel::CsrVector { coop, .. } => prop_assert!(Kernel::VECTOR_COOPS.contains(&coop)),
            Kernel::CsrParam { coop, .. } => prop_assert!(Kernel::PARAM_COOPS.contains(&coop)),
            _ => {}
        }
    }
}

/// Found by a review of the caller's-preconditioner forms: with `x0 = (-0, 0)` and `b = (0, 1)`,
/// block-Jacobi of blocks of 1 (`fma(e, r, +0)`) and Jacobi (`e * r`) leave zeros of opposite sign
/// in `x`; the property compares them as numbers.
#[test]
fn block_jacobi_of_one_and_jacobi_differ_only_in_the_sign_of_zero() {
    let a = CsrRef::try_new(2, 2, &[0, 1, 2], &[0, 1], &[-1.0f64, 1.0]).unwrap();
    let options =
        SolverOptions { rel_tol: 1e-10, max_iterations: 50, preconditioner: Preconditioner::Jacobi };
    for solver in [Krylov::Bicgstab, Krylov::Gmres { restart: 5 }] {
        check_krylov(solver, a, &[0.0, 1.0], &[-0.0, 0.0], options);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(CASES))]

    /// The pass that fills an upload's stages: short sources and ones of several of its pieces
    /// (32 Ki elements each), entries past the bound anywhere, destinations now and then of another
    /// length.
    #[test]
    fn staging_pass_copies_and_names_the_first_bad_entry_or_refuses(
        len in prop_oneof![4 => 0usize..100, 1 => 30_000usize..100_000],
        bad in prop::collection::vec(any::<prop::sample::Index>(), 0..4),
        dest_delta in prop_oneof![8 => Just(0isize), 1 => -1isize..=1],
    ) {
        let mut source: Vec<u32> = (0..len).map(|i| (i % 1000) as u32).collect();
        for at in &bad {
            if len > 0 {
                source[at.index(len)] = 1000 + (at.index(len) % 7) as u32;
            }
        }
        let dest_len = len.saturating_add_signed(dest_delta);
        check_copy_checked(&source, dest_len, 1000);
    }

    /// The offsets' passes: non-decreasing offsets, now and then one that decreases, and lengths past
    /// a rayon task's.
    #[test]
    fn offsets_passes_agree_with_a_sequential_reading(
        steps in prop::collection::vec(prop_oneof![8 => 0u32..20, 1 => Just(u32::MAX / 4)], 0..200),
        repeat in prop_oneof![4 => Just(1usize), 1 => Just(400usize)],
        drop_at in prop::option::of(any::<prop::sample::Index>()),
        ncols in 0usize..1000,
    ) {
        let mut offsets: Vec<u32> = std::iter::once(0)
            .chain(steps.iter().cycle().take(steps.len() * repeat).scan(0u32, |at, &s| {
                *at = at.wrapping_add(s);
                Some(*at)
            }))
            .collect();
        if let Some(at) = drop_at {
            let i = at.index(offsets.len());
            offsets[i] = offsets[i].wrapping_sub(7);
        }
        check_offsets_passes(&offsets, ncols);
    }
}
