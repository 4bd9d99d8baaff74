//! Static shapes of MIR expressions, as the interpreter would compute them
//! for the data set the kernels are made for. An expression whose shape
//! cannot be known statically (a slice with bounds that change between
//! iterations, a primitive the generator lacks) is an error naming why.

use language::mir::{Expr, ExprKind, Index, Prim, StackId, VarId};
use language::types::Type;

use super::shape::{Inner, Shape};

/// Why something has no kernel code.
pub type Unsupported = String;

/// What shape inference needs to know about the program.
pub trait ShapeEnv {
    fn var_shape(&self, var: VarId) -> Option<Shape>;
    fn stack_shape(&self, stack: StackId) -> Option<Shape>;
    /// The value of an int-valued data variable (data and transformed data
    /// are fixed when the kernels are generated).
    fn data_int(&self, var: VarId) -> Option<i64>;
    fn var_name(&self, var: VarId) -> String;
}

/// The value of an int expression over data and literals, if it is one.
pub fn const_int(env: &dyn ShapeEnv, e: &Expr) -> Option<i64> {
    match &e.kind {
        ExprKind::Int(i) => Some(*i),
        ExprKind::Var(v) => env.data_int(*v),
        // A value hoisted by `language::simplify` (`ok ? value : recomputed`).
        ExprKind::Cond(c, a, b) => const_int(env, if const_int(env, c)? != 0 { a } else { b }),
        // `dims(x)[k]`: a size of `x`.
        ExprKind::Index(base, indexes) => match (&base.kind, indexes.as_slice()) {
            (ExprKind::Prim(Prim::Dims, args), [Index::Single(k)]) if args.len() == 1 => {
                let dims = shape_of(env, &args[0]).ok()?.dims();
                let k = usize::try_from(const_int(env, k)?).ok()?;
                dims.get(k.checked_sub(1)?).map(|&d| d as i64)
            }
            _ => None,
        },
        ExprKind::Prim(p, args) => {
            let arg = |k: usize| args.get(k).and_then(|a| const_int(env, a));
            match (p, args.len()) {
                (Prim::Add, 2) => arg(0)?.checked_add(arg(1)?),
                (Prim::Sub, 2) => arg(0)?.checked_sub(arg(1)?),
                (Prim::Mul, 2) => arg(0)?.checked_mul(arg(1)?),
                (Prim::Neg, 1) => arg(0)?.checked_neg(),
                (Prim::Div | Prim::IntDiv, 2) if arg(1)? != 0 => arg(0)?.checked_div(arg(1)?),
                // Comparisons of sizes: a branch on one is decided when the
                // kernels are made (its other side need not have code).
                (Prim::Eq, 2) => Some(i64::from(arg(0)? == arg(1)?)),
                (Prim::Neq, 2) => Some(i64::from(arg(0)? != arg(1)?)),
                (Prim::Lt, 2) => Some(i64::from(arg(0)? < arg(1)?)),
                (Prim::Leq, 2) => Some(i64::from(arg(0)? <= arg(1)?)),
                (Prim::Gt, 2) => Some(i64::from(arg(0)? > arg(1)?)),
                (Prim::Geq, 2) => Some(i64::from(arg(0)? >= arg(1)?)),
                (Prim::Not, 1) => Some(i64::from(arg(0)? == 0)),
                (Prim::Size, 1) => {
                    let s = shape_of(env, &args[0]).ok()?;
                    Some(match (s.arrays.first(), s.inner) {
                        (Some(&n), _) => n,
                        (None, inner) => inner.len(),
                    } as i64)
                }
                (Prim::NumElements, 1) => Some(shape_of(env, &args[0]).ok()?.len() as i64),
                (Prim::Rows | Prim::Cols, 1) => {
                    let s = shape_of(env, &args[0]).ok()?;
                    let (r, c) = match s.inner {
                        Inner::Vector(n) => (n, 1),
                        Inner::RowVector(n) => (1, n),
                        Inner::Matrix(r, c) => (r, c),
                        Inner::Scalar => return None,
                    };
                    Some(if *p == Prim::Rows { r } else { c } as i64)
                }
                _ => None,
            }
        }
        _ => None,
    }
}

