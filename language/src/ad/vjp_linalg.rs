//! Derivative rules of the linear-algebra primitives and of reductions
//! over containers, written with other
//! primitives (triangular solves, products, transposes), so every backend
//! runs them with the kernels it already has.
//!
//! Triangular arguments (of `cholesky_decompose`'s result and of the
//! `_tri_low` solves) only use their lower triangle, so their adjoints are
//! masked to it: `tril(X) = X .* step(I - J)` with `I[i, j] = i`,
//! `J[i, j] = j`. Symmetric arguments (`cholesky_decompose`'s input)
//! receive the symmetric part of the adjoint.

use super::sweep::Transformer;
use super::vjp::{int, prim, real, transpose};
use crate::mir::{Expr, ExprKind, Prim, Stmt};
use crate::span::Span;
use crate::types::{AdLevel, Type};

impl Transformer {
    /// The rule for linear-algebra primitive `p`, or `None` if `p` is not
    /// one of them.
    pub(super) fn linalg_vjp(
        &mut self,
        p: Prim,
        args: &[Expr],
        t: &Expr,
        tb: &Expr,
        span: Span,
        out: &mut Vec<Stmt>,
    ) -> Option<Result<(), String>> {
        use Prim::*;
        let mat = |p: Prim, args: Vec<Expr>| prim(p, args, Type::Matrix, span);
        match p {
            Prod => {
                // ā += t̄ t ./ a
                let share = prim(
                    EltDiv,
                    vec![
                        prim(Mul, vec![tb.clone(), t.clone()], Type::Real, span),
                        args[0].clone(),
                    ],
                    args[0].ty.clone(),
                    span,
                );
                self.accumulate_broadcast(&args[0], share, out);
            }
            LogDeterminant => {
                // Ā += t̄ A⁻ᵀ
                let inv_t = transpose(&mat(Inverse, vec![args[0].clone()]), span);
                self.accumulate(&args[0], mat(Mul, vec![tb.clone(), inv_t]), out);
            }
            Inverse => {
                // Ā += −Tᵀ T̄ Tᵀ
                let tt = self.bind_rev(transpose(t, span), "inv_t", out);
                let share = mat(Mul, vec![mat(Mul, vec![tt.clone(), tb.clone()]), tt]);
                self.accumulate(&args[0], neg(share, span), out);
            }
            Crossprod => {
                // T = AᵀA:  Ā += A (T̄ + T̄ᵀ)
                let sym = mat(Add, vec![tb.clone(), transpose(tb, span)]);
                self.accumulate(&args[0], mat(Mul, vec![args[0].clone(), sym]), out);
            }
            Tcrossprod => {
                // T = AAᵀ:  Ā += (T̄ + T̄ᵀ) A
                let sym = mat(Add, vec![tb.clone(), transpose(tb, span)]);
                self.accumulate(&args[0], mat(Mul, vec![sym, args[0].clone()]), out);
            }
            MultiplyLowerTriSelfTranspose => {
                // T = L Lᵀ with L = tril(A):  Ā += tril((T̄ + T̄ᵀ) L)
                let l = self.tril(&args[0], span);
                let sym = mat(Add, vec![tb.clone(), transpose(tb, span)]);
                let share = self.tril(&mat(Mul, vec![sym, l]), span);
                self.accumulate(&args[0], share, out);
            }
            CholeskyDecompose => {
                // Murray (2016): Ā = sym(L⁻ᵀ Φ(Lᵀ L̄) L⁻¹), Φ = lower
                // triangle with the diagonal halved.
                let l = t;
                let p = self.phi(&mat(Mul, vec![transpose(l, span), tb.clone()]), span);
                let y = mat(MdivideRightTriLow, vec![p, l.clone()]);
                let x = transpose(
                    &mat(MdivideRightTriLow, vec![transpose(&y, span), l.clone()]),
                    span,
                );
                let x = self.bind_rev(x, "chol_adj", out);
                let sym = mat(
                    Mul,
                    vec![
                        real(0.5, span),
                        mat(Add, vec![x.clone(), transpose(&x, span)]),
                    ],
                );
                self.accumulate(&args[0], sym, out);
            }
            MdivideLeftTriLow => {
                // T = L⁻¹B:  B̄ += L⁻ᵀT̄,  L̄ += −tril(B̄ Tᵀ)
                let (l, b) = (&args[0], &args[1]);
                let bs = transpose(
                    &prim(
                        MdivideRightTriLow,
                        vec![transpose(tb, span), l.clone()],
                        transposed_type(&tb.ty),
                        span,
                    ),
                    span,
                );
                let bs = self.bind_rev(bs, "solve_adj", out);
                self.accumulate(b, bs.clone(), out);
                let outer = self.outer(&bs, t, span);
                let share = neg(self.tril(&outer, span), span);
                self.accumulate(l, share, out);
            }
            MdivideRightTriLow => {
                // T = B L⁻¹:  B̄ += T̄ L⁻ᵀ,  L̄ += −tril(Tᵀ B̄)
                let (b, l) = (&args[0], &args[1]);
                let bs = transpose(
                    &prim(
                        MdivideLeftTriLow,
                        vec![l.clone(), transpose(tb, span)],
                        transposed_type(&tb.ty),
                        span,
                    ),
                    span,
                );
                let bs = self.bind_rev(bs, "solve_adj", out);
                self.accumulate(b, bs.clone(), out);
                let outer = self.outer(&transpose(t, span), &transpose(&bs, span), span);
                let share = neg(self.tril(&outer, span), span);
                self.accumulate(l, share, out);
            }
            LeftDiv => {
                // T = A⁻¹B:  B̄ += A⁻ᵀT̄,  Ā += −B̄ Tᵀ
                let (a, b) = (&args[0], &args[1]);
                let bs = prim(
                    LeftDiv,
                    vec![transpose(a, span), tb.clone()],
                    tb.ty.clone(),
                    span,
                );
                let bs = self.bind_rev(bs, "solve_adj", out);
                self.accumulate(b, bs.clone(), out);
                let share = neg(self.outer(&bs, t, span), span);
                self.accumulate(a, share, out);
            }
            MdivideRight | Div if args[1].ty == Type::Matrix => {
                // T = B A⁻¹:  B̄ += T̄ A⁻ᵀ,  Ā += −Tᵀ B̄
                let (b, a) = (&args[0], &args[1]);
                let bs = prim(
                    MdivideRight,
                    vec![tb.clone(), transpose(a, span)],
                    tb.ty.clone(),
                    span,
                );
                let bs = self.bind_rev(bs, "solve_adj", out);
                self.accumulate(b, bs.clone(), out);
                let outer = self.outer(&transpose(t, span), &transpose(&bs, span), span);
                self.accumulate(a, neg(outer, span), out);
            }
            Min | Max if args.len() == 1 && !args[0].ty.is_scalar() => {
                // The extreme element gets t̄ (every one of equal extremes).
                let a = &args[0];
                let gap = if p == Min {
                    prim(Sub, vec![t.clone(), a.clone()], a.ty.clone(), span)
                } else {
                    prim(Sub, vec![a.clone(), t.clone()], a.ty.clone(), span)
                };
                let mask = prim(Step, vec![gap], a.ty.clone(), span);
                let share = prim(Mul, vec![tb.clone(), mask], a.ty.clone(), span);
                self.accumulate_broadcast(a, share, out);
            }
            Variance | Sd if !args[0].ty.is_scalar() => {
                // var: ā += 2 t̄ (a − ā_mean)/(n − 1);  sd: ā += t̄ (a − mean)/((n − 1) t)
                let a = &args[0];
                let n = prim(NumElements, vec![a.clone()], Type::Int, span);
                let one = int(1, span);
                let dof = prim(
                    Fmax,
                    vec![prim(Sub, vec![n, one.clone()], Type::Int, span), one],
                    Type::Real,
                    span,
                );
                let mean = prim(Mean, vec![a.clone()], Type::Real, span);
                let centered = prim(Sub, vec![a.clone(), mean], a.ty.clone(), span);
                let scale = if p == Variance {
                    prim(
                        Div,
                        vec![
                            prim(Mul, vec![real(2.0, span), tb.clone()], Type::Real, span),
                            dof,
                        ],
                        Type::Real,
                        span,
                    )
                } else {
                    prim(
                        Div,
                        vec![
                            tb.clone(),
                            prim(Mul, vec![dof, t.clone()], Type::Real, span),
                        ],
                        Type::Real,
                        span,
                    )
                };
                let share = prim(Mul, vec![scale, centered], a.ty.clone(), span);
                self.accumulate_broadcast(a, share, out);
            }
            ToMatrix => {
                // Column-major filling keeps Stan's element order for
                // vectors, matrices and real arrays.
                let a = &args[0];
                let same_order = matches!(a.ty, Type::Vector | Type::RowVector | Type::Matrix)
                    || a.ty == Type::Array(Box::new(Type::Real));
                if !same_order || args.len() > 3 {
                    return Some(Err(
                        "to_matrix of arrays of arrays or row vectors, or row-major".into(),
                    ));
                }
                // A matrix reshaped: the share gets the matrix's own shape
                // back (a share of another shape must have another type,
                // see the module docs on accumulations).
                let share = if a.ty == Type::Matrix && args.len() == 3 {
                    let dim = |p: Prim| prim(p, vec![a.clone()], Type::Int, span);
                    mat(ToMatrix, vec![tb.clone(), dim(Rows), dim(Cols)])
                } else {
                    tb.clone()
                };
                self.accumulate_broadcast(a, share, out);
            }
            QuadForm if args[1].ty == Type::Vector => {
                // t = bᵀAb:  Ā += t̄ b bᵀ,  b̄ += t̄ (A + Aᵀ) b
                let (a, b) = (&args[0], &args[1]);
                let bbt = self.outer(b, b, span);
                self.accumulate(a, mat(Mul, vec![tb.clone(), bbt]), out);
                let sym = mat(Add, vec![a.clone(), transpose(a, span)]);
                let share = prim(
                    Mul,
                    vec![
                        tb.clone(),
                        prim(Mul, vec![sym, b.clone()], Type::Vector, span),
                    ],
                    Type::Vector,
                    span,
                );
                self.accumulate(b, share, out);
            }
            QuadForm => {
                // T = BᵀAB:  Ā += B T̄ Bᵀ,  B̄ += A B T̄ᵀ + Aᵀ B T̄
                let (a, b) = (&args[0], &args[1]);
                let bt = transpose(b, span);
                let a_share = mat(Mul, vec![mat(Mul, vec![b.clone(), tb.clone()]), bt]);
                self.accumulate(a, a_share, out);
                let ab = mat(Mul, vec![a.clone(), b.clone()]);
                let atb = mat(Mul, vec![transpose(a, span), b.clone()]);
                let b_share = mat(
                    Add,
                    vec![
                        mat(Mul, vec![ab, transpose(tb, span)]),
                        mat(Mul, vec![atb, tb.clone()]),
                    ],
                );
                self.accumulate(b, b_share, out);
            }
            GpExpQuadCov => {
                // K = α² exp(−D²/(2ρ²)):  ᾱ += 2/α Σ K̄⊙K,
                // ρ̄ += Σ K̄⊙K⊙D²/ρ³ = −2/ρ Σ K̄⊙K⊙log(K/α²)
                // (lmultiply: 0 where K underflows, as the exact term).
                if args.len() != 3 {
                    return Some(Err("gp_exp_quad_cov with two point sets".into()));
                }
                let (x, alpha, rho) = (&args[0], &args[1], &args[2]);
                if x.ad == AdLevel::AutoDiff {
                    return Some(Err("gp_exp_quad_cov of parameter points".into()));
                }
                let weighted = self.bind_rev(mat(EltMul, vec![tb.clone(), t.clone()]), "kk", out);
                let sum = |e: Expr| prim(Sum, vec![e], Type::Real, span);
                let scalar = |p: Prim, a: Expr, b: Expr| prim(p, vec![a, b], Type::Real, span);
                let alpha_share = scalar(
                    Div,
                    scalar(Mul, real(2.0, span), sum(weighted)),
                    alpha.clone(),
                );
                self.accumulate(alpha, alpha_share, out);
                let alpha_sq = scalar(Mul, alpha.clone(), alpha.clone());
                let ratio = mat(EltDiv, vec![t.clone(), alpha_sq]);
                let klogk = mat(Lmultiply, vec![t.clone(), ratio]);
                let rho_share = scalar(
                    Div,
                    scalar(
                        Mul,
                        real(-2.0, span),
                        sum(mat(EltMul, vec![tb.clone(), klogk])),
                    ),
                    rho.clone(),
                );
                self.accumulate(rho, rho_share, out);
            }
            QuadFormDiag => {
                // T = diag(v) M diag(v):  M̄ += diag(v) T̄ diag(v),
                // v̄ += (T̄⊙M) v + (T̄⊙M)ᵀ v
                let (m, v) = (&args[0], &args[1]);
                self.accumulate(m, mat(QuadFormDiag, vec![tb.clone(), v.clone()]), out);
                let w = self.bind_rev(mat(EltMul, vec![tb.clone(), m.clone()]), "qfd", out);
                let vec = |e: Expr| prim(Mul, vec![e, v.clone()], Type::Vector, span);
                let share = prim(
                    Add,
                    vec![vec(w.clone()), vec(transpose(&w, span))],
                    Type::Vector,
                    span,
                );
                self.accumulate_broadcast(v, share, out);
            }
            AppendRow | AppendCol => self.append_vjp(p == AppendRow, args, t, tb, span, out),
            EigenvaluesSym => {
                // Ā += Q diag(λ̄) Qᵀ
                let q = self.bind_rev(mat(EigenvectorsSym, vec![args[0].clone()]), "eigvec", out);
                let share = mat(
                    Mul,
                    vec![
                        mat(DiagPostMultiply, vec![q.clone(), tb.clone()]),
                        transpose(&q, span),
                    ],
                );
                self.accumulate(&args[0], share, out);
            }
            EigenvectorsSym => {
                // Ā += sym(Q (F ⊙ QᵀQ̄) Qᵀ), F[i, j] = 1/(λⱼ − λᵢ) off the
                // diagonal, 0 on it.
                let a = &args[0];
                let q = t;
                let lambda = self.bind_rev(
                    prim(EigenvaluesSym, vec![a.clone()], Type::Vector, span),
                    "eigval",
                    out,
                );
                let n = prim(Rows, vec![a.clone()], Type::Int, span);
                let cols = mat(RepMatrix, vec![transpose(&lambda, span), n.clone()]);
                let rows = mat(RepMatrix, vec![lambda, n.clone()]);
                let eye = mat(
                    DiagMatrix,
                    vec![prim(
                        RepVector,
                        vec![real(1.0, span), n.clone()],
                        Type::Vector,
                        span,
                    )],
                );
                let eye = self.bind_rev(eye, "eye", out);
                let off = mat(Sub, vec![real(1.0, span), eye.clone()]);
                let gaps = mat(Add, vec![mat(Sub, vec![cols, rows]), eye]);
                let f = mat(EltDiv, vec![off, gaps]);
                let inner = mat(
                    EltMul,
                    vec![f, mat(Mul, vec![transpose(q, span), tb.clone()])],
                );
                let x = mat(
                    Mul,
                    vec![mat(Mul, vec![q.clone(), inner]), transpose(q, span)],
                );
                let x = self.bind_rev(x, "eig_adj", out);
                let sym = mat(
                    Mul,
                    vec![
                        real(0.5, span),
                        mat(Add, vec![x.clone(), transpose(&x, span)]),
                    ],
                );
                self.accumulate(a, sym, out);
            }
            _ => return None,
        }
        Some(Ok(()))
    }

