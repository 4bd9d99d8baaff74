//! Control-flow normalization before differentiation: `break`, `continue`
//! and `return` become int flag variables and guarded blocks, so the
//! sweeps only ever see structured, single-exit control flow.
//!
//! - `break` sets the loop's `broken` flag; a `while` condition becomes
//!   `broken + returned == 0 ? cond : 0` (the condition is not evaluated
//!   after an exit, as in the source), and a `for` body is guarded by
//!   `broken + returned == 0` (the remaining iterations do nothing).
//! - `continue` sets the loop's `continued` flag, reset to 0 at the start
//!   of every iteration.
//! - `return e` binds the function's return-value variable (a `Let`,
//!   executed at most once per call) and sets `returned`.
//! - The statements after one that may set a flag are wrapped in
//!   `if (flags == 0) { ... }`, so nothing runs after an exit.
//!
//! Tuple unpacking `(a, b) = e` is split here too, into a tuple temporary
//! and one assignment per component.
//!
//! Flags are ints: they carry no adjoint, and the sweeps save them on
//! stacks like any other overwritten variable.

use super::vjp::int;
use crate::mir::visit::has_jump;
use crate::mir::{Expr, ExprKind, LValue, Origin, Prim, SizedType, Stmt, StmtKind, VarId, VarInfo};
use crate::span::Span;
use crate::types::{AdLevel, Type};

use super::sweep::Transformer;

/// The flags of the innermost enclosing loop.
#[derive(Clone, Copy, Default)]
struct LoopFlags {
    broken: Option<VarId>,
    continued: Option<VarId>,
}

/// A function's return flag and value variable (`None` for `void`).
#[derive(Clone, Copy)]
pub(super) struct Returns {
    pub flag: VarId,
    pub value: Option<VarId>,
}

/// Which exits a statement may take out of itself.
#[derive(Clone, Copy, Default)]
struct Escapes {
    brk: bool,
    cont: bool,
    ret: bool,
}

impl Escapes {
    fn any(self) -> bool {
        self.brk || self.cont || self.ret
    }
    fn union(self, o: Escapes) -> Escapes {
        Escapes {
            brk: self.brk || o.brk,
            cont: self.cont || o.cont,
            ret: self.ret || o.ret,
        }
    }
}

fn escapes_list(stmts: &[Stmt]) -> Escapes {
    stmts
        .iter()
        .fold(Escapes::default(), |acc, s| acc.union(escapes(s)))
}

fn escapes(s: &Stmt) -> Escapes {
    match &s.kind {
        StmtKind::Break => Escapes {
            brk: true,
            ..Default::default()
        },
        StmtKind::Continue => Escapes {
            cont: true,
            ..Default::default()
        },
        StmtKind::Return(_) => Escapes {
            ret: true,
            ..Default::default()
        },
        StmtKind::If {
            then, otherwise, ..
        } => escapes_list(then).union(escapes_list(otherwise)),
        StmtKind::Block(b) => escapes_list(b),
        StmtKind::While { body, .. }
        | StmtKind::For { body, .. }
        | StmtKind::ForDown { body, .. } => Escapes {
            ret: escapes_list(body).ret,
            ..Default::default()
        },
        _ => Escapes::default(),
    }
}

fn int_var(v: VarId, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Var(v),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

fn set_flag(v: VarId, value: i64, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Assign {
            lhs: LValue {
                var: v,
                path: Vec::new(),
            },
            rhs: int(value, span),
        },
        span,
    }
}

fn declare_flag(v: VarId, span: Span) -> Stmt {
    Stmt {
        kind: StmtKind::Decl {
            var: v,
            ty: SizedType::Int,
            init: Some(int(0, span)),
        },
        span,
    }
}

