//! Vector primitives' reverse-mode rules against finite differences.

use bat_math::vector::*;
use proptest::prelude::*;

/// ∂(ȳ·f(x))/∂x by a fourth-order central difference.
fn fd_vjp(f: &dyn Fn(&[f64]) -> Vec<f64>, x: &[f64], y_bar: &[f64]) -> Vec<f64> {
    let objective = |xs: &[f64]| f(xs).iter().zip(y_bar).map(|(a, b)| a * b).sum::<f64>();
    (0..x.len())
        .map(|j| {
            let h = 1e-4;
            let at = |d: f64| {
                let mut xs = x.to_vec();
                xs[j] += d;
                objective(&xs)
            };
            (at(-2.0 * h) - 8.0 * at(-h) + 8.0 * at(h) - at(2.0 * h)) / (12.0 * h)
        })
        .collect()
}

fn assert_all_close(a: &[f64], b: &[f64]) -> Result<(), TestCaseError> {
    for (x, y) in a.iter().zip(b) {
        prop_assert!(
            (x - y).abs() <= 1e-7 * y.abs().max(1.0),
            "{:?} vs {:?}",
            a,
            b
        );
    }
    Ok(())
}

proptest! {
    #[test]
    fn softmax_family_rules(x in prop::collection::vec(-20.0..20.0f64, 1..8), seed in prop::collection::vec(-1.0..1.0f64, 8)) {
        let y_bar = &seed[..x.len()];
        let s = softmax(&x);
        prop_assert!((s.iter().sum::<f64>() - 1.0).abs() < 1e-14);
        assert_all_close(&softmax_vjp(&x, y_bar), &fd_vjp(&softmax, &x, y_bar))?;
        assert_all_close(&log_softmax_vjp(&x, y_bar), &fd_vjp(&log_softmax, &x, y_bar))?;
        let lse = |xs: &[f64]| vec![bat_math::scalar::log_sum_exp(xs)];
        assert_all_close(&log_sum_exp_vjp(&x, y_bar[0]), &fd_vjp(&lse, &x, &y_bar[..1]))?;
    }
}

#[test]
fn log_softmax_is_stable_for_large_inputs() {
    let y = log_softmax(&[1000.0, 0.0]);
    assert_eq!(y[0], 0.0);
    assert_eq!(y[1], -1000.0);
}
