//! The parameter transform (`read_param`) and its reverse (`param_adjoint`)
//! for the scalarwise transforms — identity, lower, upper, lower and upper
//! bounds, offset/multiplier — with bat-math's formulas (the device helpers
//! `bat_*_constrain` in the prelude). Bounds may be scalars or containers
//! of the parameter's size, data or parameters (whose adjoints are
//! accumulated).

use language::mir::{Expr, Transform, VarId};

use super::super::layout::{JACOBIAN_SLOT, Place, TARGET_SLOT};
use super::super::shape::{Inner, Shape};
use super::super::typing::Unsupported;
use super::{Emitter, FailKind, for_each};

/// The scalarwise transforms and their (up to two) arguments.
fn scalarwise(t: &Transform) -> Result<(&'static str, Vec<&Expr>), Unsupported> {
    Ok(match t {
        Transform::Identity => ("identity", vec![]),
        Transform::Lower(lb) => ("lb", vec![lb]),
        Transform::Upper(ub) => ("ub", vec![ub]),
        Transform::LowerUpper(lb, ub) => ("lub", vec![lb, ub]),
        Transform::Offset(o) => ("offset", vec![o]),
        Transform::Multiplier(m) => ("multiplier", vec![m]),
        Transform::OffsetMultiplier(o, m) => ("affine", vec![o, m]),
        Transform::Tuple(_) => return Err("constraints on a tuple's components".to_string()),
        other => return Err(format!("the {other:?} parameter transform")),
    })
}

