//! `uniform_rng` and `normal_rng` from the lane's own Philox stream (kept
//! in the lane state, [`super::super::rng`]), drawing exactly the numbers
//! the CPU draws in the same order: `lo + (hi - lo) * u` and
//! `mu + sigma * z`, element by element, with the interpreter's argument
//! checks (a failed one rejects, as on the CPU).
//!
//! A draw must happen exactly once and in the interpreter's order even
//! though a statement's loop reads its operands once per element: a
//! vectorised draw (or a scalar one outside a conditional expression) is
//! computed before the statement into a local value; a scalar draw inside
//! a branch of a conditional is drawn where the branch is taken, at most
//! once per statement (a flag). A statement (or branch condition) with
//! more than one draw is not generated: the order of two draws in one C
//! expression would be unspecified.

use language::mir::{Expr, ExprKind, Prim};

use super::super::shape::Shape;
use super::super::typing::Unsupported;
use super::{Emitter, FailKind, Materialized, for_each, real_literal};

/// The random draws kernels generate.
pub fn is_device_draw(p: Prim) -> bool {
    matches!(p, Prim::UniformRng | Prim::NormalRng)
}

impl Emitter<'_> {
    /// Element `idx` of a draw `p(args)` whose value has `shape`.
    pub(super) fn draw_elem(
        &mut self,
        p: Prim,
        e: &Expr,
        args: &[Expr],
        idx: &str,
        shape: &Shape,
    ) -> Result<String, Unsupported> {
        let base = self
            .layout
            .rng
            .ok_or_else(|| format!("{} outside a program with a random stream", p.name()))?;
        if args.len() != 2 {
            return Err(format!("{} with {} arguments", p.name(), args.len()));
        }
        self.draws += 1;
        if self.draws > 1 {
            return Err("several random draws in one statement".to_string());
        }
        let (what0, what1) = match p {
            Prim::UniformRng => ("lower bound", "upper bound"),
            _ => ("location", "scale"),
        };
        let name = p.name();
        if shape.is_scalar() && self.in_branch > 0 {
            // Drawn where the branch is taken; the checks must not be
            // hoisted, so the arguments must be valid constants.
            let (a, b) = (literal(&args[0]), literal(&args[1]));
            let (Some(a), Some(b)) = (a, b) else {
                return Err(format!(
                    "{name} with arguments that are not constants inside a conditional expression"
                ));
            };
            let valid = match p {
                Prim::UniformRng => a.is_finite() && b.is_finite() && a < b,
                _ => a.is_finite() && b > 0.0 && b.is_finite(),
            };
            if !valid {
                return Err(format!("{name} with invalid constant arguments"));
            }
            let v = self.fresh("draw");
            let done = self.fresh("drawn");
            self.lines.push(format!(
                "double {v} = 0.0; int {done} = 0; (void){v}; (void){done};"
            ));
            let f = draw_fn(p);
            return Ok(format!(
                "({done} ? {v} : ({done} = 1, {v} = {f}(state, {base}, lane, n_lanes, {}, {})))",
                real_literal(a),
                real_literal(b)
            ));
        }
        if self.in_branch > 0 {
            return Err(format!(
                "a vectorised {name} inside a conditional expression"
            ));
        }
        // Drawn before the statement, element by element in order.
        let n = shape.len();
        let j = self.fresh("j");
        let a = self.elem(&args[0], &j)?;
        let b = self.elem(&args[1], &j)?;
        let bad0 = self.fail(
            FailKind::Rejection,
            format!("{name}: {what0} must be valid"),
        );
        let bad1 = self.fail(
            FailKind::Rejection,
            format!("{name}: {what1} must be valid"),
        );
        let (check, value) = match p {
            Prim::UniformRng => (
                format!("if (!isfinite(a)) {bad0} if (!isfinite(b)) {bad1} if (!(a < b)) {bad0}"),
                "a + (b - a) * bat_rng_uniform(&r)",
            ),
            _ => (
                format!("if (!isfinite(a)) {bad0} if (!(b > 0.0 && isfinite(b))) {bad1}"),
                "a + b * bat_rng_std_normal(&r)",
            ),
        };
        let out = self.fresh("m");
        self.lines.push(format!("double {out}[{}];", n.max(1)));
        let body =
            format!("const double a = {a}; const double b = {b}; {check} {out}[{j}] = {value};");
        self.lines.push(format!(
            "{{ BatRng r = bat_rng_load(state, {base}, lane, n_lanes);\n{}\nbat_rng_store(&r, state, {base}, lane, n_lanes); }}",
            for_each(&j, n, &body)
        ));
        let m = Materialized::Local(out);
        self.materialized
            .push((e as *const Expr as usize, m.clone()));
        let idx = if n == 1 { "0" } else { idx };
        Ok(m.at(idx))
    }
}

/// The value of a literal (possibly negated) number.
fn literal(e: &Expr) -> Option<f64> {
    match &e.kind {
        ExprKind::Int(i) => Some(*i as f64),
        ExprKind::Real(x) => Some(*x),
        ExprKind::Prim(Prim::Neg, args) if args.len() == 1 => literal(&args[0]).map(|x| -x),
        _ => None,
    }
}

fn draw_fn(p: Prim) -> &'static str {
    match p {
        Prim::UniformRng => "bat_draw_uniform",
        _ => "bat_draw_normal",
    }
}
