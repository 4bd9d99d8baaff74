//! Stan's implicit promotions and overload resolution, shared by built-in
//! and user-defined functions (stanc3's `SignatureMismatch` rules).

use super::Signature;
use crate::types::{AdLevel, Type};

/// Why no unique signature was selected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OverloadError {
    /// No candidate accepts the arguments (or the name has no signatures).
    NoMatch,
    /// Several candidates need the same, minimal number of promotions;
    /// the indices of all of them, in candidate order.
    Ambiguous(Vec<usize>),
}

/// Cost of implicitly converting a value of type `from` to type `to`, or
/// `None` if it cannot be converted. Costs follow stanc3: int→real and
/// real→complex (also vector→complex_vector etc.) cost 1, int→complex 2;
/// arrays promote elementwise at the element's cost and tuples sum their
/// elements' costs. `Type::Error` converts to and from anything for free.
pub fn promotion_cost(from: &Type, to: &Type) -> Option<u32> {
    promotion_cost_at(from, to, true)
}

/// `scalar_promotions` is false inside function types, whose argument and
/// return types must match exactly (stanc3 checks them at depth ≥ 1).
fn promotion_cost_at(from: &Type, to: &Type, scalar_promotions: bool) -> Option<u32> {
    use Type::*;
    match (from, to) {
        (Error, _) | (_, Error) => Some(0),
        (Int, Real) if scalar_promotions => Some(1),
        (Int, Complex) if scalar_promotions => Some(2),
        (Real, Complex)
        | (Vector, ComplexVector)
        | (RowVector, ComplexRowVector)
        | (Matrix, ComplexMatrix)
            if scalar_promotions =>
        {
            Some(1)
        }
        (Array(a), Array(b)) => promotion_cost_at(a, b, scalar_promotions),
        (Tuple(xs), Tuple(ys)) if xs.len() == ys.len() => xs
            .iter()
            .zip(ys)
            .map(|(x, y)| promotion_cost_at(x, y, scalar_promotions))
            .sum(),
        (Function(given), Function(expected)) => {
            // Same return type; arguments are contravariant: the passed
            // function must accept every argument the caller will give it.
            let ret_ok = match (&given.ret, &expected.ret) {
                (None, None) => true,
                (Some(a), Some(b)) => promotion_cost_at(a, b, false) == Some(0),
                _ => false,
            };
            let args_ok = given.args.len() == expected.args.len()
                && given.args.iter().zip(&expected.args).all(
                    |((given_ad, given_ty), (expected_ad, expected_ty))| {
                        promotion_cost_at(expected_ty, given_ty, false) == Some(0)
                            && ad_level_accepts(*given_ad, *expected_ad)
                    },
                );
            (ret_ok && args_ok).then_some(0)
        }
        (a, b) if a == b => Some(0),
        _ => None,
    }
}

/// A parameter declared at `param` accepts an argument at `arg`: a
/// data-only parameter requires a data-only argument.
pub fn ad_level_accepts(param: AdLevel, arg: AdLevel) -> bool {
    !(param == AdLevel::DataOnly && arg == AdLevel::AutoDiff)
}

/// Total promotion cost of calling `sig` with `args`, or `None` if the
/// signature does not accept them.
pub fn signature_cost(sig: &Signature, args: &[(AdLevel, Type)]) -> Option<u32> {
    if sig.args.len() != args.len() {
        return None;
    }
    let mut total = 0;
    for ((param_ad, param_ty), (arg_ad, arg_ty)) in sig.args.iter().zip(args) {
        if !arg_ty.is_error() && !ad_level_accepts(*param_ad, *arg_ad) {
            return None;
        }
        total += promotion_cost(arg_ty, param_ty)?;
    }
    Some(total)
}

/// Picks the unique candidate needing the fewest promotions (stanc3's
/// `unique_minimum_promotion`); equal minimal costs are `Ambiguous`.
pub fn select_overload(
    cands: &[Signature],
    args: &[(AdLevel, Type)],
) -> Result<usize, OverloadError> {
    let mut best_cost = u32::MAX;
    let mut best: Vec<usize> = Vec::new();
    for (index, sig) in cands.iter().enumerate() {
        let Some(cost) = signature_cost(sig, args) else {
            continue;
        };
        if cost < best_cost {
            best_cost = cost;
            best.clear();
        }
        if cost == best_cost {
            best.push(index);
        }
    }
    match best.len() {
        0 => Err(OverloadError::NoMatch),
        1 => Ok(best[0]),
        _ => Err(OverloadError::Ambiguous(best)),
    }
}