fn size_arg(env: &dyn ShapeEnv, e: &Expr, what: &str) -> Result<usize, Unsupported> {
    let n = const_int(env, e).ok_or_else(|| format!("{what} that is not fixed by the data"))?;
    usize::try_from(n).map_err(|_| format!("a negative {what}"))
}

/// A scalar, vector, row vector or matrix as the (rows, columns) it
/// stacks as in `append_row` and `append_col`.
fn as_matrix(p: Prim, s: &Shape) -> Result<(usize, usize), Unsupported> {
    if !s.arrays.is_empty() || !s.tuple.is_empty() {
        return Err(format!("{} of a {s}", p.name()));
    }
    Ok(match s.inner {
        Inner::Scalar => (1, 1),
        Inner::Vector(n) => (n, 1),
        Inner::RowVector(n) => (1, n),
        Inner::Matrix(r, c) => (r, c),
    })
}

pub fn is_check(p: Prim) -> bool {
    matches!(
        p,
        Prim::CheckPositiveFinite
            | Prim::CheckPositive
            | Prim::CheckNonNegative
            | Prim::CheckNonNegativeInt
            | Prim::CheckFinite
            | Prim::CheckNotNan
            | Prim::CheckProbability
    )
}

/// Reductions of one container to a real (or an int for int containers
/// where the interpreter keeps ints).
pub fn is_reduction(p: Prim) -> bool {
    matches!(
        p,
        Prim::Sum
            | Prim::Prod
            | Prim::Mean
            | Prim::Variance
            | Prim::Sd
            | Prim::Max
            | Prim::Min
            | Prim::DotSelf
            | Prim::DotProduct
            | Prim::Norm1
            | Prim::Norm2
            | Prim::LogSumExp
    )
}

/// The shape of an indexed value: `base` indexed by `indexes` (positions
/// of slices must be fixed by the data).
pub fn index_shape(
    env: &dyn ShapeEnv,
    base: &Shape,
    indexes: &[Index],
) -> Result<Shape, Unsupported> {
    let axes = base.axes();
    if indexes.len() > axes.len() {
        return Err(format!(
            "{} indexes into a value of type {base}",
            indexes.len()
        ));
    }
    let mut kept = Vec::new();
    for (k, axis) in axes.iter().enumerate() {
        let size = match indexes.get(k) {
            None | Some(Index::All) => Some(axis.size),
            Some(Index::Single(_)) => None,
            Some(ix) => Some(slice_len(env, ix, axis.size)?),
        };
        kept.push(size);
    }
    let n_arrays = base.arrays.len();
    let arrays: Vec<usize> = kept[..n_arrays].iter().flatten().copied().collect();
    let inner = match (base.inner, &kept[n_arrays..]) {
        (Inner::Scalar, _) => Inner::Scalar,
        (Inner::Vector(_), [Some(n)]) => Inner::Vector(*n),
        (Inner::RowVector(_), [Some(n)]) => Inner::RowVector(*n),
        (Inner::Vector(_) | Inner::RowVector(_), _) => Inner::Scalar,
        (Inner::Matrix(..), [Some(r), Some(c)]) => Inner::Matrix(*r, *c),
        (Inner::Matrix(..), [None, Some(c)]) => Inner::RowVector(*c),
        (Inner::Matrix(..), [Some(r), None]) => Inner::Vector(*r),
        (Inner::Matrix(..), _) => Inner::Scalar,
    };
    Ok(Shape {
        arrays,
        inner,
        int: base.int,
        tuple: Vec::new(),
    })
}

/// Number of positions a slice or multi-index selects from `n`.
pub fn slice_len(env: &dyn ShapeEnv, ix: &Index, n: usize) -> Result<usize, Unsupported> {
    let bound = |e: &Expr| {
        const_int(env, e)
            .ok_or_else(|| "a slice whose bounds are not fixed by the data".to_string())
    };
    let n = n as i64;
    let (lo, hi) = match ix {
        Index::All => return Ok(n as usize),
        Index::Single(_) => return Ok(1),
        Index::Multi(e) => return Ok(shape_of(env, e)?.len()),
        Index::Upfrom(lo) => (bound(lo)?, n),
        Index::Downto(hi) => (1, bound(hi)?),
        Index::Between(lo, hi) => (bound(lo)?, bound(hi)?),
    };
    Ok(if hi < lo { 0 } else { (hi - lo + 1) as usize })
}

