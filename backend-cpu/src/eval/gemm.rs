//! Shared matrix × per-lane vectors as one matrix-matrix product: a dense
//! vector slot `[D][Z]` is a row-major D×Z matrix, so `X v` for all lanes
//! is X (N×D, column-major) · V (D×Z) → `[N][Z]`, computed by bat's own
//! lane-parallel kernel ([`lane_product_then`]) so that every lane's result is
//! the interpreter's, bit for bit.

use crate::lanes::{Dense, Slot};
use language::data::Shape;
use language::value::Value;

/// `a * b` with `a` a shared matrix (`transposed`: its transpose) and `b`
/// a dense vector, or `a` a dense row vector and `b` a shared matrix.
/// `None` when the operands are not of that form or sizes do not match
/// (the caller then reports the interpreter's error).
pub(crate) fn multiply(a: &Slot, b: &Slot, transposed: bool) -> Option<Slot> {
    multiply_then(a, b, transposed, &mut |_, _, _| {})
}

/// `s + A v` for every lane: `a` a shared matrix, `v` a dense vector,
/// `addend` a real per lane or shared — the product of [`multiply`] with
/// the sum taken on each panel of sums as soon as they are final (still in
/// cache) instead of in a pass of its own over the N × Z result (for a
/// logistic regression's `α + X β`, 41 MB read and written per 512 lanes).
/// The interpreter's `add` of the two, element by element: the same bits
/// (IEEE addition is commutative; which NaN payload a sum of two NaNs
/// keeps Rust leaves unspecified either way). Also returns how many of the
/// sums are not finite (counted on the same panels: an argument check of
/// the sums that follows — a linear predictor's `check_not_nan` — needs no
/// pass of its own when there are none). `None` when the operands are not
/// of that form.
pub(crate) fn multiply_then_add(a: &Slot, v: &Slot, addend: &Slot) -> Option<(Slot, usize)> {
    let (Slot::Shared(_), Slot::Real(lanes)) = (a, v) else {
        return None;
    };
    let z = lanes.z;
    let shared;
    let addend: &[f64] = match addend {
        Slot::Real(s) if s.shape == Shape::Real && s.z == z => &s.data,
        Slot::Shared(x) => match **x {
            Value::Real(x) => {
                shared = vec![x; z];
                &shared
            }
            _ => return None,
        },
        _ => return None,
    };
    let mut not_finite = 0;
    let sum = multiply_then(a, v, false, &mut |rows, lanes, out| {
        let addend = &addend[lanes.clone()];
        for i in rows {
            let row = &mut out[i * z + lanes.start..i * z + lanes.end];
            for (o, &s) in row.iter_mut().zip(addend) {
                *o += s;
                not_finite += usize::from(!o.is_finite());
            }
        }
    })?;
    Some((sum, not_finite))
}

/// [`multiply`], `finish` called on the sums as they become final.
fn multiply_then(a: &Slot, b: &Slot, transposed: bool, finish: Finish<'_>) -> Option<Slot> {
    let (m, v) = match (a, b) {
        (Slot::Shared(m), Slot::Real(v)) | (Slot::Real(v), Slot::Shared(m)) => (m, v),
        _ => return None,
    };
    let Value::Matrix { rows, cols, data } = &**m else {
        return None;
    };
    let (rows, cols) = (*rows, *cols);
    // M as stored, and Mᵀ (read across).
    let plain = Strided {
        data,
        m: rows,
        k: cols,
        rsa: 1,
        csa: rows,
    };
    let across = Strided {
        data,
        m: cols,
        k: rows,
        rsa: rows,
        csa: 1,
    };
    let (a, shape) = match (a, &v.shape) {
        (Slot::Shared(_), &Shape::Vector(n)) => {
            let a = if transposed { across } else { plain };
            if a.k != n {
                return None;
            }
            (a, Shape::Vector(a.m))
        }
        // x M for every lane is Mᵀ (cols × rows) · X (rows × Z).
        (Slot::Real(_), &Shape::RowVector(n)) if !transposed && rows == n => {
            (across, Shape::RowVector(cols))
        }
        _ => return None,
    };
    Some(Slot::Real(product(a, v, shape, finish)))
}

