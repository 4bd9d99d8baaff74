//! [`super::lane_product_then`] with AVX-512: [`super::packed_product`]'s
//! blocking with 8-row × 24-lane register tiles. Each tile of sums lives in
//! 24 of the 32 vector registers (3 more hold the panel's row, 1 the
//! broadcast of A: 11 loads per 48 multiplies and 48 adds; 16 lanes
//! measured 10–15% slower); the last lanes (fewer than 24) are masked.
//! Written with intrinsics because LLVM turns the same loop over arrays
//! into gathers and scatters. Also the last single lane down A's columns
//! ([`one_lane_down_columns`]).

use super::{Block, Finish, Packing, Strided, packed_product};
use std::arch::x86_64::*;

/// Terms of each sum per pass (a `KC × 24` panel of V is 24 KiB of
/// the 48 KiB L1).
pub(super) const KC: usize = 128;
/// Rows per block (their packed `MC × KC` slice of A is 256 KiB).
pub(super) const MC: usize = 256;
/// Rows per register tile.
const MR: usize = 8;
/// Lanes per panel of V (three vectors of 8).
const NR: usize = 24;
/// This kernel's blocking and tile shape for [`packed_product`].
const PACKING: Packing = Packing {
    kc: KC,
    mc: MC,
    mr: MR,
    nr: NR,
};

/// # Safety
/// The CPU has AVX-512F; sizes as [`super::lane_product_then`] asserts.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn lane_product(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    finish: Finish<'_>,
) {
    packed_product(
        a,
        v,
        z,
        out,
        PACKING,
        |pack_a, panel, out, block| {
            let lanes = block.lanes;
            // SAFETY: AVX-512F; the bounds are checked in `tiles`.
            unsafe {
                match lanes.div_ceil(8) {
                    3 => tiles::<3>(pack_a, panel, z, out, block, mask(lanes - 16)),
                    2 => tiles::<2>(pack_a, panel, z, out, block, mask(lanes - 8)),
                    _ => tiles::<1>(pack_a, panel, z, out, block, mask(lanes)),
                }
            }
        },
        finish,
    );
}

/// [`super::one_lane_down_columns`]: rows `rows` of lane `l`, 32 at a
/// time, then the last rows (fewer than 32) one vector of 8 at a time
/// (masked).
///
/// # Safety
/// The CPU has AVX-512F; `a.rsa` is 1; sizes as
/// [`super::lane_product_then`] asserts.
#[target_feature(enable = "avx512f")]
pub(super) unsafe fn one_lane_down_columns(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    rows: std::ops::Range<usize>,
    l: usize,
) {
    assert!(a.rsa == 1 && l < z && rows.end <= a.m && a.k > 0);
    assert!((a.k - 1) * z + l < v.len() && (rows.end - 1) * z + l < out.len());
    assert!(rows.end - 1 + (a.k - 1) * a.csa < a.data.len());
    let mut i0 = rows.start;
    while i0 < rows.end {
        let n = (rows.end - i0).min(32);
        let masks: [__mmask8; 4] = std::array::from_fn(|j| mask(n.saturating_sub(8 * j).min(8)));
        let mut sums = [0.0f64; 32];
        // SAFETY: A's elements read are rows i0..i0 + n (masked) of
        // columns 0..k, inside the data (asserted above).
        unsafe {
            let mut acc = [_mm512_setzero_pd(); 4];
            for p in 0..a.k {
                let x = _mm512_set1_pd(*v.get_unchecked(p * z + l));
                let col = a.data.as_ptr().add(i0 + p * a.csa);
                for (j, acc) in acc.iter_mut().enumerate() {
                    let y = _mm512_maskz_loadu_pd(masks[j], col.add(8 * j));
                    // `s = a.mul_add(b, s)` as the interpreter.
                    *acc = _mm512_fmadd_pd(y, x, *acc);
                }
            }
            for (j, acc) in acc.iter().enumerate() {
                _mm512_storeu_pd(sums.as_mut_ptr().add(8 * j), *acc);
            }
        }
        for (r, &s) in sums[..n].iter().enumerate() {
            out[(i0 + r) * z + l] = s;
        }
        i0 += n;
    }
}

/// The low `n` of 8 lanes.
fn mask(n: usize) -> __mmask8 {
    ((1u16 << n) - 1) as __mmask8
}

/// Lanes `l0..` (`NV` vectors of 8, the last stored under `last`) of
/// every row tile of rows `i0..i0 + rows`, terms `p0..p0 + kc`, from
/// the packed `kc × NR` panel of V for those lanes.
#[inline]
#[target_feature(enable = "avx512f")]
unsafe fn tiles<const NV: usize>(
    pack_a: &[f64],
    panel: &[f64],
    z: usize,
    out: &mut [f64],
    block: Block,
    last: __mmask8,
) {
    let Block {
        rows: (i0, rows),
        terms: (p0, kc),
        l0,
        ..
    } = block;
    let width = 8 * (NV - 1) + last.count_ones() as usize;
    // Every read and write below stays inside these.
    assert!(NV * 8 <= NR && kc * NR <= panel.len());
    assert!((i0 + rows - 1) * z + l0 + width <= out.len());
    assert!(rows.div_ceil(MR) * kc * MR <= pack_a.len());
    // SAFETY: every pointer below stays inside the bounds asserted
    // above (masked-off lanes of out are not touched).
    unsafe {
        let masks: [__mmask8; NV] = std::array::from_fn(|j| if j + 1 == NV { last } else { 0xff });
        let vp = panel.as_ptr();
        for t in 0..rows.div_ceil(MR) {
            let ap = pack_a.as_ptr().add(t * kc * MR);
            let op = out.as_mut_ptr().add((i0 + t * MR) * z + l0);
            let valid = MR.min(rows - t * MR);
            let mut acc = [[_mm512_setzero_pd(); NV]; MR];
            if p0 > 0 {
                for (r, acc) in acc.iter_mut().enumerate().take(valid) {
                    for (j, acc) in acc.iter_mut().enumerate() {
                        *acc = _mm512_maskz_loadu_pd(masks[j], op.add(r * z + 8 * j));
                    }
                }
            }
            for p in 0..kc {
                let y: [__m512d; NV] =
                    std::array::from_fn(|j| _mm512_loadu_pd(vp.add(p * NR + 8 * j)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm512_set1_pd(*ap.add(p * MR + r));
                    for (acc, &y) in acc.iter_mut().zip(&y) {
                        // One rounding per term: the interpreter's
                        // `s = a.mul_add(b, s)`.
                        *acc = _mm512_fmadd_pd(x, y, *acc);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate().take(valid) {
                for (j, &acc) in acc.iter().enumerate() {
                    _mm512_mask_storeu_pd(op.add(r * z + 8 * j), masks[j], acc);
                }
            }
        }
    }
}
