//! Optimization (b): a variable that is never live across a block
//! boundary (interprocedural liveness: not live into or out of any block)
//! lives only within one block execution — storage class `Temp`, no
//! batch storage. Variables the host reads after the run (transformed
//! parameters, generated quantities) and saved variables never qualify.

use super::liveness::{self, CallEdges};
use super::{Op, Program, Storage};
use crate::mir::Origin;

pub fn run(p: &mut Program) {
    let live = liveness::analyse(p, CallEdges::Interprocedural);
    let nv = p.mir.vars.len();
    let mut crosses = vec![false; nv];
    for set in live.live_in.iter().chain(&live.live_out) {
        for v in set.iter() {
            crosses[v.0 as usize] = true;
        }
    }
    for b in &p.blocks {
        for op in &b.ops {
            if let Op::Push(v) | Op::Pop(v) | Op::Peek(v) = op {
                crosses[v.0 as usize] = true;
            }
        }
    }
    for (i, storage) in p.storage.iter_mut().enumerate() {
        let origin = p.mir.vars[i].origin;
        let host_visible = !matches!(
            origin,
            Origin::Local | Origin::LoopVar | Origin::FunctionArg
        );
        if *storage != Storage::Input && !crosses[i] && !host_visible {
            *storage = Storage::Temp;
        }
    }
}
