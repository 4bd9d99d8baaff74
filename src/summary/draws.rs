//! A borrowed chains × draws matrix of one scalar quantity.

/// Draws of one scalar quantity, stored chain-major: `values[chain * n_draws + draw]`.
#[derive(Clone, Copy, Debug)]
pub struct ChainDraws<'a> {
    values: &'a [f64],
    n_chains: usize,
    n_draws: usize,
}

impl<'a> ChainDraws<'a> {
    /// Wraps chain-major values; `None` when the length is not `n_chains * n_draws`.
    pub fn new(values: &'a [f64], n_chains: usize, n_draws: usize) -> Option<Self> {
        (n_chains.checked_mul(n_draws) == Some(values.len())).then_some(Self {
            values,
            n_chains,
            n_draws,
        })
    }

    pub fn n_chains(&self) -> usize {
        self.n_chains
    }

    pub fn n_draws(&self) -> usize {
        self.n_draws
    }

    /// All values, chain after chain.
    pub fn values(&self) -> &'a [f64] {
        self.values
    }

    pub fn chain(&self, chain: usize) -> &'a [f64] {
        &self.values[chain * self.n_draws..(chain + 1) * self.n_draws]
    }
}

/// An owned chains × draws matrix (chain-major), the result of transforming draws.
#[derive(Clone, Debug, PartialEq)]
pub struct Matrix {
    pub values: Vec<f64>,
    pub n_chains: usize,
    pub n_draws: usize,
}

impl Matrix {
    pub fn view(&self) -> ChainDraws<'_> {
        ChainDraws {
            values: &self.values,
            n_chains: self.n_chains,
            n_draws: self.n_draws,
        }
    }

    pub fn map(&self, f: impl Fn(f64) -> f64) -> Matrix {
        Matrix {
            values: self.values.iter().map(|&v| f(v)).collect(),
            n_chains: self.n_chains,
            n_draws: self.n_draws,
        }
    }
}

/// Splits every chain into its first and last halves (dropping the middle draw of an
/// odd-length chain) and stacks them as `2 * n_chains` chains: all first halves, then
/// all second halves, as ArviZ's `_split_chains` does.
pub fn split_chains(draws: ChainDraws<'_>) -> Matrix {
    let half = draws.n_draws() / 2;
    let mut values = Vec::with_capacity(2 * draws.n_chains() * half);
    for chain in 0..draws.n_chains() {
        values.extend_from_slice(&draws.chain(chain)[..half]);
    }
    for chain in 0..draws.n_chains() {
        let c = draws.chain(chain);
        values.extend_from_slice(&c[c.len() - half..]);
    }
    Matrix {
        values,
        n_chains: 2 * draws.n_chains(),
        n_draws: half,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_mismatched_shape() {
        assert!(ChainDraws::new(&[1.0, 2.0, 3.0], 2, 2).is_none());
        assert!(ChainDraws::new(&[1.0, 2.0, 3.0, 4.0], 2, 2).is_some());
    }

    #[test]
    fn split_drops_middle_draw_of_odd_chains() {
        let values = [1.0, 2.0, 3.0, 4.0, 5.0, 10.0, 20.0, 30.0, 40.0, 50.0];
        let split = split_chains(ChainDraws::new(&values, 2, 5).unwrap());
        assert_eq!(split.n_chains, 4);
        assert_eq!(split.n_draws, 2);
        assert_eq!(
            split.values,
            vec![1.0, 2.0, 10.0, 20.0, 4.0, 5.0, 40.0, 50.0]
        );
    }
}
