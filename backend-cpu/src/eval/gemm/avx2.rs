//! [`super::lane_product_then`] with AVX2 and FMA (no AVX-512):
//! [`super::packed_product`]'s blocking with 6-row × 8-lane register tiles,
//! the shape of BLIS's Haswell kernel. The 12 sums live in 12 of the 16
//! vector registers (2 more hold the panel's row, 1 the broadcast of A:
//! 8 loads per 12 fused multiply-adds; with a separate multiply and add,
//! 32 instructions per step kept Zen 3 near its dispatch width, 10% slower). Unpacked, at
//! 1024 lanes the rows of a block of V are 8 KiB apart and evict each
//! other from L1 (see [`super::packed_product`]). Also the last single
//! lane down A's columns ([`one_lane_down_columns`]).

use super::{Block, Finish, Packing, Strided, packed_product};
use std::arch::x86_64::*;

/// Terms of each sum per pass (a `KC × 8` panel of V is 16 KiB of the
/// 32 KiB L1; a tile's `6 × KC` slice of A 12 KiB). Each pass reloads and
/// stores the partial sums: with many terms (Xᵀ r of the logistic
/// regression, 10,000) 256 rather than 128 halves that traffic — 60–62 →
/// 57 ms per 1,024-lane product on a Zen 3.
pub(super) const KC: usize = 256;
/// Rows per block (their packed `MC × KC` slice of A is 384 KiB of the
/// 512 KiB L2).
pub(super) const MC: usize = 192;
/// Rows per register tile.
const MR: usize = 6;
/// Vectors of 4 lanes per panel of V.
const NV: usize = 2;
/// Lanes per panel of V.
const NR: usize = 4 * NV;
/// This kernel's blocking and tile shape for [`packed_product`].
const PACKING: Packing = Packing {
    kc: KC,
    mc: MC,
    mr: MR,
    nr: NR,
};

/// # Safety
/// The CPU has AVX2; sizes as [`super::lane_product_then`] asserts.
#[target_feature(enable = "avx2,fma")]
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
            // SAFETY: AVX2; the bounds are checked in `tiles`.
            unsafe { tiles(pack_a, panel, z, out, block) }
        },
        finish,
    );
}

/// Lanes `l0..l0 + lanes` of every row tile of rows `i0..i0 + rows`, terms
/// `p0..p0 + kc`, from the packed `kc × NR` panel of V for those lanes. A
/// tile with fewer rows or lanes than the registers hold goes in and out
/// of `out` through a buffer (AVX2 has no cheap masked stores of doubles).
#[inline]
#[target_feature(enable = "avx2,fma")]
unsafe fn tiles(pack_a: &[f64], panel: &[f64], z: usize, out: &mut [f64], block: Block) {
    let Block {
        rows: (i0, rows),
        terms: (p0, kc),
        l0,
        lanes,
    } = block;
    // Every read and write below stays inside these.
    assert!(lanes <= NR && kc * NR <= panel.len());
    assert!((i0 + rows - 1) * z + l0 + lanes <= out.len());
    assert!(rows.div_ceil(MR) * kc * MR <= pack_a.len());
    let vp = panel.as_ptr();
    for t in 0..rows.div_ceil(MR) {
        let valid = MR.min(rows - t * MR);
        let whole = valid == MR && lanes == NR;
        let first = (i0 + t * MR) * z + l0;
        let mut buffer = [[0.0f64; NR]; MR];
        // SAFETY: every pointer below stays inside the bounds asserted
        // above: rows of `out` past `valid` and lanes past `lanes` are
        // only touched through `buffer`.
        unsafe {
            let ap = pack_a.as_ptr().add(t * kc * MR);
            let op = out.as_mut_ptr().add(first);
            let mut acc = [[_mm256_setzero_pd(); NV]; MR];
            if p0 > 0 {
                if !whole {
                    for (r, row) in buffer.iter_mut().enumerate().take(valid) {
                        row[..lanes].copy_from_slice(&out[first + r * z..][..lanes]);
                    }
                }
                for (r, acc) in acc.iter_mut().enumerate() {
                    let from = if whole {
                        op.add(r * z)
                    } else {
                        buffer[r].as_ptr()
                    };
                    *acc = std::array::from_fn(|j| _mm256_loadu_pd(from.add(4 * j)));
                }
            }
            for p in 0..kc {
                let y: [__m256d; NV] =
                    std::array::from_fn(|j| _mm256_loadu_pd(vp.add(p * NR + 4 * j)));
                for (r, acc) in acc.iter_mut().enumerate() {
                    let x = _mm256_broadcast_sd(&*ap.add(p * MR + r));
                    for (acc, &y) in acc.iter_mut().zip(&y) {
                        // One rounding per term: the interpreter's
                        // `s = a.mul_add(b, s)`.
                        *acc = _mm256_fmadd_pd(x, y, *acc);
                    }
                }
            }
            for (r, acc) in acc.iter().enumerate() {
                let to = if whole {
                    op.add(r * z)
                } else {
                    buffer[r].as_mut_ptr()
                };
                for (j, &acc) in acc.iter().enumerate() {
                    _mm256_storeu_pd(to.add(4 * j), acc);
                }
            }
        }
        if !whole {
            for (r, row) in buffer.iter().enumerate().take(valid) {
                out[first + r * z..][..lanes].copy_from_slice(&row[..lanes]);
            }
        }
    }
}

