//! Generators for the vectorised families of signatures (stanc3's
//! `add_binary_vec*`, deep unary vectorisation, argument classes).

use super::{Builder, arr};
use crate::types::Type;

/// stanc3 expands container nesting up to this many array dimensions.
pub(crate) const MAX_DEPTH: usize = 8;

pub(crate) const BARE_TYPES: [Type; 9] = [
    Type::Int,
    Type::Real,
    Type::Complex,
    Type::Vector,
    Type::RowVector,
    Type::Matrix,
    Type::ComplexVector,
    Type::ComplexRowVector,
    Type::ComplexMatrix,
];

const COMPLEX_TYPES: [Type; 4] = [
    Type::Complex,
    Type::ComplexVector,
    Type::ComplexRowVector,
    Type::ComplexMatrix,
];

/// An argument class: the set of concrete types one argument position
/// accepts (stanc3's `dimensionality`).
#[derive(Clone, Copy, Debug)]
pub(crate) enum Class {
    Int,
    Real,
    Vector,
    Matrix,
    IntArray,
    /// `int`, `array[] int`.
    VInt,
    /// `real`, `array[] real`, `vector`, `row_vector`.
    VReal,
    /// `VReal` plus `VInt` (used where stanc3 lists ints explicitly).
    IntAndReals,
    /// `vector`, `array[] vector`, `row_vector`, `array[] row_vector`.
    Vectors,
    /// int, real, row_vector, vector, matrix nested in 0..8 arrays.
    DeepVectorized,
    /// complex scalars and containers nested in 0..8 arrays.
    DeepComplexVectorized,
}

impl Class {
    pub(crate) fn expand(self) -> Vec<Type> {
        use Type as T;
        match self {
            Class::Int => vec![T::Int],
            Class::Real => vec![T::Real],
            Class::Vector => vec![T::Vector],
            Class::Matrix => vec![T::Matrix],
            Class::IntArray => vec![arr(&T::Int, 1)],
            Class::VInt => vec![T::Int, arr(&T::Int, 1)],
            Class::VReal => vec![T::Real, arr(&T::Real, 1), T::Vector, T::RowVector],
            Class::IntAndReals => {
                let mut v = Class::VReal.expand();
                v.extend(Class::VInt.expand());
                v
            }
            Class::Vectors => vec![
                T::Vector,
                arr(&T::Vector, 1),
                T::RowVector,
                arr(&T::RowVector, 1),
            ],
            Class::DeepVectorized => deep(&[T::Int, T::Real, T::RowVector, T::Vector, T::Matrix]),
            Class::DeepComplexVectorized => deep(&COMPLEX_TYPES),
        }
    }
}

fn deep(bases: &[Type]) -> Vec<Type> {
    bases
        .iter()
        .flat_map(|base| (0..MAX_DEPTH).map(move |d| arr(base, d)))
        .collect()
}

/// Every combination of one type per class (cartesian product).
pub(crate) fn combinations(classes: &[Class]) -> Vec<Vec<Type>> {
    classes.iter().fold(vec![Vec::new()], |acc, class| {
        let options = class.expand();
        acc.iter()
            .flat_map(|prefix| {
                options.iter().map(move |t| {
                    let mut v = prefix.clone();
                    v.push(t.clone());
                    v
                })
            })
            .collect()
    })
}

/// How a unary vectorised function's return type follows its argument.
#[derive(Clone, Copy)]
pub(crate) enum Returns {
    SameAsArg,
    IntsToReals,
    ComplexToReals,
}

pub(crate) fn ints_to_real(t: &Type) -> Type {
    match t {
        Type::Int => Type::Real,
        Type::Array(inner) => Type::Array(Box::new(ints_to_real(inner))),
        other => other.clone(),
    }
}

pub(crate) fn complex_to_real(t: &Type) -> Type {
    match t {
        Type::Complex => Type::Real,
        Type::ComplexVector => Type::Vector,
        Type::ComplexRowVector => Type::RowVector,
        Type::ComplexMatrix => Type::Matrix,
        Type::Array(inner) => Type::Array(Box::new(complex_to_real(inner))),
        other => other.clone(),
    }
}