    /// `append_row` (`rows`) / `append_col`: each operand gets its slice
    /// of the adjoint.
    fn append_vjp(
        &mut self,
        rows: bool,
        args: &[Expr],
        t: &Expr,
        tb: &Expr,
        span: Span,
        out: &mut Vec<Stmt>,
    ) {
        use Prim::*;
        let int = |i: i64| Expr {
            kind: ExprKind::Int(i),
            ty: Type::Int,
            ad: AdLevel::DataOnly,
            span,
        };
        let iprim = |p: Prim, args: Vec<Expr>| prim(p, args, Type::Int, span);
        let (a, b) = (&args[0], &args[1]);
        if t.ty != Type::Matrix {
            // Vector (append_row) or row vector (append_col) of pieces.
            let len = |e: &Expr| {
                if e.ty.is_scalar() {
                    int(1)
                } else {
                    iprim(NumElements, vec![e.clone()])
                }
            };
            let a_share = prim(Head, vec![tb.clone(), len(a)], t.ty.clone(), span);
            let b_share = prim(Tail, vec![tb.clone(), len(b)], t.ty.clone(), span);
            self.accumulate(a, a_share, out);
            self.accumulate(b, b_share, out);
            return;
        }
        let (total_rows, total_cols) =
            (iprim(Rows, vec![tb.clone()]), iprim(Cols, vec![tb.clone()]));
        let block = |i: Expr, j: Expr, nr: Expr, nc: Expr| {
            prim(Block, vec![tb.clone(), i, j, nr, nc], Type::Matrix, span)
        };
        let plus_one = |e: Expr| iprim(Add, vec![e, int(1)]);
        if rows {
            let ra = iprim(Rows, vec![a.clone()]);
            let a_share = block(int(1), int(1), ra.clone(), total_cols.clone());
            let b_share = block(
                plus_one(ra),
                int(1),
                iprim(Rows, vec![b.clone()]),
                total_cols,
            );
            self.accumulate(a, a_share, out);
            self.accumulate(b, b_share, out);
        } else {
            let ca = iprim(Cols, vec![a.clone()]);
            let a_share = block(int(1), int(1), total_rows.clone(), ca.clone());
            let b_share = block(
                int(1),
                plus_one(ca),
                total_rows,
                iprim(Cols, vec![b.clone()]),
            );
            self.accumulate(a, a_share, out);
            self.accumulate(b, b_share, out);
        }
    }