impl Emitter<'_> {
    fn param_slots(&self, param: usize) -> Result<(usize, usize, usize, usize), Unsupported> {
        let slots = self
            .layout
            .params
            .as_ref()
            .ok_or("the parameter transform outside a gradient program")?;
        let p = slots
            .params
            .get(param)
            .ok_or_else(|| format!("no parameter {param}"))?;
        Ok((
            slots.theta + p.offset,
            slots.gradient + p.offset,
            p.unconstrained_len,
            p.shape.num_reals(),
        ))
    }

    /// The transform's arguments at element `e` of the parameter, in the
    /// order (first, second) of the scalarwise rule: offset-only has
    /// multiplier 1, multiplier-only has offset 0.
    fn transform_args(
        &mut self,
        kind: &str,
        args: &[&Expr],
        n: usize,
        e: &str,
    ) -> Result<Vec<String>, Unsupported> {
        let mut out = Vec::new();
        for a in args {
            let len = self.shape(a)?.len();
            if len != 1 && len != n {
                return Err(format!(
                    "a transform argument of {len} values for a parameter of {n}"
                ));
            }
            out.push(self.elem(a, e)?);
        }
        Ok(match kind {
            "offset" => vec![out[0].clone(), "1.0".to_string()],
            "multiplier" => vec!["0.0".to_string(), out[0].clone()],
            _ => out,
        })
    }

    pub(super) fn read_param(
        &mut self,
        param: usize,
        var: VarId,
        transform: &Transform,
    ) -> Result<(), Unsupported> {
        if self.read_structured(param, var, transform)? {
            return Ok(());
        }
        let (theta, _, n_free, n) = self.param_slots(param)?;
        let (kind, args) = scalarwise(transform)?;
        if n_free != n {
            return Err("a parameter whose transform changes its size".to_string());
        }
        let (base, shape) = self.state_place(var)?;
        if shape.len() != n {
            return Err(format!("`{}` has the wrong size", self.var_name(var)));
        }
        let e = self.fresh("e");
        let a = self.transform_args(kind, &args, n, &e)?;
        // Stan's checks of the bounds first (a rejection), as the interpreter.
        let check = match kind {
            "lub" => Some((
                format!("!({} < {})", a[0], a[1]),
                "lower bound is not less than upper bound",
            )),
            "multiplier" | "affine" => Some((
                format!("!({m} > 0.0 && isfinite({m}))", m = a[1]),
                "multiplier must be positive finite",
            )),
            _ => None,
        };
        if let Some((bad, what)) = check {
            let fail = self.fail(FailKind::Rejection, what.to_string());
            self.lines
                .push(for_each(&e, n, &format!("if ({bad}) {fail}")));
        }
        let lj = self.fresh("logj");
        let call = match kind {
            "identity" => "y = x;".to_string(),
            "lb" => format!("y = bat_lb_constrain(x, {}, &l);", a[0]),
            "ub" => format!("y = bat_ub_constrain(x, {}, &l);", a[0]),
            "lub" => format!("y = bat_lub_constrain(x, {}, {}, &l);", a[0], a[1]),
            _ => format!("y = bat_affine_constrain(x, {}, {}, &l);", a[0], a[1]),
        };
        self.lines.push(format!(
            "double {lj} = 0.0;\n{}\nif (S({JACOBIAN_SLOT}) != 0.0) S({TARGET_SLOT}) += {lj};",
            for_each(
                &e,
                n,
                &format!(
                    "const double x = S({theta} + {e}); double y, l = 0.0; {call} S({base} + {e}) = y; {lj} += l;"
                )
            )
        ));
        Ok(())
    }

    pub(super) fn param_adjoint(
        &mut self,
        param: usize,
        var: VarId,
        var_adj: VarId,
        lp_adj: VarId,
        transform: &Transform,
        arg_adjs: &[Option<VarId>],
    ) -> Result<(), Unsupported> {
        let lp = match self.layout.place(lp_adj) {
            Some(Place::State { base, len: 1 }) => format!("S({base})"),
            Some(Place::Data { base, len: 1 }) => format!("D({base})"),
            _ => return Err("the log-Jacobian's adjoint is not a real".to_string()),
        };
        let lp = format!("(S({JACOBIAN_SLOT}) != 0.0 ? {lp} : 0.0)");
        if self.adjoint_structured(param, var_adj, &lp, transform)? {
            return Ok(());
        }
        let (theta, gradient, n_free, n) = self.param_slots(param)?;
        let (kind, args) = scalarwise(transform)?;
        if n_free != n {
            return Err("a parameter whose transform changes its size".to_string());
        }
        let (y_bar, y_shape) = self.state_place(var_adj)?;
        if y_shape.len() != n {
            return Err(format!("`{}` has the wrong size", self.var_name(var_adj)));
        }
        let e = self.fresh("e");
        let a = self.transform_args(kind, &args, n, &e)?;
        // The constrained value `read_param` stored, element for element
        // (parameters are never assigned), when it is in the lane state.
        let y = match self.state_place(var) {
            Ok((base, shape)) if shape.len() == n => Some(format!("S({base} + {e})")),
            _ => None,
        };
        // (x̄, first argument's adjoint, second's) of each element.
        let call = match (kind, y) {
            ("identity", _) => "xb = yb;".to_string(),
            ("lb", Some(y)) => format!(
                "xb = bat_lb_constrain_vjp_at(x, {y}, {}, yb, lp, &a0);",
                a[0]
            ),
            ("ub", Some(y)) => format!(
                "xb = bat_ub_constrain_vjp_at(x, {y}, {}, yb, lp, &a0);",
                a[0]
            ),
            ("lb", None) => format!("xb = bat_lb_constrain_vjp(x, {}, yb, lp, &a0);", a[0]),
            ("ub", None) => format!("xb = bat_ub_constrain_vjp(x, {}, yb, lp, &a0);", a[0]),
            ("lub", _) => format!(
                "xb = bat_lub_constrain_vjp(x, {}, {}, yb, lp, &a0, &a1);",
                a[0], a[1]
            ),
            _ => format!(
                "xb = bat_affine_constrain_vjp(x, {}, {}, yb, lp, &a0, &a1);",
                a[0], a[1]
            ),
        };
        // Which rule argument each transform argument's adjoint takes.
        let rule_slots: &[usize] = match kind {
            "multiplier" => &[1],
            _ => &[0, 1],
        };
        let mut accumulate = Vec::new();
        let mut sums = Vec::new();
        for (k, adj) in arg_adjs.iter().enumerate() {
            let Some(adj) = adj else { continue };
            let slot = rule_slots
                .get(k)
                .ok_or("more transform argument adjoints than arguments")?;
            let (base, shape) = self.state_place(*adj)?;
            let a = if *slot == 0 { "a0" } else { "a1" };
            if shape.len() == 1 {
                // A scalar argument: the sum of its shares, then added.
                let sum = self.fresh("share");
                sums.push((sum.clone(), base));
                accumulate.push(format!("{sum} += {a};"));
            } else if shape.len() == n {
                accumulate.push(format!("S({base} + {e}) += {a};"));
            } else {
                return Err("a transform argument adjoint of the wrong size".to_string());
            }
        }
        let mut code = String::from("{\n");
        for (sum, _) in &sums {
            code.push_str(&format!("double {sum} = 0.0;\n"));
        }
        code.push_str(&format!("const double lp = {lp};\n"));
        code.push_str(&for_each(
            &e,
            n,
            &format!(
                "const double x = S({theta} + {e}); const double yb = S({y_bar} + {e}); double xb, a0 = 0.0, a1 = 0.0; {call} (void)a0; (void)a1; S({gradient} + {e}) += xb; {}",
                accumulate.join(" ")
            ),
        ));
        for (sum, base) in &sums {
            code.push_str(&format!("\nS({base}) += {sum};"));
        }
        code.push_str("\n}");
        self.lines.push(code);
        Ok(())
    }
}

