//! The parameter transform (`read_param`) and its reverse (`param_adjoint`)
//! for the scalarwise transforms — identity, lower, upper, lower and upper
//! bounds, offset/multiplier — with bat-math's formulas (the device helpers
//! `bat_*_constrain` in the prelude). Bounds may be scalars or containers
//! of the parameter's size, data or parameters (whose adjoints are
//! accumulated).

use language::mir::{Expr, Transform, VarId};

use super::super::layout::{JACOBIAN_SLOT, Place, TARGET_SLOT};
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
            "identity" => format!("y = x;"),
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
        var_adj: VarId,
        lp_adj: VarId,
        transform: &Transform,
        arg_adjs: &[Option<VarId>],
    ) -> Result<(), Unsupported> {
        let (theta, gradient, n_free, n) = self.param_slots(param)?;
        let (kind, args) = scalarwise(transform)?;
        if n_free != n {
            return Err("a parameter whose transform changes its size".to_string());
        }
        let (y_bar, y_shape) = self.state_place(var_adj)?;
        if y_shape.len() != n {
            return Err(format!("`{}` has the wrong size", self.var_name(var_adj)));
        }
        let lp = match self.layout.place(lp_adj) {
            Some(Place::State { base, len: 1 }) => format!("S({base})"),
            Some(Place::Data { base, len: 1 }) => format!("D({base})"),
            _ => return Err("the log-Jacobian's adjoint is not a real".to_string()),
        };
        let lp = format!("(S({JACOBIAN_SLOT}) != 0.0 ? {lp} : 0.0)");
        let e = self.fresh("e");
        let a = self.transform_args(kind, &args, n, &e)?;
        // (x̄, first argument's adjoint, second's) of each element.
        let call = match kind {
            "identity" => "xb = yb;".to_string(),
            "lb" => format!("xb = bat_lb_constrain_vjp(x, {}, yb, lp, &a0);", a[0]),
            "ub" => format!("xb = bat_ub_constrain_vjp(x, {}, yb, lp, &a0);", a[0]),
            "lub" => format!(
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
