//! Unit tests of the primitives' value rules against closed forms and
//! Stan's documented behaviour.

#![allow(clippy::cloned_ref_to_slice_refs)]

use super::error::ErrorKind;
use super::prims::eval;
use language::mir::Prim::{self, *};
use language::value::Value::{self, *};

fn v(xs: &[f64]) -> Value {
    Vector(xs.to_vec())
}

fn rv(xs: &[f64]) -> Value {
    RowVector(xs.to_vec())
}

/// Column-major matrix from rows.
fn m(rows: &[&[f64]]) -> Value {
    let r = rows.len();
    let c = rows[0].len();
    Matrix {
        rows: r,
        cols: c,
        data: (0..r * c).map(|k| rows[k % r][k / r]).collect(),
    }
}

fn ints(xs: &[i64]) -> Value {
    Array(xs.iter().map(|&i| Int(i)).collect())
}

fn ok(p: Prim, args: &[Value]) -> Value {
    eval(p, args).unwrap_or_else(|e| panic!("{p}: {e}"))
}

fn reals(x: &Value) -> Vec<f64> {
    let mut out = Vec::new();
    x.flatten_reals(&mut out);
    out
}

fn assert_close(x: &Value, expected: &[f64]) {
    let got = reals(x);
    assert_eq!(got.len(), expected.len(), "{x:?}");
    for (a, b) in got.iter().zip(expected) {
        assert!(
            (a - b).abs() <= 1e-12 * b.abs().max(1.0),
            "{x:?} vs {expected:?}"
        );
    }
}

#[test]
fn arithmetic_keeps_ints_and_broadcasts_scalars() {
    assert_eq!(ok(Add, &[Int(2), Int(3)]), Int(5));
    assert_eq!(ok(Add, &[Int(2), Real(0.5)]), Real(2.5));
    assert_eq!(ok(Sub, &[v(&[1.0, 2.0]), Int(1)]), v(&[0.0, 1.0]));
    assert_eq!(ok(Mul, &[Real(2.0), m(&[&[1.0, 2.0]])]), m(&[&[2.0, 4.0]]));
    assert_eq!(ok(Neg, &[Int(4)]), Int(-4));
    assert_eq!(
        ok(EltMul, &[v(&[1.0, 2.0]), v(&[3.0, 4.0])]),
        v(&[3.0, 8.0])
    );
    assert_eq!(ok(EltDiv, &[Int(1), v(&[2.0, 4.0])]), v(&[0.5, 0.25]));
    let err = eval(Add, &[v(&[1.0, 2.0]), v(&[1.0])]).unwrap_err();
    assert!(err.message.contains("size mismatch"), "{}", err.message);
}

#[test]
fn integer_division_and_modulus_follow_stan() {
    assert_eq!(ok(Div, &[Int(7), Int(-2)]), Int(-3));
    assert_eq!(ok(Mod, &[Int(-7), Int(3)]), Int(-1));
    assert_eq!(ok(Div, &[Real(1.0), Int(0)]), Real(f64::INFINITY));
    assert_eq!(
        eval(Div, &[Int(1), Int(0)]).unwrap_err().kind,
        ErrorKind::Fatal
    );
    assert_eq!(
        eval(Add, &[Int(i64::MAX), Int(1)]).unwrap_err().kind,
        ErrorKind::Fatal
    );
}

#[test]
fn pow_is_real_even_on_ints() {
    assert_eq!(ok(Pow, &[Int(2), Int(3)]), Real(8.0));
    assert_eq!(ok(Pow, &[v(&[2.0, 3.0]), Int(2)]), v(&[4.0, 9.0]));
}

#[test]
fn comparisons_and_logic_give_ints() {
    assert_eq!(ok(Lt, &[Int(1), Real(1.5)]), Int(1));
    assert_eq!(ok(Eq, &[Real(2.0), Int(2)]), Int(1));
    assert_eq!(ok(Geq, &[Real(f64::NAN), Real(0.0)]), Int(0));
    assert_eq!(ok(Not, &[Real(0.0)]), Int(1));
    assert_eq!(ok(Not, &[Int(3)]), Int(0));
}

