//! The sweeps of branches and loops: which decisions and overwritten
//! values are saved on stacks, and the loops whose iterations are
//! recomputed instead.

use std::collections::HashSet;

use super::sweep::{Ctx, Sweeps, Transformer};
use crate::mir::visit::has_jump;
use crate::mir::{Expr, ExprKind, LValue, Stmt, StmtKind, VarId};
use crate::span::Span;
use crate::types::{AdLevel, Type};

impl Transformer {
    /// `if`. `once`: the statement is in a top list, so it runs at most
    /// once between its forward and its reverse (the top level of the log
    /// density, a recomputed loop iteration); its branches are then top
    /// lists too — nothing else writes their locals, so the reverse reuses
    /// the forward's values instead of recomputing them (brms' `if
    /// (!prior_only) target += ...` evaluated the whole likelihood twice).
    /// Not for branches with jumps, whose forward may skip the rest.
    pub(super) fn if_sweeps(
        &mut self,
        cond: &Expr,
        then: &[Stmt],
        otherwise: &[Stmt],
        span: Span,
        ctx: Ctx,
        once: bool,
    ) -> Sweeps {
        let stack = self.new_stack();
        let c = self.temp(&Type::Int, "branch");
        let branch_ctx = if once && !then.iter().chain(otherwise).any(has_jump) {
            Ctx {
                top: true,
                zero_locals: true,
                ..ctx
            }
        } else {
            ctx
        };
        let (then_f, then_r) = self.list(then, branch_ctx);
        let (else_f, else_r) = self.list(otherwise, branch_ctx);
        let c_expr = Expr {
            ty: Type::Int,
            ..self.var_expr(c, span)
        };
        let fwd = vec![
            self.let_stmt(c, cond.clone()),
            Stmt {
                kind: StmtKind::Push {
                    stack,
                    value: c_expr.clone(),
                },
                span,
            },
            Stmt {
                kind: StmtKind::If {
                    cond: c_expr.clone(),
                    then: then_f,
                    otherwise: else_f,
                },
                span,
            },
        ];
        let pop = Expr {
            kind: ExprKind::Pop(stack),
            ..c_expr.clone()
        };
        let rev = vec![
            self.let_stmt(c, pop),
            Stmt {
                kind: StmtKind::If {
                    cond: c_expr,
                    then: then_r,
                    otherwise: else_r,
                },
                span,
            },
        ];
        (fwd, rev)
    }

    /// `for`: a body that writes only its own locals is recomputed per
    /// iteration in the reverse (no stack); otherwise the body saves what
    /// it overwrites and the bounds are saved.
    pub(super) fn for_sweeps(
        &mut self,
        s: &Stmt,
        var: VarId,
        lower: &Expr,
        upper: &Expr,
        body: &[Stmt],
        ctx: Ctx,
    ) -> Sweeps {
        let span = s.span;
        let same = |replay_too: bool| {
            if ctx.replay && !replay_too {
                Vec::new()
            } else {
                vec![s.clone()]
            }
        };
        if writes_only_own_locals(body) {
            // Recompute each iteration in the reverse sweep: no stack.
            let (body_f, body_r) = self.list(
                body,
                Ctx {
                    top: true,
                    replay: true,
                    zero_locals: true,
                },
            );
            let mut iteration = body_f;
            iteration.extend(body_r);
            let rev = vec![Stmt {
                kind: StmtKind::ForDown {
                    var,
                    upper: upper.clone(),
                    lower: lower.clone(),
                    body: iteration,
                },
                span,
            }];
            (same(false), rev)
        } else {
            let (lo_stack, hi_stack) = (self.new_stack(), self.new_stack());
            let (lo, hi) = (self.temp(&Type::Int, "lo"), self.temp(&Type::Int, "hi"));
            let (body_f, body_r) = self.list(body, ctx);
            let int = |t: &Self, v: VarId| Expr {
                ty: Type::Int,
                ..t.var_expr(v, span)
            };
            let fwd = vec![
                self.let_stmt(lo, lower.clone()),
                self.let_stmt(hi, upper.clone()),
                Stmt {
                    kind: StmtKind::For {
                        var,
                        lower: int(self, lo),
                        upper: int(self, hi),
                        body: body_f,
                    },
                    span,
                },
                Stmt {
                    kind: StmtKind::Push {
                        stack: lo_stack,
                        value: int(self, lo),
                    },
                    span,
                },
                Stmt {
                    kind: StmtKind::Push {
                        stack: hi_stack,
                        value: int(self, hi),
                    },
                    span,
                },
            ];
            let rev = vec![
                self.let_stmt(
                    hi,
                    Expr {
                        kind: ExprKind::Pop(hi_stack),
                        ..int(self, hi)
                    },
                ),
                self.let_stmt(
                    lo,
                    Expr {
                        kind: ExprKind::Pop(lo_stack),
                        ..int(self, lo)
                    },
                ),
                Stmt {
                    kind: StmtKind::ForDown {
                        var,
                        upper: int(self, hi),
                        lower: int(self, lo),
                        body: body_r,
                    },
                    span,
                },
            ];
            (fwd, rev)
        }
    }

