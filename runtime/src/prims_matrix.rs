//! Value rules of the matrix primitives: products, solves, decompositions,
//! construction, slicing and shape queries.

use super::error::{Result, RuntimeError, describe, mismatch};
use super::linalg;
use super::prims::same_len;
use super::values::*;
use language::mir::Prim;
use language::value::Value;

/// `a * b`: scalar products, scaling, and matrix products.
pub(crate) fn multiply(a: &Value, b: &Value) -> Result<Value> {
    use Value::*;
    Ok(match (a, b) {
        (Int(i), Int(j)) => Int(super::prims::stan_int("multiply", i.checked_mul(*j))?),
        (x, y) if is_scalar(x) || is_scalar(y) => zip_real("multiply", x, y, |x, y| x * y)?,
        (RowVector(x), Vector(y)) => {
            same_len("multiply", x.len(), y.len())?;
            Real(linalg::matmul(x, 1, x.len(), y, 1)[0])
        }
        (Vector(x), RowVector(y)) => {
            mat(x.len(), y.len(), linalg::matmul(x, x.len(), 1, y, y.len()))
        }
        (Matrix { rows, cols, data }, Vector(y)) => {
            same_len("multiply", *cols, y.len())?;
            Vector(linalg::matmul(data, *rows, *cols, y, 1))
        }
        (RowVector(x), Matrix { rows, cols, data }) => {
            same_len("multiply", x.len(), *rows)?;
            RowVector(linalg::matmul(x, 1, *rows, data, *cols))
        }
        (
            Matrix { rows, cols, data },
            Matrix {
                rows: r2,
                cols: c2,
                data: d2,
            },
        ) => {
            same_len("multiply", *cols, *r2)?;
            mat(*rows, *c2, linalg::matmul(data, *rows, *cols, d2, *c2))
        }
        (x, y) => {
            return Err(RuntimeError::fatal(format!(
                "multiply: cannot multiply {} by {}",
                describe(x),
                describe(y)
            )));
        }
    })
}

pub(crate) fn transpose(a: &Value) -> Result<Value> {
    Ok(match a {
        Value::Vector(x) => Value::RowVector(x.clone()),
        Value::RowVector(x) => Value::Vector(x.clone()),
        Value::Matrix { rows, cols, data } => {
            mat(*cols, *rows, linalg::transpose(data, *rows, *cols))
        }
        other => return Err(mismatch("transpose", other)),
    })
}

fn square(name: &str, v: &Value) -> Result<(usize, Vec<f64>)> {
    let (r, c, d) = matrix(v)?;
    if r != c {
        return Err(RuntimeError::rejection(format!(
            "{name}: expecting a square matrix; rows = {r}, cols = {c}"
        )));
    }
    Ok((r, d.to_vec()))
}

/// Columns (n, c, data) of a right-hand side: a vector or a matrix.
fn rhs(v: &Value) -> Result<(usize, usize, Vec<f64>, bool)> {
    match v {
        Value::Vector(x) => Ok((x.len(), 1, x.clone(), true)),
        Value::Matrix { rows, cols, data } => Ok((*rows, *cols, data.clone(), false)),
        other => Err(mismatch("expected a vector or matrix", other)),
    }
}

fn shaped(n: usize, c: usize, data: Vec<f64>, vector: bool) -> Value {
    if vector {
        Value::Vector(data)
    } else {
        mat(n, c, data)
    }
}

/// `A \ b`.
pub(crate) fn mdivide_left(a: &Value, b: &Value) -> Result<Value> {
    let (n, a) = square("mdivide_left", a)?;
    let (rows, c, b, vector) = rhs(b)?;
    same_len("mdivide_left", n, rows)?;
    Ok(shaped(n, c, linalg::solve(&a, n, &b, c)?, vector))
}

/// `b / A` = b A⁻¹, via (A' \ b')'.
pub(crate) fn mdivide_right(b: &Value, a: &Value) -> Result<Value> {
    let (n, a) = square("mdivide_right", a)?;
    let at = linalg::transpose(&a, n, n);
    match b {
        Value::RowVector(x) => {
            same_len("mdivide_right", x.len(), n)?;
            Ok(Value::RowVector(linalg::solve(&at, n, x, 1)?))
        }
        Value::Matrix { rows, cols, data } => {
            same_len("mdivide_right", *cols, n)?;
            let bt = linalg::transpose(data, *rows, *cols);
            let xt = linalg::solve(&at, n, &bt, *rows)?;
            Ok(mat(*rows, n, linalg::transpose(&xt, n, *rows)))
        }
        other => Err(mismatch("mdivide_right", other)),
    }
}

