//! `exp` on (−∞, 0] and `log1p` on [0, 1] without branches or calls, so a
//! loop mapping them (or a function built on them, like
//! [`inv_logit`](super::inv_logit)) over a slice vectorizes. They are the
//! ONE implementation both the interpreter and the batched kernels call,
//! so every lane stays bit-for-bit the interpreter's. fdlibm's algorithms
//! (`e_exp.c`, `s_log1p.c`), restricted to those domains (which is all the
//! logistic functions need: `exp(−|u|)` and `log1p` of it), with the
//! special cases turned into selects, `exp`'s division replaced by a
//! polynomial, and the polynomials evaluated by Estrin's scheme: both
//! shorten each lane's dependency chain, which bounds these maps' speed
//! more than their op count. Error below 1 ulp, as fdlibm's (the tests
//! compare with libm over millions of points, edges included).
//!
//! The polynomials' terms are fused multiply-adds (`mul_add`): a map of
//! these functions over a slice is bound by each element's chain of
//! dependent operations (the out-of-order window holds only a few
//! elements), and an FMA is one link where a multiply and an add were two
//! (`log_inv_logit` over 10⁷ numbers, AVX2: 6.6 → 5.2 ns each on a Zen 3).
//! Every SIMD width still rounds identically: an FMA rounds once,
//! exactly, whether it is a vector instruction (the kernels are compiled
//! with FMA enabled) or a call to libm's `fma` (the scalar build). The
//! range reductions stay plain multiplies and adds, as fdlibm's error
//! analysis has them.

/// fdlibm's ln 2 split: `LN2_HI` has 21 trailing zero bits, so `k·LN2_HI`
/// is exact for |k| < 2²¹.
const LN2_HI: f64 = f64::from_bits(0x3fe6_2e42_fee0_0000);
const LN2_LO: f64 = f64::from_bits(0x3dea_39ef_3579_3c76);
const INV_LN2: f64 = f64::from_bits(0x3ff7_1547_652b_82fe);
/// Minimax polynomial `E(r) = ½ + E1·r + … + E9·r⁹` for `(eʳ − 1 − r)/r²`
/// on |r| ≤ ln 2 / 2 (Remez, leading coefficient pinned to ½): `r²·E(r)`
/// is within 0.054·2⁻⁵³ of `eʳ − 1 − r`. From `scripts/exp_nonpos_poly.py`.
const E1: f64 = f64::from_bits(0x3fc5_5555_5555_555c);
const E2: f64 = f64::from_bits(0x3fa5_5555_5555_3169);
const E3: f64 = f64::from_bits(0x3f81_1111_1110_e57a);
const E4: f64 = f64::from_bits(0x3f56_c16c_17cf_4a9a);
const E5: f64 = f64::from_bits(0x3f2a_01a0_1b67_4a68);
const E6: f64 = f64::from_bits(0x3efa_019a_a941_0fe9);
const E7: f64 = f64::from_bits(0x3ec7_1dde_87c6_b792);
const E8: f64 = f64::from_bits(0x3e92_8a02_04b2_2411);
const E9: f64 = f64::from_bits(0x3e5a_f793_aa92_8e77);
/// fdlibm `s_log1p.c`'s minimax polynomial for `log((1+s)/(1−s))`.
const LP1: f64 = f64::from_bits(0x3fe5_5555_5555_5593);
const LP2: f64 = f64::from_bits(0x3fd9_9999_9997_fa04);
const LP3: f64 = f64::from_bits(0x3fd2_4924_9422_9359);
const LP4: f64 = f64::from_bits(0x3fcc_71c5_1d8e_78af);
const LP5: f64 = f64::from_bits(0x3fc7_4664_96cb_03de);
const LP6: f64 = f64::from_bits(0x3fc3_9a09_d078_c69f);
const LP7: f64 = f64::from_bits(0x3fc2_f112_df3e_5244);

/// `2^k` for −1022 ≤ k ≤ 1023.
#[inline(always)]
fn pow2(k: i32) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `eˣ` for `x ≤ 0` (and NaN → NaN); for `x > 0` the result is wrong.
#[inline(always)]
pub fn exp_nonpos(x: f64) -> f64 {
    exp_nonpos_finish(exp_nonpos_reduce(x))
}