    /// Bind a reverse-sweep value used more than once to a temporary.
    fn bind_rev(&mut self, value: Expr, hint: &str, out: &mut Vec<Stmt>) -> Expr {
        let v = self.temp(&value.ty, hint);
        let span = value.span;
        out.push(self.let_stmt(v, value));
        Expr {
            kind: ExprKind::Var(v),
            ty: self.program.vars[v.0 as usize].ty.clone(),
            ad: AdLevel::DataOnly,
            span,
        }
    }

    /// `step(I − J)` for an n×n matrix: ones on and below the diagonal.
    /// 1 on and below the diagonal of a matrix of `m`'s size (which need
    /// not be square), 0 above.
    fn lower_mask(&mut self, m: &Expr, span: Span) -> Expr {
        let r = prim(Prim::Rows, vec![m.clone()], Type::Int, span);
        let c = prim(Prim::Cols, vec![m.clone()], Type::Int, span);
        let positions = |n: &Expr| {
            prim(
                Prim::Linspaced,
                vec![n.clone(), real(1.0, span), n.clone()],
                Type::Vector,
                span,
            )
        };
        // Row i + 1 at (i, j), then column j + 1 at (i, j).
        let rows = prim(
            Prim::RepMatrix,
            vec![positions(&r), c.clone()],
            Type::Matrix,
            span,
        );
        let cols = transpose(
            &prim(Prim::RepMatrix, vec![positions(&c), r], Type::Matrix, span),
            span,
        );
        prim(
            Prim::Step,
            vec![prim(Prim::Sub, vec![rows, cols], Type::Matrix, span)],
            Type::Matrix,
            span,
        )
    }

