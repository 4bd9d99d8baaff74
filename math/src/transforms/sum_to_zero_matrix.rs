//! `sum_to_zero_matrix[N, M]`: every row and every column sums to zero. The
//! (N-1)×(M-1) free matrix (column-major) is mapped by a one-dimensional
//! zero-sum isometry along columns and then along rows (Stan's double loop
//! computes exactly this tensor product); the map is linear, so there is no
//! Jacobian term.
//!
//! Stan's matrix version does *not* use the vector transform's basis along
//! each axis: its basis vector for free index j is `(-1,…,-1, j+1, 0,…,0, -1)`
//! (scaled), which is the vector basis negated with the last coordinate
//! rotated to the front: `axis(x)[k] = -sum_to_zero_constrain(x)[(k+1) mod K]`.

use super::linalg::at;
use super::sum_to_zero::{sum_to_zero_constrain, sum_to_zero_free_unchecked, sum_to_zero_vjp};
use super::{
    CONSTRAINT_TOLERANCE, Constrained, ConstraintError, Transform, check_finite, check_len,
};

/// The one-dimensional map Stan's matrix transform applies along each axis.
fn axis_constrain(x: &[f64]) -> Vec<f64> {
    let u = sum_to_zero_constrain(x);
    let k = u.len();
    (0..k).map(|i| -u[(i + 1) % k]).collect()
}

/// Adjoint of [`axis_constrain`].
fn axis_vjp(out_bar: &[f64]) -> Vec<f64> {
    let k = out_bar.len();
    let mut u_bar = vec![0.0; k];
    for (i, ob) in out_bar.iter().enumerate() {
        u_bar[(i + 1) % k] = -ob;
    }
    sum_to_zero_vjp(&u_bar)
}

/// Inverse of [`axis_constrain`] on zero-sum input.
fn axis_free(z: &[f64]) -> Vec<f64> {
    let k = z.len();
    let mut u = vec![0.0; k];
    for (i, zi) in z.iter().enumerate() {
        u[(i + 1) % k] = -zi;
    }
    sum_to_zero_free_unchecked(&u)
}

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
        let by_columns = map_columns(x, fr, fc, self.rows, axis_constrain);
        let value = map_rows(&by_columns, self.rows, fc, self.cols, axis_constrain);
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
        let by_rows = map_rows(y, rows, cols, fc, axis_free);
        Ok(map_columns(&by_rows, rows, fc, fr, axis_free))
    }
    fn constrain_vjp(&self, _x: &[f64], y_bar: &[f64], _logj_bar: f64) -> Vec<f64> {
        if self.rows == 0 || self.cols == 0 {
            return vec![0.0; self.unconstrained_len()];
        }
        let (fr, fc) = (self.free_rows(), self.free_cols());
        let rows_bar = map_rows(y_bar, self.rows, self.cols, fc, axis_vjp);
        map_columns(&rows_bar, self.rows, fc, fr, axis_vjp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn axis_round_trip() {
        for x in [
            vec![0.0, 0.0, -1.9],
            vec![0.3],
            vec![0.5, -0.2],
            vec![-0.7, -0.4, -0.1],
        ] {
            let z = axis_constrain(&x);
            let back = axis_free(&z);
            let v = sum_to_zero_constrain(&x);
            let vb = sum_to_zero_free_unchecked(&v);
            assert!(
                back.iter().zip(&x).all(|(a, b)| (a - b).abs() < 1e-12),
                "{x:?} -> {z:?} -> {back:?}; vector {v:?} -> {vb:?}"
            );
        }
        for (rows, cols) in [(4, 2), (2, 4), (2, 2), (3, 3)] {
            let t = SumToZeroMatrix { rows, cols };
            let x: Vec<f64> = (0..t.unconstrained_len())
                .map(|i| 0.3 * i as f64 - 0.7)
                .collect();
            let y = t.constrain(&x).value;
            let back = t.unconstrain(&y).unwrap();
            assert!(
                back.iter().zip(&x).all(|(a, b)| (a - b).abs() < 1e-12),
                "{rows}x{cols}: {x:?} -> {y:?} -> {back:?}"
            );
        }
    }
}