/// The structured transforms of vectors (each vector leaf of an array on
/// its own, in Stan's order), with bat-math's formulas.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Structured {
    Ordered,
    PositiveOrdered,
    Simplex,
    /// `cholesky_factor_corr[K]` (matrix leaves).
    CholeskyCorr,
}

impl Structured {
    fn of(t: &Transform) -> Option<Structured> {
        match t {
            Transform::Ordered => Some(Structured::Ordered),
            Transform::PositiveOrdered => Some(Structured::PositiveOrdered),
            Transform::Simplex => Some(Structured::Simplex),
            Transform::CholeskyFactorCorr => Some(Structured::CholeskyCorr),
            _ => None,
        }
    }

    /// Unconstrained values of a leaf of `k` values.
    fn free_len(self, k: usize) -> usize {
        match self {
            Structured::Simplex => k.saturating_sub(1),
            // k is the number of values, K × K.
            Structured::CholeskyCorr => {
                let n = k.isqrt();
                n * n.saturating_sub(1) / 2
            }
            _ => k,
        }
    }
}

/// (leaves, values per leaf) of a parameter of `shape`: arrays of vectors
/// (square matrices for Cholesky factors).
fn leaves(kind: Structured, shape: &Shape) -> Result<(usize, usize), Unsupported> {
    match (kind, shape.inner) {
        (Structured::CholeskyCorr, Inner::Matrix(r, c)) if r == c => {
            if 2 * r * r > super::LOCAL_LIMIT {
                return Err(format!("a Cholesky factor of size {r}"));
            }
            Ok((shape.arrays.iter().product(), r * r))
        }
        (Structured::CholeskyCorr, _) => Err(format!("a Cholesky factor of a {shape}")),
        (_, Inner::Vector(k)) => Ok((shape.arrays.iter().product(), k)),
        _ => Err(format!("a structured transform of a {shape}")),
    }
}