/// [`super::one_lane_down_columns`]: rows of lane `l` from `rows.start`,
/// 16 at a time (four vectors of 4) while 16 remain, then 4 at a time in
/// one vector (the last 1–3 rows masked); returns `rows.end`. The short
/// tail matters: at Z = 1 a 100-row product left 4 rows to the one-row
/// loop, each a chain of 100 dependent additions (~1 µs of the 100-d
/// Gaussian's 8 µs gradient, two products).
///
/// # Safety
/// The CPU has AVX2; `a.rsa` is 1; sizes as [`super::lane_product_then`]
/// asserts.
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn one_lane_down_columns(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    rows: std::ops::Range<usize>,
    l: usize,
) -> usize {
    const ROWS: usize = 16;
    let mut i0 = rows.start;
    if rows.is_empty() {
        return i0;
    }
    assert!(a.rsa == 1 && l < z && rows.end <= a.m && a.k > 0);
    assert!((a.k - 1) * z + l < v.len() && (rows.end - 1) * z + l < out.len());
    assert!(rows.end - 1 + (a.k - 1) * a.csa < a.data.len());
    while i0 + ROWS <= rows.end {
        let mut sums = [0.0f64; ROWS];
        // SAFETY: A's elements read are rows i0..i0 + 16 of columns
        // 0..k, inside the data (asserted above).
        unsafe {
            let mut acc = [_mm256_setzero_pd(); ROWS / 4];
            for p in 0..a.k {
                let x = _mm256_set1_pd(*v.get_unchecked(p * z + l));
                let col = a.data.as_ptr().add(i0 + p * a.csa);
                for (j, acc) in acc.iter_mut().enumerate() {
                    let y = _mm256_loadu_pd(col.add(4 * j));
                    // `s = a.mul_add(b, s)` as the interpreter.
                    *acc = _mm256_fmadd_pd(y, x, *acc);
                }
            }
            for (j, acc) in acc.iter().enumerate() {
                _mm256_storeu_pd(sums.as_mut_ptr().add(4 * j), *acc);
            }
        }
        for (r, &s) in sums.iter().enumerate() {
            out[(i0 + r) * z + l] = s;
        }
        i0 += ROWS;
    }
    while i0 < rows.end {
        let valid = (rows.end - i0).min(4);
        let mut sums = [0.0f64; 4];
        // SAFETY: the mask loads only rows i0..i0 + valid of each column,
        // inside the data (asserted above); masked rows read as 0.
        unsafe {
            let keep = |r: usize| if r < valid { -1i64 } else { 0 };
            let mask = _mm256_setr_epi64x(keep(0), keep(1), keep(2), keep(3));
            let mut acc = _mm256_setzero_pd();
            for p in 0..a.k {
                let x = _mm256_set1_pd(*v.get_unchecked(p * z + l));
                let y = _mm256_maskload_pd(a.data.as_ptr().add(i0 + p * a.csa), mask);
                acc = _mm256_fmadd_pd(y, x, acc);
            }
            _mm256_storeu_pd(sums.as_mut_ptr(), acc);
        }
        for (r, &s) in sums.iter().enumerate().take(valid) {
            out[(i0 + r) * z + l] = s;
        }
        i0 += valid;
    }
    i0
}
