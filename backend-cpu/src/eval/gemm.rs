//! Shared matrix × per-lane vectors as one matrix-matrix product: a dense
//! vector slot `[D][Z]` is a row-major D×Z matrix, so `X v` for all lanes
//! is X (N×D, column-major) · V (D×Z) → `[N][Z]`, computed by bat's own
//! lane-parallel kernel ([`lane_product`]) so that every lane's result is
//! the interpreter's, bit for bit.

use crate::lanes::{Dense, Slot};
use language::data::Shape;
use language::value::Value;

/// `a * b` with `a` a shared matrix (`transposed`: its transpose) and `b`
/// a dense vector, or `a` a dense row vector and `b` a shared matrix.
/// `None` when the operands are not of that form or sizes do not match
/// (the caller then reports the interpreter's error).
pub(crate) fn multiply(a: &Slot, b: &Slot, transposed: bool) -> Option<Slot> {
    match (a, b) {
        (Slot::Shared(m), Slot::Real(v)) => {
            let Value::Matrix { rows, cols, data } = &**m else {
                return None;
            };
            let Shape::Vector(n) = v.shape else {
                return None;
            };
            // op(M) is out_rows × n.
            let (out_rows, inner, rsa, csa) = if transposed {
                (*cols, *rows, *rows, 1)
            } else {
                (*rows, *cols, 1, *rows)
            };
            if inner != n {
                return None;
            }
            Some(Slot::Real(product(
                data,
                out_rows,
                inner,
                rsa,
                csa,
                v,
                Shape::Vector(out_rows),
            )))
        }
        (Slot::Real(v), Slot::Shared(m)) if !transposed => {
            let Value::Matrix { rows, cols, data } = &**m else {
                return None;
            };
            let Shape::RowVector(n) = v.shape else {
                return None;
            };
            if *rows != n {
                return None;
            }
            // x M for every lane is Mᵀ (cols × rows) · X (rows × Z).
            Some(Slot::Real(product(
                data,
                *cols,
                *rows,
                *rows,
                1,
                v,
                Shape::RowVector(*cols),
            )))
        }
        _ => None,
    }
}

/// A (m×k, strides rsa/csa) · V (k×Z) into a fresh `[m][Z]` block.
fn product(
    a: &[f64],
    m: usize,
    k: usize,
    rsa: usize,
    csa: usize,
    v: &Dense<f64>,
    shape: Shape,
) -> Dense<f64> {
    let z = v.z;
    let mut out = crate::lanes::pool::buffer(m * z);
    out.resize(m * z, 0.0);
    if m > 0 && k > 0 {
        lane_product(
            Strided {
                data: a,
                m,
                k,
                rsa,
                csa,
            },
            &v.data,
            z,
            &mut out,
        );
    }
    Dense::new(shape, z, out)
}

/// A shared matrix A (m×k): element (i, p) is `data[i * rsa + p * csa]`.
#[derive(Clone, Copy)]
struct Strided<'a> {
    data: &'a [f64],
    m: usize,
    k: usize,
    rsa: usize,
    csa: usize,
}