/// The Cholesky factor of a correlation matrix (K × K, column-major) from
/// the row-major partial correlations `tanh(x(p))` (bat-math's
/// `cholesky_from_partials`) into `l(i)`.
fn cholesky_from_partials_code(
    n: usize,
    x: &dyn Fn(&str) -> String,
    l: &dyn Fn(&str) -> String,
) -> String {
    format!(
        "for (int i = 0; i < {nn}; ++i) {l0} = 0.0;
{first_one}
for (int i = 1; i < {n}; ++i) {{
    const double first = tanh({x_i0});
    {l_i0} = first;
    double sum_sqs = first * first;
    for (int j = 1; j < i; ++j) {{ const double v = tanh({x_ij}) * sqrt(1.0 - sum_sqs); {l_ij} = v; sum_sqs += v * v; }}
    {l_ii} = sqrt(1.0 - sum_sqs);
}}",
        nn = n * n,
        l0 = l("i"),
        first_one = if n > 0 {
            format!("{} = 1.0;", l("0"))
        } else {
            String::new()
        },
        x_i0 = x("(i * (i - 1) / 2)"),
        l_i0 = l("i"),
        x_ij = x("(i * (i - 1) / 2 + j)"),
        l_ij = l(&format!("(j * {n} + i)")),
        l_ii = l(&format!("(i * {n} + i)")),
    )
}

/// bat-math's `log_sech2(x)` as C.
fn log_sech2(x: &str) -> String {
    format!("(2.0 * (BAT_LN_2 - fabs({x}) - log1p(exp(-2.0 * fabs({x})))))")
}

/// `sum_to_zero_constrain` of the `k - 1` values at `x(i)` into the `k`
/// slots `y(i)` (bat-math's loop, `y` zeroed first).
fn sum_to_zero_code(k: usize, x: &dyn Fn(&str) -> String, y: &dyn Fn(&str) -> String) -> String {
    format!(
        "for (int i = 0; i < {k}; ++i) {y0} = 0.0;
double sum_w = 0.0;
for (int i = {last}; i >= 1; --i) {{ const double nf = (double)i; const double w = {xi} / sqrt(nf * (nf + 1.0)); sum_w += w; {yim1} += sum_w; {yi} -= w * nf; }}",
        y0 = y("i"),
        last = k as i64 - 1,
        xi = x("(i - 1)"),
        yim1 = y("(i - 1)"),
        yi = y("i"),
    )
}

/// `y(i) = softmax(y)` in place with bat-math's `log_sum_exp`; declares
/// `lse`.
fn softmax_in_place_code(k: usize, y: &dyn Fn(&str) -> String) -> String {
    format!(
        "double mx = -BAT_INF;
for (int i = 0; i < {k}; ++i) mx = fmax(mx, {yi});
double lse = mx;
if (!isinf(mx)) {{ double total = 0.0; for (int i = 0; i < {k}; ++i) total += exp({yi} - mx); lse = mx + log(total); }}
for (int i = 0; i < {k}; ++i) {yi} = exp({yi} - lse);",
        yi = y("i"),
    )
}