/// The first of [`exp_nonpos`]'s two steps: the range reduction of `x`.
/// A map can reduce a run of elements first and finish them after
/// ([`exp_nonpos_finish`]): the same operations per element (so the same
/// bits), in two shorter chains of dependent operations, which the
/// out-of-order core overlaps better than one long one.
#[inline(always)]
pub fn exp_nonpos_reduce(x: f64) -> ExpReduced {
    // Below −746, eˣ rounds to 0 (and k stays in range); NaN passes.
    let x = if x < -746.0 { -746.0 } else { x };
    // k = round(x / ln 2), read from the low bits of x/ln 2 + 1.5·2⁵².
    const SHIFT: f64 = 6_755_399_441_055_744.0;
    let shifted = x * INV_LN2 + SHIFT;
    let kf = shifted - SHIFT;
    // x = k ln 2 + r, |r| ≤ ln 2 / 2, as hi − lo.
    ExpReduced {
        hi: x - kf * LN2_HI,
        lo: kf * LN2_LO,
        shifted,
    }
}

/// `x = k ln 2 + (hi − lo)` ([`exp_nonpos_reduce`]), k in `shifted`'s low
/// bits.
#[derive(Clone, Copy, Debug)]
pub struct ExpReduced {
    pub hi: f64,
    pub lo: f64,
    pub shifted: f64,
}

/// The second of [`exp_nonpos`]'s two steps: `eˣ` from its reduction.
#[inline(always)]
pub fn exp_nonpos_finish(ExpReduced { hi, lo, shifted }: ExpReduced) -> f64 {
    let k = shifted.to_bits() as i32;
    let r = hi - lo;
    // eʳ − 1 − r as r²·E(r), a polynomial: no division, whose latency
    // (fdlibm's `r·c/(2 − c)`) lay on the chain of every lane. Estrin's
    // scheme for the same reason: a short dependency chain lets the
    // out-of-order core overlap more elements of a map than Horner's.
    let r2 = r * r;
    let r4 = r2 * r2;
    let e = r4.mul_add(
        r4.mul_add(
            r.mul_add(E9, E8),
            r2.mul_add(r.mul_add(E7, E6), r.mul_add(E5, E4)),
        ),
        r2.mul_add(r.mul_add(E3, E2), r.mul_add(E1, 0.5)),
    );
    let y = 1.0 - ((lo - r2 * e) - hi);
    // y·2ᵏ with k ≥ −1076: two normal powers of two, so the product
    // rounds once (into the subnormals when it must), as fdlibm's
    // y·2^(k+1000)·2^−1000.
    let k1 = k >> 1;
    y * pow2(k1) * pow2(k - k1)
}

/// `log(1 + t)` for `0 ≤ t ≤ 1` (and NaN → NaN); outside, wrong.
#[inline(always)]
pub fn log1p_unit(t: f64) -> f64 {
    // 1 + t = 2ᵏ(1 + f) with √2/2 ≤ 1 + f < √2: k is 0 (f = t exactly)
    // or 1 (f = (1 + t)/2 − 1, exact, with c the rounding error of 1 + t
    // relative to it).
    let u = 1.0 + t;
    let big = t > std::f64::consts::SQRT_2 - 1.0;
    let k = if big { 1.0 } else { 0.0 };
    let f = if big { u * 0.5 - 1.0 } else { t };
    let c = if big { (t - (u - 1.0)) / u } else { 0.0 };
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    // Estrin's scheme, as in exp_nonpos: a shorter chain than Horner's.
    let z2 = z * z;
    let z4 = z2 * z2;
    let r = z * z4.mul_add(
        z2.mul_add(LP7, z.mul_add(LP6, LP5)),
        z2.mul_add(z.mul_add(LP4, LP3), z.mul_add(LP2, LP1)),
    );
    k * LN2_HI - ((hfsq - (s * (hfsq + r) + (k * LN2_LO + c))) - f)
}
