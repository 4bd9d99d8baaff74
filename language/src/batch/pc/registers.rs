//! Optimization (c): a variable that is never saved around a call (no
//! `Push`/`Pop`/`Peek` left after (a) and (e)) needs no stack: storage
//! class `Register`, one value per lane updated under the active mask.

use super::{Op, Program, Storage};

pub fn run(p: &mut Program) {
    let mut saved = vec![false; p.storage.len()];
    for op in p.blocks.iter().flat_map(|b| &b.ops) {
        if let Op::Push(v) | Op::Pop(v) | Op::Peek(v) = op {
            saved[v.0 as usize] = true;
        }
    }
    for (i, s) in p.storage.iter_mut().enumerate() {
        if matches!(s, Storage::Stack { .. }) && !saved[i] {
            *s = Storage::Register;
        }
    }
}
