//! Dense LU factorisation with partial pivoting (the Newton matrices of the
//! implicit integrator are small: one block of the state's size).

/// P·A = L·U of a square row-major matrix, stored in place.
pub(super) struct Lu {
    n: usize,
    lu: Vec<f64>,
    pivots: Vec<usize>,
}

impl Lu {
    /// Factorise `a` (n × n, row-major); `None` if it is singular.
    pub fn new(mut a: Vec<f64>, n: usize) -> Option<Lu> {
        let mut pivots = Vec::with_capacity(n);
        for col in 0..n {
            let pivot = (col..n)
                .max_by(|&r, &s| a[r * n + col].abs().total_cmp(&a[s * n + col].abs()))
                .unwrap_or(col);
            let p = a[pivot * n + col];
            if p == 0.0 || !p.is_finite() {
                return None;
            }
            if pivot != col {
                for c in 0..n {
                    a.swap(pivot * n + c, col * n + c);
                }
            }
            pivots.push(pivot);
            for r in col + 1..n {
                let factor = a[r * n + col] / p;
                a[r * n + col] = factor;
                for c in col + 1..n {
                    a[r * n + c] -= factor * a[col * n + c];
                }
            }
        }
        Some(Lu { n, lu: a, pivots })
    }

    /// Solve A·x = b in place.
    pub fn solve(&self, b: &mut [f64]) {
        let n = self.n;
        for (col, &p) in self.pivots.iter().enumerate() {
            b.swap(col, p);
        }
        for r in 0..n {
            let mut acc = b[r];
            for c in 0..r {
                acc -= self.lu[r * n + c] * b[c];
            }
            b[r] = acc;
        }
        for r in (0..n).rev() {
            let mut acc = b[r];
            for c in r + 1..n {
                acc -= self.lu[r * n + c] * b[c];
            }
            b[r] = acc / self.lu[r * n + r];
        }
    }
}
