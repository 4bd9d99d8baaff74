//! `sum_to_zero_matrix[N, M]`: every row and every column sums to zero. The
//! (N-1)×(M-1) free matrix (column-major) is mapped by the vector
//! sum-to-zero transform along columns and then along rows; the map is a
//! linear isometry, so there is no Jacobian term.

use super::linalg::at;
use super::sum_to_zero::{sum_to_zero_constrain, sum_to_zero_free_unchecked, sum_to_zero_vjp};
use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};

#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SumToZeroMatrix {
    pub rows: usize,
    pub cols: usize,
}

impl SumToZeroMatrix {
    fn free_rows(&self) -> usize {
        self.rows.saturating_sub(1)
    }
    fn free_cols(&self) -> usize {
        self.cols.saturating_sub(1)
    }
}

/// Applies `f` to each column of a column-major `rows`×`cols` matrix whose
/// columns map to length `out_rows`.
fn map_columns(
    m: &[f64],
    rows: usize,
    cols: usize,
    out_rows: usize,
    f: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<f64> {
    let mut out = Vec::with_capacity(out_rows * cols);
    for c in 0..cols {
        let column = f(&m[c * rows..(c + 1) * rows]);
        debug_assert_eq!(column.len(), out_rows);
        out.extend(column);
    }
    out
}

/// Applies `f` to each row, mapping rows of length `cols` to `out_cols`.
fn map_rows(
    m: &[f64],
    rows: usize,
    cols: usize,
    out_cols: usize,
    f: impl Fn(&[f64]) -> Vec<f64>,
) -> Vec<f64> {
    let mut out = vec![0.0; rows * out_cols];
    for r in 0..rows {
        let row: Vec<f64> = (0..cols).map(|c| m[at(rows, r, c)]).collect();
        for (c, v) in f(&row).into_iter().enumerate() {
            out[at(rows, r, c)] = v;
        }
    }
    out
}

impl Transform for SumToZeroMatrix {
    fn name(&self) -> &'static str {
        "sum_to_zero_matrix"
    }
    fn unconstrained_len(&self) -> usize {
        self.free_rows() * self.free_cols()
    }
    fn constrained_len(&self) -> usize {
        self.rows * self.cols
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        if self.rows == 0 || self.cols == 0 {
            return Constrained {
                value: Vec::new(),
                log_jacobian: 0.0,
            };
        }
        let (fr, fc) = (self.free_rows(), self.free_cols());
        let by_columns = map_columns(x, fr, fc, self.rows, sum_to_zero_constrain);
        let value = map_rows(&by_columns, self.rows, fc, self.cols, sum_to_zero_constrain);
        Constrained {
            value,
            log_jacobian: 0.0,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.constrained_len())?;
        check_finite(self.name(), y)?;
        let (rows, cols) = (self.rows, self.cols);
        for r in 0..rows {
            let sum: f64 = (0..cols).map(|c| y[at(rows, r, c)]).sum();
            if sum.abs() > CONSTRAINT_TOLERANCE {
                return Err(ConstraintError::new(
                    self.name(),
                    format!("row {} sums to {sum}, not 0", r + 1),
                ));
            }
        }
        for c in 0..cols {
            let sum: f64 = y[c * rows..(c + 1) * rows].iter().sum();
            if sum.abs() > CONSTRAINT_TOLERANCE {
                return Err(ConstraintError::new(
                    self.name(),
                    format!("column {} sums to {sum}, not 0", c + 1),
                ));
            }
        }
        if rows == 0 || cols == 0 {
            return Ok(Vec::new());
        }
        let (fr, fc) = (self.free_rows(), self.free_cols());
        let by_rows = map_rows(y, rows, cols, fc, sum_to_zero_free_unchecked);
        Ok(map_columns(
            &by_rows,
            rows,
            fc,
            fr,
            sum_to_zero_free_unchecked,
        ))
    }
    fn constrain_vjp(&self, _x: &[f64], y_bar: &[f64], _logj_bar: f64) -> Vec<f64> {
        if self.rows == 0 || self.cols == 0 {
            return vec![0.0; self.unconstrained_len()];
        }
        let (fr, fc) = (self.free_rows(), self.free_cols());
        let rows_bar = map_rows(y_bar, self.rows, self.cols, fc, sum_to_zero_vjp);
        map_columns(&rows_bar, self.rows, fc, fr, sum_to_zero_vjp)
    }
}