/// A · V (k×Z) into a fresh `[m][Z]` block, `finish` called on every sum
/// once as it becomes final.
fn product(a: Strided, v: &Dense<f64>, shape: Shape, finish: Finish<'_>) -> Dense<f64> {
    let (m, k, z) = (a.m, a.k, v.z);
    // Every kernel writes each output number without reading it first
    // (the packed ones reread only what their first block of terms wrote),
    // so a kept buffer is not zeroed first; with no terms the sums are 0.
    let mut out = if k > 0 {
        crate::lanes::pool::overwritable(m * z, 0.0)
    } else {
        crate::lanes::pool::filled(m * z, 0.0)
    };
    if m > 0 && k > 0 {
        lane_product_then(a, &v.data, z, &mut out, finish);
    } else {
        finish(0..m, 0..z, &mut out);
    }
    Dense::new(shape, z, out)
}

/// Called with rows and lanes whose sums are final (and `out`), each
/// element once: an elementwise step fused into the product while its
/// numbers are still in cache (a packed kernel's panel of rows × lanes,
/// just written), such as [`multiply_then_add`]'s addend.
type Finish<'f> = &'f mut dyn FnMut(std::ops::Range<usize>, std::ops::Range<usize>, &mut [f64]);

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
/// from 0.0, one fused multiply-add per term: exactly the scalar
/// interpreter's loop (`linalg::matmul`). The AVX2 paths need FMA as well
/// (every AVX2 CPU of Intel and AMD has it); without it the portable loop's
/// `mul_add` is the C library's `fma`, the same numbers, slower. So each
/// lane's result is bit-identical to the interpreter's and never depends on how many lanes share the batch or
/// where the lane sits in it — a chain's draws are the same whatever
/// `--chains`, `--threads` or `--batching` (a BLAS GEMM blocks the sum
/// differently by position and would break that). Speed comes from
/// running 8 lanes × 4 rows at once (lanes are contiguous, so the inner
/// loop is SIMD over lanes; the last lanes in blocks of 4, 2 and 1 with
/// more rows at once, so a batch of a few chains is not one long chain of
/// dependent additions), blocks of rows that stay in cache while the
/// lanes stream past, and AVX2 where the CPU has it; with AVX-512 or
/// AVX2, the last single lane (all of Z = 1) 32 or 16 rows at a time
/// down A's columns ([`one_lane_down_columns`]); from 16 lanes on, the
/// cache-blocked register-tiled kernels of [`packed_product`]
/// ([`avx512`], else [`avx2`]; below that, packing A costs more than it
/// saves: at one lane A is used once). `finish` is called on the sums as
/// they become final: each packed panel of rows × lanes as soon as its last
/// block of terms is added, else all of them at the end.
fn lane_product_then(a: Strided, v: &[f64], z: usize, out: &mut [f64], finish: Finish<'_>) {
    assert!(a.m == 0 || a.k == 0 || (a.m - 1) * a.rsa + (a.k - 1) * a.csa < a.data.len());
    assert!(v.len() >= a.k * z && out.len() >= a.m * z);
    #[cfg(target_arch = "x86_64")]
    {
        // Packing pays off once it serves at least 16 lanes.
        if z >= 16 && std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked above).
            return unsafe { avx512::lane_product(a, v, z, out, finish) };
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe {
                if z >= 16 {
                    avx2::lane_product(a, v, z, out, finish)
                } else {
                    lane_product_avx2(a, v, z, out);
                    finish(0..a.m, 0..z, out)
                }
            };
        }
    }
    lane_product_any(a, v, z, out);
    finish(0..a.m, 0..z, out)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
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
        if l0 < z {
            let done = one_lane_down_columns(a, v, z, out, rows.clone(), l0);
            lane_block::<1, 8>(a, v, z, out, done..rows.end, l0);
        }
    }
}

