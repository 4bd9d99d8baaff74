//! Type compatibility under Stan's promotion rules (stanc3's
//! `SignatureMismatch.check_same_type`) and overload selection.

use crate::types::{AdLevel, Type};

/// Cost of using a value of type `actual` where `expected` is wanted:
/// `Some(0)` for the same type, int→real and real→complex cost 1,
/// int→complex 2, element-wise through arrays and tuples; `None` if not
/// allowed. With `allow_promotion` false (function-type arguments), only
/// identical types match. `Type::Error` matches anything.
pub fn promotion_cost(expected: &Type, actual: &Type, allow_promotion: bool) -> Option<u32> {
    use Type::*;
    match (expected, actual) {
        (Error, _) | (_, Error) => Some(0),
        (a, b) if a == b => Some(0),
        (Real, Int) if allow_promotion => Some(1),
        (Complex, Int) if allow_promotion => Some(2),
        (Complex, Real)
        | (ComplexVector, Vector)
        | (ComplexRowVector, RowVector)
        | (ComplexMatrix, Matrix)
            if allow_promotion =>
        {
            Some(1)
        }
        (Array(e), Array(a)) => promotion_cost(e, a, allow_promotion),
        (Tuple(es), Tuple(as_)) if es.len() == as_.len() => es
            .iter()
            .zip(as_)
            .map(|(e, a)| promotion_cost(e, a, allow_promotion))
            .sum(),
        (Function(e), Function(a)) => {
            let same_ret = match (&e.ret, &a.ret) {
                (None, None) => true,
                (Some(x), Some(y)) => promotion_cost(x, y, false).is_some(),
                _ => false,
            };
            let same_args = e.args.len() == a.args.len()
                && e.args.iter().zip(&a.args).all(|((ead, et), (aad, at))| {
                    promotion_cost(et, at, false).is_some() && ad_compatible(*aad, *ead)
                });
            (same_ret && same_args).then_some(0)
        }
        _ => None,
    }
}

/// May an argument of autodiff level `actual` be passed where `expected`
/// is required? A data-only parameter needs a data-only argument.
pub fn ad_compatible(expected: AdLevel, actual: AdLevel) -> bool {
    expected == AdLevel::AutoDiff || actual == AdLevel::DataOnly
}

/// Why one argument list does not fit a signature (1-based argument number).
#[derive(Clone, Debug, PartialEq)]
pub enum Mismatch {
    Count {
        expected: usize,
        found: usize,
    },
    Type {
        arg: usize,
        expected: Type,
        found: Type,
    },
    DataOnly {
        arg: usize,
    },
}

/// Total promotion cost of calling `formals` with `actuals`, or why not.
pub fn match_args(
    formals: &[(AdLevel, Type)],
    actuals: &[(AdLevel, Type)],
    allow_promotion: bool,
) -> Result<u32, Mismatch> {
    if formals.len() != actuals.len() {
        return Err(Mismatch::Count {
            expected: formals.len(),
            found: actuals.len(),
        });
    }
    let mut total = 0;
    for (i, ((fad, fty), (aad, aty))) in formals.iter().zip(actuals).enumerate() {
        match promotion_cost(fty, aty, allow_promotion) {
            None => {
                return Err(Mismatch::Type {
                    arg: i + 1,
                    expected: fty.clone(),
                    found: aty.clone(),
                });
            }
            Some(c) => total += c,
        }
        if !ad_compatible(*fad, *aad) && !aty.is_error() {
            return Err(Mismatch::DataOnly { arg: i + 1 });
        }
    }
    Ok(total)
}

/// Result of choosing among overloads.
#[derive(Debug)]
pub enum Selection {
    Unique(usize),
    Ambiguous(Vec<usize>),
    /// No candidate fits; the mismatches, one per candidate.
    NoMatch(Vec<Mismatch>),
}

/// Promotion cost of a call without building an explanation (the hot
/// path of overload resolution allocates nothing).
pub fn args_cost(formals: &[(AdLevel, Type)], actuals: &[(AdLevel, Type)]) -> Option<u32> {
    if formals.len() != actuals.len() {
        return None;
    }
    let mut total = 0;
    for ((fad, fty), (aad, aty)) in formals.iter().zip(actuals) {
        total += promotion_cost(fty, aty, true)?;
        if !ad_compatible(*fad, *aad) && !aty.is_error() {
            return None;
        }
    }
    Some(total)
}

/// Pick the unique cheapest candidate (stanc3's
/// `unique_minimum_promotion`).
pub fn select<'a>(
    candidates: impl Iterator<Item = &'a [(AdLevel, Type)]> + Clone,
    actuals: &[(AdLevel, Type)],
) -> Selection {
    let mut best: Option<u32> = None;
    let mut best_idx = Vec::new();
    for (i, formals) in candidates.clone().enumerate() {
        if let Some(cost) = args_cost(formals, actuals) {
            match best {
                Some(b) if cost > b => {}
                Some(b) if cost == b => best_idx.push(i),
                _ => {
                    best = Some(cost);
                    best_idx = vec![i];
                }
            }
        }
    }
    match best_idx.len() {
        0 => Selection::NoMatch(
            candidates
                .filter_map(|formals| match_args(formals, actuals, true).err())
                .collect(),
        ),
        1 => Selection::Unique(best_idx[0]),
        _ => Selection::Ambiguous(best_idx),
    }
}

