//! [`Constraint`]: one value for any transform, so callers (the reference
//! interpreter, the backends) can hold "the transform of this parameter"
//! without generics.

use super::*;

/// The identity transform of an unconstrained parameter with `len` elements.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Identity {
    pub len: usize,
}

impl Transform for Identity {
    fn name(&self) -> &'static str {
        "unconstrained"
    }
    fn unconstrained_len(&self) -> usize {
        self.len
    }
    fn constrained_len(&self) -> usize {
        self.len
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        Constrained {
            value: x.to_vec(),
            log_jacobian: 0.0,
        }
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        check_len(self.name(), y.len(), self.len)?;
        Ok(y.to_vec())
    }
    fn constrain_vjp(&self, _x: &[f64], y_bar: &[f64], _logj_bar: f64) -> Vec<f64> {
        y_bar.to_vec()
    }
}

macro_rules! constraints {
    ($($variant:ident($ty:ty)),* $(,)?) => {
        /// Any of Stan's constraint transforms, with its shape.
        #[derive(Clone, Copy, Debug, PartialEq)]
        pub enum Constraint { $($variant($ty),)* }

        impl Constraint {
            fn inner(&self) -> &dyn Transform {
                match self { $(Constraint::$variant(t) => t,)* }
            }
        }

        $(impl From<$ty> for Constraint {
            fn from(t: $ty) -> Self { Constraint::$variant(t) }
        })*
    };
}

constraints! {
    Identity(Identity),
    Lower(Lower),
    Upper(Upper),
    LowerUpper(LowerUpper),
    OffsetMultiplier(OffsetMultiplier),
    Ordered(Ordered),
    PositiveOrdered(PositiveOrdered),
    Simplex(Simplex),
    UnitVector(UnitVector),
    SumToZeroVector(SumToZeroVector),
    SumToZeroMatrix(SumToZeroMatrix),
    StochasticColumn(StochasticColumn),
    StochasticRow(StochasticRow),
    CholeskyFactorCorr(CholeskyFactorCorr),
    CholeskyFactorCov(CholeskyFactorCov),
    CorrMatrix(CorrMatrix),
    CovMatrix(CovMatrix),
}

impl Transform for Constraint {
    fn name(&self) -> &'static str {
        self.inner().name()
    }
    fn unconstrained_len(&self) -> usize {
        self.inner().unconstrained_len()
    }
    fn constrained_len(&self) -> usize {
        self.inner().constrained_len()
    }
    fn constrain(&self, x: &[f64]) -> Constrained {
        self.inner().constrain(x)
    }
    fn unconstrain(&self, y: &[f64]) -> Result<Vec<f64>, ConstraintError> {
        self.inner().unconstrain(y)
    }
    fn constrain_vjp(&self, x: &[f64], y_bar: &[f64], logj_bar: f64) -> Vec<f64> {
        self.inner().constrain_vjp(x, y_bar, logj_bar)
    }
}