/// Lane `l` of rows `rows` when A's columns are contiguous (`rsa` 1, as a
/// stored matrix is) and the CPU has AVX-512 (32 rows' sums at once in four
/// vector registers, the last rows masked) or AVX2 (16 rows at once in four
/// registers while 16 remain, then 4 in one, the last masked), each still
/// over p = 0..k in ascending
/// order, read down A's columns so the rows are neighbours in memory (one
/// chain — the whole batch at Z = 1 — is otherwise a few scalar chains of
/// additions: LLVM does not vectorize that loop over rows by itself).
/// Returns the first row it did not compute (`rows.start` when it does not
/// apply); the caller computes the rest.
#[inline(always)]
fn one_lane_down_columns(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    rows: std::ops::Range<usize>,
    l: usize,
) -> usize {
    #[cfg(target_arch = "x86_64")]
    if a.rsa == 1 {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked above).
            unsafe { avx512::one_lane_down_columns(a, v, z, out, rows.clone(), l) };
            return rows.end;
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            // SAFETY: the CPU has AVX2 and FMA (checked above).
            return unsafe { avx2::one_lane_down_columns(a, v, z, out, rows, l) };
        }
    }
    let _ = (a, v, z, out, l);
    rows.start
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
                    *o = x.mul_add(y, *o);
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
                *o = x.mul_add(y, *o);
            }
        }
        out[i * z + l0..i * z + l0 + L].copy_from_slice(&acc);
    }
}

/// GEMM-style blocking for the packed kernels ([`avx2`], [`avx512`]) that
/// leaves each sum's order alone. p runs in blocks of `kc` terms (a partial
/// sum parked in `out` between blocks and reloaded is the same sum). Both
/// operands are packed, as a GEMM packs them: each block of V's rows is
/// copied into panels of `nr` lanes × `kc` terms, contiguous (V's rows are
/// `Z` lanes apart — at 1024 lanes 8 KiB, so an unpacked panel's rows all
/// fall in the same few L1 sets and evict each other); rows of A in blocks
/// of `mc` whose slice of A is packed `mr` rows side by side per p (the
/// broadcasts read contiguous memory, and the block stays in L2). A panel
/// of V stays in L1 while every row tile of the block passes; `tiles`
/// computes them. The last lanes (fewer than `nr`) go in a panel padded
/// with zeros, and the last rows in a tile padded with zero rows, whose
/// sums `tiles` never stores.
#[derive(Clone, Copy)]
struct Packing {
    /// Terms of each sum per pass.
    kc: usize,
    /// Rows of A per packed block.
    mc: usize,
    /// Rows per register tile.
    mr: usize,
    /// Lanes per panel of V.
    nr: usize,
}

/// Where a tile kernel works: rows `i0..i0 + rows` (`rows.0`, `rows.1`),
/// terms `p0..p0 + kc` (`terms`), lanes `l0..l0 + lanes`.
#[derive(Clone, Copy)]
struct Block {
    rows: (usize, usize),
    terms: (usize, usize),
    l0: usize,
    lanes: usize,
}

/// [`lane_product_then`] with no finishing step (the kernels' tests).
#[cfg(test)]
fn lane_product(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
    lane_product_then(a, v, z, out, &mut |_, _, _| {})
}

