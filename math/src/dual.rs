//! A minimal forward-mode dual number.
//!
//! Used internally to differentiate iterative algorithms (continued fractions,
//! series) with respect to a shape parameter: running the same iteration on
//! duals yields the derivative of the converged value without a separate,
//! hand-derived series for each partial.

use std::ops::{Add, Div, Mul, Neg, Sub};

/// `v + d·ε` with `ε² = 0`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dual {
    pub v: f64,
    pub d: f64,
}

impl Dual {
    pub const fn constant(v: f64) -> Self {
        Self { v, d: 0.0 }
    }
    pub const fn variable(v: f64) -> Self {
        Self { v, d: 1.0 }
    }
    pub fn ln(self) -> Self {
        Self {
            v: self.v.ln(),
            d: self.d / self.v,
        }
    }
    pub fn exp(self) -> Self {
        let e = self.v.exp();
        Self {
            v: e,
            d: self.d * e,
        }
    }
    pub fn abs(self) -> Self {
        if self.v < 0.0 { -self } else { self }
    }
    pub fn lgamma(self) -> Self {
        Self {
            v: crate::scalar::lgamma(self.v),
            d: self.d * crate::scalar::digamma(self.v),
        }
    }
}

impl From<f64> for Dual {
    fn from(v: f64) -> Self {
        Self::constant(v)
    }
}

impl Add for Dual {
    type Output = Self;
    fn add(self, o: Self) -> Self {
        Self {
            v: self.v + o.v,
            d: self.d + o.d,
        }
    }
}
impl Sub for Dual {
    type Output = Self;
    fn sub(self, o: Self) -> Self {
        Self {
            v: self.v - o.v,
            d: self.d - o.d,
        }
    }
}
impl Mul for Dual {
    type Output = Self;
    fn mul(self, o: Self) -> Self {
        Self {
            v: self.v * o.v,
            d: self.d * o.v + self.v * o.d,
        }
    }
}
impl Div for Dual {
    type Output = Self;
    fn div(self, o: Self) -> Self {
        Self {
            v: self.v / o.v,
            d: (self.d * o.v - self.v * o.d) / (o.v * o.v),
        }
    }
}
impl Neg for Dual {
    type Output = Self;
    fn neg(self) -> Self {
        Self {
            v: -self.v,
            d: -self.d,
        }
    }
}
impl Add<f64> for Dual {
    type Output = Self;
    fn add(self, o: f64) -> Self {
        Self {
            v: self.v + o,
            d: self.d,
        }
    }
}
impl Sub<f64> for Dual {
    type Output = Self;
    fn sub(self, o: f64) -> Self {
        Self {
            v: self.v - o,
            d: self.d,
        }
    }
}
impl Mul<f64> for Dual {
    type Output = Self;
    fn mul(self, o: f64) -> Self {
        Self {
            v: self.v * o,
            d: self.d * o,
        }
    }
}