fn usize_arg(name: &str, v: &Value) -> Result<usize> {
    let i = int(v)?;
    usize::try_from(i).map_err(|_| {
        RuntimeError::rejection(format!("{name}: size must be nonnegative, found {i}"))
    })
}

fn symmetric(name: &str, v: &Value) -> Result<(usize, Vec<f64>)> {
    let (n, a) = square(name, v)?;
    if !bat_math::transforms::linalg::is_symmetric(&a, n, 1e-8) {
        return Err(RuntimeError::rejection(format!(
            "{name}: the matrix is not symmetric"
        )));
    }
    Ok((n, a))
}

pub(crate) fn eval(p: Prim, args: &[Value]) -> Result<Value> {
    use Prim::*;
    let name = p.name();
    let a = |i: usize| -> Result<&Value> {
        args.get(i)
            .ok_or_else(|| RuntimeError::fatal(format!("{name}: missing argument {}", i + 1)))
    };
    let n_arg = |i: usize| -> Result<usize> { usize_arg(name, a(i)?) };
    Ok(match p {
        CholeskyDecompose => {
            let (n, m) = symmetric(name, a(0)?)?;
            let l = bat_math::transforms::linalg::cholesky(&m, n).ok_or_else(|| {
                RuntimeError::rejection(format!("{name}: the matrix is not positive definite"))
            })?;
            mat(n, n, l)
        }
        MdivideLeftTriLow => {
            let (n, l) = square(name, a(0)?)?;
            let (rows, c, b, vector) = rhs(a(1)?)?;
            same_len(name, n, rows)?;
            shaped(n, c, linalg::solve_lower(&lower(&l, n), n, &b, c), vector)
        }
        MdivideRightTriLow => {
            // b L⁻¹ = (L⁻ᵀ bᵀ)ᵀ: solve with the upper-triangular Lᵀ via the general solver.
            let (n, l) = square(name, a(1)?)?;
            mdivide_right(a(0)?, &mat(n, n, lower(&l, n)))?
        }
        MdivideRight => mdivide_right(a(0)?, a(1)?)?,
        LogDeterminant => {
            let (n, m) = square(name, a(0)?)?;
            Value::Real(linalg::log_determinant(&m, n))
        }
        Inverse => {
            let (n, m) = square(name, a(0)?)?;
            mat(n, n, linalg::inverse(&m, n)?)
        }
        Crossprod => multiply(&transpose(a(0)?)?, a(0)?)?,
        Tcrossprod => multiply(a(0)?, &transpose(a(0)?)?)?,
        MultiplyLowerTriSelfTranspose => {
            let (r, c, d) = matrix(a(0)?)?;
            let mut l = d.to_vec();
            for j in 0..c {
                for i in 0..r.min(j) {
                    l[j * r + i] = 0.0;
                }
            }
            let lm = mat(r, c, l);
            multiply(&lm, &transpose(&lm)?)?
        }
        DiagMatrix => {
            let v = vec_of(a(0)?)?;
            let n = v.len();
            let mut d = vec![0.0; n * n];
            for (i, x) in v.iter().enumerate() {
                d[i * n + i] = *x;
            }
            mat(n, n, d)
        }
        Diagonal => {
            let (r, c, d) = matrix(a(0)?)?;
            Value::Vector((0..r.min(c)).map(|i| d[i * r + i]).collect())
        }
        DiagPreMultiply => {
            let v = vec_of(a(0)?)?;
            let (r, c, d) = matrix(a(1)?)?;
            same_len(name, v.len(), r)?;
            mat(r, c, (0..r * c).map(|k| d[k] * v[k % r]).collect())
        }
        DiagPostMultiply => {
            let (r, c, d) = matrix(a(0)?)?;
            let v = vec_of(a(1)?)?;
            same_len(name, v.len(), c)?;
            mat(r, c, (0..r * c).map(|k| d[k] * v[k / r]).collect())
        }
        QuadForm => {
            let b = a(1)?;
            let ab = multiply(a(0)?, b)?;
            multiply(&transpose(b)?, &ab)?
        }
        QuadFormDiag => {
            let (r, c, d) = matrix(a(0)?)?;
            let v = vec_of(a(1)?)?;
            same_len(name, v.len(), r)?;
            mat(
                r,
                c,
                (0..r * c).map(|k| d[k] * v[k % r] * v[k / r]).collect(),
            )
        }
        EigenvaluesSym => {
            let (n, m) = symmetric(name, a(0)?)?;
            Value::Vector(linalg::eigen_sym(&m, n).0)
        }
        EigenvectorsSym => {
            let (n, m) = symmetric(name, a(0)?)?;
            mat(n, n, linalg::eigen_sym(&m, n).1)
        }
        GpExpQuadCov => {
            let points: Vec<Vec<f64>> = match a(0)? {
                Value::Array(items) => items.iter().map(flat).collect(),
                other => return Err(mismatch(name, other)),
            };
            let alpha = real(a(1)?)?;
            let rho = real(a(2)?)?;
            let n = points.len();
            let mut d = vec![0.0; n * n];
            for i in 0..n {
                for j in 0..n {
                    let sq: f64 = points[i]
                        .iter()
                        .zip(&points[j])
                        .map(|(x, y)| (x - y).powi(2))
                        .sum();
                    d[j * n + i] = alpha * alpha * (-sq / (2.0 * rho * rho)).exp();
                }
            }
            mat(n, n, d)
        }

        RepVector => Value::Vector(vec![real(a(0)?)?; n_arg(1)?]),
        RepRowVector => Value::RowVector(vec![real(a(0)?)?; n_arg(1)?]),
        RepMatrix => match (a(0)?, args.len()) {
            (Value::Vector(v), 2) => {
                let c = n_arg(1)?;
                mat(v.len(), c, (0..c).flat_map(|_| v.iter().copied()).collect())
            }
            (Value::RowVector(v), 2) => {
                let r = n_arg(1)?;
                mat(
                    r,
                    v.len(),
                    v.iter().flat_map(|&x| std::iter::repeat_n(x, r)).collect(),
                )
            }
            (x, _) => {
                let (r, c) = (n_arg(1)?, n_arg(2)?);
                mat(r, c, vec![real(x)?; r * c])
            }
        },
        RepArray => {
            let mut v = a(0)?.clone();
            for i in (1..args.len()).rev() {
                v = Value::Array(vec![v; n_arg(i)?]);
            }
            v
        }
        ToVector => Value::Vector(to_flat(a(0)?)),
        ToRowVector => Value::RowVector(to_flat(a(0)?)),
        ToMatrix => to_matrix(args)?,
        ToArray1d => match a(0)? {
            v if all_ints(v) => int_array(flat_ints(v)?),
            v => Value::Array(to_flat(v).into_iter().map(Value::Real).collect()),
        },
        AppendRow => append(name, a(0)?, a(1)?, true)?,
        AppendCol => append(name, a(0)?, a(1)?, false)?,
        AppendArray => match (a(0)?, a(1)?) {
            (Value::Array(x), Value::Array(y)) => {
                Value::Array(x.iter().chain(y).cloned().collect())
            }
            (x, _) => return Err(mismatch(name, x)),
        },
        Segment => slice(name, a(0)?, int(a(1)?)?, int(a(2)?)?)?,
        Head => slice(name, a(0)?, 1, int(a(1)?)?)?,
        Tail => {
            let n = int(a(1)?)?;
            slice(name, a(0)?, size(a(0)?) as i64 - n + 1, n)?
        }
        Block => {
            let (r, c, d) = matrix(a(0)?)?;
            let (i, j, nr, nc) = (int(a(1)?)?, int(a(2)?)?, int(a(3)?)?, int(a(4)?)?);
            if i < 1 || j < 1 || nr < 0 || nc < 0 || i - 1 + nr > r as i64 || j - 1 + nc > c as i64
            {
                return Err(RuntimeError::new(
                    super::error::ErrorKind::IndexOutOfRange,
                    format!("block: ({i}, {j}, {nr}, {nc}) is outside a {r}×{c} matrix"),
                ));
            }
            let (i, j, nr, nc) = (i as usize - 1, j as usize - 1, nr as usize, nc as usize);
            mat(
                nr,
                nc,
                (0..nr * nc)
                    .map(|k| d[(j + k / nr) * r + i + k % nr])
                    .collect(),
            )
        }
        Col => {
            let (r, c, d) = matrix(a(0)?)?;
            let j = index1(name, int(a(1)?)?, c)?;
            Value::Vector(d[j * r..(j + 1) * r].to_vec())
        }
        Row => {
            let (r, c, d) = matrix(a(0)?)?;
            let i = index1(name, int(a(1)?)?, r)?;
            Value::RowVector((0..c).map(|j| d[j * r + i]).collect())
        }
        Reverse => match a(0)? {
            Value::Vector(x) => Value::Vector(x.iter().rev().copied().collect()),
            Value::RowVector(x) => Value::RowVector(x.iter().rev().copied().collect()),
            Value::Array(x) => Value::Array(x.iter().rev().cloned().collect()),
            other => return Err(mismatch(name, other)),
        },
        Sort | SortDesc => {
            let v = a(0)?;
            if all_ints(v) {
                let mut xs = flat_ints(v)?;
                xs.sort();
                if p == SortDesc {
                    xs.reverse();
                }
                int_array(xs)
            } else {
                let mut xs = flat(v);
                if xs.iter().any(|x| x.is_nan()) {
                    return Err(RuntimeError::rejection(format!(
                        "{name}: argument contains NaN"
                    )));
                }
                xs.sort_by(f64::total_cmp);
                if p == SortDesc {
                    xs.reverse();
                }
                with_data(v, &mut xs.into_iter())
            }
        }
        Size => Value::Int(size(a(0)?) as i64),
        NumElements => Value::Int(num_elements(a(0)?) as i64),
        Dims => int_array(dims(a(0)?)),
        Rows | Cols => {
            let v = a(0)?;
            let (r, c) = match v {
                Value::Vector(x) => (x.len(), 1),
                Value::RowVector(x) => (1, x.len()),
                Value::Matrix { rows, cols, .. } => (*rows, *cols),
                other => return Err(mismatch(name, other)),
            };
            Value::Int(if p == Rows { r } else { c } as i64)
        }
        Linspaced => {
            let n = n_arg(0)?;
            let (lo, hi) = (real(a(1)?)?, real(a(2)?)?);
            let step = if n > 1 {
                (hi - lo) / (n - 1) as f64
            } else {
                0.0
            };
            Value::Vector(
                (0..n)
                    .map(|i| {
                        if n > 1 && i == n - 1 {
                            hi
                        } else {
                            lo + step * i as f64
                        }
                    })
                    .map(|x| if n == 1 { hi } else { x })
                    .collect(),
            )
        }
        OneHot => {
            let n = n_arg(0)?;
            let k = index1(name, int(a(1)?)?, n)?;
            let mut v = vec![0.0; n];
            v[k] = 1.0;
            Value::Vector(v)
        }
        Zeros => Value::Vector(vec![0.0; n_arg(0)?]),
        Ones => Value::Vector(vec![1.0; n_arg(0)?]),
        ToComplex => Value::Complex(
            args.first().map(real).transpose()?.unwrap_or(0.0),
            args.get(1).map(real).transpose()?.unwrap_or(0.0),
        ),
        GetReal | GetImag => match a(0)? {
            Value::Complex(re, im) => Value::Real(if p == GetReal { *re } else { *im }),
            other => return Err(mismatch(name, other)),
        },
        other => {
            return Err(RuntimeError::new(
                super::error::ErrorKind::Unsupported,
                format!("the primitive `{other}` is not implemented by the interpreter"),
            ));
        }
    })
}