impl Emitter<'_> {
    pub(super) fn read_structured(
        &mut self,
        param: usize,
        var: VarId,
        transform: &Transform,
    ) -> Result<bool, Unsupported> {
        let Some(kind) = Structured::of(transform) else {
            return Ok(false);
        };
        let (theta, _, n_free, _) = self.param_slots(param)?;
        let (base, shape) = self.state_place(var)?;
        let (leaves, k) = leaves(kind, &shape)?;
        let kf = kind.free_len(k);
        if n_free != leaves * kf {
            return Err("a parameter of an unexpected unconstrained size".to_string());
        }
        let x = |i: &str| format!("S({theta} + l * {kf} + {i})");
        let y = |i: &str| format!("S({base} + l * {k} + {i})");
        let leaf = match kind {
            Structured::Ordered => format!(
                "double prev = 0.0;
for (int i = 0; i < {k}; ++i) {{ const double x = {xi}; double v; if (i == 0) v = x; else {{ v = prev + exp(x); lj += x; }} {yi} = v; prev = v; }}",
                xi = x("i"),
                yi = y("i")
            ),
            Structured::PositiveOrdered => format!(
                "double running = 0.0;
for (int i = 0; i < {k}; ++i) {{ const double x = {xi}; running += exp(x); {yi} = running; lj += x; }}",
                xi = x("i"),
                yi = y("i")
            ),
            Structured::Simplex if k == 0 => String::new(),
            Structured::Simplex => format!(
                "{}\n{}\nlj = -{k}.0 * lse + 0.5 * log({k}.0);",
                sum_to_zero_code(k, &x, &y),
                softmax_in_place_code(k, &y)
            ),
            Structured::CholeskyCorr => {
                let n = k.isqrt();
                format!(
                    "for (int i = 1; i < {n}; ++i) for (int j = 0; j < i; ++j) {{ const double xv = {xij}; lj += (1.0 + 0.5 * (double)(i - 1 - j)) * {sech}; }}
{}",
                    cholesky_from_partials_code(n, &x, &y),
                    xij = x("(i * (i - 1) / 2 + j)"),
                    sech = log_sech2("xv"),
                )
            }
        };
        self.lines.push(format!(
            "{{ double logj = 0.0;
#pragma unroll 1
for (int l = 0; l < {leaves}; ++l) {{ double lj = 0.0;
{leaf}
logj += lj; }}
if (S({JACOBIAN_SLOT}) != 0.0) S({TARGET_SLOT}) += logj; }}"
        ));
        Ok(true)
    }

    pub(super) fn adjoint_structured(
        &mut self,
        param: usize,
        var_adj: VarId,
        lp: &str,
        transform: &Transform,
    ) -> Result<bool, Unsupported> {
        let Some(kind) = Structured::of(transform) else {
            return Ok(false);
        };
        let (theta, gradient, n_free, _) = self.param_slots(param)?;
        let (y_bar, shape) = self.state_place(var_adj)?;
        let (leaves, k) = leaves(kind, &shape)?;
        let kf = kind.free_len(k);
        if n_free != leaves * kf {
            return Err("a parameter of an unexpected unconstrained size".to_string());
        }
        let x = |i: &str| format!("S({theta} + l * {kf} + {i})");
        let yb = |i: &str| format!("S({y_bar} + l * {k} + {i})");
        let g = |i: &str| format!("S({gradient} + l * {kf} + {i})");
        let leaf = match kind {
            Structured::Ordered | Structured::PositiveOrdered => format!(
                "double suffix = 0.0;
for (int i = {last}; i >= 0; --i) {{ suffix += {ybi}; {gi} += {xb}; }}",
                last = k as i64 - 1,
                ybi = yb("i"),
                gi = g("i"),
                xb = if kind == Structured::Ordered {
                    format!("(i == 0 ? suffix : suffix * exp({}) + lp)", x("i"))
                } else {
                    format!("suffix * exp({}) + lp", x("i"))
                }
            ),
            Structured::CholeskyCorr => {
                let n = k.isqrt();
                let local = |i: &str| format!("lv[{i}]");
                format!(
                    "double lv[{nn}]; double zb[{nz}];
{}
for (int i = 1; i < {n}; ++i) {{
    double suffix = {lb_ii} * lv[i * {n} + i];
    for (int j = i - 1; j >= 0; --j) {{
        const double zj = tanh({x_ij});
        const double q = 1.0 - zj * zj;
        double sum_sqs = 0.0;
        for (int m = 0; m < j; ++m) sum_sqs += lv[m * {n} + i] * lv[m * {n} + i];
        const double scale = sqrt(1.0 - sum_sqs);
        zb[i * (i - 1) / 2 + j] = {lb_ij} * scale - zj / q * suffix;
        suffix += {lb_ij} * lv[j * {n} + i];
    }}
}}
for (int i = 1; i < {n}; ++i) for (int j = 0; j < i; ++j) {{
    const int p = i * (i - 1) / 2 + j;
    const double xv = {x_p};
    {g_p} += zb[p] * exp({sech}) - 2.0 * tanh(xv) * (1.0 + 0.5 * (double)(i - 1 - j)) * lp;
}}",
                    cholesky_from_partials_code(n, &x, &local),
                    nn = n * n,
                    nz = (n * n.saturating_sub(1) / 2).max(1),
                    lb_ii = yb(&format!("(i * {n} + i)")),
                    lb_ij = yb(&format!("(j * {n} + i)")),
                    x_ij = x("(i * (i - 1) / 2 + j)"),
                    x_p = x("p"),
                    g_p = g("p"),
                    sech = log_sech2("xv"),
                )
            }
            Structured::Simplex if k == 0 => String::new(),
            Structured::Simplex => {
                if 2 * k > super::LOCAL_LIMIT {
                    return Err(format!("the adjoint of a simplex of {k} values"));
                }
                let local = |i: &str| format!("yv[{i}]");
                format!(
                    "double yv[{k}]; double zb[{k}];
{}
{}
double dot = 0.0;
for (int i = 0; i < {k}; ++i) dot += yv[i] * {ybi};
for (int i = 0; i < {k}; ++i) zb[i] = yv[i] * ({ybi} - dot) - lp * {k}.0 * yv[i];
double prefix = 0.0;
for (int j = 1; j < {k}; ++j) {{ prefix += zb[j - 1]; const double jf = (double)j; {gj} += (prefix - jf * zb[j]) / sqrt(jf * (jf + 1.0)); }}",
                    sum_to_zero_code(k, &x, &local),
                    softmax_in_place_code(k, &local),
                    ybi = yb("i"),
                    gj = g("(j - 1)"),
                )
            }
        };
        self.lines.push(format!(
            "{{ const double lp = {lp};
#pragma unroll 1
for (int l = 0; l < {leaves}; ++l) {{
{leaf}
}} }}"
        ));
        Ok(true)
    }

    /// Stan's check of a declared constraint on a value the program
    /// computed (a transformed parameter): a violation rejects the lane.
    pub(super) fn check_constraint(
        &mut self,
        var: VarId,
        transform: &Transform,
    ) -> Result<(), Unsupported> {
        let (base, shape) = self.state_place(var)?;
        let n = shape.len();
        let name = self.var_name(var);
        if let Some(kind) = Structured::of(transform) {
            let (leaves, k) = leaves(kind, &shape)?;
            let y = |i: &str| format!("S({base} + l * {k} + {i})");
            let fail = self.fail(
                FailKind::Constraint,
                format!("`{name}` is not a valid {transform:?}"),
            );
            let test = match kind {
                Structured::CholeskyCorr => {
                    return Err("the check of a computed Cholesky factor".to_string());
                }
                Structured::Simplex => format!(
                    "if ({k} == 0) {fail}
double total = 0.0;
for (int i = 0; i < {k}; ++i) {{ if (!isfinite({yi})) {fail} total += {yi}; }}
if (fabs(total - 1.0) > 1e-8) {fail}
for (int i = 0; i < {k}; ++i) if ({yi} < 0.0) {fail}",
                    yi = y("i")
                ),
                Structured::Ordered | Structured::PositiveOrdered => format!(
                    "for (int i = 0; i < {k}; ++i) if (!isfinite({yi})) {fail}
{first}for (int i = 1; i < {k}; ++i) if (!({yi} > {yprev})) {fail}",
                    yi = y("i"),
                    yprev = y("(i - 1)"),
                    first = if kind == Structured::PositiveOrdered && k > 0 {
                        format!("if ({} < 0.0) {fail}\n", y("0"))
                    } else {
                        String::new()
                    }
                ),
            };
            self.lines.push(format!(
                "#pragma unroll 1\nfor (int l = 0; l < {leaves}; ++l) {{\n{test}\n}}"
            ));
            return Ok(());
        }
        let (kind, args) = scalarwise(transform)?;
        let e = self.fresh("e");
        let a = self.transform_args(kind, &args, n, &e)?;
        let (lb, ub) = match kind {
            "lb" => (a[0].clone(), "BAT_INF".to_string()),
            "ub" => ("(-BAT_INF)".to_string(), a[0].clone()),
            "lub" => (a[0].clone(), a[1].clone()),
            _ => return Ok(()),
        };
        let fail = self.fail(
            FailKind::Constraint,
            format!("`{name}` violates its declared bounds"),
        );
        self.lines.push(for_each(
            &e,
            n,
            &format!("const double y = S({base} + {e}); if (!(y >= {lb} && y <= {ub})) {fail}"),
        ));
        Ok(())
    }
}
