//! How control flows between the blocks of a PC program up to the
//! barriers (blocks where the host synchronizes lanes, e.g. the sampler's
//! gradient): what the block-choice heuristics know about each waiting
//! point.
//!
//! The flow graph follows jumps, both sides of branches, calls into the
//! callee's first block and returns to the return block of *every* call
//! site of the function (a static over-approximation of where a lane may
//! go). A barrier has no successors here: what lanes do after it belongs
//! to the next stretch between two barriers.

use language::batch::pc::{Program, Terminator};
use std::collections::VecDeque;

/// Successors of each block in the flow graph, barriers' cut.
fn successors(p: &Program, barrier: &[bool]) -> Vec<Vec<usize>> {
    let mut returns_to: Vec<Vec<usize>> = vec![Vec::new(); p.functions.len()];
    for bl in &p.blocks {
        if let Terminator::PushJump { ret, callee, .. } = bl.term {
            returns_to[callee.0 as usize].push(ret.0 as usize);
        }
    }
    p.blocks
        .iter()
        .enumerate()
        .map(|(b, bl)| {
            if barrier.get(b).copied().unwrap_or(false) {
                return Vec::new();
            }
            match &bl.term {
                Terminator::Jump(t) => vec![t.0 as usize],
                Terminator::Branch {
                    then, otherwise, ..
                } => vec![then.0 as usize, otherwise.0 as usize],
                Terminator::PushJump { target, .. } => vec![target.0 as usize],
                Terminator::Return => returns_to[bl.function.0 as usize].clone(),
            }
        })
        .collect()
}

/// What the block-choice heuristics know of each block (both empty when
/// there is no barrier).
pub(super) struct Flow {
    /// Fewest blocks to a barrier ([`distances_to`]).
    pub to_barrier: Vec<u32>,
    /// Place in the topological order ([`upstream_order`]).
    pub upstream: Vec<u32>,
}

impl Flow {
    pub(super) fn of(p: &Program, barrier: &[bool]) -> Flow {
        if !barrier.contains(&true) {
            return Flow {
                to_barrier: Vec::new(),
                upstream: Vec::new(),
            };
        }
        let succs = successors(p, barrier);
        Flow {
            to_barrier: distances_to(&succs, barrier),
            upstream: upstream_order(&succs),
        }
    }
}

/// Fewest blocks from each block to a barrier block (0 at a barrier,
/// `u32::MAX` if none is reachable) over the flow graph `succs`.
fn distances_to(succs: &[Vec<usize>], barrier: &[bool]) -> Vec<u32> {
    let n = succs.len();
    let mut preds: Vec<Vec<usize>> = vec![Vec::new(); n];
    for (b, succs) in succs.iter().enumerate() {
        for &s in succs {
            preds[s].push(b);
        }
    }
    let mut dist = vec![u32::MAX; n];
    let mut work = VecDeque::new();
    for (b, &is) in barrier.iter().enumerate() {
        if is {
            dist[b] = 0;
            work.push_back(b);
        }
    }
    while let Some(b) = work.pop_front() {
        for &q in &preds[b] {
            if dist[q] == u32::MAX {
                dist[q] = dist[b] + 1;
                work.push_back(q);
            }
        }
    }
    dist
}

/// Each block's place in a topological order of the flow graph's strongly
/// connected components (sources first; blocks of one cycle share it). A block with a smaller number cannot
/// be reached from one with a larger number before a barrier, so running
/// the waiting block with the smallest number first never leaves lanes
/// behind that would arrive at an already-run block later in the same
/// stretch: each block outside a cycle runs at most once between two
/// barriers (lanes returning from different depths of a recursion meet at
/// its call site before it runs).
fn upstream_order(succs: &[Vec<usize>]) -> Vec<u32> {
    let component = strongly_connected(succs);
    // Tarjan numbers components sinks first.
    let last = component.iter().copied().max().unwrap_or(0);
    component.iter().map(|&c| (last - c) as u32).collect()
}

