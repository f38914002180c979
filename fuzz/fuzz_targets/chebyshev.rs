//! The Chebyshev preconditioner's CPU oracle (`reference::chebyshev::apply`) and the power
//! iteration (`spectral_radius`) on any small matrix, symmetric or not, square or not, with any
//! interval (or the matrix's Gershgorin interval, widened), degree, `r` and step count: refused as
//! documented, or a `z` that meets the Chebyshev bound where it applies and a radius within the
//! matrix's 2-norm bound.
#![no_main]

use arbitrary::Arbitrary;
use gpu_spmv::CsrRef;
use gpu_spmv::solve::EigenBounds;
use gpu_spmv_fuzz::Param;
use gpu_spmv_fuzz::properties::chebyshev::{
    check_chebyshev, check_spectral_radius, dense_to_csr, symmetric_gershgorin,
};
use libfuzzer_sys::fuzz_target;

#[derive(Debug, Arbitrary)]
struct Input {
    /// Entries (row, column, value), indices taken modulo the order.
    entries: Vec<(u8, u8, i8)>,
    order: u8,
    /// Mirror the entries (a symmetric matrix), and add this to the diagonal.
    symmetric: bool,
    shift: u16,
    /// One more column than rows.
    wide: bool,
    /// The interval: the Gershgorin one scaled by these when `Some` and it is positive, else `bounds`.
    widen: Option<(u8, u8)>,
    bounds: (f64, f64),
    degree: u8,
    r: Vec<i8>,
    steps: Param,
}

fuzz_target!(|input: Input| {
    let n = usize::from(input.order % 16);
    let ncols = n + usize::from(input.wide);
    let mut dense = vec![0.0f64; n * ncols];
    if ncols > 0 && n > 0 {
        for &(r, c, v) in &input.entries {
            let (r, c) = (usize::from(r) % n, usize::from(c) % ncols);
            dense[r * ncols + c] += f64::from(v);
            if input.symmetric && c < n {
                dense[c * ncols + r] += f64::from(v);
            }
        }
        (0..n).for_each(|r| dense[r * ncols + r] += f64::from(input.shift));
    }
    let (offsets, cols, values) = dense_to_csr(n, ncols, &dense);
    let a = CsrRef::try_new(n, ncols, &offsets, &cols, &values).expect("valid by construction");
    let bounds = match (input.widen, symmetric_gershgorin(a)) {
        (Some((low, high)), Some((lo, hi))) if lo > 0.0 => {
            EigenBounds { min: lo / (1.0 + f64::from(low) / 64.0), max: hi * (1.0 + f64::from(high) / 64.0) }
        }
        _ => EigenBounds { min: input.bounds.0, max: input.bounds.1 },
    };
    let degree = usize::from(input.degree);
    let r: Vec<f64> = input.r.iter().map(|&v| f64::from(v)).collect();
    check_chebyshev(a, bounds, degree, &r);
    let values32: Vec<f32> = values.iter().map(|&v| v as f32).collect();
    let a32 = CsrRef::try_new(n, ncols, &offsets, &cols, &values32).expect("valid by construction");
    let r32: Vec<f32> = r.iter().map(|&v| v as f32).collect();
    check_chebyshev(a32, bounds, degree, &r32);
    // Steps cost a product each: an accepted count is kept to a few hundred.
    let steps = match input.steps.value() {
        small @ 0..=300 => small,
        huge if huge > 1000 => huge,
        other => other % 300,
    };
    check_spectral_radius(a, steps);
    check_spectral_radius(a32, steps);
});
