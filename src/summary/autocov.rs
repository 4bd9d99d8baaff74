//! Autocovariance of one chain by FFT (Wiener–Khinchin), normalised by n as ArviZ's
//! `_autocov` does: acov[k] = Σ_{t<n−k} (x_t − x̄)(x_{t+k} − x̄) / n.

use rustfft::FftPlanner;
use rustfft::num_complex::Complex;
use std::cell::RefCell;

thread_local! {
    // Plans are cached by size; every variable of a file usually shares one length.
    static PLANNER: RefCell<FftPlanner<f64>> = RefCell::new(FftPlanner::new());
}

/// Autocovariances at lags 0..n of `chain`.
pub fn autocovariance(chain: &[f64]) -> Vec<f64> {
    let n = chain.len();
    if n == 0 {
        return Vec::new();
    }
    let mean = chain.iter().sum::<f64>() / n as f64;
    // Zero padding to ≥ 2n turns the circular correlation into the linear one.
    let size = (2 * n).next_power_of_two();
    let mut buffer: Vec<Complex<f64>> = chain
        .iter()
        .map(|&x| Complex::new(x - mean, 0.0))
        .chain(std::iter::repeat_n(Complex::new(0.0, 0.0), size - n))
        .collect();
    PLANNER.with(|planner| {
        let mut planner = planner.borrow_mut();
        planner.plan_fft_forward(size).process(&mut buffer);
        for value in buffer.iter_mut() {
            *value = Complex::new(value.norm_sqr(), 0.0);
        }
        planner.plan_fft_inverse(size).process(&mut buffer);
    });
    // rustfft's inverse is unnormalised: divide by the FFT size, then by n.
    let scale = 1.0 / (size as f64 * n as f64);
    buffer[..n].iter().map(|c| c.re * scale).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn direct(chain: &[f64]) -> Vec<f64> {
        let n = chain.len();
        let mean = chain.iter().sum::<f64>() / n as f64;
        (0..n)
            .map(|k| {
                (0..n - k)
                    .map(|t| (chain[t] - mean) * (chain[t + k] - mean))
                    .sum::<f64>()
                    / n as f64
            })
            .collect()
    }

    #[test]
    fn matches_direct_sum() {
        let chain: Vec<f64> = (0..37).map(|i| ((i * 7919) % 101) as f64 / 13.0).collect();
        let fast = autocovariance(&chain);
        let slow = direct(&chain);
        for (a, b) in fast.iter().zip(&slow) {
            assert!((a - b).abs() < 1e-12 * slow[0], "{a} vs {b}");
        }
    }

    #[test]
    fn empty_and_single() {
        assert!(autocovariance(&[]).is_empty());
        assert_eq!(autocovariance(&[3.0]), vec![0.0]);
    }
}