/// [`lane_product_then`] by `packing`: `tiles(pack_a, panel, out, block)` adds
/// the block's terms to every row tile of the packed rows for the lanes of
/// one packed panel (tile t holds rows `i0 + t·mr + r` as
/// `pack_a[(t·kc + p)·mr + r]`; the panel holds lane `l0 + l` of term
/// `p0 + p` as `panel[p·nr + l]`).
fn packed_product(
    a: Strided,
    v: &[f64],
    z: usize,
    out: &mut [f64],
    packing: Packing,
    mut tiles: impl FnMut(&[f64], &[f64], &mut [f64], Block),
    finish: Finish<'_>,
) {
    let Packing { kc, mc, mr, nr } = packing;
    let kc_max = kc.min(a.k);
    // Pooled: fresh zeroed buffers of this size (≈0.8 MB for 1,024 lanes
    // of 100 terms) were pages mapped and faulted in on every product.
    let mut pack_a = crate::lanes::pool::filled(mc.min(a.m).div_ceil(mr) * mr * kc_max, 0.0);
    let panels = z.div_ceil(nr);
    let mut pack_v = crate::lanes::pool::filled(panels * kc_max * nr, 0.0);
    for p0 in (0..a.k).step_by(kc) {
        let kc = kc.min(a.k - p0);
        // Panel j holds lanes j·nr + l of term p0 + p at
        // pack_v[(j·kc + p)·nr + l] (lanes past z stay zero).
        for p in 0..kc {
            let row = &v[(p0 + p) * z..(p0 + p + 1) * z];
            for (j, lanes) in row.chunks(nr).enumerate() {
                let at = (j * kc + p) * nr;
                pack_v[at..at + lanes.len()].copy_from_slice(lanes);
            }
        }
        for i0 in (0..a.m).step_by(mc) {
            let rows = mc.min(a.m - i0);
            for t in 0..rows.div_ceil(mr) {
                let tile = &mut pack_a[t * kc * mr..(t + 1) * kc * mr];
                for (p, col) in tile.chunks_exact_mut(mr).enumerate() {
                    for (r, x) in col.iter_mut().enumerate() {
                        let i = i0 + t * mr + r;
                        *x = if i < a.m {
                            a.data[i * a.rsa + (p0 + p) * a.csa]
                        } else {
                            0.0
                        };
                    }
                }
            }
            for j in 0..panels {
                let l0 = j * nr;
                let block = Block {
                    rows: (i0, rows),
                    terms: (p0, kc),
                    l0,
                    lanes: (z - l0).min(nr),
                };
                tiles(&pack_a, &pack_v[j * kc * nr..(j + 1) * kc * nr], out, block);
                // The last block of terms: this panel's sums are done.
                if p0 + kc == a.k {
                    finish(i0..i0 + rows, l0..l0 + block.lanes, out);
                }
            }
        }
    }
    crate::lanes::pool::recycle(pack_a);
    crate::lanes::pool::recycle(pack_v);
}

#[cfg(target_arch = "x86_64")]
mod avx2;
#[cfg(target_arch = "x86_64")]
mod avx512;

#[cfg(test)]
mod tests {
    use super::*;