pub(crate) fn real_to_complex(t: &Type) -> Type {
    match t {
        Type::Real => Type::Complex,
        Type::Vector => Type::ComplexVector,
        Type::RowVector => Type::ComplexRowVector,
        Type::Matrix => Type::ComplexMatrix,
        Type::Array(inner) => Type::Array(Box::new(real_to_complex(inner))),
        other => other.clone(),
    }
}

impl Builder {
    pub(crate) fn unary_vectorized(&mut self, name: &str, class: Class, returns: Returns) {
        for t in class.expand() {
            let ret = match returns {
                Returns::SameAsArg => t.clone(),
                Returns::IntsToReals => ints_to_real(&t),
                Returns::ComplexToReals => complex_to_real(&t),
            };
            self.add(name, ret, vec![t]);
        }
    }

    /// stanc3's `add_binary_vec_general`: scalar×scalar, then same-shape
    /// containers, then container×scalar and scalar×container.
    fn binary_vec_general(
        &mut self,
        name: &str,
        return_fn: fn(&Type) -> Type,
        vectors: &[Type],
        scalars: &[Type],
    ) {
        for i in scalars {
            for j in scalars {
                self.add(name, return_fn(i), vec![i.clone(), j.clone()]);
            }
        }
        for depth in 0..MAX_DEPTH {
            for v in vectors {
                let t = arr(v, depth);
                self.add(name, return_fn(&t), vec![t.clone(), t]);
            }
        }
        for s in scalars {
            for depth in 0..MAX_DEPTH {
                for v in vectors {
                    let t = arr(v, depth);
                    self.add(name, return_fn(&t), vec![t, s.clone()]);
                }
            }
        }
        for s in scalars {
            for depth in 0..MAX_DEPTH {
                for v in vectors {
                    let t = arr(v, depth);
                    self.add(name, return_fn(&t), vec![s.clone(), t]);
                }
            }
        }
    }

    /// Binary functions over ints and reals, elementwise over containers.
    pub(crate) fn binary_vec(&mut self, name: &str) {
        self.binary_vec_general(
            name,
            ints_to_real,
            &[
                arr(&Type::Int, 1),
                arr(&Type::Real, 1),
                Type::Vector,
                Type::RowVector,
                Type::Matrix,
            ],
            &[Type::Int, Type::Real],
        );
    }

    pub(crate) fn binary_vec_real_real(&mut self, name: &str) {
        self.binary_vec_general(
            name,
            Type::clone,
            &[
                arr(&Type::Real, 1),
                Type::Vector,
                Type::RowVector,
                Type::Matrix,
            ],
            &[Type::Real],
        );
    }

    pub(crate) fn binary_vec_complex_complex(&mut self, name: &str) {
        self.binary_vec_general(
            name,
            Type::clone,
            &[
                arr(&Type::Complex, 1),
                Type::ComplexVector,
                Type::ComplexRowVector,
                Type::ComplexMatrix,
            ],
            &[Type::Complex],
        );
    }

    pub(crate) fn binary_vec_reals_to_complex(&mut self, name: &str) {
        self.binary_vec_general(
            name,
            real_to_complex,
            &[
                arr(&Type::Real, 1),
                Type::Vector,
                Type::RowVector,
                Type::Matrix,
            ],
            &[Type::Real],
        );
    }

    /// First argument int-valued (possibly a container), second real-valued.
    pub(crate) fn binary_vec_int_real(&mut self, name: &str) {
        let reals = [
            arr(&Type::Real, 1),
            Type::Vector,
            Type::RowVector,
            Type::Matrix,
        ];
        for v in &reals {
            for d in 0..MAX_DEPTH {
                let t = arr(v, d);
                self.add(name, t.clone(), vec![Type::Int, t]);
            }
        }
        for v in &reals[..3] {
            for d in 0..MAX_DEPTH {
                let t = arr(v, d);
                self.add(name, t.clone(), vec![arr(&Type::Int, d + 1), t]);
            }
        }
        for d in 0..MAX_DEPTH {
            let t = arr(&Type::Matrix, d);
            self.add(name, t.clone(), vec![arr(&Type::Int, d + 2), t]);
        }
        for d in 0..MAX_DEPTH {
            self.add(
                name,
                arr(&Type::Real, d),
                vec![arr(&Type::Int, d), Type::Real],
            );
        }
    }

