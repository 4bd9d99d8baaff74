//! `cholesky_factor_cov[M, N]` (M ≥ N): lower-trapezoidal with positive
//! diagonal. Free parameters in Stan's order: the first N rows row by row
//! (below-diagonal entries, then the log of the diagonal entry), then the
//! remaining M-N rows in full. log |J| = Σ of the free diagonal entries.
//! Stan requires M ≥ N: with M < N, `unconstrain` reports an error and
//! `constrain` returns NaNs.

use super::linalg::at;
use super::{Constrained, ConstraintError, Transform, check_finite, check_len};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct CholeskyFactorCov {
    pub rows: usize,
    pub cols: usize,
}

/// Where each free parameter goes, in Stan's order: `(row, col, is_diagonal)`.
pub(crate) fn free_positions(
    rows: usize,
    cols: usize,
) -> impl Iterator<Item = (usize, usize, bool)> {
    let triangle = (0..cols).flat_map(|m| (0..=m).map(move |n| (m, n, m == n)));
    let rest = (cols..rows).flat_map(move |m| (0..cols).map(move |n| (m, n, false)));
    triangle.chain(rest)
}

/// The lower-trapezoidal factor read from `x` (column-major, rows×cols).
pub(crate) fn read_factor(x: &[f64], rows: usize, cols: usize) -> Vec<f64> {
    let mut l = vec![0.0; rows * cols];
    for ((m, n, diagonal), &v) in free_positions(rows, cols).zip(x) {
        l[at(rows, m, n)] = if diagonal { v.exp() } else { v };
    }
    l
}

/// Stan's `check_cholesky_factor`: lower triangular, positive diagonal.
pub(crate) fn check_cholesky_factor(
    constraint: &'static str,
    l: &[f64],
    rows: usize,
    cols: usize,
) -> Result<(), ConstraintError> {
    check_finite(constraint, l)?;
    for c in 0..cols {
        for r in 0..c.min(rows) {
            if l[at(rows, r, c)] != 0.0 {
                return Err(ConstraintError::new(
                    constraint,
                    format!(
                        "not lower triangular: element [{}, {}] is {}",
                        r + 1,
                        c + 1,
                        l[at(rows, r, c)]
                    ),
                ));
            }
        }
        if !(l[at(rows, c, c)] > 0.0) {
            return Err(ConstraintError::new(
                constraint,
                format!(
                    "diagonal element [{0}, {0}] is {1}, not positive",
                    c + 1,
                    l[at(rows, c, c)]
                ),
            ));
        }
    }
    Ok(())
}

impl Transform for CholeskyFactorCov {
    fn name(&self) -> &'static str {
        "cholesky_factor_cov"
    }
    fn unconstrained_len(&self) -> usize {
        self.cols * (self.cols + 1) / 2 + self.rows.saturating_sub(self.cols) * self.cols
    }
    fn constrained_len(&self) -> usize {
        self.rows * self.cols
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        if self.rows < self.cols {
            return Constrained {
                value: vec![f64::NAN; self.constrained_len()],
                log_jacobian: f64::NAN,
            };
        }
        let log_jacobian = free_positions(self.rows, self.cols)
            .zip(x)
            .filter(|((_, _, diagonal), _)| *diagonal)
            .map(|(_, v)| v)
            .sum();
        Constrained {
            value: read_factor(x, self.rows, self.cols),
            log_jacobian,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.constrained_len())?;
        if self.rows < self.cols {
            return Err(ConstraintError::new(
                self.name(),
                format!("{} rows is fewer than {} columns", self.rows, self.cols),
            ));
        }
        check_cholesky_factor(self.name(), y, self.rows, self.cols)?;
        Ok(free_positions(self.rows, self.cols)
            .map(|(m, n, diagonal)| {
                let v = y[at(self.rows, m, n)];
                if diagonal { v.ln() } else { v }
            })
            .collect())
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        if self.rows < self.cols {
            return vec![f64::NAN; x.len()];
        }
        free_positions(self.rows, self.cols)
            .zip(x)
            .map(|((m, n, diagonal), &v)| {
                let yb = y_bar[at(self.rows, m, n)];
                if diagonal {
                    yb * v.exp() + logj_bar
                } else {
                    yb
                }
            })
            .collect()
    }
}
