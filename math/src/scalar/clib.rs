//! The C library's special functions (`erf`, `erfc`, `lgamma`, `tgamma`,
//! `jn`, `yn`), as the generated code calls them (`backend-cuda`'s prelude
//! uses the C library: g++ links it for `--backend native`), so that the
//! interpreter, the batched CPU executor and the compiled code give the
//! same bits — Rust's own `exp`, `ln`, `sin`, … are the C library's
//! already. The `libm` crate (a port of musl's) differed from glibc's
//! `lgamma` and `erfc` in the last bit for some arguments, so a native
//! chain of a model with `student_t` or `Phi` drifted off the CPU
//! backend's after a few draws. Where there is no C library to call
//! (non-Unix targets), the `libm` crate stands in.

#[cfg(unix)]
mod c {
    unsafe extern "C" {
        pub fn erf(x: f64) -> f64;
        pub fn erfc(x: f64) -> f64;
        // The reentrant form: `lgamma` writes the global `signgam`.
        pub fn lgamma_r(x: f64, sign: *mut i32) -> f64;
        pub fn tgamma(x: f64) -> f64;
        pub fn jn(n: i32, x: f64) -> f64;
        pub fn yn(n: i32, x: f64) -> f64;
    }
}

#[cfg(unix)]
pub fn erf(x: f64) -> f64 {
    // SAFETY: a pure C library function of a double.
    unsafe { c::erf(x) }
}
#[cfg(unix)]
pub fn erfc(x: f64) -> f64 {
    // SAFETY: as `erf`.
    unsafe { c::erfc(x) }
}
#[cfg(unix)]
pub fn lgamma(x: f64) -> f64 {
    let mut sign = 0;
    // SAFETY: as `erf`; `sign` is a valid int to write.
    unsafe { c::lgamma_r(x, &mut sign) }
}
#[cfg(unix)]
pub fn tgamma(x: f64) -> f64 {
    // SAFETY: as `erf`.
    unsafe { c::tgamma(x) }
}
#[cfg(unix)]
pub fn jn(n: i32, x: f64) -> f64 {
    // SAFETY: as `erf`.
    unsafe { c::jn(n, x) }
}
#[cfg(unix)]
pub fn yn(n: i32, x: f64) -> f64 {
    // SAFETY: as `erf`.
    unsafe { c::yn(n, x) }
}

#[cfg(not(unix))]
pub use libm::{erf, erfc, jn, lgamma, tgamma, yn};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_library_functions_answer() {
        assert_eq!(erf(0.0), 0.0);
        assert_eq!(erfc(0.0), 1.0);
        assert!((lgamma(5.0) - 24f64.ln()).abs() < 1e-14);
        assert_eq!(lgamma(-1.0), f64::INFINITY);
        assert!((tgamma(5.0) - 24.0).abs() < 1e-12);
        assert!((jn(0, 0.0) - 1.0).abs() < 1e-15);
        assert!(yn(0, 1.0) < 0.1);
    }
}
