//! Result types of Stan's operators (stanc3 maps them to the math
//! library's `add`, `subtract`, `multiply`, `divide`/`mdivide_right`,
//! `mdivide_left`, `elt_multiply`, `elt_divide`, `pow`, `modulus`,
//! `logical_*`, `minus`, `transpose`; this module encodes those
//! signatures by shape instead of listing them).

use crate::syntax::ast::{BinaryOp, UnaryOp};
use crate::types::Type;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Shape {
    Vector,
    RowVector,
    Matrix,
}

/// Scalar rank: int < real < complex.
fn scalar_rank(t: &Type) -> Option<u8> {
    match t {
        Type::Int => Some(0),
        Type::Real => Some(1),
        Type::Complex => Some(2),
        _ => None,
    }
}

fn scalar_of_rank(r: u8) -> Type {
    match r {
        0 => Type::Int,
        1 => Type::Real,
        _ => Type::Complex,
    }
}

/// Shape and complexness of vector / row_vector / matrix types.
fn shape(t: &Type) -> Option<(Shape, bool)> {
    Some(match t {
        Type::Vector => (Shape::Vector, false),
        Type::RowVector => (Shape::RowVector, false),
        Type::Matrix => (Shape::Matrix, false),
        Type::ComplexVector => (Shape::Vector, true),
        Type::ComplexRowVector => (Shape::RowVector, true),
        Type::ComplexMatrix => (Shape::Matrix, true),
        _ => return None,
    })
}

fn of_shape(s: Shape, complex: bool) -> Type {
    match (s, complex) {
        (Shape::Vector, false) => Type::Vector,
        (Shape::RowVector, false) => Type::RowVector,
        (Shape::Matrix, false) => Type::Matrix,
        (Shape::Vector, true) => Type::ComplexVector,
        (Shape::RowVector, true) => Type::ComplexRowVector,
        (Shape::Matrix, true) => Type::ComplexMatrix,
    }
}

/// Result type of `l op r`, or `None` if stanc3 has no such signature.
pub fn binary(op: BinaryOp, l: &Type, r: &Type) -> Option<Type> {
    use BinaryOp::*;
    if l.is_error() || r.is_error() {
        return Some(Type::Error);
    }
    let (ls, rs) = (scalar_rank(l), scalar_rank(r));
    let (lsh, rsh) = (shape(l), shape(r));
    match op {
        Or | And | Lt | Leq | Gt | Geq => match (ls, rs) {
            (Some(a), Some(b)) if a < 2 && b < 2 => Some(Type::Int),
            _ => None,
        },
        Eq | Neq => match (ls, rs) {
            (Some(_), Some(_)) => Some(Type::Int),
            _ => None,
        },
        Mod | IntDiv => (ls == Some(0) && rs == Some(0)).then_some(Type::Int),
        Add | Sub => match (ls, rs, lsh, rsh) {
            (Some(a), Some(b), _, _) => Some(scalar_of_rank(a.max(b))),
            (Some(a), _, _, Some((s, c))) | (_, Some(a), Some((s, c)), _) => {
                Some(of_shape(s, c || a == 2))
            }
            (_, _, Some((s1, c1)), Some((s2, c2))) if s1 == s2 => Some(of_shape(s1, c1 || c2)),
            _ => None,
        },
        Mul => match (ls, rs, lsh, rsh) {
            (Some(a), Some(b), _, _) => Some(scalar_of_rank(a.max(b))),
            (Some(a), _, _, Some((s, c))) | (_, Some(a), Some((s, c)), _) => {
                Some(of_shape(s, c || a == 2))
            }
            (_, _, Some((s1, c1)), Some((s2, c2))) => {
                let c = c1 || c2;
                match (s1, s2) {
                    (Shape::RowVector, Shape::Vector) => {
                        Some(if c { Type::Complex } else { Type::Real })
                    }
                    (Shape::Vector, Shape::RowVector) | (Shape::Matrix, Shape::Matrix) => {
                        Some(of_shape(Shape::Matrix, c))
                    }
                    (Shape::Matrix, Shape::Vector) => Some(of_shape(Shape::Vector, c)),
                    (Shape::RowVector, Shape::Matrix) => Some(of_shape(Shape::RowVector, c)),
                    _ => None,
                }
            }
            _ => None,
        },
        Div => match (ls, rs, lsh, rsh) {
            (Some(a), Some(b), _, _) => Some(scalar_of_rank(a.max(b))),
            (_, Some(a), Some((s, c)), _) | (Some(a), _, _, Some((s, c))) => {
                Some(of_shape(s, c || a == 2))
            }
            (_, _, Some((s1, c1)), Some((Shape::Matrix, c2))) if s1 != Shape::Vector => {
                Some(of_shape(s1, c1 || c2))
            }
            _ => None,
        },
        LeftDiv => match (lsh, rsh) {
            (Some((Shape::Matrix, false)), Some((s, false))) if s != Shape::RowVector => {
                Some(of_shape(s, false))
            }
            _ => None,
        },
        EltMul | EltDiv => match (ls, rs, lsh, rsh) {
            (Some(a), Some(b), _, _) => Some(scalar_of_rank(a.max(b))),
            (_, _, Some((s1, c1)), Some((s2, c2))) if s1 == s2 => Some(of_shape(s1, c1 || c2)),
            (Some(a), _, _, Some((s, c))) | (_, Some(a), Some((s, c)), _) => {
                Some(of_shape(s, c || a == 2))
            }
            _ => None,
        },
        Pow | EltPow => pow(l, r),
    }
}