    /// `while`: the trip count is saved; the reverse runs the body's
    /// reverse that many times.
    pub(super) fn while_sweeps(
        &mut self,
        cond: &Expr,
        body: &[Stmt],
        span: Span,
        ctx: Ctx,
    ) -> Sweeps {
        let stack = self.new_stack();
        let (n, k) = (
            self.temp(&Type::Int, "trips"),
            self.temp(&Type::Int, "trip"),
        );
        let (body_f, body_r) = self.list(body, ctx);
        let n_expr = Expr {
            ty: Type::Int,
            ..self.var_expr(n, span)
        };
        let int = |i: i64| Expr {
            kind: ExprKind::Int(i),
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span,
        };
        let mut loop_body = body_f;
        let incr = Expr {
            kind: ExprKind::Prim(crate::mir::Prim::Add, vec![n_expr.clone(), int(1)]),
            ..n_expr.clone()
        };
        loop_body.push(Stmt {
            kind: StmtKind::Assign {
                lhs: LValue {
                    var: n,
                    path: Vec::new(),
                },
                rhs: incr,
            },
            span,
        });
        let fwd = vec![
            self.let_stmt(n, int(0)),
            Stmt {
                kind: StmtKind::While {
                    cond: cond.clone(),
                    body: loop_body,
                },
                span,
            },
            Stmt {
                kind: StmtKind::Push {
                    stack,
                    value: n_expr.clone(),
                },
                span,
            },
        ];
        let rev = vec![
            self.let_stmt(
                n,
                Expr {
                    kind: ExprKind::Pop(stack),
                    ..n_expr.clone()
                },
            ),
            Stmt {
                kind: StmtKind::ForDown {
                    var: k,
                    upper: n_expr,
                    lower: int(1),
                    body: body_r,
                },
                span,
            },
        ];
        (fwd, rev)
    }
}

/// True if `body` assigns only variables it declares itself (and adds to
/// the target), so one iteration can be recomputed from the loop's start
/// state.
pub(super) fn writes_only_own_locals(body: &[Stmt]) -> bool {
    let mut own = HashSet::new();
    collect_decls(body, &mut own);
    fn ok(stmts: &[Stmt], own: &HashSet<VarId>) -> bool {
        stmts.iter().all(|s| match &s.kind {
            StmtKind::Assign { lhs, .. } | StmtKind::AddAssign { lhs, .. } => {
                own.contains(&lhs.var)
            }
            StmtKind::Unpack { .. }
            | StmtKind::Break
            | StmtKind::Continue
            | StmtKind::Return(_)
            | StmtKind::Effect(_) => false,
            StmtKind::If {
                then, otherwise, ..
            } => ok(then, own) && ok(otherwise, own),
            StmtKind::While { body, .. }
            | StmtKind::For { body, .. }
            | StmtKind::ForDown { body, .. } => ok(body, own),
            StmtKind::Block(b) => ok(b, own),
            _ => true,
        })
    }
    ok(body, &own)
}

fn collect_decls(stmts: &[Stmt], out: &mut HashSet<VarId>) {
    for s in stmts {
        match &s.kind {
            StmtKind::Decl { var, .. } | StmtKind::Let { var, .. } => {
                out.insert(*var);
            }
            StmtKind::If {
                then, otherwise, ..
            } => {
                collect_decls(then, out);
                collect_decls(otherwise, out);
            }
            StmtKind::While { body, .. } | StmtKind::Block(body) => collect_decls(body, out),
            StmtKind::For { var, body, .. } | StmtKind::ForDown { var, body, .. } => {
                out.insert(*var);
                collect_decls(body, out);
            }
            _ => {}
        }
    }
}
