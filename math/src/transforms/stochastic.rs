//! `column_stochastic_matrix[N, M]` (each column a simplex; free matrix
//! (N-1)×M) and `row_stochastic_matrix[N, M]` (each row a simplex; free
//! matrix N×(M-1)). Free and constrained matrices are column-major.

use super::linalg::at;
use super::simplex::Simplex;
use super::{Constrained, ConstraintError, Transform, check_len};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StochasticColumn {
    pub rows: usize,
    pub cols: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StochasticRow {
    pub rows: usize,
    pub cols: usize,
}

impl Transform for StochasticColumn {
    fn name(&self) -> &'static str {
        "column_stochastic_matrix"
    }
    fn unconstrained_len(&self) -> usize {
        self.rows.saturating_sub(1) * self.cols
    }
    fn constrained_len(&self) -> usize {
        self.rows * self.cols
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let free = self.rows.saturating_sub(1);
        let mut out = Constrained {
            value: Vec::with_capacity(self.constrained_len()),
            log_jacobian: 0.0,
        };
        if self.rows == 0 {
            return out;
        }
        for c in 0..self.cols {
            let col = Simplex::constrain_slice(&x[c * free..(c + 1) * free]);
            out.value.extend(col.value);
            out.log_jacobian += col.log_jacobian;
        }
        out
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.constrained_len())?;
        let mut x = Vec::with_capacity(self.unconstrained_len());
        for c in 0..self.cols {
            let column = &y[c * self.rows..(c + 1) * self.rows];
            let free = Simplex::free_slice(column).map_err(|e| {
                ConstraintError::new(self.name(), format!("column {}: {}", c + 1, e.message))
            })?;
            x.extend(free);
        }
        Ok(x)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let free = self.rows.saturating_sub(1);
        let mut x_bar = Vec::with_capacity(x.len());
        if self.rows == 0 {
            return x_bar;
        }
        for c in 0..self.cols {
            x_bar.extend(Simplex::vjp_slice(
                &x[c * free..(c + 1) * free],
                &y_bar[c * self.rows..(c + 1) * self.rows],
                logj_bar,
            ));
        }
        x_bar
    }
}

impl StochasticRow {
    fn free_cols(&self) -> usize {
        self.cols.saturating_sub(1)
    }
    /// Row `r` of a column-major matrix with `self.rows` rows and `cols` columns.
    fn row(&self, m: &[f64], r: usize, cols: usize) -> Vec<f64> {
        (0..cols).map(|c| m[at(self.rows, r, c)]).collect()
    }
}

impl Transform for StochasticRow {
    fn name(&self) -> &'static str {
        "row_stochastic_matrix"
    }
    fn unconstrained_len(&self) -> usize {
        self.rows * self.free_cols()
    }
    fn constrained_len(&self) -> usize {
        self.rows * self.cols
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        let mut out = Constrained {
            value: vec![0.0; self.constrained_len()],
            log_jacobian: 0.0,
        };
        if self.cols == 0 {
            return out;
        }
        for r in 0..self.rows {
            let row = Simplex::constrain_slice(&self.row(x, r, self.free_cols()));
            for (c, v) in row.value.into_iter().enumerate() {
                out.value[at(self.rows, r, c)] = v;
            }
            out.log_jacobian += row.log_jacobian;
        }
        out
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.constrained_len())?;
        let mut x = vec![0.0; self.unconstrained_len()];
        for r in 0..self.rows {
            let free = Simplex::free_slice(&self.row(y, r, self.cols)).map_err(|e| {
                ConstraintError::new(self.name(), format!("row {}: {}", r + 1, e.message))
            })?;
            for (c, v) in free.into_iter().enumerate() {
                x[at(self.rows, r, c)] = v;
            }
        }
        Ok(x)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        let mut x_bar = vec![0.0; x.len()];
        if self.cols == 0 {
            return x_bar;
        }
        for r in 0..self.rows {
            let row_bar = Simplex::vjp_slice(
                &self.row(x, r, self.free_cols()),
                &self.row(y_bar, r, self.cols),
                logj_bar,
            );
            for (c, v) in row_bar.into_iter().enumerate() {
                x_bar[at(self.rows, r, c)] = v;
            }
        }
        x_bar
    }
}