/// The shape of `e`'s value.
pub fn shape_of(env: &dyn ShapeEnv, e: &Expr) -> Result<Shape, Unsupported> {
    match &e.kind {
        ExprKind::Int(_) | ExprKind::JacobianOn => Ok(Shape::INT),
        ExprKind::Real(_) | ExprKind::Target => Ok(Shape::REAL),
        ExprKind::Var(v) => env
            .var_shape(*v)
            .ok_or_else(|| format!("`{}` has no value of known size", env.var_name(*v))),
        ExprKind::Pop(s) => env
            .stack_shape(*s)
            .ok_or_else(|| format!("stack {} holds values of no known size", s.0)),
        ExprKind::Ode(call) => super::ode::solution_shape(env, call),
        ExprKind::ZerosLike(inner) => {
            let s = shape_of(env, inner)?;
            Ok(if s == Shape::INT { s } else { s.real() })
        }
        ExprKind::Cond(c, a, b) => {
            shape_of(env, c)?;
            // A condition fixed for the data set: only its side is run.
            if let Some(known) = const_int(env, c) {
                return shape_of(env, if known != 0 { a } else { b });
            }
            let (a, b) = (shape_of(env, a)?, shape_of(env, b)?);
            if a == b {
                Ok(a)
            } else if a.is_scalar() && b.is_scalar() {
                Ok(Shape::REAL)
            } else {
                Err(format!("a conditional choosing between {a} and {b}"))
            }
        }
        ExprKind::Index(base, indexes) => {
            let base = shape_of(env, base)?;
            for ix in indexes {
                match ix {
                    Index::Single(i) if shape_of(env, i)? != Shape::INT => {
                        return Err("an index that is not an int".to_string());
                    }
                    Index::Multi(m) => {
                        let s = shape_of(env, m)?;
                        if !s.int || s.arrays.len() != 1 || s.inner != Inner::Scalar {
                            return Err("a multi-index that is not an int array".to_string());
                        }
                    }
                    _ => {}
                }
            }
            index_shape(env, &base, indexes)
        }
        ExprKind::ArrayLit(items) => {
            let shapes = items
                .iter()
                .map(|i| shape_of(env, i))
                .collect::<Result<Vec<_>, _>>()?;
            let Some(first) = shapes.first() else {
                return Err("an empty array literal".to_string());
            };
            let int = shapes.iter().all(|s| s.int);
            if shapes
                .iter()
                .any(|s| s.clone().real() != first.clone().real())
            {
                return Err("an array literal of differently sized items".to_string());
            }
            let mut arrays = vec![items.len()];
            arrays.extend(first.arrays.iter().copied());
            Ok(Shape {
                arrays,
                inner: first.inner,
                int,
                tuple: Vec::new(),
            })
        }
        ExprKind::RowVectorLit(items) => {
            let shapes = items
                .iter()
                .map(|i| shape_of(env, i))
                .collect::<Result<Vec<_>, _>>()?;
            if shapes.iter().all(Shape::is_scalar) {
                return Ok(Shape::of(Inner::RowVector(items.len())));
            }
            match shapes.first().map(|s| s.inner) {
                Some(Inner::RowVector(c))
                    if shapes
                        .iter()
                        .all(|s| s.arrays.is_empty() && s.inner == Inner::RowVector(c)) =>
                {
                    Ok(Shape::of(Inner::Matrix(items.len(), c)))
                }
                _ => Err("a row vector literal of containers".to_string()),
            }
        }
        ExprKind::Partial { args, .. } => {
            let shapes = args
                .iter()
                .map(|a| shape_of(env, a))
                .collect::<Result<Vec<_>, _>>()?;
            Shape::broadcast(&shapes.iter().collect::<Vec<_>>())
        }
        ExprKind::Prim(p, args) => prim_shape(env, *p, args, &e.ty),
        ExprKind::Imag(_) => Err("complex numbers".to_string()),
        ExprKind::Call(..) => Err("a user function call inside an expression".to_string()),
        ExprKind::TupleLit(items) => Ok(Shape::tuple_of(
            items
                .iter()
                .map(|i| shape_of(env, i))
                .collect::<Result<Vec<_>, _>>()?,
        )),
        ExprKind::TupleProj(base, k) => {
            let base = shape_of(env, base)?;
            k.checked_sub(1)
                .and_then(|k| base.tuple.get(k).cloned())
                .ok_or_else(|| format!("component {k} of a {base}"))
        }
    }
}

