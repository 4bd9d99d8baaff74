//! Decompositions, solves, inverses, log determinants, `gp_exp_quad_cov`,
//! softmax and cumulative sums: values that
//! are computed whole, by the device functions of
//! [`super::super::linalg`], into their destination (or a thread-local
//! array) before the statement reads them. Their operands are read in
//! place when they are whole variables, else computed whole first.

use language::mir::{Expr, ExprKind, Prim};

use super::super::layout::Place;
use super::super::shape::{Inner, Shape};
use super::super::typing::Unsupported;
use super::{Dest, Emitter, FailKind, LOCAL_LIMIT, Materialized};

/// Primitives computed whole by a dense routine.
pub fn is_dense(p: Prim, arity: usize) -> bool {
    matches!(
        (p, arity),
        (Prim::CholeskyDecompose, 1)
            | (Prim::MdivideLeftTriLow, 2)
            | (Prim::MdivideRightTriLow, 2)
            | (Prim::MdivideRight, 2)
            | (Prim::LeftDiv, 2)
            | (Prim::Inverse, 1)
            | (Prim::LogDeterminant, 1)
            | (Prim::GpExpQuadCov, 3)
            | (Prim::Softmax, 1)
            | (Prim::LogSoftmax, 1)
            | (Prim::CumulativeSum, 1)
            | (Prim::MultiplyLowerTriSelfTranspose, 1)
    )
}

/// A value in memory: a pointer to its first element and the stride
/// between elements (C expressions).
struct Buffer {
    ptr: String,
    stride: String,
}

impl Buffer {
    fn args(&self) -> String {
        format!("{}, {}", self.ptr, self.stride)
    }
}

/// The side of a square matrix.
fn square(shape: &Shape, what: &str) -> Result<usize, Unsupported> {
    match shape.inner {
        Inner::Matrix(r, c) if r == c && shape.arrays.is_empty() => Ok(r),
        _ => Err(format!("{what} of a {shape}, not a square matrix")),
    }
}