/// Keep only the lower triangle (Stan's triangular solves ignore the rest).
fn lower(l: &[f64], n: usize) -> Vec<f64> {
    (0..n * n)
        .map(|k| if k % n >= k / n { l[k] } else { 0.0 })
        .collect()
}

/// Elements in Stan's `to_vector` order: column-major for matrices,
/// row-major for arrays.
fn to_flat(v: &Value) -> Vec<f64> {
    flat(v)
}

fn index1(name: &str, i: i64, n: usize) -> Result<usize> {
    if i >= 1 && i as usize <= n {
        Ok(i as usize - 1)
    } else {
        Err(RuntimeError::new(
            super::error::ErrorKind::IndexOutOfRange,
            format!("{name}: index {i} out of range; expecting index to be between 1 and {n}"),
        ))
    }
}

fn slice(name: &str, v: &Value, start: i64, n: i64) -> Result<Value> {
    let len = size(v) as i64;
    if start < 1 || n < 0 || start - 1 + n > len {
        return Err(RuntimeError::new(
            super::error::ErrorKind::IndexOutOfRange,
            format!(
                "{name}: elements {start} to {} are outside a container of size {len}",
                start + n - 1
            ),
        ));
    }
    let range = (start - 1) as usize..(start - 1 + n) as usize;
    Ok(match v {
        Value::Vector(x) => Value::Vector(x[range].to_vec()),
        Value::RowVector(x) => Value::RowVector(x[range].to_vec()),
        Value::Array(x) => Value::Array(x[range].to_vec()),
        other => return Err(mismatch(name, other)),
    })
}