/// `f1 + f2 + ... == 0`: no exit taken.
fn none_set(flags: &[VarId], span: Span) -> Expr {
    let mut sum = int_var(flags[0], span);
    for &f in &flags[1..] {
        sum = Expr {
            kind: ExprKind::Prim(Prim::Add, vec![sum, int_var(f, span)]),
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span,
        };
    }
    Expr {
        kind: ExprKind::Prim(Prim::Eq, vec![sum, int(0, span)]),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

impl Transformer {
    pub(super) fn flag(&mut self, hint: &str) -> VarId {
        let id = VarId(self.program.vars.len() as u32);
        self.program.vars.push(VarInfo {
            name: format!("{hint}__{}", id.0),
            ty: Type::Int,
            origin: Origin::Local,
            span: Span::default(),
        });
        id
    }

    /// The log density's statements without `break` / `continue`.
    pub(super) fn normalize_block(&mut self, stmts: &[Stmt]) -> Vec<Stmt> {
        let stmts = self.split_unpacks(stmts);
        if !stmts.iter().any(has_jump) {
            return stmts;
        }
        self.norm_list(&stmts, LoopFlags::default(), None)
    }

    /// `(a, b) = e` becomes `let u = e; a = u.1; b = u.2;` (the whole
    /// right-hand side is evaluated before any assignment, as in Stan).
    fn split_unpacks(&mut self, stmts: &[Stmt]) -> Vec<Stmt> {
        let mut out = Vec::new();
        for s in stmts {
            let span = s.span;
            let kind = match &s.kind {
                StmtKind::Unpack { lhs, rhs } => {
                    let u = self.temp(&rhs.ty, "unpacked");
                    out.push(self.let_stmt(u, rhs.clone()));
                    let parts = match &rhs.ty {
                        Type::Tuple(ts) => ts.clone(),
                        _ => Vec::new(),
                    };
                    for (k, (lv, ty)) in lhs.iter().zip(parts).enumerate() {
                        let base = Expr {
                            ad: rhs.ad,
                            ..self.var_expr(u, span)
                        };
                        let rhs = Expr {
                            kind: ExprKind::TupleProj(Box::new(base), k + 1),
                            ty,
                            ad: rhs.ad,
                            span,
                        };
                        out.push(Stmt {
                            kind: StmtKind::Assign {
                                lhs: lv.clone(),
                                rhs,
                            },
                            span,
                        });
                    }
                    continue;
                }
                StmtKind::If {
                    cond,
                    then,
                    otherwise,
                } => StmtKind::If {
                    cond: cond.clone(),
                    then: self.split_unpacks(then),
                    otherwise: self.split_unpacks(otherwise),
                },
                StmtKind::While { cond, body } => StmtKind::While {
                    cond: cond.clone(),
                    body: self.split_unpacks(body),
                },
                StmtKind::For {
                    var,
                    lower,
                    upper,
                    body,
                } => StmtKind::For {
                    var: *var,
                    lower: lower.clone(),
                    upper: upper.clone(),
                    body: self.split_unpacks(body),
                },
                StmtKind::Block(b) => StmtKind::Block(self.split_unpacks(b)),
                other => other.clone(),
            };
            out.push(Stmt { kind, span });
        }
        out
    }

    /// A function body without jumps: the flag declaration, then the body
    /// whose `return e` binds `returns.value`.
    pub(super) fn normalize_function(&mut self, body: &[Stmt], returns: Returns) -> Vec<Stmt> {
        let body = self.split_unpacks(body);
        let mut out = vec![declare_flag(returns.flag, Span::default())];
        out.extend(self.norm_list(&body, LoopFlags::default(), Some(returns)));
        out
    }

    fn norm_list(&mut self, stmts: &[Stmt], lf: LoopFlags, ret: Option<Returns>) -> Vec<Stmt> {
        let mut out = Vec::new();
        for (i, s) in stmts.iter().enumerate() {
            let esc = escapes(s);
            out.extend(self.norm_stmt(s, lf, ret));
            let rest = &stmts[i + 1..];
            if esc.any() && !rest.is_empty() {
                let mut flags = Vec::new();
                if esc.brk {
                    flags.extend(lf.broken);
                }
                if esc.cont {
                    flags.extend(lf.continued);
                }
                if esc.ret {
                    flags.extend(ret.map(|r| r.flag));
                }
                let rest = self.norm_list(rest, lf, ret);
                if flags.is_empty() {
                    out.extend(rest);
                } else {
                    let span = rest.first().map_or(s.span, |r| r.span);
                    out.push(Stmt {
                        kind: StmtKind::If {
                            cond: none_set(&flags, span),
                            then: rest,
                            otherwise: Vec::new(),
                        },
                        span,
                    });
                }
                return out;
            }
        }
        out
    }

    fn norm_stmt(&mut self, s: &Stmt, lf: LoopFlags, ret: Option<Returns>) -> Vec<Stmt> {
        let span = s.span;
        let with = |kind: StmtKind| vec![Stmt { kind, span }];
        match &s.kind {
            StmtKind::Break => match lf.broken {
                Some(f) => vec![set_flag(f, 1, span)],
                None => vec![s.clone()],
            },
            StmtKind::Continue => match lf.continued {
                Some(f) => vec![set_flag(f, 1, span)],
                None => vec![s.clone()],
            },
            StmtKind::Return(e) => match ret {
                Some(r) => {
                    let mut out = Vec::new();
                    if let (Some(v), Some(e)) = (r.value, e) {
                        out.push(Stmt {
                            kind: StmtKind::Let {
                                var: v,
                                value: e.clone(),
                            },
                            span,
                        });
                    }
                    out.push(set_flag(r.flag, 1, span));
                    out
                }
                None => vec![s.clone()],
            },
            StmtKind::If {
                cond,
                then,
                otherwise,
            } => with(StmtKind::If {
                cond: cond.clone(),
                then: self.norm_list(then, lf, ret),
                otherwise: self.norm_list(otherwise, lf, ret),
            }),
            StmtKind::Block(b) => with(StmtKind::Block(self.norm_list(b, lf, ret))),
            StmtKind::While { cond, body } => {
                let (pre, inner, exit) = self.loop_flags(body, ret, span);
                let body = self.loop_body(body, inner, ret, span);
                let cond = match exit {
                    Some(flags) => {
                        let zero = Expr {
                            kind: if cond.ty == Type::Int {
                                ExprKind::Int(0)
                            } else {
                                ExprKind::Real(0.0)
                            },
                            ad: AdLevel::DataOnly,
                            ..cond.clone()
                        };
                        Expr {
                            kind: ExprKind::Cond(
                                Box::new(none_set(&flags, span)),
                                Box::new(cond.clone()),
                                Box::new(zero),
                            ),
                            ..cond.clone()
                        }
                    }
                    None => cond.clone(),
                };
                let mut out = pre;
                out.push(Stmt {
                    kind: StmtKind::While { cond, body },
                    span,
                });
                out
            }
            StmtKind::For {
                var,
                lower,
                upper,
                body,
            } => {
                let (pre, inner, exit) = self.loop_flags(body, ret, span);
                let mut body = self.loop_body(body, inner, ret, span);
                if let Some(flags) = exit {
                    body = vec![Stmt {
                        kind: StmtKind::If {
                            cond: none_set(&flags, span),
                            then: body,
                            otherwise: Vec::new(),
                        },
                        span,
                    }];
                }
                let mut out = pre;
                out.push(Stmt {
                    kind: StmtKind::For {
                        var: *var,
                        lower: lower.clone(),
                        upper: upper.clone(),
                        body,
                    },
                    span,
                });
                out
            }
            _ => vec![s.clone()],
        }
    }

    /// The flag declarations before a loop, the loop's own flags, and the
    /// flags that end the loop (`None` if nothing can).
    fn loop_flags(
        &mut self,
        body: &[Stmt],
        ret: Option<Returns>,
        span: Span,
    ) -> (Vec<Stmt>, LoopFlags, Option<Vec<VarId>>) {
        let esc = escapes_list(body);
        let mut pre = Vec::new();
        let mut lf = LoopFlags::default();
        if esc.brk {
            let f = self.flag("broken");
            pre.push(declare_flag(f, span));
            lf.broken = Some(f);
        }
        if esc.cont {
            let f = self.flag("continued");
            pre.push(declare_flag(f, span));
            lf.continued = Some(f);
        }
        let mut exit: Vec<VarId> = lf.broken.into_iter().collect();
        if esc.ret {
            exit.extend(ret.map(|r| r.flag));
        }
        (pre, lf, (!exit.is_empty()).then_some(exit))
    }

    fn loop_body(
        &mut self,
        body: &[Stmt],
        lf: LoopFlags,
        ret: Option<Returns>,
        span: Span,
    ) -> Vec<Stmt> {
        let mut out: Vec<Stmt> = lf
            .continued
            .map(|c| set_flag(c, 0, span))
            .into_iter()
            .collect();
        out.extend(self.norm_list(body, lf, ret));
        out
    }
}
