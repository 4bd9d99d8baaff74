//! Indexing as a map of flat positions: `base[indexes]` selects, for each
//! element of its result, one element of `base`; single indexes fix an
//! offset (checked once, before the statement), slices shift an axis,
//! multi-indexes look their positions up (all checked before the
//! statement).

use language::mir::{Expr, Index};

use super::super::shape::Shape;
use super::super::typing::{self, Unsupported};
use super::{Emitter, FailKind, for_each};

/// How a kept axis maps the result's position to the base's.
#[derive(Clone, Debug)]
enum Pos {
    Identity,
    /// Starts at this 0-based position.
    Shift(i64),
    /// Positions from an int array expression (1-based values).
    Multi(Expr),
}

#[derive(Clone, Debug)]
struct KeptAxis {
    /// Stride in the base's flat order.
    stride: usize,
    pos: Pos,
}

/// A prepared index map: base flat position = `offset` + Σ over kept axes.
#[derive(Clone, Debug)]
pub(crate) struct View {
    /// C expression of the 0-based flat offset fixed by single indexes.
    offset: String,
    kept: Vec<KeptAxis>,
    pub shape: Shape,
}

impl Emitter<'_> {
    /// Check `indexes` into a value of `base` (hoisted before the
    /// statement, or flagged inline inside a conditional branch) and
    /// prepare the map of the result's positions.
    pub(crate) fn prepare_view(
        &mut self,
        base: &Shape,
        indexes: &[Index],
    ) -> Result<View, Unsupported> {
        let shape = typing::index_shape(self.layout, base, indexes)?;
        let mut offset = Vec::new();
        let mut kept = Vec::new();
        for (k, axis) in base.axes().into_iter().enumerate() {
            match indexes.get(k) {
                None | Some(Index::All) => kept.push(KeptAxis {
                    stride: axis.stride,
                    pos: Pos::Identity,
                }),
                Some(Index::Single(i)) => {
                    let k0 = self.checked_index(i, axis.size)?;
                    offset.push(if axis.stride == 1 {
                        k0
                    } else {
                        format!("{k0} * {}", axis.stride)
                    });
                }
                Some(Index::Multi(m)) => {
                    self.check_multi_index(m, axis.size)?;
                    kept.push(KeptAxis {
                        stride: axis.stride,
                        pos: Pos::Multi(m.clone()),
                    });
                }
                Some(ix) => {
                    let len = typing::slice_len(self.layout, ix, axis.size)?;
                    let lo = match ix {
                        Index::Upfrom(lo) | Index::Between(lo, _) => {
                            typing::const_int(self.layout, lo).expect("checked by slice_len")
                        }
                        _ => 1,
                    };
                    let hi = lo + len as i64 - 1;
                    if len > 0 && (lo < 1 || hi > axis.size as i64) {
                        // Always out of range: the interpreter fails here.
                        let fail = self.fail(
                            FailKind::IndexOutOfRange,
                            format!("slice {lo}:{hi} of {} positions", axis.size),
                        );
                        if self.in_branch > 0 {
                            return Err("a slice out of range inside a conditional".to_string());
                        }
                        self.lines.push(fail);
                    }
                    kept.push(KeptAxis {
                        stride: axis.stride,
                        pos: Pos::Shift(lo - 1),
                    });
                }
            }
        }
        Ok(View {
            offset: if offset.is_empty() {
                "0".to_string()
            } else {
                format!("({})", offset.join(" + "))
            },
            kept,
            shape,
        })
    }

    /// The base's flat position of element `idx` of the view's result.
    pub(crate) fn map(&mut self, view: &View, idx: &str) -> Result<String, Unsupported> {
        let result_axes = view.shape.axes();
        debug_assert_eq!(result_axes.len(), view.kept.len());
        let mut terms = vec![view.offset.clone()];
        for (kept, axis) in view.kept.iter().zip(&result_axes) {
            let mut coord = if axis.stride == 1 {
                format!("({idx})")
            } else {
                format!("(({idx}) / {})", axis.stride)
            };
            // Coordinates wrap around their axis (a matrix is column-major:
            // its first axis is not the outermost).
            if result_axes.len() > 1 {
                coord = format!("({coord} % {})", axis.size);
            }
            let pos = match &kept.pos {
                Pos::Identity => coord,
                Pos::Shift(lo) => format!("({coord} + {lo})"),
                Pos::Multi(m) => format!("((long long)({}) - 1)", self.elem(m, &coord)?),
            };
            terms.push(if kept.stride == 1 {
                pos
            } else {
                format!("{pos} * {}", kept.stride)
            });
        }
        Ok(format!("({})", terms.join(" + ")))
    }

    /// `base[indexes]` at element `idx` of the result.
    pub(crate) fn index_elem(
        &mut self,
        base: &Expr,
        indexes: &[Index],
        idx: &str,
    ) -> Result<String, Unsupported> {
        let base_shape = self.shape(base)?;
        let view = self.prepare_view(&base_shape, indexes)?;
        let at = self.map(&view, idx)?;
        self.elem(base, &at)
    }

    /// A one-based index into `n` positions, checked (an out-of-range
    /// index is an error of the lane, as in the interpreter); returns the
    /// C expression of the 0-based position.
    pub(crate) fn checked_index(&mut self, i: &Expr, n: usize) -> Result<String, Unsupported> {
        let value = self.int_expr(i)?;
        if self.in_branch > 0 {
            self.inline_checks = true;
            return Ok(format!("bat_ix({value}, {n}, &bat_err)"));
        }
        let k = self.fresh("k");
        let fail = self.fail(
            FailKind::IndexOutOfRange,
            format!("index out of range (expecting 1 to {n})"),
        );
        self.lines.push(format!(
            "const long long {k} = {value}; if ({k} < 1 || {k} > {n}) {fail}"
        ));
        Ok(format!("({k} - 1)"))
    }

    /// Check every position of a multi-index against `n`.
    fn check_multi_index(&mut self, m: &Expr, n: usize) -> Result<(), Unsupported> {
        if self.in_branch > 0 {
            return Err("a multi-index inside a conditional expression".to_string());
        }
        let len = self.shape(m)?.len();
        let j = self.fresh("j");
        let value = self.elem(m, &j)?;
        let fail = self.fail(
            FailKind::IndexOutOfRange,
            format!("multi-index out of range (expecting 1 to {n})"),
        );
        self.lines.push(for_each(
            &j,
            len,
            &format!("const long long v = (long long)({value}); if (v < 1 || v > {n}) {fail}"),
        ));
        Ok(())
    }
}