fn to_matrix(args: &[Value]) -> Result<Value> {
    let name = "to_matrix";
    let src = &args[0];
    if args.len() == 1 {
        return Ok(match src {
            Value::Matrix { .. } => src.clone(),
            Value::Vector(x) => mat(x.len(), 1, x.clone()),
            Value::RowVector(x) => mat(1, x.len(), x.clone()),
            Value::Array(rows) => {
                let r = rows.len();
                let row_data: Vec<Vec<f64>> = rows.iter().map(flat).collect();
                let c = row_data.first().map_or(0, Vec::len);
                mat(r, c, (0..r * c).map(|k| row_data[k % r][k / r]).collect())
            }
            other => return Err(mismatch(name, other)),
        });
    }
    let (r, c) = (usize_arg(name, &args[1])?, usize_arg(name, &args[2])?);
    let data = flat(src);
    same_len(name, data.len(), r * c)?;
    let col_major = args.get(3).map(int).transpose()?.unwrap_or(1) != 0;
    Ok(if col_major {
        mat(r, c, data)
    } else {
        mat(r, c, linalg::transpose(&data, c, r))
    })
}

fn append(name: &str, x: &Value, y: &Value, rows: bool) -> Result<Value> {
    use Value::*;
    // Promote scalars and vectors to matrices in the stacking direction.
    let as_mat = |v: &Value| -> Result<(usize, usize, Vec<f64>)> {
        Ok(match v {
            Int(_) | Real(_) => (1, 1, vec![real(v)?]),
            Vector(d) => (d.len(), 1, d.clone()),
            RowVector(d) => (1, d.len(), d.clone()),
            Matrix { rows, cols, data } => (*rows, *cols, data.clone()),
            other => return Err(mismatch(name, other)),
        })
    };
    let vectorish = |v: &Value| matches!(v, Int(_) | Real(_) | Vector(_));
    let rowish = |v: &Value| matches!(v, Int(_) | Real(_) | RowVector(_));
    let (r1, c1, d1) = as_mat(x)?;
    let (r2, c2, d2) = as_mat(y)?;
    if rows {
        same_len(name, c1, c2)?;
        let r = r1 + r2;
        let data: Vec<f64> = (0..r * c1)
            .map(|k| {
                let (i, j) = (k % r, k / r);
                if i < r1 {
                    d1[j * r1 + i]
                } else {
                    d2[j * r2 + i - r1]
                }
            })
            .collect();
        Ok(if vectorish(x) && vectorish(y) {
            Vector(data)
        } else {
            mat(r, c1, data)
        })
    } else {
        same_len(name, r1, r2)?;
        let data: Vec<f64> = d1.into_iter().chain(d2).collect();
        Ok(if rowish(x) && rowish(y) {
            RowVector(data)
        } else {
            mat(r1, c1 + c2, data)
        })
    }
}

/// Sizes of every dimension of `v` (arrays by their first element).
fn dims(v: &Value) -> Vec<i64> {
    match v {
        Value::Array(items) => {
            let mut out = vec![items.len() as i64];
            if let Some(first) = items.first() {
                out.extend(dims(first));
            }
            out
        }
        Value::Vector(x) | Value::RowVector(x) => vec![x.len() as i64],
        Value::Matrix { rows, cols, .. } => vec![*rows as i64, *cols as i64],
        Value::ComplexVector(x) | Value::ComplexRowVector(x) => vec![x.len() as i64],
        Value::ComplexMatrix { rows, cols, .. } => vec![*rows as i64, *cols as i64],
        _ => Vec::new(),
    }
}
