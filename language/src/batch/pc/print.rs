//! Printing the PC IR (`bat ir FILE --emit pc`): the variables with their
//! storage class and sharing, then the merged blocks function by function.
//! Each op is prefixed by `s` (shared: computed once for all lanes) or `b`
//! (batched).

use super::sharing::Share;
use super::{Op, Program, Storage, Terminator};
use crate::mir::VarId;
use crate::mir::print::{print_expr, print_stmt};
use std::fmt::Write;

pub fn print_pc(p: &Program) -> String {
    let mut out = String::new();
    let stacks = p.stack_vars().len();
    let _ = writeln!(
        out,
        "pc {} ({} blocks, {} variable stacks, {} AD stacks{})",
        p.mir.name,
        p.blocks.len(),
        stacks,
        p.num_ad_stacks,
        match &p.sharing {
            Some(s) if s.lanes_in_step => ", lanes in step",
            Some(_) => ", per-lane control flow",
            None => "",
        }
    );
    let _ = writeln!(out, "vars:");
    let mut used = vec![false; p.mir.vars.len()];
    for b in &p.blocks {
        for op in &b.ops {
            let e = super::effects::of_op(op);
            for v in e.reads.iter().chain(&e.writes) {
                used[v.0 as usize] = true;
            }
        }
        for v in super::effects::of_terminator(&b.term).reads {
            used[v.0 as usize] = true;
        }
    }
    for (i, info) in p.mir.vars.iter().enumerate() {
        if !used[i] {
            continue;
        }
        let storage = match p.storage[i] {
            Storage::Input => "input",
            Storage::Temp => "temp",
            Storage::Register => "register",
            Storage::Stack { cached_top: true } => "stack (cached top)",
            Storage::Stack { cached_top: false } => "stack",
        };
        let share = share_name(p.sharing.as_ref().map(|s| s.var(VarId(i as u32))));
        let _ = writeln!(out, "  {}: {}  {storage} {share}", info.name, info.ty);
    }
    for (fi, f) in p.functions.iter().enumerate() {
        let params: Vec<&str> = f.params.iter().map(|v| p.var_name(*v)).collect();
        let kind = match f.kind {
            super::FunctionKind::User => "function",
            super::FunctionKind::External => "external",
            super::FunctionKind::Entry => "entry",
        };
        let result = f
            .result
            .map_or(String::new(), |r| format!(" -> {}", p.var_name(r)));
        let _ = writeln!(out, "\n{kind} {}({}){result}", f.name, params.join(", "));
        for b in f.first_block.0..f.first_block.0 + f.num_blocks {
            let block = &p.blocks[b as usize];
            debug_assert_eq!(block.function.0 as usize, fi);
            let divergent = p.sharing.as_ref().is_some_and(|s| s.divergent[b as usize]);
            let _ = writeln!(
                out,
                "  b{b}:{}",
                if divergent { "  (divergent)" } else { "" }
            );
            for (i, op) in block.ops.iter().enumerate() {
                let mark = match p.sharing.as_ref().map(|s| s.ops[b as usize][i]) {
                    Some(Share::Shared) => "s ",
                    Some(Share::Batched) => "b ",
                    None => "",
                };
                for line in op_text(p, op).lines() {
                    let _ = writeln!(out, "    {mark}{line}");
                }
            }
            let term = match &block.term {
                Terminator::Jump(t) => format!("jump b{}", t.0),
                Terminator::Branch {
                    cond,
                    then,
                    otherwise,
                } => format!(
                    "branch[{}] {} ? b{} : b{}",
                    share_name(p.sharing.as_ref().and_then(|s| s.branches[b as usize])),
                    print_expr(&p.mir, cond),
                    then.0,
                    otherwise.0
                ),
                Terminator::PushJump {
                    ret,
                    callee,
                    target,
                } => format!(
                    "push_jump b{} to {} (b{})",
                    ret.0,
                    p.function(*callee).name,
                    target.0
                ),
                Terminator::Return => "return".into(),
            };
            let _ = writeln!(out, "    {term}");
        }
    }
    out
}

fn share_name(s: Option<Share>) -> &'static str {
    match s {
        Some(Share::Shared) => "shared",
        Some(Share::Batched) => "batched",
        None => "?",
    }
}

fn op_text(p: &Program, op: &Op) -> String {
    match op {
        Op::Stmt(s) => print_stmt(&p.mir, s),
        Op::Arg { param, value } => {
            format!("arg {} = {}", p.var_name(*param), print_expr(&p.mir, value))
        }
        Op::SetResult { var, value } => {
            format!(
                "result {} = {}",
                p.var_name(*var),
                print_expr(&p.mir, value)
            )
        }
        Op::Push(v) => format!("push {}", p.var_name(*v)),
        Op::Pop(v) => format!("pop {}", p.var_name(*v)),
        Op::Peek(v) => format!("peek {}", p.var_name(*v)),
    }
}