/// `pow` is vectorised over containers: scalar with container, or two
/// containers of the same type; ints become reals (`int ^ int` is real).
fn pow(l: &Type, r: &Type) -> Option<Type> {
    let (ls, rs) = (scalar_rank(l), scalar_rank(r));
    match (ls, rs) {
        (Some(a), Some(b)) => Some(scalar_of_rank(a.max(b).max(1))),
        (Some(a), None) if a < 2 => real_container(r),
        (None, Some(b)) if b < 2 => real_container(l),
        (None, None) => {
            let (lr, rr) = (real_container(l)?, real_container(r)?);
            (lr == rr).then_some(lr)
        }
        _ => None,
    }
}

/// A real container type after promoting ints (arrays of int/real,
/// vectors, row vectors, matrices).
fn real_container(t: &Type) -> Option<Type> {
    let (dims, elem) = t.array_dims();
    let elem = match elem {
        Type::Int | Type::Real => Type::Real,
        Type::Vector | Type::RowVector | Type::Matrix => elem.clone(),
        _ => return None,
    };
    if dims == 0 && elem == Type::Real {
        return None;
    }
    Some(Type::array_of(elem, dims))
}

/// Result type of a prefix operator.
pub fn unary(op: UnaryOp, t: &Type) -> Option<Type> {
    if t.is_error() {
        return Some(Type::Error);
    }
    match op {
        UnaryOp::Not => matches!(t, Type::Int | Type::Real).then_some(Type::Int),
        UnaryOp::Neg | UnaryOp::Plus => {
            let elem = t.array_dims().1;
            let numeric = scalar_rank(elem).is_some() || shape(elem).is_some();
            numeric.then(|| t.clone())
        }
    }
}

/// Result type of postfix `'`.
pub fn transpose(t: &Type) -> Option<Type> {
    match t {
        Type::Error => Some(Type::Error),
        Type::Vector => Some(Type::RowVector),
        Type::RowVector => Some(Type::Vector),
        Type::Matrix => Some(Type::Matrix),
        Type::ComplexVector => Some(Type::ComplexRowVector),
        Type::ComplexRowVector => Some(Type::ComplexVector),
        Type::ComplexMatrix => Some(Type::ComplexMatrix),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use BinaryOp::*;
    use Type::*;

    #[test]
    fn arithmetic_promotes_scalars() {
        assert_eq!(binary(Add, &Int, &Int), Some(Int));
        assert_eq!(binary(Add, &Int, &Real), Some(Real));
        assert_eq!(binary(Mul, &Complex, &Real), Some(Complex));
        assert_eq!(binary(Div, &Int, &Int), Some(Int));
        assert_eq!(binary(Mod, &Real, &Int), None);
    }

    #[test]
    fn linear_algebra_shapes() {
        assert_eq!(binary(Mul, &RowVector, &Vector), Some(Real));
        assert_eq!(binary(Mul, &Vector, &RowVector), Some(Matrix));
        assert_eq!(binary(Mul, &Matrix, &Vector), Some(Vector));
        assert_eq!(binary(Mul, &Vector, &Matrix), None);
        assert_eq!(binary(Div, &RowVector, &Matrix), Some(RowVector));
        assert_eq!(binary(LeftDiv, &Matrix, &Vector), Some(Vector));
        assert_eq!(binary(Add, &Vector, &RowVector), None);
        assert_eq!(binary(Add, &Real, &Matrix), Some(Matrix));
        assert_eq!(binary(EltMul, &Type::array_of(Int, 1), &Matrix), None);
        assert_eq!(binary(Div, &Type::array_of(Int, 1), &Matrix), None);
    }

    #[test]
    fn pow_and_logic() {
        assert_eq!(binary(Pow, &Int, &Int), Some(Real));
        assert_eq!(binary(EltMul, &Int, &Int), Some(Int));
        assert_eq!(binary(Pow, &Real, &Int), Some(Real));
        assert_eq!(binary(Pow, &Vector, &Real), Some(Vector));
        assert_eq!(binary(And, &Real, &Int), Some(Int));
        assert_eq!(binary(Lt, &Complex, &Int), None);
        assert_eq!(unary(UnaryOp::Not, &Vector), None);
        assert_eq!(transpose(&Vector), Some(RowVector));
    }
}
