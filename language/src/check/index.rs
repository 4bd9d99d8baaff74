//! Indexing: `e[i]`, `e[i, j]`, multi-indexes and slices.

use super::codes;
use super::compat::lub_ad;
use super::context::Checker;
use super::expr::{ERROR, Typed};
use crate::span::Span;
use crate::syntax::ast::{Expr, Index};
use crate::types::{AdLevel, Type};

/// A single index (drops a dimension) or a multi-index (keeps it).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IndexKind {
    Single,
    Multi,
}

/// The type of `base` indexed by `kinds`, or `None` if there are too many
/// indexes (stanc3's `inferred_unsizedtype_of_indexed`).
pub fn indexed_type(base: &Type, kinds: &[IndexKind]) -> Option<Type> {
    use IndexKind::*;
    let Some((first, rest)) = kinds.split_first() else {
        return Some(base.clone());
    };
    let complex = base.contains_complex();
    let (vec, row, scalar) = if complex {
        (Type::ComplexVector, Type::ComplexRowVector, Type::Complex)
    } else {
        (Type::Vector, Type::RowVector, Type::Real)
    };
    match base {
        Type::Error => Some(Type::Error),
        Type::Array(elem) => {
            let inner = indexed_type(elem, rest)?;
            Some(match first {
                Single => inner,
                Multi => Type::Array(Box::new(inner)),
            })
        }
        Type::Vector | Type::RowVector | Type::ComplexVector | Type::ComplexRowVector => {
            match kinds {
                [Single] => Some(scalar),
                [Multi] => Some(base.clone()),
                _ => None,
            }
        }
        Type::Matrix | Type::ComplexMatrix => match kinds {
            [Single] | [Single, Multi] => Some(row),
            [Single, Single] => Some(scalar),
            [Multi] | [Multi, Multi] => Some(base.clone()),
            [Multi, Single] => Some(vec),
            _ => None,
        },
        _ => None,
    }
}

impl Checker {
    /// Type one index; returns its kind and autodiff level.
    pub fn index(&mut self, index: &Index) -> (IndexKind, AdLevel) {
        match index {
            Index::All(_) => (IndexKind::Multi, AdLevel::DataOnly),
            Index::Single(e) => {
                let (t, ad) = self.expr(e);
                match t {
                    Type::Int => (IndexKind::Single, ad),
                    Type::Error => (IndexKind::Single, ad),
                    Type::Array(inner) if *inner == Type::Int => (IndexKind::Multi, ad),
                    other => {
                        self.error(
                            codes::INDEX_NOT_INT,
                            format!(
                                "Index must be of type int or int[] or must be a range. Instead \
                                 found type {other}."
                            ),
                            e.span,
                        );
                        (IndexKind::Single, ad)
                    }
                }
            }
            Index::Upfrom(e) | Index::Downto(e) => {
                let (_, ad) = self.int_expr(e, "Range bound");
                (IndexKind::Multi, ad)
            }
            Index::Between(a, b) => {
                let (_, ad1) = self.int_expr(a, "Range bound");
                let (_, ad2) = self.int_expr(b, "Range bound");
                (IndexKind::Multi, lub_ad(ad1, ad2))
            }
        }
    }

    pub fn indexed(&mut self, span: Span, base: &Expr, indices: &[Index]) -> Typed {
        let (bt, bad) = self.expr(base);
        let (kinds, ad) = self.indices(indices, bad);
        self.apply_indices(span, &bt, &kinds, ad, indices.len())
    }

    pub fn indices(&mut self, indices: &[Index], base_ad: AdLevel) -> (Vec<IndexKind>, AdLevel) {
        let mut ad = base_ad;
        let kinds = indices
            .iter()
            .map(|i| {
                let (k, a) = self.index(i);
                ad = lub_ad(ad, a);
                k
            })
            .collect();
        (kinds, ad)
    }

    pub fn apply_indices(
        &mut self,
        span: Span,
        base: &Type,
        kinds: &[IndexKind],
        ad: AdLevel,
        count: usize,
    ) -> Typed {
        match indexed_type(base, kinds) {
            Some(t) => (t, ad),
            None => {
                self.error(
                    codes::BAD_INDEXING,
                    format!(
                        "Too many indexes, expression dimensions={}, indexes found={count}.",
                        dims(base)
                    ),
                    span,
                );
                ERROR
            }
        }
    }
}

/// Number of indexes a type accepts.
fn dims(t: &Type) -> usize {
    let (n, elem) = t.array_dims();
    n + match elem {
        Type::Vector | Type::RowVector | Type::ComplexVector | Type::ComplexRowVector => 1,
        Type::Matrix | Type::ComplexMatrix => 2,
        _ => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::IndexKind::*;
    use super::*;

    #[test]
    fn index_result_types() {
        let m = Type::Matrix;
        assert_eq!(indexed_type(&m, &[Single]), Some(Type::RowVector));
        assert_eq!(indexed_type(&m, &[Multi, Single]), Some(Type::Vector));
        assert_eq!(indexed_type(&m, &[Single, Single]), Some(Type::Real));
        assert_eq!(indexed_type(&m, &[Single, Single, Single]), None);
        let a = Type::array_of(Type::Vector, 2);
        assert_eq!(
            indexed_type(&a, &[Single, Multi]),
            Some(Type::array_of(Type::Vector, 1))
        );
        assert_eq!(
            indexed_type(&a, &[Single, Single, Single]),
            Some(Type::Real)
        );
        assert_eq!(indexed_type(&Type::Real, &[Single]), None);
    }
}