    /// The interpreter's loop for one lane: Σ_p in ascending order from 0,
    /// one fused multiply-add per term.
    fn reference(a: Strided, v: &[f64], z: usize, l: usize) -> Vec<f64> {
        (0..a.m)
            .map(|i| {
                let mut s = 0.0;
                for p in 0..a.k {
                    s = a.data[i * a.rsa + p * a.csa].mul_add(v[p * z + l], s);
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
                // SAFETY: the CPU has AVX2.
                ks.push(("avx2 packed", |a, v, z, out| unsafe {
                    avx2::lane_product(a, v, z, out, &mut |_, _, _| {})
                }));
            }
            if std::arch::is_x86_feature_detected!("avx512f") {
                // SAFETY: the CPU has AVX-512F.
                ks.push(("avx512", |a, v, z, out| unsafe {
                    avx512::lane_product(a, v, z, out, &mut |_, _, _| {})
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
        // k spans three p blocks of AVX2 (five of AVX-512; the last
        // partial) and m two row blocks (the last tile partial); z covers
        // full 24-lane panels and partial ones of 1, 3, 7 (after 24), 16,
        // 17, 20 and 23 lanes (AVX2's 8-lane panels: partial ones of 1, 4
        // and 7 lanes).
        #[cfg(target_arch = "x86_64")]
        const _: () = assert!(avx512::MC == 256 && avx512::KC == 128);
        #[cfg(target_arch = "x86_64")]
        const _: () = assert!(avx2::MC == 192 && avx2::KC == 256);
        check_every_lane(256 + 13, 2 * 256 + 37, &[1, 3, 16, 17, 20, 31, 47]);
    }

    /// `s + A v` with the sum taken as the sums become final: every lane is
    /// the interpreter's product then `add`, bit for bit — with terms in
    /// two blocks (the sum must wait for the last) and rows in three, the
    /// addend per lane or shared, each kernel path (1 and 7 lanes unpacked,
    /// 16 and 33 packed, the last panel partial).
    #[test]
    fn a_product_then_an_addend_is_the_product_then_the_add() {
        let (m, k) = (2 * 192 + 17, 256 + 44);
        let data: Vec<f64> = (0..m * k)
            .map(|i| ((i * 37 % 101) as f64 - 50.0) / 7.3)
            .collect();
        let a = Strided {
            data: &data,
            m,
            k,
            rsa: 1,
            csa: m,
        };
        let matrix = Slot::shared(Value::Matrix {
            rows: m,
            cols: k,
            data: data.clone(),
        });
        for (z, infinite) in [(1, false), (7, false), (16, true), (33, false), (33, true)] {
            let mut v: Vec<f64> = (0..k * z)
                .map(|i| ((i * 13) % 29) as f64 / 3.1 - 4.0)
                .collect();
            if infinite {
                // Lane 2's term 5 infinite: its sums ±inf (NaN where the
                // matrix's entry is 0), which the count must see.
                v[5 * z + 2] = f64::INFINITY;
            }
            let lanes = Slot::Real(Dense::new(Shape::Vector(k), z, v.clone()));
            let per_lane: Vec<f64> = (0..z).map(|l| 0.1 + l as f64 / 3.0).collect();
            let addends = [
                Slot::Real(Dense::new(Shape::Real, z, per_lane.clone())),
                Slot::shared(Value::Real(-2.7)),
            ];
            for (addend, s) in addends.iter().zip([per_lane.clone(), vec![-2.7; z]]) {
                let Some((Slot::Real(got), not_finite)) =
                    multiply_then_add(&matrix, &lanes, addend)
                else {
                    panic!("not fused");
                };
                let mut expected_not_finite = 0;
                for (l, s) in s.iter().enumerate() {
                    for (i, sum) in reference(a, &v, z, l).into_iter().enumerate() {
                        let (got, expected) = (got.data[i * z + l], s + sum);
                        // Which NaN an invalid operation gives is not
                        // specified: any NaN for a NaN.
                        if expected.is_nan() {
                            assert!(got.is_nan(), "z {z}, lane {l}, row {i}: {got}");
                        } else {
                            assert_eq!(
                                got.to_bits(),
                                expected.to_bits(),
                                "z {z}, lane {l}, row {i}"
                            );
                        }
                        expected_not_finite += usize::from(!(s + sum).is_finite());
                    }
                }
                assert_eq!(not_finite, expected_not_finite, "z {z}: sums not finite");
                assert_eq!(expected_not_finite > 0, infinite, "z {z}: the case tested");
            }
        }
    }

    /// A product's output comes from the pool unzeroed: a kept buffer of
    /// NaNs still gives the interpreter's sums (every kernel writes each
    /// number), and zeros when there are no terms.
    #[test]
    fn a_product_into_a_kept_buffer_overwrites_it() {
        let (m, k, z) = (300, 7, 128);
        let data: Vec<f64> = (0..m * k).map(|i| (i % 11) as f64 - 5.5).collect();
        let v: Vec<f64> = (0..k * z).map(|i| (i % 13) as f64 * 0.25).collect();
        let lanes = Dense::new(Shape::Vector(k), z, v.clone());
        let a = Strided {
            data: &data,
            m,
            k,
            rsa: 1,
            csa: m,
        };
        crate::lanes::pool::recycle(vec![f64::NAN; m * z]);
        let out = product(a, &lanes, Shape::Vector(m), &mut |_, _, _| {});
        for l in 0..z {
            let got: Vec<u64> = (0..m).map(|i| out.data[i * z + l].to_bits()).collect();
            let want: Vec<u64> = reference(a, &v, z, l).iter().map(|x| x.to_bits()).collect();
            assert_eq!(got, want, "lane {l}");
        }
        let none = Dense::new(Shape::Vector(0), z, Vec::new());
        crate::lanes::pool::recycle(vec![f64::NAN; m * z]);
        let no_terms = Strided {
            data: &[],
            m,
            k: 0,
            rsa: 1,
            csa: m,
        };
        let out = product(no_terms, &none, Shape::Vector(m), &mut |_, _, _| {});
        assert!(out.data.len() == m * z && out.data.iter().all(|x| x.to_bits() == 0));
    }
}