    fn tril(&mut self, m: &Expr, span: Span) -> Expr {
        let mask = self.lower_mask(m, span);
        prim(Prim::EltMul, vec![m.clone(), mask], Type::Matrix, span)
    }

    /// Lower triangle with the diagonal halved.
    fn phi(&mut self, m: &Expr, span: Span) -> Expr {
        let mask = self.lower_mask(m, span);
        let n = prim(Prim::Rows, vec![m.clone()], Type::Int, span);
        let half_eye = prim(
            Prim::DiagMatrix,
            vec![prim(
                Prim::RepVector,
                vec![real(0.5, span), n],
                Type::Vector,
                span,
            )],
            Type::Matrix,
            span,
        );
        let weights = prim(Prim::Sub, vec![mask, half_eye], Type::Matrix, span);
        prim(Prim::EltMul, vec![m.clone(), weights], Type::Matrix, span)
    }

    /// `u vᵀ` for vectors (also given as row vectors), or `U Vᵀ` for
    /// matrices.
    fn outer(&mut self, u: &Expr, v: &Expr, span: Span) -> Expr {
        if u.ty == Type::Matrix {
            return prim(
                Prim::Mul,
                vec![u.clone(), transpose(v, span)],
                Type::Matrix,
                span,
            );
        }
        let u = if u.ty == Type::RowVector {
            transpose(u, span)
        } else {
            u.clone()
        };
        let v_row = if v.ty == Type::Vector {
            transpose(v, span)
        } else {
            v.clone()
        };
        let n = prim(Prim::Rows, vec![u.clone()], Type::Int, span);
        let rows = prim(Prim::RepMatrix, vec![v_row, n], Type::Matrix, span);
        prim(Prim::DiagPreMultiply, vec![u, rows], Type::Matrix, span)
    }
}

fn neg(e: Expr, span: Span) -> Expr {
    let ty = e.ty.clone();
    prim(Prim::Neg, vec![e], ty, span)
}

fn transposed_type(t: &Type) -> Type {
    match t {
        Type::Vector => Type::RowVector,
        Type::RowVector => Type::Vector,
        other => other.clone(),
    }
}
