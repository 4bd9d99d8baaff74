//! Sample quantiles, R's type 7 (numpy's default "linear"), computed with the same
//! arithmetic as scipy's `mquantiles(alphap=1, betap=1)` that ArviZ uses.

/// The `prob` quantile of `values` (NaN when empty or when any value is NaN).
pub fn quantile_type7(values: &[f64], prob: f64) -> f64 {
    quantiles_type7(values, &[prob])[0]
}

/// Several quantiles with one sort.
pub fn quantiles_type7(values: &[f64], probs: &[f64]) -> Vec<f64> {
    if values.iter().any(|v| v.is_nan()) {
        return vec![f64::NAN; probs.len()];
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    probs.iter().map(|&p| quantile_sorted(&sorted, p)).collect()
}

/// The `prob` quantile of already sorted, NaN-free values (NaN when empty).
pub fn quantile_sorted(sorted: &[f64], prob: f64) -> f64 {
    let n = sorted.len();
    match n {
        0 => f64::NAN,
        1 => sorted[0],
        _ => {
            // aleph = n·p + m with m = alphap + p(1 − alphap − betap) = 1 − p.
            let aleph = n as f64 * prob + (1.0 - prob);
            let k = aleph.clamp(1.0, (n - 1) as f64).floor();
            let gamma = (aleph - k).clamp(0.0, 1.0);
            let k = k as usize;
            (1.0 - gamma) * sorted[k - 1] + gamma * sorted[k]
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linear_interpolation_between_order_statistics() {
        let values = [4.0, 1.0, 3.0, 2.0, 5.0];
        // Type 7: h = (n − 1)p, interpolate sorted[h].
        assert_eq!(quantile_type7(&values, 0.5), 3.0);
        assert!((quantile_type7(&values, 0.05) - 1.2).abs() < 1e-12);
        assert!((quantile_type7(&values, 0.95) - 4.8).abs() < 1e-12);
        assert_eq!(quantile_type7(&values, 0.0), 1.0);
        assert_eq!(quantile_type7(&values, 1.0), 5.0);
    }

    #[test]
    fn degenerate_inputs() {
        assert!(quantile_type7(&[], 0.5).is_nan());
        assert!(quantile_type7(&[1.0, f64::NAN], 0.5).is_nan());
        assert_eq!(quantile_type7(&[7.0], 0.3), 7.0);
    }
}
