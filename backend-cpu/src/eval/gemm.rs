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
/// lanes stream past, and AVX2 where the CPU has it.
fn lane_product(a: Strided, v: &[f64], z: usize, out: &mut [f64]) {
    assert!(a.m == 0 || a.k == 0 || (a.m - 1) * a.rsa + (a.k - 1) * a.csa < a.data.len());
    assert!(v.len() >= a.k * z && out.len() >= a.m * z);
    #[cfg(target_arch = "x86_64")]
    if std::arch::is_x86_feature_detected!("avx2") {
        // SAFETY: the CPU has AVX2 (checked above).
        return unsafe { lane_product_avx2(a, v, z, out) };
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
        if l0 < z {
            lane_block::<1, 8>(a, v, z, out, rows, l0);
        }
    }
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

    #[test]
    fn every_lane_equals_the_scalar_loop_bit_for_bit_whatever_the_batch() {
        // Odd sizes exercise the row and lane remainders; both layouts of A.
        let (m, k) = (70, 13);
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
            let mut seen: Option<Vec<f64>> = None;
            for z in [1, 2, 3, 4, 5, 7, 8, 13, 19, 64] {
                // Lane 0 holds the same vector in every batch size.
                let mut v = vec![0.0; k * z];
                for l in 0..z {
                    for (p, x) in lane(l).into_iter().enumerate() {
                        v[p * z + l] = x;
                    }
                }
                let mut out = vec![f64::NAN; m * z];
                lane_product(a, &v, z, &mut out);
                for l in 0..z {
                    let got: Vec<f64> = (0..m).map(|i| out[i * z + l]).collect();
                    let want = reference(a, &v, z, l);
                    assert!(
                        got.iter()
                            .zip(&want)
                            .all(|(g, w)| g.to_bits() == w.to_bits()),
                        "lane {l} of {z} differs"
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