/// Tarjan's algorithm without recursion: the component number of each
/// node, components numbered in reverse topological order (a component
/// reachable from another gets a smaller number).
fn strongly_connected(succs: &[Vec<usize>]) -> Vec<usize> {
    const UNSEEN: usize = usize::MAX;
    let n = succs.len();
    let mut index = vec![UNSEEN; n];
    let mut low = vec![0; n];
    let mut on_stack = vec![false; n];
    let mut stack = Vec::new();
    let mut component = vec![UNSEEN; n];
    let mut components = 0;
    let mut next_index = 0;
    for root in 0..n {
        if index[root] != UNSEEN {
            continue;
        }
        // (node, next successor to look at)
        let mut dfs = vec![(root, 0usize)];
        index[root] = next_index;
        low[root] = next_index;
        next_index += 1;
        stack.push(root);
        on_stack[root] = true;
        while let Some(&mut (v, ref mut i)) = dfs.last_mut() {
            if let Some(&w) = succs[v].get(*i) {
                *i += 1;
                if index[w] == UNSEEN {
                    index[w] = next_index;
                    low[w] = next_index;
                    next_index += 1;
                    stack.push(w);
                    on_stack[w] = true;
                    dfs.push((w, 0));
                } else if on_stack[w] {
                    low[v] = low[v].min(index[w]);
                }
                continue;
            }
            dfs.pop();
            if let Some(&(parent, _)) = dfs.last() {
                low[parent] = low[parent].min(low[v]);
            }
            if low[v] == index[v] {
                while let Some(w) = stack.pop() {
                    on_stack[w] = false;
                    component[w] = components;
                    if w == v {
                        break;
                    }
                }
                components += 1;
            }
        }
    }
    component
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn components_come_in_reverse_topological_order() {
        // 0 → 1 ⇄ 2 → 3, 0 → 3, 4 alone.
        let succs = vec![vec![1, 3], vec![2], vec![1, 3], vec![], vec![]];
        let c = strongly_connected(&succs);
        assert_eq!(c[1], c[2]);
        assert!(c[0] > c[1], "{c:?}");
        assert!(c[1] > c[3], "{c:?}");
        assert_ne!(c[4], c[0]);
        assert_ne!(c[4], c[3]);
        let distinct: std::collections::BTreeSet<usize> = c.iter().copied().collect();
        assert_eq!(distinct.len(), 4);
    }

    /// A recursion whose leaves call the barrier: every return of the
    /// recursive function comes before the block its outer call returns
    /// to, and the blocks of one level's returns share a cycle.
    #[test]
    fn a_call_site_comes_after_the_returns_that_reach_it() {
        let source = "
          functions {
            real grad(real x);
            real tree(int d, real x) {
              if (d == 0) {
                return grad(x);
              }
              real a = tree(d - 1, x);
              real b = tree(d - 1, a);
              return a + b;
            }
          }
          generated quantities { real y = tree(3, 1.0); real w = y * 2; }";
        let (mir, diags) = language::compile_with_externals(source, "tree");
        let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
        let cfg = language::batch::lower_generated_quantities(&mir).expect("lowers");
        let p = language::batch::pc::build(&cfg).expect("PC IR");
        let barrier: Vec<bool> = p
            .blocks
            .iter()
            .map(|b| {
                b.ops.iter().any(|op| {
                    language::batch::pc::lower::external_call(&p, op)
                        .is_some_and(|(f, _, _)| p.function(f).name == "grad")
                })
            })
            .collect();
        assert!(barrier.contains(&true));
        let order = Flow::of(&p, &barrier).upstream;
        let tree = p.functions.iter().position(|f| f.name == "tree").unwrap();
        let returns: Vec<usize> = (0..p.blocks.len())
            .filter(|&b| {
                p.blocks[b].function.0 as usize == tree
                    && matches!(p.blocks[b].term, Terminator::Return)
            })
            .collect();
        let outer_return_site: Vec<usize> = p
            .blocks
            .iter()
            .filter(|b| b.function.0 as usize != tree)
            .filter_map(|b| match b.term {
                Terminator::PushJump { ret, callee, .. } if callee.0 as usize == tree => {
                    Some(ret.0 as usize)
                }
                _ => None,
            })
            .collect();
        assert_eq!(outer_return_site.len(), 1);
        assert!(!returns.is_empty());
        for &r in &returns {
            assert!(
                order[r] < order[outer_return_site[0]],
                "return block {r} ({}) after the call site ({})",
                order[r],
                order[outer_return_site[0]]
            );
        }
    }
}
