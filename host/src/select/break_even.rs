//! The break-even arithmetic of choosing a format (Reguly & Giles, "Efficient sparse matrix-vector
//! multiplication on cache-based GPUs", InPar 2012, their comparison with ELLPACK): a format that
//! must first be converted pays off only after enough products, each faster than CSR's. Pure: measured
//! times in, decision out, so that it is tested on the CPU.

/// What a candidate format costs, measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FormatCost {
    /// Wall time from CSR on the host to the format on the device, in milliseconds.
    pub conversion_ms: f64,
    /// Time of one product, in milliseconds.
    pub product_ms: f64,
}

impl FormatCost {
    /// The conversion and `products` products, in milliseconds.
    pub fn total_ms(&self, products: u64) -> f64 {
        self.conversion_ms + products as f64 * self.product_ms
    }
}

/// The fewest products after which converting to the format has taken less time in all than running
/// them with CSR at `csr_product_ms` each: the first whole number past `conversion / saving`, the
/// saving being what one product gains. `None` (never) when the format is not faster, or a time is
/// not a number; saturates at `u64::MAX`.
pub fn break_even_products(csr_product_ms: f64, cost: FormatCost) -> Option<u64> {
    let saving = csr_product_ms - cost.product_ms;
    let pays_back = saving > 0.0 && cost.conversion_ms.is_finite();
    // Float-to-integer casts saturate: a count past u64 is u64::MAX.
    #[allow(clippy::cast_possible_truncation)]
    pays_back.then(|| ((cost.conversion_ms.max(0.0) / saving).floor() as u64).saturating_add(1))
}

/// Whether a format whose conversion took `conversion_ms` could still beat CSR over `products`
/// products: only if the conversion alone is shorter than CSR's products, since no product takes less
/// than no time. Lets the planner skip uploading and timing a format that has already lost.
pub fn could_pay_off(csr_product_ms: f64, conversion_ms: f64, products: u64) -> bool {
    conversion_ms < products as f64 * csr_product_ms
}

/// The candidate with the smallest total time, conversion and `products` products, as an index into
/// `candidates`; `None` when none is below CSR's `products * csr_product_ms` (CSR is on the device
/// already and converts nothing). Ties go to CSR, then to the earlier candidate; a candidate with a
/// time that is not a number never wins.
pub fn cheapest_format(csr_product_ms: f64, candidates: &[FormatCost], products: u64) -> Option<usize> {
    let mut best_ms = products as f64 * csr_product_ms;
    let mut chosen = None;
    for (i, cost) in candidates.iter().enumerate() {
        let total = cost.total_ms(products);
        if total < best_ms {
            best_ms = total;
            chosen = Some(i);
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cost(conversion_ms: f64, product_ms: f64) -> FormatCost {
        FormatCost { conversion_ms, product_ms }
    }

    #[test]
    fn break_even_is_the_first_count_past_conversion_over_saving() {
        // Saves 0.25 ms a product; 10 ms of conversion are paid back by 40 products, a tie, so 41.
        assert_eq!(break_even_products(0.5, cost(10.0, 0.25)), Some(41));
        assert_eq!(break_even_products(0.5, cost(10.1, 0.25)), Some(41));
        // A free conversion pays off from the first product.
        assert_eq!(break_even_products(0.5, cost(0.0, 0.25)), Some(1));
        // The H100's HYB on the power-law matrix: 168.2 ms to save 45 us a product.
        assert_eq!(break_even_products(0.271, cost(168.2, 0.226)), Some(3738));
        assert_eq!(break_even_products(1e30, cost(1e30, 1e-300)), Some(2));
        assert_eq!(break_even_products(1e-300, cost(1e30, 0.0)), Some(u64::MAX));
    }

    #[test]
    fn a_format_that_is_not_faster_never_breaks_even() {
        assert_eq!(break_even_products(0.5, cost(10.0, 0.5)), None, "as fast");
        assert_eq!(break_even_products(0.5, cost(0.0, 0.5)), None, "as fast, free");
        assert_eq!(break_even_products(0.5, cost(10.0, 0.75)), None, "slower");
        assert_eq!(break_even_products(f64::NAN, cost(10.0, 0.25)), None);
        assert_eq!(break_even_products(0.5, cost(f64::NAN, 0.25)), None);
        assert_eq!(break_even_products(0.5, cost(f64::INFINITY, 0.25)), None);
    }

    #[test]
    fn no_products_or_ties_keep_csr() {
        let free_and_faster = [cost(0.0, 0.1)];
        assert_eq!(cheapest_format(1.0, &free_and_faster, 0), None, "no products: nothing to gain");
        assert_eq!(cheapest_format(1.0, &[], 1_000), None);
        // 10 + 40 * 0.25 = 20 = 40 * 0.5: a tie goes to CSR.
        assert_eq!(cheapest_format(0.5, &[cost(10.0, 0.25)], 40), None);
        assert_eq!(cheapest_format(0.5, &[cost(10.0, 0.25)], 41), Some(0));
        // Two candidates with the same total: the first.
        assert_eq!(cheapest_format(1.0, &[cost(10.0, 0.5), cost(10.0, 0.5)], 100), Some(0));
        assert_eq!(cheapest_format(1.0, &[cost(20.0, 0.5), cost(10.0, 0.5)], 100), Some(1));
    }

    #[test]
    fn slower_or_broken_formats_never_win() {
        let slower = [cost(0.0, 2.0), cost(0.0, 1.0), cost(f64::NAN, 0.1), cost(1.0, f64::NAN)];
        for products in [0, 1, 100, u64::MAX] {
            assert_eq!(cheapest_format(1.0, &slower, products), None, "{products} products");
        }
    }

    #[test]
    fn the_smallest_total_wins_not_the_fastest_product() {
        // A converts slowly to a fast product, B quickly to a product a little faster than CSR.
        let candidates = [cost(100.0, 0.5), cost(10.0, 0.9)];
        // 50 products: CSR 50, A 125, B 55.
        assert_eq!(cheapest_format(1.0, &candidates, 50), None);
        // 200: CSR 200, A 200, B 190.
        assert_eq!(cheapest_format(1.0, &candidates, 200), Some(1));
        // 1000: CSR 1000, A 600, B 910.
        assert_eq!(cheapest_format(1.0, &candidates, 1000), Some(0));
    }

    #[test]
    fn one_candidate_wins_exactly_from_its_break_even_count() {
        for (csr, c) in [(0.5, cost(10.0, 0.25)), (0.125, cost(3.0, 0.0625)), (1.0, cost(0.0, 0.5))] {
            let n = break_even_products(csr, c).unwrap();
            for products in n.saturating_sub(3)..n + 3 {
                assert_eq!(cheapest_format(csr, &[c], products).is_some(), products >= n, "{products}");
            }
        }
    }

    #[test]
    fn a_conversion_longer_than_csrs_products_cannot_pay_off() {
        assert!(could_pay_off(0.5, 10.0, 21));
        assert!(!could_pay_off(0.5, 10.0, 20), "a tie is not a gain");
        assert!(!could_pay_off(0.5, 0.0, 0));
        assert!(!could_pay_off(0.5, f64::NAN, 100));
        // Whatever its product time, a format that fails this check is never chosen.
        for product_ms in [0.0, 0.1, 0.49] {
            assert_eq!(cheapest_format(0.5, &[cost(10.0, product_ms)], 20), None);
        }
    }
}