/// `out[i][l] = Σ_p A[i, p] · V[p][l]` for all lanes `l < z` (V and out
/// row-major `[row][lane]`).
///
/// Every output element is summed over p = 0, 1, ..., k−1 in that order,
/// from 0.0, with a separate multiply and add: exactly the scalar
/// interpreter's loop. So each lane's result is bit-identical to the
/// interpreter's and never depends on how many lanes share the batch or
/// where the lane sits in it — a chain's draws are the same whatever
/// `--chains`, `--threads` or `--batching` (a BLAS GEMM blocks the sum
/// differently by position and would break that). Speed comes from
/// running 8 lanes × 4 rows at once (lanes are contiguous, so the inner
/// loop is SIMD over lanes; the last lanes in blocks of 4, 2 and 1 with
/// more rows at once, so a batch of a few chains is not one long chain of
/// dependent additions), blocks of rows that stay in cache while the
/// lanes stream past, and AVX2 where the CPU has it; with AVX-512, the
/// last single lane (all of Z = 1) 32 rows at a time down A's columns
/// ([`one_lane_down_columns`]) and, from 16 lanes on, the cache-blocked
/// register-tiled kernel of [`avx512`] (below that, packing A costs more
/// than it saves: at one lane A is used once).
fn lane_product(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
    assert!(a.m == 0 || a.k == 0 || (a.m - 1) * a.rsa + (a.k - 1) * a.csa < a.data.len());
    assert!(v.len() >= a.k * z && out.len() >= a.m * z);
    #[cfg(target_arch = "x86_64")]
    {
        // Packing pays off once it serves at least 16 lanes.
        if z >= 16 && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe { avx512::lane_product(a, v, z, out) };
        }
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU has AVX2 (checked above).
            return unsafe { lane_product_avx2(a, v, z, out) };
        }
    }
    lane_product_any(a, v, z, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
fn lane_product_avx2(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
    lane_product_any(a, v, z, out)
}

/// Rows whose part of A stays in cache while every lane block passes.
const ROW_BLOCK: usize = 64;

#[inline(always)]
fn lane_product_any(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
    for i_block in (0..a.m).step_by(ROW_BLOCK) {
        let rows = i_block..(i_block + ROW_BLOCK).min(a.m);
        // Blocks of 8 lanes, then 4, 2 and 1 for the last lanes: with few
        // chains (Z < 8) the work still runs as several independent sums
        // at once instead of one dependent chain of additions per element.
        let mut l0 = 0;
        while l0 + 8 <= z {
            lane_block::<8, 4>(a, v, z, out, rows.clone(), l0);
            l0 += 8;
        }
        if l0 + 4 <= z {
            lane_block::<4, 4>(a, v, z, out, rows.clone(), l0);
            l0 += 4;
        }
        if l0 + 2 <= z {
            lane_block::<2, 8>(a, v, z, out, rows.clone(), l0);
            l0 += 2;
        }
        if l0 < z && !one_lane_down_columns(a, v, z, out, rows.clone(), l0) {
            lane_block::<1, 8>(a, v, z, out, rows, l0);
        }
    }
}

/// Lane `l` of rows `rows` when A's columns are contiguous (`rsa` 1, as a
/// stored matrix is) and the CPU has AVX-512: 32 rows' sums at once in
/// four vector registers, each still over p = 0..k in ascending order,
/// read down A's columns so the rows are neighbours in memory (one chain —
/// the whole batch at Z = 1 — is otherwise a few scalar chains of
/// additions: LLVM does not vectorize that loop over rows by itself).
/// `false` (nothing written) when it does not apply.
#[inline(always)]
fn one_lane_down_columns(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    rows: std::ops::Range<usize>,
    l: usize,
) -> bool {
    #[cfg(target_arch = "x86_64")]
    if a.rsa == 1 && std::arch::is_x86_feature_detected!("avx512f") {
        // SAFETY: the CPU has AVX-512F (checked above).
        unsafe { avx512::one_lane_down_columns(a, v, z, out, rows, l) };
        return true;
    }
    let _ = (a, v, z, out, rows, l);
    false
}

/// Lanes `l0..l0 + L` of rows `rows`, `R` rows × `L` lanes of sums in
/// registers at once (then the last rows one at a time). Each output
/// element is still its own sum over p = 0..k in ascending order.
#[inline(always)]
fn lane_block<const L: usize, const R: usize>(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    rows: std::ops::Range<usize>,
    l0: usize,
) {
    let at = |i: usize, p: usize| a.data[i * a.rsa + p * a.csa];
    let mut i0 = rows.start;
    while i0 + R <= rows.end {
        let mut acc = [[0.0f64; L]; R];
        for p in 0..a.k {
            let vp: &[f64; L] = v[p * z + l0..p * z + l0 + L]
                .try_into()
                .expect("a block of lanes");
            for (r, acc) in acc.iter_mut().enumerate() {
                let x = at(i0 + r, p);
                for (o, &y) in acc.iter_mut().zip(vp) {
                    *o += x * y;
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            out[(i0 + r) * z + l0..(i0 + r) * z + l0 + L].copy_from_slice(acc);
        }
        i0 += R;
    }
    for i in i0..rows.end {
        let mut acc = [0.0f64; L];
        for p in 0..a.k {
            let x = at(i, p);
            for (o, &y) in acc.iter_mut().zip(&v[p * z + l0..p * z + l0 + L]) {
                *o += x * y;
            }
        }
        out[i * z + l0..i * z + l0 + L].copy_from_slice(&acc);
    }
}

/// [`lane_product`] with AVX-512: GEMM-style blocking that leaves each
/// sum's order alone. p runs in blocks of [`KC`](avx512::KC) (a partial
/// sum parked in `out` between blocks and reloaded is the same sum). Both
/// operands are packed, as a GEMM packs them: each block of V's rows is
/// copied into panels of 24 lanes × `KC` terms, contiguous (V's rows are
/// `Z` lanes apart — at 1024 lanes 8 KiB, so an unpacked panel's rows all
/// fall in the same few L1 sets and evict each other); rows of A in blocks
/// of [`MC`](avx512::MC) whose slice of A is packed 8 rows side by side
/// per p (the broadcasts read contiguous memory, and the block stays in
/// L2). A panel of V stays in L1 while every row tile of the block
/// passes. Each 8-row × 24-lane tile of sums lives in 24 of the 32 vector
/// registers (3 more hold the panel's row, 1 the broadcast of A: 11 loads
/// per 48 multiplies and 48 adds; 16 lanes measured 10–15% slower); the
/// last lanes (fewer than 24) go in a panel padded with zeros whose sums
/// are never stored. Written with intrinsics because
/// LLVM turns the same loop over arrays into gathers and scatters.
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::Strided;
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

    /// # Safety
    /// The CPU has AVX-512F; sizes as [`super::lane_product`] asserts.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn lane_product(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
        let kc_max = KC.min(a.k);
        let mut pack_a = vec![0.0f64; MC.min(a.m).div_ceil(MR) * MR * kc_max];
        let panels = z.div_ceil(NR);
        let mut pack_v = vec![0.0f64; panels * kc_max * NR];
        for p0 in (0..a.k).step_by(KC) {
            let kc = KC.min(a.k - p0);
            // Panel j holds lanes j·NR + l of term p0 + p at
            // pack_v[(j·kc + p)·NR + l] (lanes past z stay zero).
            for p in 0..kc {
                let row = &v[(p0 + p) * z..(p0 + p + 1) * z];
                for (j, lanes) in row.chunks(NR).enumerate() {
                    let at = (j * kc + p) * NR;
                    pack_v[at..at + lanes.len()].copy_from_slice(lanes);
                }
            }
            for i0 in (0..a.m).step_by(MC) {
                let rows = MC.min(a.m - i0);
                // Tile t holds rows i0 + t·MR + r as pack_a[(t·kc + p)·MR + r]
                // (rows past the end are zeros whose sums are never stored).
                for t in 0..rows.div_ceil(MR) {
                    let tile = &mut pack_a[t * kc * MR..(t + 1) * kc * MR];
                    for (p, col) in tile.chunks_exact_mut(MR).enumerate() {
                        for (r, x) in col.iter_mut().enumerate() {
                            let i = i0 + t * MR + r;
                            *x = if i < a.m {
                                a.data[i * a.rsa + (p0 + p) * a.csa]
                            } else {
                                0.0
                            };
                        }
                    }
                }
                for j in 0..panels {
                    let l0 = j * NR;
                    let lanes = (z - l0).min(NR);
                    let panel = &pack_v[j * kc * NR..(j + 1) * kc * NR];
                    let block = Block {
                        rows: (i0, rows),
                        terms: (p0, kc),
                        l0,
                    };
                    // SAFETY: AVX-512F; the bounds are checked in `tiles`.
                    unsafe {
                        match lanes.div_ceil(8) {
                            3 => tiles::<3>(&pack_a, panel, z, out, block, mask(lanes - 16)),
                            2 => tiles::<2>(&pack_a, panel, z, out, block, mask(lanes - 8)),
                            _ => tiles::<1>(&pack_a, panel, z, out, block, mask(lanes)),
                        }
                    }
                }
            }
        }
    }

    /// Where [`tiles`] works: rows `i0..i0 + rows` (`rows.0`, `rows.1`),
    /// terms `p0..p0 + kc`, lanes from `l0`.
    #[derive(Clone, Copy)]
    struct Block {
        rows: (usize, usize),
        terms: (usize, usize),
        l0: usize,
    }

    /// [`super::one_lane_down_columns`]: rows `rows` of lane `l`, 32 at a
    /// time, then the last rows (fewer than 32) one vector of 8 at a time
    /// (masked).
    ///
    /// # Safety
    /// The CPU has AVX-512F; `a.rsa` is 1; sizes as
    /// [`super::lane_product`] asserts.
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
            let masks: [__mmask8; 4] =
                std::array::from_fn(|j| mask(n.saturating_sub(8 * j).min(8)));
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
                        // `s += a * b` as the interpreter: no FMA.
                        *acc = _mm512_add_pd(*acc, _mm512_mul_pd(y, x));
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
        } = block;
        let width = 8 * (NV - 1) + last.count_ones() as usize;
        // Every read and write below stays inside these.
        assert!(NV * 8 <= NR && kc * NR <= panel.len());
        assert!((i0 + rows - 1) * z + l0 + width <= out.len());
        assert!(rows.div_ceil(MR) * kc * MR <= pack_a.len());
        // SAFETY: every pointer below stays inside the bounds asserted
        // above (masked-off lanes of out are not touched).
        unsafe {
            let masks: [__mmask8; NV] =
                std::array::from_fn(|j| if j + 1 == NV { last } else { 0xff });
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
                            // A separate rounding of the product, then of the
                            // sum: the interpreter's `s += a * b` (no FMA).
                            *acc = _mm512_add_pd(*acc, _mm512_mul_pd(x, y));
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
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The interpreter's loop for one lane: Σ_p in ascending order from 0.
    fn reference(a: Strided, v: &[f64], z: usize, l: usize) -> Vec<f64> {
        (0..a.m)
            .map(|i| {
                let mut s = 0.0;
                for p in 0..a.k {
                    s += a.data[i * a.rsa + p * a.csa] * v[p * z + l];
                }
                s
            })
            .collect()
    }

    type Kernel = fn(Strided, &[f64], usize, &mut [f64]);

    /// Every instruction-set path this CPU can run, and the dispatcher.
    fn kernels() -> Vec<(&'static str, Kernel)> {
        let mut ks: Vec<(&'static str, Kernel)> =
            vec![("dispatch", lane_product), ("portable", lane_product_any)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                ks.push(("avx2", |a, v, z, out| unsafe {
                    lane_product_avx2(a, v, z, out)
                }));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                ks.push(("avx512", |a, v, z, out| unsafe {
                    avx512::lane_product(a, v, z, out)
                }));
            }
        }
        ks
    }

    /// Every lane of every batch size, on every path, against the scalar
    /// loop, bit for bit; lane 0 (the same vector in every batch) never
    /// changes with the batch.
    fn check_every_lane(m: usize, k: usize, zs: &[usize]) {
        let data: Vec<f64> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.3)
            .collect();
        let lane = |l: usize| -> Vec<f64> {
            (0..k)
                .map(|p| ((p * 13 + l * 7) % 29) as f64 / 3.1 - 4.0)
                .collect()
        };
        for (rsa, csa) in [(1, m), (k, 1)] {
            let a = Strided {
                data: &data,
                m,
                k,
                rsa,
                csa,
            };
            for (name, kernel) in kernels() {
                let mut seen: Option<Vec<f64>> = None;
                for &z in zs {
                    let mut v = vec![0.0; k * z];
                    for l in 0..z {
                        for (p, x) in lane(l).into_iter().enumerate() {
                            v[p * z + l] = x;
                        }
                    }
                    let mut out = vec![f64::NAN; m * z];
                    kernel(a, &v, z, &mut out);
                    for l in 0..z {
                        let got: Vec<f64> = (0..m).map(|i| out[i * z + l]).collect();
                        let want = reference(a, &v, z, l);
                        assert!(
                            got.iter()
                                .zip(&want)
                                .all(|(g, w)| g.to_bits() == w.to_bits()),
                            "{name}: lane {l} of {z} differs (m {m}, k {k}, rsa {rsa})"
                        );
                    }
                    let lane0: Vec<f64> = (0..m).map(|i| out[i * z]).collect();
                    if let Some(prev) = &seen {
                        assert_eq!(prev, &lane0);
                    }
                    seen = Some(lane0);
                }
            }
        }
    }

    #[test]
    fn every_lane_equals_the_scalar_loop_bit_for_bit_whatever_the_batch() {
        // Odd sizes exercise the row and lane remainders; both layouts of A.
        check_every_lane(70, 13, &[1, 2, 3, 4, 5, 7, 8, 13, 19, 64]);
    }

    #[test]
    fn sums_split_across_blocks_are_still_the_scalar_loop() {
        // k spans three p blocks (the last partial) and m two row blocks
        // (the last tile partial); z covers full 24-lane panels and
        // partial ones of 1, 3, 7 (after 24), 16, 17, 20 and 23 lanes.
        #[cfg(target_arch = "x86_64")]
        const _: () = assert!(avx512::MC == 256 && avx512::KC == 128);
        check_every_lane(256 + 13, 2 * 128 + 37, &[1, 3, 16, 17, 20, 31, 47]);
    }
}