#[test]
fn elementwise_math_matches_closed_forms() {
    let x = v(&[-1.0, 0.0, 2.0]);
    assert_close(&ok(Exp, &[x.clone()]), &[(-1f64).exp(), 1.0, 2f64.exp()]);
    assert_close(
        &ok(InvLogit, &[x.clone()]),
        &[1.0 / (1.0 + 1f64.exp()), 0.5, 1.0 / (1.0 + (-2f64).exp())],
    );
    assert_close(
        &ok(Log1pExp, &[x.clone()]),
        &[
            (1.0 + (-1f64).exp()).ln(),
            2f64.ln(),
            (1.0 + 2f64.exp()).ln(),
        ],
    );
    assert_close(&ok(Square, &[x.clone()]), &[1.0, 0.0, 4.0]);
    assert_eq!(ok(Step, &[Real(0.0)]), Real(1.0));
    assert_eq!(ok(Step, &[Real(-0.5)]), Real(0.0));
    assert_close(&ok(Lgamma, &[Real(5.0)]), &[24f64.ln()]);
    assert_close(&ok(Lchoose, &[Int(5), Int(2)]), &[10f64.ln()]);
    assert_close(&ok(Lbeta, &[Real(2.0), Real(3.0)]), &[(1.0f64 / 12.0).ln()]);
    assert_close(
        &ok(LogSumExp2, &[Real(1.0), Real(2.0)]),
        &[(1f64.exp() + 2f64.exp()).ln()],
    );
    assert_close(
        &ok(Fma, &[Real(2.0), v(&[1.0, 2.0]), Real(1.0)]),
        &[3.0, 5.0],
    );
    assert_eq!(ok(Fmax, &[Int(2), Int(5)]), Int(5));
    assert_eq!(ok(Abs, &[Int(-3)]), Int(3));
    assert_close(&ok(MultiplyLog, &[Real(0.0), Real(0.0)]), &[0.0]);
}

#[test]
fn reductions() {
    assert_eq!(ok(Prod, &[ints(&[2, 3, 4])]), Int(24));
    assert_eq!(ok(Max, &[ints(&[2, 7, 4])]), Int(7));
    assert_eq!(ok(Max, &[v(&[])]), Real(f64::NEG_INFINITY));
    assert!(eval(Max, &[Array(vec![])]).is_err());
    assert_close(
        &ok(Sd, &[v(&[1.0, 2.0, 3.0, 4.0])]),
        &[(5.0f64 / 3.0).sqrt()],
    );
    assert_eq!(ok(CumulativeSum, &[ints(&[1, 2, 3])]), ints(&[1, 3, 6]));
    assert_eq!(ok(CumulativeSum, &[v(&[1.0, 2.0])]), v(&[1.0, 3.0]));
    assert_close(&ok(Norm2, &[v(&[3.0, 4.0])]), &[5.0]);
    assert_close(&ok(DotProduct, &[v(&[1.0, 2.0]), rv(&[3.0, 4.0])]), &[11.0]);
    assert_close(
        &ok(LogSoftmax, &[v(&[0.0, 0.0])]),
        &[-(2f64.ln()), -(2f64.ln())],
    );
}

#[test]
fn construction_and_slicing() {
    assert_eq!(
        ok(RepMatrix, &[v(&[1.0, 2.0]), Int(2)]),
        m(&[&[1.0, 1.0], &[2.0, 2.0]])
    );
    assert_eq!(
        ok(RepArray, &[Int(0), Int(2), Int(1)]),
        Array(vec![ints(&[0]), ints(&[0])])
    );
    // to_matrix(v, 2, 2, 0) fills row by row
    assert_eq!(
        ok(
            ToMatrix,
            &[v(&[1.0, 2.0, 3.0, 4.0]), Int(2), Int(2), Int(0)]
        ),
        m(&[&[1.0, 2.0], &[3.0, 4.0]])
    );
    assert_eq!(
        ok(ToVector, &[m(&[&[1.0, 2.0], &[3.0, 4.0]])]),
        v(&[1.0, 3.0, 2.0, 4.0])
    );
    assert_eq!(ok(AppendRow, &[v(&[1.0]), Real(2.0)]), v(&[1.0, 2.0]));
    assert_eq!(
        ok(AppendCol, &[m(&[&[1.0], &[2.0]]), v(&[3.0, 4.0])]),
        m(&[&[1.0, 3.0], &[2.0, 4.0]])
    );
    assert_eq!(
        ok(Segment, &[v(&[1.0, 2.0, 3.0]), Int(2), Int(2)]),
        v(&[2.0, 3.0])
    );
    assert_eq!(ok(Tail, &[v(&[1.0, 2.0, 3.0]), Int(1)]), v(&[3.0]));
    assert_eq!(
        eval(Head, &[v(&[1.0]), Int(2)]).unwrap_err().kind,
        ErrorKind::IndexOutOfRange
    );
    let a = m(&[&[1.0, 2.0, 3.0], &[4.0, 5.0, 6.0]]);
    assert_eq!(
        ok(Block, &[a.clone(), Int(1), Int(2), Int(2), Int(2)]),
        m(&[&[2.0, 3.0], &[5.0, 6.0]])
    );
    assert_eq!(ok(Row, &[a.clone(), Int(2)]), rv(&[4.0, 5.0, 6.0]));
    assert_eq!(ok(Col, &[a.clone(), Int(3)]), v(&[3.0, 6.0]));
    assert_eq!(ok(Dims, &[Array(vec![a.clone(); 4])]), ints(&[4, 2, 3]));
    assert_eq!(ok(Sort, &[ints(&[3, 1, 2])]), ints(&[1, 2, 3]));
    assert_eq!(ok(SortDesc, &[v(&[3.0, 1.0, 2.0])]), v(&[3.0, 2.0, 1.0]));
    assert_eq!(ok(Reverse, &[rv(&[1.0, 2.0])]), rv(&[2.0, 1.0]));
    assert_close(
        &ok(Linspaced, &[Int(3), Real(0.0), Real(1.0)]),
        &[0.0, 0.5, 1.0],
    );
    assert_eq!(ok(OneHot, &[Int(3), Int(2)]), v(&[0.0, 1.0, 0.0]));
    assert_eq!(ok(Size, &[a.clone()]), Int(6));
    assert_eq!(ok(Rows, &[a.clone()]), Int(2));
    assert_eq!(ok(NumElements, &[Array(vec![a; 2])]), Int(12));
}