    /// First argument real-valued (possibly a container), second int-valued.
    pub(crate) fn binary_vec_real_int(&mut self, name: &str) {
        let reals = [
            arr(&Type::Real, 1),
            Type::Vector,
            Type::RowVector,
            Type::Matrix,
        ];
        for v in &reals {
            for d in 0..MAX_DEPTH {
                let t = arr(v, d);
                self.add(name, t.clone(), vec![t, Type::Int]);
            }
        }
        for v in &reals[..3] {
            for d in 0..MAX_DEPTH {
                let t = arr(v, d);
                self.add(name, t.clone(), vec![t, arr(&Type::Int, d + 1)]);
            }
        }
        for d in 0..MAX_DEPTH {
            let t = arr(&Type::Matrix, d);
            self.add(name, t.clone(), vec![t, arr(&Type::Int, d + 2)]);
        }
        for d in 0..MAX_DEPTH {
            self.add(
                name,
                arr(&Type::Real, d),
                vec![Type::Real, arr(&Type::Int, d)],
            );
        }
    }

    pub(crate) fn binary_vec_int_int(&mut self, name: &str) {
        for d in 0..MAX_DEPTH {
            let t = arr(&Type::Int, d);
            self.add(name, t.clone(), vec![t, Type::Int]);
        }
        for d in 1..MAX_DEPTH {
            let t = arr(&Type::Int, d);
            self.add(name, t.clone(), vec![Type::Int, t]);
        }
        for d in 1..MAX_DEPTH {
            let t = arr(&Type::Int, d);
            self.add(name, t.clone(), vec![t.clone(), t]);
        }
    }

    /// Bound transforms: the first argument may be a container, the bound
    /// a scalar or the same container.
    pub(crate) fn first_arg_vector_binary(&mut self, name: &str) {
        self.add(name, Type::Real, vec![Type::Real, Type::Real]);
        for d in 0..MAX_DEPTH {
            for v in [
                arr(&Type::Real, 1),
                Type::Vector,
                Type::RowVector,
                Type::Matrix,
            ] {
                let t = arr(&v, d);
                self.add(name, t.clone(), vec![t.clone(), t.clone()]);
                self.add(name, t.clone(), vec![t, Type::Real]);
            }
        }
    }

    pub(crate) fn first_arg_vector_ternary(&mut self, name: &str) {
        self.add(name, Type::Real, vec![Type::Real, Type::Real, Type::Real]);
        for d in 0..MAX_DEPTH {
            for v in [
                arr(&Type::Real, 1),
                Type::Vector,
                Type::RowVector,
                Type::Matrix,
            ] {
                let t = arr(&v, d);
                self.add(name, t.clone(), vec![t.clone(), t.clone(), t.clone()]);
                self.add(name, t.clone(), vec![t.clone(), t.clone(), Type::Real]);
                self.add(name, t.clone(), vec![t.clone(), Type::Real, t.clone()]);
                // In the stanc3 corpus (lower_upper_bound_jacobian.stan),
                // newer than the Generate.ml revision followed here.
                self.add(name, t.clone(), vec![t, Type::Real, Type::Real]);
            }
        }
    }

    /// `base` and arrays of it, returned unchanged in shape.
    pub(crate) fn nested_unary(&mut self, name: &str, base: Type) {
        for d in 0..MAX_DEPTH {
            let t = arr(&base, d);
            self.add(name, t.clone(), vec![t]);
        }
    }

    /// `fma`: any mix of real scalars and one container kind.
    pub(crate) fn ternary_vec(&mut self, name: &str) {
        self.add(name, Type::Real, vec![Type::Real, Type::Real, Type::Real]);
        for c in [Type::Vector, Type::RowVector, Type::Matrix] {
            let r = Type::Real;
            let combos = [
                [&c, &r, &r],
                [&c, &c, &r],
                [&c, &r, &c],
                [&c, &c, &c],
                [&r, &c, &r],
                [&r, &c, &c],
                [&r, &r, &c],
            ];
            for combo in combos {
                self.add(
                    name,
                    c.clone(),
                    combo.iter().map(|t| (*t).clone()).collect(),
                );
            }
        }
    }
}
