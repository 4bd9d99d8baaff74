//! Shared matrix × per-lane vectors as one matrix-matrix product: a dense
//! vector slot `[D][Z]` is a row-major D×Z matrix, so `X v` for all lanes
//! is X (N×D, column-major) · V (D×Z) → `[N][Z]`.

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
    if m > 0 && z > 0 {
        // SAFETY: the strides describe `a` (m×k within a.len()), `v.data`
        // (k×z row-major) and `out` (m×z row-major), all in bounds.
        unsafe {
            matrixmultiply::dgemm(
                m,
                k,
                z,
                1.0,
                a.as_ptr(),
                rsa as isize,
                csa as isize,
                v.data.as_ptr(),
                z as isize,
                1,
                0.0,
                out.as_mut_ptr(),
                z as isize,
                1,
            );
        }
    }
    Dense::new(shape, z, out)
}