impl Emitter<'_> {
    /// `dest = p(args)` over `len` elements (`op` is `=`): false when the
    /// destination cannot be written through a pointer (then the caller
    /// computes the value whole first).
    pub(crate) fn dense_into(
        &mut self,
        dest: &Dest,
        p: Prim,
        args: &[Expr],
        op: &str,
    ) -> Result<bool, Unsupported> {
        let Some(out) = self.dest_buffer(dest, op) else {
            return Ok(false);
        };
        if self.in_branch > 0 {
            return Err(format!("{} inside a conditional expression", p.name()));
        }
        let shapes = args
            .iter()
            .map(|a| self.shape(a))
            .collect::<Result<Vec<_>, _>>()?;
        match (p, args) {
            (Prim::CholeskyDecompose, [a]) => {
                let n = square(&shapes[0], p.name())?;
                let a = self.buffer(a)?;
                let asym = self.fail(
                    FailKind::Rejection,
                    "cholesky_decompose: the matrix is not symmetric".to_string(),
                );
                let not_pd = self.fail(
                    FailKind::Rejection,
                    "cholesky_decompose: the matrix is not positive definite".to_string(),
                );
                self.lines.push(format!(
                    "if (!bat_is_symmetric({a}, {n})) {asym}\nif (!bat_cholesky({a}, {n}, {out})) {not_pd}",
                    a = a.args(),
                    out = out.args()
                ));
            }
            (Prim::MdivideLeftTriLow, [l, b]) => {
                let n = square(&shapes[0], p.name())?;
                let c = right_hand_side(p, &shapes, &shapes[1], n, true)?;
                let (l, b) = (self.buffer(l)?, self.buffer(b)?);
                self.lines.push(format!(
                    "bat_solve_lower({}, {n}, {}, {c}, {});",
                    l.args(),
                    b.args(),
                    out.args()
                ));
            }
            (Prim::MdivideRightTriLow | Prim::MdivideRight, [b, a]) => {
                let n = square(&shapes[1], p.name())?;
                let r = right_hand_side(p, &shapes, &shapes[0], n, false)?;
                let (m, y, perm) = self.lu_scratch(p, n)?;
                let (b, a) = (self.buffer(b)?, self.buffer(a)?);
                let singular = self.fail(
                    FailKind::Rejection,
                    format!("{}: matrix is singular", p.name()),
                );
                let lower = i32::from(p == Prim::MdivideRightTriLow);
                self.lines.push(format!(
                    "if (!bat_mdivide_right({}, {r}, {}, {n}, {lower}, {}, {m}, {y}, {perm})) {singular}",
                    b.args(),
                    a.args(),
                    out.args()
                ));
            }
            (Prim::LeftDiv, [a, b]) => {
                let n = square(&shapes[0], p.name())?;
                let c = right_hand_side(p, &shapes, &shapes[1], n, true)?;
                let (m, y, perm) = self.lu_scratch(p, n)?;
                let (a, b) = (self.buffer(a)?, self.buffer(b)?);
                let singular = self.fail(FailKind::Rejection, "matrix is singular".to_string());
                self.lines.push(format!(
                    "if (!bat_solve({}, {n}, {}, {c}, {}, {m}, {y}, {perm})) {singular}",
                    a.args(),
                    b.args(),
                    out.args()
                ));
            }
            (Prim::Inverse, [a]) => {
                let n = square(&shapes[0], p.name())?;
                let (m, y, perm) = self.lu_scratch(p, n)?;
                let a = self.buffer(a)?;
                let singular = self.fail(FailKind::Rejection, "matrix is singular".to_string());
                self.lines.push(format!(
                    "if (!bat_solve({}, {n}, (const double*)0, 1LL, {n}, {}, {m}, {y}, {perm})) {singular}",
                    a.args(),
                    out.args()
                ));
            }
            (Prim::LogDeterminant, [a]) => {
                let n = square(&shapes[0], p.name())?;
                if n == 0 {
                    return Err("log_determinant of an empty matrix".to_string());
                }
                let (m, _, perm) = self.lu_scratch(p, n)?;
                let a = self.buffer(a)?;
                self.lines.push(format!(
                    "BAT_AT({}, 0) = bat_log_determinant({}, {n}, {m}, {perm});",
                    out.args(),
                    a.args()
                ));
            }
            (Prim::GpExpQuadCov, [x, alpha, rho]) => {
                let points = &shapes[0];
                let (n, d) = match (points.arrays.as_slice(), points.inner) {
                    ([n], Inner::Scalar) => (*n, 1),
                    ([n], Inner::Vector(d) | Inner::RowVector(d)) => (*n, d),
                    _ => return Err(format!("gp_exp_quad_cov of a {points}")),
                };
                if !shapes[1].is_scalar() || !shapes[2].is_scalar() {
                    return Err("gp_exp_quad_cov with container scales".to_string());
                }
                let x = self.buffer(x)?;
                let (alpha, rho) = (self.elem(alpha, "0")?, self.elem(rho, "0")?);
                self.lines.push(format!(
                    "bat_gp_exp_quad_cov({}, {n}, {d}, {alpha}, {rho}, {});",
                    x.args(),
                    out.args()
                ));
            }
            (Prim::Softmax | Prim::LogSoftmax, [x]) => {
                let n = shapes[0].len();
                let x = self.buffer(x)?;
                let f = if p == Prim::Softmax {
                    "bat_softmax"
                } else {
                    "bat_log_softmax"
                };
                self.lines
                    .push(format!("{f}({}, {n}, {});", x.args(), out.args()));
            }
            (Prim::MultiplyLowerTriSelfTranspose, [a]) => {
                let (Inner::Matrix(r, c), true) = (shapes[0].inner, shapes[0].arrays.is_empty())
                else {
                    return Err(format!("{} of a {}", p.name(), shapes[0]));
                };
                let a = self.buffer(a)?;
                self.lines.push(format!(
                    "bat_multiply_lower_tri_self_transpose({}, {r}, {c}, {});",
                    a.args(),
                    out.args()
                ));
            }
            (Prim::CumulativeSum, [x]) => {
                let n = shapes[0].len();
                let x = self.buffer(x)?;
                self.lines.push(format!(
                    "bat_cumulative_sum({}, {n}, {});",
                    x.args(),
                    out.args()
                ));
            }
            _ => return Err(format!("primitive {}", p.name())),
        }
        Ok(true)
    }

    /// Thread-local scratch of an LU factorization of an n×n matrix: the
    /// factors, a vector and the row permutation.
    fn lu_scratch(&mut self, p: Prim, n: usize) -> Result<(String, String, String), Unsupported> {
        if n * n > LOCAL_LIMIT {
            return Err(format!("{} of a {n}×{n} matrix", p.name()));
        }
        let (m, y, perm) = (self.fresh("lu"), self.fresh("y"), self.fresh("perm"));
        self.lines.push(format!(
            "double {m}[{}]; double {y}[{}]; int {perm}[{}];",
            (n * n).max(1),
            n.max(1),
            n.max(1)
        ));
        Ok((m, y, perm))
    }

    /// The destination as a buffer, when it is one (a thread-local array
    /// or a whole variable, assigned).
    fn dest_buffer(&self, dest: &Dest, op: &str) -> Option<Buffer> {
        if op != "=" {
            return None;
        }
        match dest {
            Dest::Local(name) => Some(Buffer {
                ptr: name.clone(),
                stride: "1LL".to_string(),
            }),
            Dest::State { base, maps } if maps.is_empty() => Some(state_buffer(*base)),
            Dest::State { .. } => None,
        }
    }

    /// `e` in memory: a whole variable where it lives, anything else
    /// computed whole first.
    fn buffer(&mut self, e: &Expr) -> Result<Buffer, Unsupported> {
        if let ExprKind::Var(v) = &e.kind {
            match self.layout.place(*v) {
                Some(Place::State { base, .. }) => return Ok(state_buffer(base)),
                Some(Place::Data { base, .. }) => {
                    return Ok(Buffer {
                        ptr: format!("(data + {base})"),
                        stride: "1LL".to_string(),
                    });
                }
                None => {}
            }
        }
        let address = e as *const Expr as usize;
        let known = self
            .materialized
            .iter()
            .find(|(a, _)| *a == address)
            .map(|(_, m)| m.clone());
        let m = match known {
            Some(m) => m,
            None => self.materialize(e)?,
        };
        Ok(match m {
            Materialized::Local(name) => Buffer {
                ptr: name,
                stride: "1LL".to_string(),
            },
            Materialized::Scratch(base) => state_buffer(base),
        })
    }
}

/// The columns (`left`: L⁻¹B, B n×c or a vector of n) or the rows
/// (B L⁻¹, B r×n or a row vector of n) of a triangular solve's other
/// operand `b`.
fn right_hand_side(
    p: Prim,
    shapes: &[Shape],
    b: &Shape,
    n: usize,
    left: bool,
) -> Result<usize, Unsupported> {
    match (b.arrays.is_empty(), b.inner, left) {
        (true, Inner::Vector(m), true) | (true, Inner::RowVector(m), false) if m == n => Ok(1),
        (true, Inner::Matrix(m, c), true) if m == n => Ok(c),
        (true, Inner::Matrix(r, m), false) if m == n => Ok(r),
        _ => Err(format!(
            "{} of a {} by a {}",
            p.name(),
            shapes[0],
            shapes[1]
        )),
    }
}

fn state_buffer(base: usize) -> Buffer {
    Buffer {
        ptr: format!("(state + BAT_SLOT({base}))"),
        stride: "BAT_SLOT_STRIDE".to_string(),
    }
}
