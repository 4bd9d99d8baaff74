//! Optimization (e): a restore followed, in the same block and with no
//! access to the variable in between, by a save of the same variable
//! (`Pop x; ...; Push x` — back-to-back calls that both need `x` kept)
//! leaves the stack as it was. If `x` is dead after the save (the next
//! access overwrites it, e.g. the argument write of a recursive call) both
//! ops go and the later write updates the register in place; otherwise
//! they become one `Peek x` (read the top without moving the stack pointer).

use super::liveness::{self, CallEdges};
use super::{Op, Program, effects};

pub fn run(p: &mut Program) {
    let live = liveness::analyse(p, CallEdges::Interprocedural);
    for b in 0..p.blocks.len() {
        let after = live.after_ops(p, super::BlockId(b as u32));
        let ops = &p.blocks[b].ops;
        // (pop index, push index, keep a Peek)
        let mut pairs = Vec::new();
        let mut used = vec![false; ops.len()];
        for (i, op) in ops.iter().enumerate() {
            let Op::Pop(v) = op else { continue };
            if used[i] {
                continue;
            }
            let next_access = ops.iter().enumerate().skip(i + 1).find(|(_, o)| {
                let e = effects::of_op(o);
                e.reads.contains(v) || e.writes.contains(v)
            });
            if let Some((j, Op::Push(w))) = next_access
                && w == v
                && !used[j]
            {
                used[i] = true;
                used[j] = true;
                pairs.push((i, j, after[j].contains(*v)));
            }
        }
        let ops = &mut p.blocks[b].ops;
        let mut remove = vec![false; ops.len()];
        for (i, j, peek) in pairs {
            remove[j] = true;
            if peek {
                let Op::Pop(v) = ops[i] else { unreachable!() };
                ops[i] = Op::Peek(v);
            } else {
                remove[i] = true;
            }
        }
        let mut k = 0;
        ops.retain(|_| {
            k += 1;
            !remove[k - 1]
        });
    }
    p.sharing = None;
}
