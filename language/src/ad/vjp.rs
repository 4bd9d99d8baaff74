//! Derivative rules: for `t = op(atoms)` and the adjoint `t̄`, the
//! statements adding each operand's share of `t̄` into its adjoint
//! (vector-Jacobian products).
//!
//! Elementwise functions use the generic rule `ā += t̄ .* ∂op/∂a`, with the
//! partial derivative evaluated by the primitive's derivative rule
//! ([`ExprKind::Partial`], implemented once in `bat_math`). Operands that
//! are scalars broadcast against a container receive the sum of their
//! elementwise shares.

use super::sweep::Transformer;
use crate::mir::{Expr, ExprKind, Index, LValue, LValueStep, Prim, Stmt, StmtKind, VarId};
use crate::span::Span;
use crate::types::{AdLevel, Type};

impl Transformer {
    pub(super) fn vjp(
        &mut self,
        value: &Expr,
        t: VarId,
        t_adj: VarId,
    ) -> Result<Vec<Stmt>, String> {
        let span = value.span;
        let tb = self.var_expr(t_adj, span);
        let tv = self.var_expr(t, span);
        let mut out = Vec::new();
        match &value.kind {
            ExprKind::Prim(p, args) => self.prim_vjp(*p, args, &tv, &tb, span, &mut out)?,
            ExprKind::Index(base, idx) => self.accumulate_at(base, idx.clone(), tb, &mut out),
            ExprKind::ArrayLit(items) | ExprKind::RowVectorLit(items) => {
                for (k, item) in items.iter().enumerate() {
                    let share = index(&tb, k + 1, item.ty.clone(), span);
                    self.accumulate(item, share, &mut out);
                }
            }
            ExprKind::Target => {
                let lhs = LValue {
                    var: self.target_adj,
                    path: Vec::new(),
                };
                out.push(Stmt {
                    kind: StmtKind::AddAssign { lhs, rhs: tb },
                    span,
                });
            }
            ExprKind::Call(f, args) => self.call_vjp(*f, args, Some(tb), span, &mut out)?,
            ExprKind::Ode(call) => self.ode_vjp(call, tb, span, &mut out)?,
            ExprKind::TupleLit(items) => {
                for (k, item) in items.iter().enumerate() {
                    if !Self::is_real_valued(&item.ty) {
                        continue;
                    }
                    let share = Expr {
                        kind: ExprKind::TupleProj(Box::new(tb.clone()), k + 1),
                        ty: item.ty.clone(),
                        ad: AdLevel::AutoDiff,
                        span,
                    };
                    self.accumulate(item, share, &mut out);
                }
            }
            ExprKind::TupleProj(base, k) => {
                if let ExprKind::Var(b) = base.kind
                    && let Some(b_adj) = self.adjoint(b)
                {
                    let lhs = LValue {
                        var: b_adj,
                        path: vec![LValueStep::TupleProj(*k)],
                    };
                    out.push(Stmt {
                        kind: StmtKind::AddAssign { lhs, rhs: tb },
                        span,
                    });
                }
            }
            other => return Err(format!("the expression {other:?}")),
        }
        Ok(out)
    }

    /// Add `share` (shaped like the value it came from) into `operand`'s
    /// adjoint, summing when a scalar operand was broadcast.
    pub(super) fn accumulate(&mut self, operand: &Expr, share: Expr, out: &mut Vec<Stmt>) {
        let ExprKind::Var(v) = operand.kind else {
            return;
        };
        let Some(a) = self.adjoint(v) else { return };
        let span = share.span;
        let share = if operand.ty.is_scalar() && !share.ty.is_scalar() {
            prim(Prim::Sum, vec![share], Type::Real, span)
        } else {
            share
        };
        out.push(Stmt {
            kind: StmtKind::AddAssign {
                lhs: LValue {
                    var: a,
                    path: Vec::new(),
                },
                rhs: share,
            },
            span,
        });
    }