fn prim_shape(env: &dyn ShapeEnv, p: Prim, args: &[Expr], ty: &Type) -> Result<Shape, Unsupported> {
    let shapes = args
        .iter()
        .map(|a| shape_of(env, a))
        .collect::<Result<Vec<_>, _>>()?;
    let arg = |k: usize| -> Result<&Shape, Unsupported> {
        shapes
            .get(k)
            .ok_or_else(|| format!("{} without argument {}", p.name(), k + 1))
    };
    let all_int_scalars = !shapes.is_empty() && shapes.iter().all(|s| *s == Shape::INT);
    let elementwise = || Shape::broadcast(&shapes.iter().collect::<Vec<_>>());
    use Prim::*;
    match p {
        _ if is_check(p) => Ok(Shape::REAL),
        Sum | Prod | Max | Min if arg(0)?.int => Ok(Shape::INT),
        _ if is_reduction(p) => {
            if p == DotProduct && arg(0)?.len() != arg(1)?.len() {
                return Err("dot_product of containers of different sizes".to_string());
            }
            Ok(Shape::REAL)
        }
        Lt | Leq | Gt | Geq | Eq | Neq | Not => {
            if shapes.iter().all(Shape::is_scalar) {
                Ok(Shape::INT)
            } else {
                Err(format!("{} of containers", p.name()))
            }
        }
        Add | Sub | Neg if all_int_scalars => Ok(Shape::INT),
        Div | IntDiv | Mod if all_int_scalars => Ok(Shape::INT),
        IntDiv | Mod => Err(format!("{} of non-int operands", p.name())),
        Abs if arg(0)?.int => Ok(arg(0)?.clone()),
        Mul => {
            let (a, b) = (arg(0)?, arg(1)?);
            if all_int_scalars {
                return Ok(Shape::INT);
            }
            if a.is_scalar() || b.is_scalar() {
                return elementwise();
            }
            if !a.arrays.is_empty() || !b.arrays.is_empty() {
                return Err("multiply of arrays".to_string());
            }
            let product = match (a.inner, b.inner) {
                (Inner::RowVector(n), Inner::Vector(m)) if n == m => Inner::Scalar,
                (Inner::Vector(m), Inner::RowVector(n)) => Inner::Matrix(m, n),
                (Inner::Matrix(r, c), Inner::Vector(n)) if c == n => Inner::Vector(r),
                (Inner::RowVector(n), Inner::Matrix(r, c)) if n == r => Inner::RowVector(c),
                (Inner::Matrix(r, k), Inner::Matrix(k2, c)) if k == k2 => Inner::Matrix(r, c),
                _ => return Err(format!("multiply of {a} by {b}")),
            };
            Ok(Shape::of(product))
        }
        Div if arg(1)?.is_scalar() => elementwise(),
        // `b / A` is `mdivide_right(b, A)`.
        Div | MdivideRight if args.len() == 2 => {
            let (b, a) = (arg(0)?, arg(1)?);
            match (b.inner, a.inner, a.arrays.is_empty() && b.arrays.is_empty()) {
                (Inner::RowVector(k), Inner::Matrix(n, m), true) if n == m && k == n => {
                    Ok(b.clone().real())
                }
                (Inner::Matrix(_, k), Inner::Matrix(n, m), true) if n == m && k == n => {
                    Ok(b.clone().real())
                }
                _ => Err(format!("{} of a {b} by a {a}", p.name())),
            }
        }
        LeftDiv if args.len() == 2 => {
            let (a, b) = (arg(0)?, arg(1)?);
            match (a.inner, b.inner, a.arrays.is_empty() && b.arrays.is_empty()) {
                (Inner::Matrix(n, m), Inner::Vector(k) | Inner::Matrix(k, _), true)
                    if n == m && k == n =>
                {
                    Ok(b.clone().real())
                }
                _ => Err(format!("mdivide_left of a {a} by a {b}")),
            }
        }
        Inverse | LogDeterminant if args.len() == 1 => match arg(0)?.inner {
            Inner::Matrix(n, m) if n == m && arg(0)?.arrays.is_empty() => Ok(if p == Inverse {
                Shape::of(Inner::Matrix(n, n))
            } else {
                Shape::REAL
            }),
            _ => Err(format!("{} of a non-square matrix", p.name())),
        },
        Transpose => {
            let a = arg(0)?;
            if !a.arrays.is_empty() {
                return Err("transpose of an array".to_string());
            }
            Ok(Shape::of(match a.inner {
                Inner::Vector(n) => Inner::RowVector(n),
                Inner::RowVector(n) => Inner::Vector(n),
                Inner::Matrix(r, c) => Inner::Matrix(c, r),
                Inner::Scalar => return Err("transpose of a scalar".to_string()),
            }))
        }
        Pi | E | NotANumber | PositiveInfinity | NegativeInfinity | MachinePrecision => {
            Ok(Shape::REAL)
        }
        Size | Rows | Cols | NumElements => Ok(Shape::INT),
        Dims if args.len() == 1 => Ok(Shape {
            arrays: vec![arg(0)?.dims().len()],
            inner: Inner::Scalar,
            int: true,
            tuple: Vec::new(),
        }),
        RepVector | RepRowVector => {
            let n = size_arg(env, &args[1], "size")?;
            if !arg(0)?.is_scalar() {
                return Err(format!("{} of a container", p.name()));
            }
            Ok(Shape::of(if p == RepVector {
                Inner::Vector(n)
            } else {
                Inner::RowVector(n)
            }))
        }
        RepMatrix if args.len() == 2 && arg(0)?.arrays.is_empty() => {
            let n = size_arg(env, &args[1], "size")?;
            match arg(0)?.inner {
                Inner::Vector(r) => Ok(Shape::of(Inner::Matrix(r, n))),
                Inner::RowVector(c) => Ok(Shape::of(Inner::Matrix(n, c))),
                _ => Err("rep_matrix of a scalar with one size".to_string()),
            }
        }
        Reverse => {
            let a = arg(0)?;
            match (a.arrays.is_empty(), a.inner) {
                (true, Inner::Vector(_) | Inner::RowVector(_)) | (false, _) => Ok(a.clone()),
                _ => Err(format!("reverse of a {a}")),
            }
        }
        Linspaced => Ok(Shape::of(Inner::Vector(size_arg(env, &args[0], "size")?))),
        RepMatrix if args.len() == 3 && arg(0)?.is_scalar() => {
            let r = size_arg(env, &args[1], "size")?;
            let c = size_arg(env, &args[2], "size")?;
            Ok(Shape::of(Inner::Matrix(r, c)))
        }
        RepArray => {
            let mut dims = Vec::new();
            for a in &args[1..] {
                dims.push(size_arg(env, a, "size")?);
            }
            let x = arg(0)?;
            dims.extend(x.arrays.iter().copied());
            Ok(Shape {
                arrays: dims,
                inner: x.inner,
                int: x.int,
                tuple: Vec::new(),
            })
        }
        ToVector | ToRowVector if args.len() == 1 => {
            let n = arg(0)?.len();
            Ok(Shape::of(if p == ToVector {
                Inner::Vector(n)
            } else {
                Inner::RowVector(n)
            }))
        }
        ToArray1d => {
            let a = arg(0)?;
            Ok(Shape {
                arrays: vec![a.len()],
                inner: Inner::Scalar,
                int: a.int,
                tuple: Vec::new(),
            })
        }
        Col | Row => {
            let Inner::Matrix(r, c) = arg(0)?.inner else {
                return Err(format!("{} of a non-matrix", p.name()));
            };
            Ok(Shape::of(if p == Col {
                Inner::Vector(r)
            } else {
                Inner::RowVector(c)
            }))
        }
        Segment | Head | Tail => {
            let a = arg(0)?;
            let n = size_arg(env, args.last().expect("checked arity"), "segment length")?;
            Ok(match (a.arrays.as_slice(), a.inner) {
                ([], Inner::Vector(_)) => Shape::of(Inner::Vector(n)),
                ([], Inner::RowVector(_)) => Shape::of(Inner::RowVector(n)),
                ([_], Inner::Scalar) => Shape {
                    arrays: vec![n],
                    inner: Inner::Scalar,
                    int: a.int,
                    tuple: Vec::new(),
                },
                _ => return Err(format!("{} of {a}", p.name())),
            })
        }
        DiagMatrix => match arg(0)?.inner {
            Inner::Vector(n) if arg(0)?.arrays.is_empty() => Ok(Shape::of(Inner::Matrix(n, n))),
            _ => Err("diag_matrix of a non-vector".to_string()),
        },
        Diagonal => match arg(0)?.inner {
            Inner::Matrix(r, c) => Ok(Shape::of(Inner::Vector(r.min(c)))),
            _ => Err("diagonal of a non-matrix".to_string()),
        },
        DiagPreMultiply | DiagPostMultiply => {
            let m = if p == DiagPreMultiply {
                arg(1)?
            } else {
                arg(0)?
            };
            match m.inner {
                Inner::Matrix(..) if m.arrays.is_empty() => Ok(m.clone().real()),
                _ => Err(format!("{} of a non-matrix", p.name())),
            }
        }
        ToInt if args.len() == 1 && arg(0)?.is_scalar() => Ok(Shape::INT),
        // Dense routines (`emit::linalg`): operand sizes checked there.
        Softmax | LogSoftmax if args.len() == 1 => {
            let a = arg(0)?;
            match (a.arrays.is_empty(), a.inner) {
                (true, Inner::Vector(_)) => Ok(a.clone().real()),
                _ => Err(format!("{} of a {a}", p.name())),
            }
        }
        CumulativeSum if args.len() == 1 => {
            let a = arg(0)?;
            match (a.int, a.arrays.as_slice(), a.inner) {
                (false, [], Inner::Vector(_) | Inner::RowVector(_))
                | (false, [_], Inner::Scalar) => Ok(a.clone()),
                _ => Err(format!("cumulative_sum of a {a}")),
            }
        }
        AppendRow | AppendCol if args.len() == 2 => {
            let ((r1, c1), (r2, c2)) = (as_matrix(p, arg(0)?)?, as_matrix(p, arg(1)?)?);
            let inner = match (p, ty) {
                (AppendRow, _) if c1 != c2 => {
                    return Err(format!("append_row of {c1} and {c2} columns"));
                }
                (AppendCol, _) if r1 != r2 => {
                    return Err(format!("append_col of {r1} and {r2} rows"));
                }
                (AppendRow, Type::Vector) => Inner::Vector(r1 + r2),
                (AppendRow, _) => Inner::Matrix(r1 + r2, c1),
                (_, Type::RowVector) => Inner::RowVector(c1 + c2),
                _ => Inner::Matrix(r1, c1 + c2),
            };
            Ok(Shape::of(inner))
        }
        AppendArray if args.len() == 2 => {
            let (a, b) = (arg(0)?, arg(1)?);
            match (a.arrays.split_first(), b.arrays.split_first()) {
                (Some((n, rest)), Some((m, rest_b)))
                    if rest == rest_b
                        && a.inner == b.inner
                        && a.int == b.int
                        && a.tuple.is_empty() =>
                {
                    let mut arrays = vec![n + m];
                    arrays.extend(rest.iter().copied());
                    Ok(Shape {
                        arrays,
                        inner: a.inner,
                        int: a.int,
                        tuple: Vec::new(),
                    })
                }
                _ => Err(format!("append_array of a {a} and a {b}")),
            }
        }
        ToMatrix if args.len() == 1 => {
            let a = arg(0)?;
            match (a.arrays.is_empty(), a.inner) {
                (true, Inner::Matrix(r, c)) => Ok(Shape::of(Inner::Matrix(r, c))),
                (true, Inner::Vector(n)) => Ok(Shape::of(Inner::Matrix(n, 1))),
                (true, Inner::RowVector(n)) => Ok(Shape::of(Inner::Matrix(1, n))),
                _ => Err(format!("to_matrix of a {a}")),
            }
        }
        ToMatrix if args.len() == 3 => {
            let a = arg(0)?;
            let r = size_arg(env, &args[1], "size")?;
            let c = size_arg(env, &args[2], "size")?;
            let one_dimensional = matches!(
                (a.arrays.as_slice(), a.inner),
                (
                    [],
                    Inner::Vector(_) | Inner::RowVector(_) | Inner::Matrix(..)
                ) | ([_], Inner::Scalar)
            );
            if !one_dimensional || a.len() != r * c {
                return Err(format!("to_matrix of a {a} as {r}×{c}"));
            }
            Ok(Shape::of(Inner::Matrix(r, c)))
        }
        Block if args.len() == 5 => {
            let Inner::Matrix(r, c) = arg(0)?.inner else {
                return Err("block of a non-matrix".to_string());
            };
            let nr = size_arg(env, &args[3], "block size")?;
            let nc = size_arg(env, &args[4], "block size")?;
            if nr > r || nc > c {
                return Err(format!("a {nr}×{nc} block of a {r}×{c} matrix"));
            }
            Ok(Shape::of(Inner::Matrix(nr, nc)))
        }
        MultiplyLowerTriSelfTranspose if args.len() == 1 => match arg(0)?.inner {
            Inner::Matrix(r, _) if arg(0)?.arrays.is_empty() => Ok(Shape::of(Inner::Matrix(r, r))),
            _ => Err(format!("{} of a non-matrix", p.name())),
        },
        Tcrossprod | Crossprod if args.len() == 1 => match arg(0)?.inner {
            Inner::Matrix(r, c) if arg(0)?.arrays.is_empty() => {
                let n = if p == Tcrossprod { r } else { c };
                Ok(Shape::of(Inner::Matrix(n, n)))
            }
            _ => Err(format!("{} of a non-matrix", p.name())),
        },
        QuadForm if args.len() == 2 => {
            let (a, b) = (arg(0)?, arg(1)?);
            match (a.inner, b.inner, a.arrays.is_empty() && b.arrays.is_empty()) {
                (Inner::Matrix(n, m), Inner::Vector(k), true) if n == m && m == k => {
                    Ok(Shape::REAL)
                }
                (Inner::Matrix(n, m), Inner::Matrix(k, c), true) if n == m && m == k => {
                    Ok(Shape::of(Inner::Matrix(c, c)))
                }
                _ => Err(format!("quad_form of a {a} and a {b}")),
            }
        }
        QuadFormDiag if args.len() == 2 => {
            let (m, v) = (arg(0)?, arg(1)?);
            match (m.inner, v.len(), m.arrays.is_empty()) {
                (Inner::Matrix(r, c), n, true) if r == c && n == r && !v.is_scalar() => {
                    Ok(m.clone().real())
                }
                _ => Err(format!("quad_form_diag of a {m} and a {v}")),
            }
        }
        CholeskyDecompose if args.len() == 1 => Ok(arg(0)?.clone().real()),
        MdivideLeftTriLow if args.len() == 2 => Ok(arg(1)?.clone().real()),
        MdivideRightTriLow if args.len() == 2 => Ok(arg(0)?.clone().real()),
        GpExpQuadCov if args.len() == 3 => {
            let n = arg(0)?
                .arrays
                .first()
                .copied()
                .ok_or("gp_exp_quad_cov of a non-array")?;
            Ok(Shape::of(Inner::Matrix(n, n)))
        }
        // Vectorised draws return an array of reals.
        UniformRng | NormalRng if args.len() == 2 => {
            let sizes: Vec<usize> = shapes
                .iter()
                .filter(|s| !s.is_scalar())
                .map(Shape::len)
                .collect();
            match sizes.first() {
                None => Ok(Shape::REAL),
                Some(&n) if sizes.iter().all(|&m| m == n) => Ok(Shape {
                    arrays: vec![n],
                    inner: Inner::Scalar,
                    int: false,
                    tuple: Vec::new(),
                }),
                Some(_) => Err(format!("{} of containers of different sizes", p.name())),
            }
        }
        _ if super::scalar::scalar_fn(p, args.len()).is_some() => {
            let _ = ty;
            elementwise()
        }
        _ => Err(format!("primitive {}", p.name())),
    }
}