/// The least upper bound of two types for `?:` branches and array
/// elements (stanc3's `common_type`).
pub fn common_type(a: &Type, b: &Type) -> Option<Type> {
    if a.is_error() {
        return Some(b.clone());
    }
    if b.is_error() || promotion_cost(a, b, true).is_some() {
        return Some(a.clone());
    }
    if promotion_cost(b, a, true).is_some() {
        return Some(b.clone());
    }
    match (a, b) {
        (Type::Tuple(xs), Type::Tuple(ys)) if xs.len() == ys.len() => xs
            .iter()
            .zip(ys)
            .map(|(x, y)| common_type(x, y))
            .collect::<Option<Vec<_>>>()
            .map(Type::Tuple),
        (Type::Array(x), Type::Array(y)) => common_type(x, y).map(|t| Type::Array(Box::new(t))),
        _ => None,
    }
}

/// The higher of two autodiff levels.
pub fn lub_ad(a: AdLevel, b: AdLevel) -> AdLevel {
    a.max(b)
}

/// Integers (and containers of them) are never autodiff.
pub fn ad_for_type(ad: AdLevel, ty: &Type) -> AdLevel {
    if is_discrete(ty) {
        AdLevel::DataOnly
    } else {
        ad
    }
}

/// `int`, an array of `int`, or a tuple of such.
pub fn is_discrete(ty: &Type) -> bool {
    match ty.array_dims().1 {
        Type::Int => true,
        Type::Tuple(ts) => ts.iter().all(is_discrete),
        _ => false,
    }
}

/// True if an `int` occurs anywhere inside (tuples included).
pub fn contains_int(ty: &Type) -> bool {
    match ty {
        Type::Int => true,
        Type::Array(t) => contains_int(t),
        Type::Tuple(ts) => ts.iter().any(contains_int),
        _ => false,
    }
}

/// "first", "second", ... for messages.
pub fn ordinal(n: usize) -> String {
    match n {
        1 => "first".into(),
        2 => "second".into(),
        3 => "third".into(),
        4 => "fourth".into(),
        5 => "fifth".into(),
        n => format!("{n}th"),
    }
}

/// Explain a mismatch in Stan users' words.
pub fn explain(m: &Mismatch) -> String {
    match m {
        Mismatch::Count { expected, found } => {
            format!("Expected {expected} arguments but got {found} arguments.")
        }
        Mismatch::Type {
            arg,
            expected,
            found,
        } => format!(
            "The {} argument must be {} but got {}.",
            ordinal(*arg),
            expected,
            found
        ),
        Mismatch::DataOnly { arg } => format!(
            "The {} argument is marked data-only. (Local variables are assumed to depend on \
             parameters; same goes for function inputs unless they are marked with the keyword \
             'data'.)",
            ordinal(*arg)
        ),
    }
}

/// A signature in Stan syntax, e.g. `(vector, data real) => real`.
pub fn display_signature(args: &[(AdLevel, Type)], ret: Option<&Type>) -> String {
    let args: Vec<String> = args
        .iter()
        .map(|(ad, t)| match ad {
            AdLevel::DataOnly => format!("data {t}"),
            AdLevel::AutoDiff => t.to_string(),
        })
        .collect();
    let ret = ret.map_or("void".to_string(), Type::to_string);
    format!("({}) => {}", args.join(", "), ret)
}

#[cfg(test)]
mod tests {
    use super::*;
    use Type::*;

    #[test]
    fn promotions_follow_stan() {
        assert_eq!(promotion_cost(&Real, &Int, true), Some(1));
        assert_eq!(promotion_cost(&Complex, &Int, true), Some(2));
        assert_eq!(promotion_cost(&Int, &Real, true), None);
        let arr = |t| Type::array_of(t, 2);
        assert_eq!(promotion_cost(&arr(Real), &arr(Int), true), Some(1));
        assert_eq!(promotion_cost(&arr(Real), &arr(Int), false), None);
        assert_eq!(promotion_cost(&ComplexVector, &Vector, true), Some(1));
        assert_eq!(promotion_cost(&Vector, &RowVector, true), None);
        assert_eq!(
            promotion_cost(&Tuple(vec![Real, Complex]), &Tuple(vec![Int, Int]), true),
            Some(3)
        );
    }

    #[test]
    fn selection_prefers_fewest_promotions_and_reports_ties() {
        let a = vec![(AdLevel::AutoDiff, Real), (AdLevel::AutoDiff, Int)];
        let b = vec![(AdLevel::AutoDiff, Int), (AdLevel::AutoDiff, Real)];
        let c = vec![(AdLevel::AutoDiff, Int), (AdLevel::AutoDiff, Int)];
        let ints = [(AdLevel::DataOnly, Int), (AdLevel::DataOnly, Int)];
        let cands = [a.as_slice(), b.as_slice()];
        assert!(matches!(
            select(cands.iter().copied(), &ints),
            Selection::Ambiguous(v) if v == vec![0, 1]
        ));
        let cands = [a.as_slice(), b.as_slice(), c.as_slice()];
        assert!(matches!(
            select(cands.iter().copied(), &ints),
            Selection::Unique(2)
        ));
    }

    #[test]
    fn data_only_formal_rejects_autodiff_actual() {
        let formals = [(AdLevel::DataOnly, Real)];
        assert_eq!(
            match_args(&formals, &[(AdLevel::AutoDiff, Real)], true),
            Err(Mismatch::DataOnly { arg: 1 })
        );
        assert_eq!(
            match_args(&formals, &[(AdLevel::DataOnly, Int)], true),
            Ok(1)
        );
    }

    #[test]
    fn common_type_promotes() {
        assert_eq!(common_type(&Int, &Real), Some(Real));
        assert_eq!(common_type(&Real, &Complex), Some(Complex));
        assert_eq!(common_type(&Vector, &RowVector), None);
        assert_eq!(
            common_type(&Type::array_of(Int, 1), &Type::array_of(Real, 1)),
            Some(Type::array_of(Real, 1))
        );
    }
}