    /// `ā[path] += share`: the part of `operand` that `path` selects gets
    /// `share` (nothing when the operand is not a variable with an adjoint).
    fn accumulate_at(
        &mut self,
        operand: &Expr,
        path: Vec<Index>,
        share: Expr,
        out: &mut Vec<Stmt>,
    ) {
        let ExprKind::Var(v) = operand.kind else {
            return;
        };
        let Some(a) = self.adjoint(v) else { return };
        let span = share.span;
        out.push(Stmt {
            kind: StmtKind::AddAssign {
                lhs: LValue {
                    var: a,
                    path: vec![LValueStep::Index(path)],
                },
                rhs: share,
            },
            span,
        });
    }

    fn prim_vjp(
        &mut self,
        p: Prim,
        args: &[Expr],
        t: &Expr,
        tb: &Expr,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Result<(), String> {
        use Prim::*;
        // Only real-valued operands that may depend on parameters carry a
        // derivative (ints, even computed from parameters, do not).
        if args
            .iter()
            .all(|a| a.ad == AdLevel::DataOnly || !Self::is_real_valued(&a.ty))
        {
            return Ok(());
        }
        let ew = |a: Prim, x: Expr, y: Expr| {
            let ty = elementwise_type(&x.ty, &y.ty);
            prim(a, vec![x, y], ty, span)
        };
        let neg = |x: Expr| prim(Neg, vec![x.clone()], x.ty, span);
        if let Some(done) = self.linalg_vjp(p, args, t, tb, span, out) {
            return done;
        }
        match p {
            Add => {
                self.accumulate(&args[0], tb.clone(), out);
                self.accumulate(&args[1], tb.clone(), out);
            }
            Sub => {
                self.accumulate(&args[0], tb.clone(), out);
                self.accumulate(&args[1], neg(tb.clone()), out);
            }
            Neg => self.accumulate(&args[0], neg(tb.clone()), out),
            Mul if args[0].ty.is_scalar() || args[1].ty.is_scalar() => {
                self.accumulate(&args[0], ew(EltMul, tb.clone(), args[1].clone()), out);
                self.accumulate(&args[1], ew(EltMul, tb.clone(), args[0].clone()), out);
            }
            Mul => {
                // t = A B:  Ā += t̄ Bᵀ,  B̄ += Aᵀ t̄
                let bt = transpose(&args[1], span);
                let at = transpose(&args[0], span);
                let a_share = prim(Mul, vec![tb.clone(), bt], args[0].ty.clone(), span);
                let b_share = prim(Mul, vec![at, tb.clone()], args[1].ty.clone(), span);
                self.accumulate(&args[0], a_share, out);
                self.accumulate(&args[1], b_share, out);
            }
            Div | EltDiv if args[1].ty.is_scalar() || p == EltDiv => {
                // t = a / b:  ā += t̄ / b,  b̄ += -t̄ t / b
                self.accumulate(&args[0], ew(EltDiv, tb.clone(), args[1].clone()), out);
                let b_share = neg(ew(
                    EltDiv,
                    ew(EltMul, tb.clone(), t.clone()),
                    args[1].clone(),
                ));
                self.accumulate(&args[1], b_share, out);
            }
            EltMul => {
                self.accumulate(&args[0], ew(EltMul, tb.clone(), args[1].clone()), out);
                self.accumulate(&args[1], ew(EltMul, tb.clone(), args[0].clone()), out);
            }
            Transpose => self.accumulate(&args[0], transpose(tb, span), out),
            Sum => self.accumulate_broadcast(&args[0], tb.clone(), out),
            Mean => {
                let n = prim(NumElements, vec![args[0].clone()], Type::Int, span);
                self.accumulate_broadcast(&args[0], ew(Div, tb.clone(), n), out);
            }
            DotSelf => {
                let two_tb = ew(Mul, real(2.0, span), tb.clone());
                self.accumulate(&args[0], ew(Mul, two_tb, args[0].clone()), out);
            }
            DotProduct => {
                self.accumulate(&args[0], ew(Mul, tb.clone(), args[1].clone()), out);
                self.accumulate(&args[1], ew(Mul, tb.clone(), args[0].clone()), out);
            }
            LogSumExp => {
                // ā += t̄ · exp(a − t)
                let soft = prim(
                    Exp,
                    vec![ew(Sub, args[0].clone(), t.clone())],
                    args[0].ty.clone(),
                    span,
                );
                self.accumulate(&args[0], ew(Mul, tb.clone(), soft), out);
            }
            Softmax => {
                // ā += t ⊙ (t̄ − ⟨t̄, t⟩)
                let inner = prim(DotProduct, vec![tb.clone(), t.clone()], Type::Real, span);
                self.accumulate(
                    &args[0],
                    ew(EltMul, t.clone(), ew(Sub, tb.clone(), inner)),
                    out,
                );
            }
            LogSoftmax => {
                // ā += t̄ − exp(t) Σ t̄
                let total = prim(Sum, vec![tb.clone()], Type::Real, span);
                let p = prim(Exp, vec![t.clone()], t.ty.clone(), span);
                self.accumulate(&args[0], ew(Sub, tb.clone(), ew(Mul, p, total)), out);
            }
            RepVector | RepRowVector | RepArray | RepMatrix if args[0].ty.is_scalar() => {
                self.accumulate(&args[0], prim(Sum, vec![tb.clone()], Type::Real, span), out);
            }
            ToVector | ToRowVector | ToArray1d => {
                // Same elements in Stan's order: add them back elementwise.
                self.accumulate_broadcast(&args[0], tb.clone(), out);
            }
            CumulativeSum => {
                let rev = prim(Reverse, vec![tb.clone()], tb.ty.clone(), span);
                let cs = prim(CumulativeSum, vec![rev], tb.ty.clone(), span);
                self.accumulate(&args[0], prim(Reverse, vec![cs], tb.ty.clone(), span), out);
            }
            DiagPreMultiply => {
                // t = diag(v) M:  M̄ += diag(v) t̄,  v̄ += (t̄ ⊙ M) 1
                let (v, m) = (&args[0], &args[1]);
                let m_share = prim(
                    DiagPreMultiply,
                    vec![v.clone(), tb.clone()],
                    Type::Matrix,
                    span,
                );
                self.accumulate(m, m_share, out);
                let ones = prim(
                    RepVector,
                    vec![
                        real(1.0, span),
                        prim(Cols, vec![m.clone()], Type::Int, span),
                    ],
                    Type::Vector,
                    span,
                );
                let weighted = prim(EltMul, vec![tb.clone(), m.clone()], Type::Matrix, span);
                self.accumulate_broadcast(
                    v,
                    prim(Mul, vec![weighted, ones], Type::Vector, span),
                    out,
                );
            }
            DiagPostMultiply => {
                // t = M diag(v):  M̄ += t̄ diag(v),  v̄ += 1ᵀ (t̄ ⊙ M)
                let (m, v) = (&args[0], &args[1]);
                let m_share = prim(
                    DiagPostMultiply,
                    vec![tb.clone(), v.clone()],
                    Type::Matrix,
                    span,
                );
                self.accumulate(m, m_share, out);
                let ones = prim(
                    RepRowVector,
                    vec![
                        real(1.0, span),
                        prim(Rows, vec![m.clone()], Type::Int, span),
                    ],
                    Type::RowVector,
                    span,
                );
                let weighted = prim(EltMul, vec![tb.clone(), m.clone()], Type::Matrix, span);
                self.accumulate_broadcast(
                    v,
                    prim(Mul, vec![ones, weighted], Type::RowVector, span),
                    out,
                );
            }
            Reverse => self.accumulate(
                &args[0],
                prim(Reverse, vec![tb.clone()], tb.ty.clone(), span),
                out,
            ),
            Head | Tail | Segment => {
                // The slice of the argument that was taken gets t̄.
                let one = int(1, span);
                let len = prim(NumElements, vec![args[0].clone()], Type::Int, span);
                let range = match p {
                    Head => Index::Between(one, args[1].clone()),
                    Tail => Index::Upfrom(prim(
                        Add,
                        vec![prim(Sub, vec![len, args[1].clone()], Type::Int, span), one],
                        Type::Int,
                        span,
                    )),
                    _ => Index::Between(
                        args[1].clone(),
                        prim(
                            Sub,
                            vec![
                                prim(Add, vec![args[1].clone(), args[2].clone()], Type::Int, span),
                                one,
                            ],
                            Type::Int,
                            span,
                        ),
                    ),
                };
                self.accumulate_at(&args[0], vec![range], tb.clone(), out);
            }
            Block | Col | Row => {
                // The part of the matrix that was taken gets t̄.
                let last = |first: &Expr, n: &Expr| {
                    let end = prim(Add, vec![first.clone(), n.clone()], Type::Int, span);
                    prim(Sub, vec![end, int(1, span)], Type::Int, span)
                };
                let path = match p {
                    Block => vec![
                        Index::Between(args[1].clone(), last(&args[1], &args[3])),
                        Index::Between(args[2].clone(), last(&args[2], &args[4])),
                    ],
                    Col => vec![Index::All, Index::Single(args[1].clone())],
                    _ => vec![Index::Single(args[1].clone())],
                };
                self.accumulate_at(&args[0], path, tb.clone(), out);
            }
            AppendArray => {
                // t = {a..., b...}: ā += t̄[1:size(a)], b̄ += t̄[size(a) + 1:].
                let size_a = prim(Size, vec![args[0].clone()], Type::Int, span);
                let after_a = prim(Add, vec![size_a.clone(), int(1, span)], Type::Int, span);
                let slice = |range: Index, ty: &Type| Expr {
                    kind: ExprKind::Index(Box::new(tb.clone()), vec![range]),
                    ty: ty.clone(),
                    ad: tb.ad,
                    span,
                };
                let a_share = slice(Index::Between(int(1, span), size_a), &args[0].ty);
                let b_share = slice(Index::Upfrom(after_a), &args[1].ty);
                self.accumulate(&args[0], a_share, out);
                self.accumulate(&args[1], b_share, out);
            }
            Norm1 => {
                // ā += t̄ · ∂|a|/∂a, elementwise (0 at 0, as Stan).
                let sign = Expr {
                    kind: ExprKind::Partial {
                        prim: Abs,
                        arg: 0,
                        args: vec![args[0].clone()],
                    },
                    ty: args[0].ty.clone(),
                    ad: AdLevel::DataOnly,
                    span,
                };
                self.accumulate(&args[0], ew(Mul, tb.clone(), sign), out);
            }
            Norm2 => {
                // t = ‖a‖₂:  ā += (t̄ / t) · a
                let scale = ew(Div, tb.clone(), t.clone());
                self.accumulate(&args[0], ew(Mul, scale, args[0].clone()), out);
            }
            RepMatrix if !args[0].ty.is_scalar() => {
                // Columns (vector) or rows (row_vector) repeated: sum them.
                let share = if args[0].ty == Type::Vector {
                    let ones = prim(
                        RepVector,
                        vec![
                            real(1.0, span),
                            prim(Cols, vec![tb.clone()], Type::Int, span),
                        ],
                        Type::Vector,
                        span,
                    );
                    prim(Mul, vec![tb.clone(), ones], Type::Vector, span)
                } else {
                    let ones = prim(
                        RepRowVector,
                        vec![
                            real(1.0, span),
                            prim(Rows, vec![tb.clone()], Type::Int, span),
                        ],
                        Type::RowVector,
                        span,
                    );
                    prim(Mul, vec![ones, tb.clone()], Type::RowVector, span)
                };
                self.accumulate(&args[0], share, out);
            }
            DiagMatrix => self.accumulate(
                &args[0],
                prim(Diagonal, vec![tb.clone()], Type::Vector, span),
                out,
            ),
            Diagonal => self.accumulate(
                &args[0],
                prim(DiagMatrix, vec![tb.clone()], Type::Matrix, span),
                out,
            ),
            // Integer-valued or piecewise-constant: no derivative.
            Eq | Neq | Lt | Leq | Gt | Geq | Not | IntDiv | Mod | Floor | Ceil | Round | Trunc
            | Step | IsNan | IsInf | Size | Rows | Cols | NumElements | ToInt | Choose | Dims => {}
            // Argument checks: 0 (or a rejection), no derivative.
            CheckPositiveFinite | CheckPositive | CheckNonNegative | CheckFinite | CheckNotNan
            | CheckProbability | CheckNonNegativeInt => {}
            _ if is_elementwise_math(p) => {
                for (k, a) in args.iter().enumerate() {
                    if a.ad == AdLevel::DataOnly {
                        continue;
                    }
                    let partial = Expr {
                        kind: ExprKind::Partial {
                            prim: p,
                            arg: k,
                            args: args.to_vec(),
                        },
                        ty: t.ty.clone(),
                        ad: AdLevel::DataOnly,
                        span,
                    };
                    self.accumulate(a, ew(EltMul, tb.clone(), partial), out);
                }
            }
            other => return Err(format!("the function `{}`", other.name())),
        }
        Ok(())
    }

    /// `ā += s` without reduction: `s` is a scalar added to every element
    /// of `a`, or holds `a`'s elements (in Stan's order) in another shape.
    pub(super) fn accumulate_broadcast(
        &mut self,
        operand: &Expr,
        share: Expr,
        out: &mut Vec<Stmt>,
    ) {
        let ExprKind::Var(v) = operand.kind else {
            return;
        };
        let Some(a) = self.adjoint(v) else { return };
        out.push(Stmt {
            kind: StmtKind::AddAssign {
                lhs: LValue {
                    var: a,
                    path: Vec::new(),
                },
                rhs: share.clone(),
            },
            span: share.span,
        });
    }
}

/// Elementwise primitives whose partials `bat_math` provides.
fn is_elementwise_math(p: Prim) -> bool {
    use Prim::*;
    matches!(
        p,
        Pow | Exp
            | Exp2
            | Expm1
            | Log
            | Log2
            | Log10
            | Log1p
            | Log1m
            | Log1pExp
            | Log1mExp
            | Sqrt
            | Cbrt
            | Square
            | Inv
            | InvSqrt
            | InvSquare
            | Abs
            | Sin
            | Cos
            | Tan
            | Asin
            | Acos
            | Atan
            | Sinh
            | Cosh
            | Tanh
            | Asinh
            | Acosh
            | Atanh
            | Logit
            | InvLogit
            | LogInvLogit
            | Log1mInvLogit
            | InvCloglog
            | Lgamma
            | Digamma
            | Trigamma
            | Tgamma
            | Erf
            | Erfc
            | Phi
            | PhiApprox
            | InvPhi
            | Atan2
            | Fmax
            | Fmin
            | Fdim
            | Fmod
            | Hypot
            | LogSumExp2
            | LogDiffExp
            | Lbeta
            | Lchoose
            | LogFallingFactorial
            | LogRisingFactorial
            | LogInvLogitDiff
            | LogPhi
            | GammaP
            | GammaQ
            | IncBeta
            | BinaryLogLoss
            | MultiplyLog
            | Lmultiply
            | Fma
    )
}

pub(super) fn prim(p: Prim, args: Vec<Expr>, ty: Type, span: Span) -> Expr {
    let ad = args.iter().map(|a| a.ad).max().unwrap_or(AdLevel::DataOnly);
    Expr {
        kind: ExprKind::Prim(p, args),
        ty,
        ad,
        span,
    }
}

pub(super) fn real(x: f64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Real(x),
        ty: Type::Real,
        ad: AdLevel::DataOnly,
        span,
    }
}

pub(super) fn transpose(e: &Expr, span: Span) -> Expr {
    let ty = match e.ty {
        Type::Vector => Type::RowVector,
        Type::RowVector => Type::Vector,
        ref t => t.clone(),
    };
    prim(Prim::Transpose, vec![e.clone()], ty, span)
}

pub(super) fn int(k: i64, span: Span) -> Expr {
    Expr {
        kind: ExprKind::Int(k),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    }
}

fn index(e: &Expr, k: usize, ty: Type, span: Span) -> Expr {
    let i = Expr {
        kind: ExprKind::Int(k as i64),
        ty: Type::Int,
        ad: AdLevel::DataOnly,
        span,
    };
    Expr {
        kind: ExprKind::Index(Box::new(e.clone()), vec![Index::Single(i)]),
        ty,
        ad: e.ad,
        span,
    }
}

/// Type of a share `a op b` (reals: an int operand is a size or a literal).
fn elementwise_type(a: &Type, b: &Type) -> Type {
    match (a.is_scalar(), b.is_scalar()) {
        (true, true) => Type::Real,
        (true, false) => b.clone(),
        _ => a.clone(),
    }
}
