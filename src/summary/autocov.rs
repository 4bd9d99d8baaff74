//! Autocovariance of one chain by FFT (Wiener–Khinchin), normalised by n as ArviZ's
//! `_autocov` does: acov[k] = Σ_{t<n−k} (x_t − x̄)(x_{t+k} − x̄) / n.

use super::draws::ChainDraws;
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

/// Lags summed directly before switching to one FFT pass over every chain: Geyer's
/// truncation usually stops well before this, and a direct lag costs one pass over the
/// draws while the FFT costs dozens.
const DIRECT_LAGS: usize = 32;

/// The mean over chains of each chain's autocovariance at a lag, computed on demand.
pub struct MeanAutocovariance<'a> {
    draws: ChainDraws<'a>,
    /// Draws minus their chain's mean, chain-major.
    centered: Vec<f64>,
    direct: Vec<f64>,
    all_lags: Option<Vec<f64>>,
}

impl<'a> MeanAutocovariance<'a> {
    pub fn new(draws: ChainDraws<'a>) -> Self {
        let mut centered = Vec::with_capacity(draws.values().len());
        for chain in 0..draws.n_chains() {
            let values = draws.chain(chain);
            let mean = values.iter().sum::<f64>() / values.len() as f64;
            centered.extend(values.iter().map(|v| v - mean));
        }
        Self {
            draws,
            centered,
            direct: Vec::new(),
            all_lags: None,
        }
    }

    /// Mean autocovariance at `lag` (< draws per chain).
    pub fn at(&mut self, lag: usize) -> f64 {
        if let Some(all) = &self.all_lags {
            return all[lag];
        }
        if lag < DIRECT_LAGS {
            while self.direct.len() <= lag {
                let next = self.direct_lag(self.direct.len());
                self.direct.push(next);
            }
            return self.direct[lag];
        }
        let all = self.by_fft();
        let value = all[lag];
        self.all_lags = Some(all);
        value
    }

    fn direct_lag(&self, lag: usize) -> f64 {
        let n = self.draws.n_draws();
        let total: f64 = self
            .centered
            .chunks_exact(n)
            .map(|chain| {
                chain[..n - lag]
                    .iter()
                    .zip(&chain[lag..])
                    .map(|(a, b)| a * b)
                    .sum::<f64>()
                    / n as f64
            })
            .sum();
        total / self.draws.n_chains() as f64
    }

    fn by_fft(&self) -> Vec<f64> {
        let n_chains = self.draws.n_chains();
        let mut sum = vec![0.0; self.draws.n_draws()];
        for chain in 0..n_chains {
            for (total, value) in sum.iter_mut().zip(autocovariance(self.draws.chain(chain))) {
                *total += value;
            }
        }
        sum.iter().map(|total| total / n_chains as f64).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_mean_matches_fft_at_every_lag() {
        let values: Vec<f64> = (0..3 * 80)
            .map(|i| ((i * 7919) % 101) as f64 / 13.0 + (i / 80) as f64)
            .collect();
        let draws = ChainDraws::new(&values, 3, 80).unwrap();
        let expected: Vec<f64> = (0..80)
            .map(|lag| {
                (0..3)
                    .map(|c| autocovariance(draws.chain(c))[lag])
                    .sum::<f64>()
                    / 3.0
            })
            .collect();
        let mut lazy = MeanAutocovariance::new(draws);
        for (lag, want) in expected.iter().enumerate() {
            let got = lazy.at(lag);
            assert!(
                (got - want).abs() < 1e-12 * expected[0],
                "lag {lag}: {got} vs {want}"
            );
        }
    }

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