#[test]
fn linear_algebra() {
    let a = m(&[&[2.0, 1.0], &[1.0, 2.0]]);
    assert_close(&ok(EigenvaluesSym, &[a.clone()]), &[1.0, 3.0]);
    let inv = ok(Inverse, &[a.clone()]);
    assert_close(&inv, &[2.0 / 3.0, -1.0 / 3.0, -1.0 / 3.0, 2.0 / 3.0]);
    assert_close(&ok(Tcrossprod, &[m(&[&[1.0, 2.0]])]), &[5.0]);
    let l = m(&[&[2.0, 0.0], &[1.0, 3.0]]);
    assert_eq!(
        ok(MultiplyLowerTriSelfTranspose, &[l.clone()]),
        m(&[&[4.0, 2.0], &[2.0, 10.0]])
    );
    assert_close(
        &ok(MdivideLeftTriLow, &[l.clone(), v(&[2.0, 4.0])]),
        &[1.0, 1.0],
    );
    assert_close(&ok(MdivideRightTriLow, &[rv(&[3.0, 3.0]), l]), &[1.0, 1.0]);
    assert_close(
        &ok(QuadFormDiag, &[a.clone(), v(&[1.0, 2.0])]),
        &[2.0, 2.0, 2.0, 8.0],
    );
    assert_close(&ok(QuadForm, &[a.clone(), v(&[1.0, 1.0])]), &[6.0]);
    assert_close(
        &ok(DiagPreMultiply, &[v(&[1.0, 2.0]), a]),
        &[2.0, 2.0, 1.0, 4.0],
    );
    let k = ok(
        GpExpQuadCov,
        &[Array(vec![Real(0.0), Real(1.0)]), Real(2.0), Real(0.5)],
    );
    assert_close(&k, &[4.0, 4.0 * (-2f64).exp(), 4.0 * (-2f64).exp(), 4.0]);
    let not_pd = m(&[&[1.0, 2.0], &[2.0, 1.0]]);
    assert!(
        eval(CholeskyDecompose, &[not_pd])
            .unwrap_err()
            .is_rejection()
    );
}

#[test]
fn argument_checks_reject_and_name_the_element() {
    assert_eq!(ok(CheckPositive, &[v(&[1.0, 2.0]), Int(3)]), Real(0.0));
    let err = eval(CheckPositive, &[v(&[1.0, -2.0]), Int(3)]).unwrap_err();
    assert!(err.is_rejection());
    assert_eq!(err.message, "argument 3[2] is -2, but must be positive");
    assert!(eval(CheckProbability, &[Real(1.5), Int(2)]).is_err());
    assert!(eval(CheckFinite, &[Real(f64::INFINITY), Int(2)]).is_err());
}

#[test]
fn complex_scalar_arithmetic() {
    let (a, b) = (Complex(1.0, 2.0), Complex(3.0, -1.0));
    assert_eq!(ok(Add, &[a.clone(), b.clone()]), Complex(4.0, 1.0));
    assert_eq!(ok(Mul, &[a.clone(), b.clone()]), Complex(5.0, 5.0));
    assert_eq!(ok(Div, &[Complex(5.0, 5.0), b]), a);
    assert_eq!(ok(Sub, &[Int(1), a.clone()]), Complex(0.0, -2.0));
    assert_eq!(ok(Abs, &[Complex(3.0, 4.0)]), Real(5.0));
    assert_eq!(ok(GetImag, &[a]), Real(2.0));
}
