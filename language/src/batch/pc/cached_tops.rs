//! Optimization (d): cache the top of every remaining variable stack in
//! the variable's register. Reads and writes then touch only the register
//! (no per-lane gather at the lane's stack depth); `Push` copies the
//! register onto the stack, `Pop` moves the stack's top into the register,
//! `Peek` copies it. Without it a stacked variable's value is
//! `stack[depth]` and every read gathers. The scalar runner
//! (the interpreter's PC runner) gives the same values either way; the
//! batched executors use the flag to choose their layout.

use super::{Program, Storage};

pub fn run(p: &mut Program) {
    for s in &mut p.storage {
        if let Storage::Stack { cached_top } = s {
            *cached_top = true;
        }
    }
}
