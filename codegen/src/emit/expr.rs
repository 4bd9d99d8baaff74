//! Expressions: one element at a time ([`Emitter::elem`]), ints as C
//! `long long` ([`Emitter::int_expr`]), reductions and argument checks
//! hoisted before the statement.

use language::mir::{Expr, ExprKind, Prim};
use language::types::Type;

use super::super::layout::{JACOBIAN_SLOT, Place, TARGET_SLOT};
use super::super::scalar::{c_name, scalar_fn};
use super::super::shape::{Inner, Shape};
use super::super::typing::{Unsupported, const_int, is_check, is_reduction};
use super::{Dest, Emitter, FailKind, LOCAL_LIMIT, Materialized, for_each, real_literal};

impl Emitter<'_> {
    /// C expression for element `idx` (a C expression of the flat
    /// position) of `e`'s value; scalars ignore `idx`.
    pub fn elem(&mut self, e: &Expr, idx: &str) -> Result<String, Unsupported> {
        let shape = self.shape(e)?;
        let idx = if shape.len() == 1 { "0" } else { idx };
        let address = e as *const Expr as usize;
        if let Some((_, m)) = self.materialized.iter().find(|(a, _)| *a == address) {
            return Ok(m.at(idx));
        }
        // An int fixed by the data set (a size such as `dims(x)[1]`).
        if shape == Shape::INT
            && !matches!(e.kind, ExprKind::Int(_))
            && let Some(k) = const_int(self.layout, e)
        {
            return Ok(format!("{k}.0"));
        }
        match &e.kind {
            ExprKind::Int(i) => Ok(format!("{i}.0")),
            ExprKind::Real(x) => Ok(real_literal(*x)),
            ExprKind::Target => Ok(format!("S({TARGET_SLOT})")),
            ExprKind::JacobianOn => Ok(format!("S({JACOBIAN_SLOT})")),
            ExprKind::Var(var) => match self.layout.place(*var) {
                Some(Place::State { base, len: 1 }) => Ok(format!("S({base})")),
                Some(Place::State { base, .. }) => Ok(format!("S({base} + {idx})")),
                Some(Place::Data { base, len: 1 }) => Ok(format!("D({base})")),
                Some(Place::Data { base, .. }) => Ok(format!("D({base} + {idx})")),
                None => Err(format!(
                    "`{}` has no value of known size",
                    self.var_name(*var)
                )),
            },
            // Solved whole first (codegen::ode).
            ExprKind::Ode(_) => {
                if self.in_branch > 0 {
                    return Err("an ODE solve inside a conditional expression".to_string());
                }
                let m = self.materialize(e)?;
                Ok(m.at(idx))
            }
            ExprKind::ZerosLike(_) => Ok("0.0".to_string()),
            ExprKind::Cond(c, a, b) => {
                // A condition on data or sizes alone (the `ok` flag of a
                // value hoisted by `language::simplify`, `rows(m) > 0`) is
                // decided here: kernels are made for one data set.
                let known =
                    (self.data_scalar(c)).or_else(|| const_int(self.layout, c).map(|k| k as f64));
                if let Some(known) = known {
                    return self.elem(if known != 0.0 { a } else { b }, idx);
                }
                if !self.shape(c)?.is_scalar() {
                    return Err("a conditional on a container".to_string());
                }
                let c = self.elem(c, "0")?;
                self.in_branch += 1;
                let branches = (self.elem(a, idx), self.elem(b, idx));
                self.in_branch -= 1;
                let (a, b) = (branches.0?, branches.1?);
                Ok(format!("(({c}) != 0.0 ? ({a}) : ({b}))"))
            }
            ExprKind::Index(base, indexes) => self.index_elem(base, indexes, idx),
            ExprKind::Prim(p, args) if super::is_device_draw(*p) => {
                self.draw_elem(*p, e, args, idx, &shape)
            }
            ExprKind::Prim(Prim::ToInt, args) if args.len() == 1 => {
                // The interpreter's range check, hoisted; the value truncated.
                if self.in_branch > 0 {
                    return Err("to_int inside a conditional expression".to_string());
                }
                let x = self.elem(&args[0], "0")?;
                let v = self.fresh("ti");
                let fail = self.fail(
                    FailKind::Rejection,
                    "to_int: the value is outside the range of int".to_string(),
                );
                self.lines.push(format!(
                    "const double {v} = {x}; if (!(isfinite({v}) && fabs({v}) < 9223372036854775808.0)) {fail}"
                ));
                Ok(format!("trunc({v})"))
            }
            ExprKind::Prim(p, args) if is_check(*p) => self.check(*p, args),
            ExprKind::Prim(p, args) if is_reduction(*p) => self.reduction(*p, args),
            ExprKind::Prim(p, args) if shape == Shape::INT && is_int_arithmetic(*p) => {
                let _ = args;
                Ok(format!("((double)({}))", self.int_expr(e)?))
            }
            ExprKind::Prim(Prim::Mul, args)
                if args.len() == 2
                    && !self.shape(&args[0])?.is_scalar()
                    && !self.shape(&args[1])?.is_scalar() =>
            {
                let m = self.materialize(e)?;
                Ok(m.at(idx))
            }
            ExprKind::Prim(p, args) if super::is_dense(*p, args.len()) => {
                let m = self.materialize(e)?;
                Ok(m.at(idx))
            }
            ExprKind::Prim(Prim::Tcrossprod | Prim::Crossprod | Prim::QuadForm, _) => {
                let product = self.defining_form(e)?;
                self.elem(&product, idx)
            }
            ExprKind::Prim(Prim::Div, args) if is_matrix_division(self, args)? => {
                let division = self.defining_form(e)?;
                self.elem(&division, idx)
            }
            ExprKind::Prim(p, args) => self.prim_elem(*p, args, idx, &shape),
            ExprKind::Partial { prim, arg, args } => {
                let f = scalar_fn(*prim, args.len())
                    .filter(|f| *arg < f.partials.len())
                    .ok_or_else(|| format!("derivative of {}", prim.name()))?;
                let operands = self.operands(args, idx)?;
                Ok(format!("{}({operands})", c_name(f, Some(*arg))))
            }
            ExprKind::TupleProj(base, k) => {
                let components = self.shape(base)?.tuple;
                let offset: usize = components[..k - 1].iter().map(Shape::len).sum();
                self.elem(base, &format!("({offset} + {idx})"))
            }
            ExprKind::Pop(_)
            | ExprKind::ArrayLit(_)
            | ExprKind::RowVectorLit(_)
            | ExprKind::TupleLit(_) => {
                let m = self.materialize(e)?;
                Ok(m.at(idx))
            }
            ExprKind::Imag(_) => Err("complex numbers".to_string()),
            ExprKind::Call(..) => Err("a user function call inside an expression".to_string()),
        }
    }

    /// `tcrossprod(A)`, `crossprod(A)` and `quad_form(A, B)` as the
    /// products the interpreter computes them by (A Aᵀ, Aᵀ A, Bᵀ (A B)):
    /// the same sums in the same order; `b / A` as `mdivide_right(b, A)`.
    pub(crate) fn defining_form(&mut self, e: &Expr) -> Result<std::rc::Rc<Expr>, Unsupported> {
        let address = e as *const Expr as usize;
        if let Some((_, p)) = self.products.iter().find(|(a, _)| *a == address) {
            return Ok(p.clone());
        }
        let ExprKind::Prim(p, args) = &e.kind else {
            return Err("a product form of a non-primitive".to_string());
        };
        let node = |kind: ExprKind, ty: Type| Expr {
            kind,
            ty,
            ad: e.ad,
            span: e.span,
        };
        let transpose = |x: &Expr| {
            let ty = match x.ty {
                Type::Vector => Type::RowVector,
                Type::RowVector => Type::Vector,
                ref t => t.clone(),
            };
            node(ExprKind::Prim(Prim::Transpose, vec![x.clone()]), ty)
        };
        let mul = |a: Expr, b: Expr, ty: Type| node(ExprKind::Prim(Prim::Mul, vec![a, b]), ty);
        let product = match (p, args.as_slice()) {
            (Prim::Tcrossprod, [a]) => mul(a.clone(), transpose(a), Type::Matrix),
            (Prim::Crossprod, [a]) => mul(transpose(a), a.clone(), Type::Matrix),
            (Prim::QuadForm, [a, b]) => {
                let ab = mul(a.clone(), b.clone(), b.ty.clone());
                mul(transpose(b), ab, e.ty.clone())
            }
            (Prim::Div, [b, a]) => node(
                ExprKind::Prim(Prim::MdivideRight, vec![b.clone(), a.clone()]),
                e.ty.clone(),
            ),
            _ => return Err(format!("primitive {}", p.name())),
        };
        let product = std::rc::Rc::new(product);
        self.products.push((address, product.clone()));
        Ok(product)
    }

    fn operands(&mut self, args: &[Expr], idx: &str) -> Result<String, Unsupported> {
        let mut out = Vec::new();
        for a in args {
            out.push(self.elem(a, idx)?);
        }
        Ok(out.join(", "))
    }

    /// Compute `e` into a new thread-local array, or for a value of more
    /// than [`LOCAL_LIMIT`] numbers into scratch slots of the lane state.
    pub(crate) fn materialize(&mut self, e: &Expr) -> Result<Materialized, Unsupported> {
        let shape = self.shape(e)?;
        let n = shape.len();
        if matches!(e.kind, ExprKind::Pop(_)) && self.in_branch > 0 {
            return Err("a stack pop inside a conditional expression".to_string());
        }
        let (m, dest) = if n > LOCAL_LIMIT {
            let base = self.layout.scratch(n);
            let dest = Dest::State {
                base,
                maps: Vec::new(),
            };
            (Materialized::Scratch(base), dest)
        } else {
            let name = self.fresh("m");
            self.lines.push(format!("double {name}[{}];", n.max(1)));
            (Materialized::Local(name.clone()), Dest::Local(name))
        };
        self.compute_into(&dest, n, e, "=", None)?;
        self.materialized
            .push((e as *const Expr as usize, m.clone()));
        Ok(m)
    }

    /// An int-valued scalar expression as a C `long long`; arithmetic is
    /// checked for Stan's 32-bit overflow and division by zero.
    pub(crate) fn int_expr(&mut self, e: &Expr) -> Result<String, Unsupported> {
        if self.shape(e)? != Shape::INT {
            return Err("a non-integer where an int is needed".to_string());
        }
        if let Some(k) = const_int(self.layout, e) {
            return Ok(format!("{k}LL"));
        }
        match &e.kind {
            ExprKind::Prim(p, args) if is_int_arithmetic(*p) => {
                let operands = args
                    .iter()
                    .map(|a| self.int_expr(a))
                    .collect::<Result<Vec<_>, _>>()?;
                let value = match (p, operands.as_slice()) {
                    (Prim::Add, [a, b]) => format!("{a} + {b}"),
                    (Prim::Sub, [a, b]) => format!("{a} - {b}"),
                    (Prim::Mul, [a, b]) => format!("{a} * {b}"),
                    (Prim::Neg, [a]) => format!("-{a}"),
                    (Prim::Div | Prim::IntDiv | Prim::Mod, [a, b]) => {
                        if self.in_branch > 0 {
                            return Err("integer division inside a conditional".to_string());
                        }
                        let d = self.fresh("d");
                        let fail = self.fail(FailKind::Fatal, "integer division by zero".into());
                        self.lines
                            .push(format!("const long long {d} = {b}; if ({d} == 0) {fail}"));
                        let op = if *p == Prim::Mod { "%" } else { "/" };
                        format!("{a} {op} {d}")
                    }
                    _ => return Err(format!("integer {}", p.name())),
                };
                if self.in_branch > 0 {
                    return Ok(format!("({value})"));
                }
                let i = self.fresh("i");
                let fail = self.fail(FailKind::Fatal, format!("integer overflow in {}", p.name()));
                self.lines.push(format!(
                    "const long long {i} = {value}; if ({i} < -2147483648LL || {i} > 2147483647LL) {fail}"
                ));
                Ok(i)
            }
            _ => Ok(format!("((long long)({}))", self.elem(e, "0")?)),
        }
    }

    /// The sum of all elements of `e`, in order (as the interpreter adds a
    /// container to the target).
    pub(crate) fn total(&mut self, e: &Expr) -> Result<String, Unsupported> {
        let n = self.shape(e)?.len();
        if n == 1 {
            return self.elem(e, "0");
        }
        let acc = self.fresh("sum");
        let j = self.fresh("j");
        let value = self.elem(e, &j)?;
        self.lines.push(format!(
            "double {acc} = 0.0;\n{}",
            for_each(&j, n, &format!("{acc} += {value};"))
        ));
        Ok(acc)
    }

    /// Reductions over one lane's elements, hoisted before the statement.
    fn reduction(&mut self, p: Prim, args: &[Expr]) -> Result<String, Unsupported> {
        let acc = self.fresh("r");
        let j = self.fresh("j");
        let x = args.first().ok_or("a reduction without operand")?;
        let shape = self.shape(x)?;
        let n = shape.len();
        let v = self.elem(x, &j)?;
        let fold = |init: &str, step: &str| {
            format!(
                "double {acc} = {init};\n{}",
                for_each(&j, n, &format!("const double v = {v}; {step}"))
            )
        };
        let code = match (p, args.len()) {
            (Prim::Sum, 1) => fold("0.0", &format!("{acc} += v;")),
            (Prim::Prod, 1) => fold("1.0", &format!("{acc} *= v;")),
            (Prim::DotSelf, 1) => fold("0.0", &format!("{acc} += v * v;")),
            (Prim::Norm1, 1) => fold("0.0", &format!("{acc} += fabs(v);")),
            (Prim::Norm2, 1) => format!(
                "{}\n{acc} = sqrt({acc});",
                fold("0.0", &format!("{acc} += v * v;"))
            ),
            (Prim::Max | Prim::Min, 1) if shape.int => {
                if n == 0 {
                    return Err(format!("{} of an empty int array", p.name()));
                }
                let op = if p == Prim::Max { ">" } else { "<" };
                format!(
                    "double {acc} = {};\n{}",
                    self.elem(x, "0")?,
                    for_each(
                        &j,
                        n,
                        &format!("const double v = {v}; if (v {op} {acc}) {acc} = v;")
                    )
                )
            }
            (Prim::Max, 1) => fold("-BAT_INF", &format!("{acc} = fmax({acc}, v);")),
            (Prim::Min, 1) => fold("BAT_INF", &format!("{acc} = fmin({acc}, v);")),
            (Prim::Mean | Prim::Variance | Prim::Sd, 1) => {
                if n == 0 {
                    return Err(format!("{} of an empty container", p.name()));
                }
                let sum = fold("0.0", &format!("{acc} += v;"));
                let mean = format!("{sum}\n{acc} = {acc} / {n}.0;");
                if p == Prim::Mean {
                    mean
                } else {
                    let var = self.fresh("var");
                    let k = self.fresh("j");
                    let vk = self.elem(x, &k)?;
                    let sumsq = if n == 1 {
                        format!("double {var} = 0.0;")
                    } else {
                        format!(
                            "double {var} = 0.0;\n{}\n{var} = {var} / ({n}.0 - 1.0);",
                            for_each(
                                &k,
                                n,
                                &format!("const double w = {vk} - {acc}; {var} += w * w;")
                            )
                        )
                    };
                    let result = if p == Prim::Sd {
                        format!("sqrt({var})")
                    } else {
                        var.clone()
                    };
                    format!("{mean}\n{sumsq}\n{acc} = {result};")
                }
            }
            (Prim::LogSumExp, 1) => {
                // bat-math's log_sum_exp: max + log Σ exp(x - max).
                let k = self.fresh("j");
                let vk = self.elem(x, &k)?;
                let total = self.fresh("t");
                format!(
                    "{}\nif (!isinf({acc})) {{ double {total} = 0.0;\n{}\n{acc} = {acc} + log({total}); }}",
                    fold("-BAT_INF", &format!("{acc} = fmax({acc}, v);")),
                    for_each(&k, n, &format!("{total} += exp({vk} - {acc});"))
                )
            }
            (Prim::DotProduct, 2) => {
                let y = &args[1];
                if self.shape(y)?.len() != n {
                    return Err("dot_product of containers of different sizes".to_string());
                }
                let w = self.elem(y, &j)?;
                fold("0.0", &format!("{acc} += v * ({w});"))
            }
            _ => return Err(format!("reduction {}", p.name())),
        };
        self.lines.push(code);
        Ok(acc)
    }

    /// The value of `e` when it is a scalar data variable.
    fn data_scalar(&self, e: &Expr) -> Option<f64> {
        let ExprKind::Var(v) = &e.kind else {
            return None;
        };
        match self.layout.place(*v) {
            Some(Place::Data { base, len: 1 }) => self.layout.data.get(base).copied(),
            _ => None,
        }
    }

    /// An argument check: rejects the lane when an element fails; its
    /// value is 0.
    fn check(&mut self, p: Prim, args: &[Expr]) -> Result<String, Unsupported> {
        if self.in_branch > 0 {
            return Err("an argument check inside a conditional expression".to_string());
        }
        let x = args.first().ok_or("argument check without operand")?;
        let n = self.shape(x)?.len();
        let j = self.fresh("j");
        let v = self.elem(x, &j)?;
        let (ok, what) = match p {
            Prim::CheckPositiveFinite => ("(v > 0.0 && isfinite(v))", "positive finite"),
            Prim::CheckPositive => ("(v > 0.0)", "positive"),
            Prim::CheckNonNegative | Prim::CheckNonNegativeInt => ("(v >= 0.0)", "nonnegative"),
            Prim::CheckFinite => ("isfinite(v)", "finite"),
            Prim::CheckNotNan => ("(v == v)", "not nan"),
            Prim::CheckProbability => ("(v >= 0.0 && v <= 1.0)", "in the interval [0, 1]"),
            _ => return Err(format!("check {}", p.name())),
        };
        let which = match args.get(1).map(|a| &a.kind) {
            Some(ExprKind::Int(k)) => format!("argument {k}"),
            _ => "an argument".to_string(),
        };
        let fail = self.fail(FailKind::Rejection, format!("{which} must be {what}"));
        let test = format!("const double v = {v}; if (!{ok}) {fail}");
        self.lines.push(if n == 1 {
            format!("{{ {test} }}")
        } else {
            for_each(&j, n, &test)
        });
        Ok("0.0".to_string())
    }

    /// Element `idx` of a primitive's value (`shape` is the value's).
    fn prim_elem(
        &mut self,
        p: Prim,
        args: &[Expr],
        idx: &str,
        shape: &Shape,
    ) -> Result<String, Unsupported> {
        let arg_shape = |k: usize| -> Result<Shape, Unsupported> {
            args.get(k)
                .ok_or_else(|| format!("{} without argument {}", p.name(), k + 1))
                .and_then(|a| super::super::typing::shape_of(self.layout, a))
        };
        match p {
            Prim::Pi => return Ok(real_literal(std::f64::consts::PI)),
            Prim::E => return Ok(real_literal(std::f64::consts::E)),
            Prim::NotANumber => return Ok("BAT_NAN".to_string()),
            Prim::PositiveInfinity => return Ok("BAT_INF".to_string()),
            Prim::NegativeInfinity => return Ok("(-BAT_INF)".to_string()),
            Prim::MachinePrecision => return Ok(real_literal(f64::EPSILON)),
            Prim::Size | Prim::Rows | Prim::Cols | Prim::NumElements => {
                let e = Expr {
                    kind: ExprKind::Prim(p, args.to_vec()),
                    ty: language::types::Type::Int,
                    ad: language::types::AdLevel::DataOnly,
                    span: language::span::Span { start: 0, end: 0 },
                };
                let k = const_int(self.layout, &e).ok_or("a size that is not known")?;
                return Ok(format!("{k}.0"));
            }
            _ => {}
        }
        match (p, args) {
            (Prim::Transpose, [a]) => match arg_shape(0)?.inner {
                Inner::Matrix(r, c) => {
                    // Result c×r: position (i, j) reads (j, i).
                    let at = format!("((({idx}) / {c}) + (({idx}) % {c}) * {r})");
                    self.elem(a, &at)
                }
                _ => self.elem(a, idx),
            },
            (Prim::ToVector | Prim::ToRowVector | Prim::ToArray1d, [a]) => self.elem(a, idx),
            (Prim::RepMatrix, [v, _]) => match (arg_shape(0)?.inner, shape.inner) {
                // Every column is the vector, or every row the row vector.
                (Inner::Vector(r), _) => self.elem(v, &format!("(({idx}) % {r})")),
                (Inner::RowVector(_), Inner::Matrix(r, _)) => {
                    self.elem(v, &format!("(({idx}) / {r})"))
                }
                _ => Err("rep_matrix shape".to_string()),
            },
            (Prim::RepVector | Prim::RepRowVector | Prim::RepMatrix, [x, ..]) => self.elem(x, "0"),
            (Prim::Reverse, [v]) => {
                let n = shape.len();
                if n == 0 {
                    return Ok("0.0".to_string());
                }
                // Arrays reverse their outermost dimension, elements whole.
                let item = match shape.arrays.first() {
                    Some(&d) => n / d.max(1),
                    None => 1,
                };
                let at = if item == 1 {
                    format!("({} - ({idx}))", n - 1)
                } else {
                    format!(
                        "(({d} - 1 - ({idx}) / {item}) * {item} + ({idx}) % {item})",
                        d = n / item
                    )
                };
                self.elem(v, &at)
            }
            (Prim::Linspaced, [_, lo, hi]) => {
                let n = shape.len();
                let (lo, hi) = (self.elem(lo, "0")?, self.elem(hi, "0")?);
                if n <= 1 {
                    // One element: `hi`, as the interpreter.
                    return Ok(format!("({hi})"));
                }
                // bat's: the last element is exactly `hi`.
                Ok(format!(
                    "(({idx}) == {} ? ({hi}) : ({lo}) + ((({hi}) - ({lo})) / {}.0) * (double)({idx}))",
                    n - 1,
                    n - 1
                ))
            }
            (Prim::RepArray, [x, ..]) => {
                let n = arg_shape(0)?.len();
                self.elem(x, &format!("(({idx}) % {n})"))
            }
            (Prim::Col | Prim::Row, [m, k]) => {
                let Inner::Matrix(r, c) = arg_shape(0)?.inner else {
                    return Err(format!("{} of a non-matrix", p.name()));
                };
                if p == Prim::Col {
                    let j = self.checked_index(k, c)?;
                    self.elem(m, &format!("(({idx}) + {j} * {r})"))
                } else {
                    let i = self.checked_index(k, r)?;
                    self.elem(m, &format!("({i} + ({idx}) * {r})"))
                }
            }
            (Prim::Head, [v, _]) => {
                if shape.len() > arg_shape(0)?.len() {
                    return Err("head longer than its argument".to_string());
                }
                self.elem(v, idx)
            }
            (Prim::Tail, [v, _]) => {
                let len = arg_shape(0)?.len();
                if shape.len() > len {
                    return Err("tail longer than its argument".to_string());
                }
                self.elem(v, &format!("(({idx}) + {})", len - shape.len()))
            }
            (Prim::Segment, [v, i, _]) => {
                let len = arg_shape(0)?.len();
                let n = shape.len();
                if n == 0 {
                    return Ok("0.0".to_string());
                }
                if n > len {
                    return Err("segment longer than its argument".to_string());
                }
                // Positions i .. i + n - 1 must lie in 1 .. len.
                let start = self.checked_index(i, len + 1 - n)?;
                self.elem(v, &format!("(({idx}) + {start})"))
            }
            (Prim::AppendRow, [a, b]) => {
                let rows = |s: &Shape| match s.inner {
                    Inner::Vector(n) => n,
                    Inner::Matrix(r, _) => r,
                    _ => 1,
                };
                let (r1, r2) = (rows(&arg_shape(0)?), rows(&arg_shape(1)?));
                // Column-major: element (i, j) of the r1 + r2 rows.
                let r = r1 + r2;
                let (i, j) = (format!("(({idx}) % {r})"), format!("(({idx}) / {r})"));
                self.in_branch += 1;
                let parts = (
                    self.elem(a, &format!("({i} + {j} * {r1})")),
                    self.elem(b, &format!("({i} - {r1} + {j} * {r2})")),
                );
                self.in_branch -= 1;
                Ok(format!("({i} < {r1} ? ({}) : ({}))", parts.0?, parts.1?))
            }
            (Prim::AppendCol | Prim::AppendArray, [a, b]) => {
                // Column-major matrices with equal rows, and row-major
                // arrays, concatenate as their element sequences.
                let n = arg_shape(0)?.len();
                self.in_branch += 1;
                let parts = (self.elem(a, idx), self.elem(b, &format!("(({idx}) - {n})")));
                self.in_branch -= 1;
                Ok(format!("(({idx}) < {n} ? ({}) : ({}))", parts.0?, parts.1?))
            }
            // Column-major from a column-major or one-dimensional source.
            (Prim::ToMatrix, [a] | [a, _, _]) => self.elem(a, idx),
            (Prim::Block, [m, i, j, _, _]) => {
                let Inner::Matrix(r, c) = arg_shape(0)?.inner else {
                    return Err("block of a non-matrix".to_string());
                };
                let Inner::Matrix(nr, nc) = shape.inner else {
                    return Err("block shape".to_string());
                };
                if nr == 0 || nc == 0 {
                    return Ok("0.0".to_string());
                }
                let i0 = self.checked_index(i, r + 1 - nr)?;
                let j0 = self.checked_index(j, c + 1 - nc)?;
                self.elem(
                    m,
                    &format!("(({i0} + ({idx}) % {nr}) + ({j0} + ({idx}) / {nr}) * {r})"),
                )
            }
            (Prim::QuadFormDiag, [m, v]) => {
                let Inner::Matrix(r, _) = shape.inner else {
                    return Err("quad_form_diag shape".to_string());
                };
                // The interpreter's (m · v_i) · v_j.
                let (m, vi, vj) = (
                    self.elem(m, idx)?,
                    self.elem(v, &format!("(({idx}) % {r})"))?,
                    self.elem(v, &format!("(({idx}) / {r})"))?,
                );
                Ok(format!("((({m}) * ({vi})) * ({vj}))"))
            }
            (Prim::DiagMatrix, [v]) => {
                let Inner::Matrix(n, _) = shape.inner else {
                    return Err("diag_matrix shape".to_string());
                };
                self.in_branch += 1;
                let d = self.elem(v, &format!("(({idx}) / {})", n + 1));
                self.in_branch -= 1;
                Ok(format!("((({idx}) % {}) == 0 ? ({}) : 0.0)", n + 1, d?))
            }
            (Prim::Diagonal, [m]) => {
                let Inner::Matrix(r, _) = arg_shape(0)?.inner else {
                    return Err("diagonal of a non-matrix".to_string());
                };
                self.elem(m, &format!("(({idx}) * {})", r + 1))
            }
            (Prim::DiagPreMultiply, [v, m]) => {
                let Inner::Matrix(r, _) = shape.inner else {
                    return Err("diag_pre_multiply shape".to_string());
                };
                let (v, m) = (
                    self.elem(v, &format!("(({idx}) % {r})"))?,
                    self.elem(m, idx)?,
                );
                Ok(format!("(({v}) * ({m}))"))
            }
            (Prim::DiagPostMultiply, [m, v]) => {
                let Inner::Matrix(r, _) = shape.inner else {
                    return Err("diag_post_multiply shape".to_string());
                };
                let (m, v) = (
                    self.elem(m, idx)?,
                    self.elem(v, &format!("(({idx}) / {r})"))?,
                );
                Ok(format!("(({m}) * ({v}))"))
            }
            _ => {
                let f =
                    scalar_fn(p, args.len()).ok_or_else(|| format!("primitive {}", p.name()))?;
                let operands = self.operands(args, idx)?;
                Ok(format!("{}({operands})", c_name(f, None)))
            }
        }
    }
}

/// `b / A` with a matrix `A` (a solve, not elementwise division).
pub(crate) fn is_matrix_division(em: &Emitter<'_>, args: &[Expr]) -> Result<bool, Unsupported> {
    Ok(args.len() == 2 && !em.shape(&args[1])?.is_scalar())
}

/// Int arithmetic the interpreter keeps in ints (checked for overflow).
fn is_int_arithmetic(p: Prim) -> bool {
    matches!(
        p,
        Prim::Add | Prim::Sub | Prim::Mul | Prim::Neg | Prim::Div | Prim::IntDiv | Prim::Mod
    )
}
