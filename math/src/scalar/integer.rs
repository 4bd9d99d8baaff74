//! Integer operations with Stan's semantics: division truncates toward zero,
//! the modulus takes the sign of the dividend, and division by zero or
//! overflow is an error (Stan throws), never a panic.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IntError {
    DivisionByZero,
    Overflow,
    /// An argument outside the function's domain (e.g. `choose(-1, 2)`).
    Domain,
}

impl fmt::Display for IntError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            IntError::DivisionByZero => "integer division by zero",
            IntError::Overflow => "integer overflow",
            IntError::Domain => "argument outside the function's domain",
        })
    }
}

impl std::error::Error for IntError {}

/// Stan's `int / int`: truncates toward zero (`-7 / 2 == -3`).
pub fn int_divide(a: i64, b: i64) -> Result<i64, IntError> {
    if b == 0 {
        return Err(IntError::DivisionByZero);
    }
    a.checked_div(b).ok_or(IntError::Overflow)
}

/// Stan's `a % b`: the result has the sign of `a` (`-7 % 2 == -1`).
pub fn modulus(a: i64, b: i64) -> Result<i64, IntError> {
    if b == 0 {
        return Err(IntError::DivisionByZero);
    }
    a.checked_rem(b).ok_or(IntError::Overflow)
}

/// Binomial coefficient for integers; 0 when k > n, error for negatives or
/// when the result overflows Stan's 32-bit `int`.
pub fn choose(n: i64, k: i64) -> Result<i64, IntError> {
    if n < 0 || k < 0 {
        return Err(IntError::Domain);
    }
    if k > n {
        return Ok(0);
    }
    let k = k.min(n - k);
    let mut result: i128 = 1;
    for i in 0..k {
        result = result * i128::from(n - i) / i128::from(i + 1);
    }
    if result > i128::from(i32::MAX) {
        return Err(IntError::Overflow);
    }
    Ok(result as i64)
}

/// `int_step(x)`: 1 if x > 0 else 0 (also 0 for NaN).
pub fn int_step(x: f64) -> i64 {
    i64::from(x > 0.0)
}

/// Stan's real `step(x)`: 0 if x < 0 else 1.
pub fn step(x: f64) -> f64 {
    if x < 0.0 { 0.0 } else { 1.0 }
}

/// Stan's truthiness of a real in conditions and logical operators.
pub fn is_true(x: f64) -> bool {
    x != 0.0
}

/// `logical_negation`, `logical_and`, … return Stan ints 0/1.
pub fn logical_negation(x: f64) -> i64 {
    i64::from(!is_true(x))
}
pub fn logical_and(a: f64, b: f64) -> i64 {
    i64::from(is_true(a) && is_true(b))
}
pub fn logical_or(a: f64, b: f64) -> i64 {
    i64::from(is_true(a) || is_true(b))
}
