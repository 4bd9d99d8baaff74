//! Printing the CFG IR (`bat ir FILE --emit cfg`).

use super::cfg::{Function, FunctionKind, Program, Terminator};
use crate::mir::print::{print_expr, print_stmt};
use std::fmt::Write;

pub fn print_cfg(p: &Program) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "cfg {} ({} AD stacks)", p.mir.name, p.num_ad_stacks);
    for f in &p.functions {
        function(&mut out, p, f);
    }
    out
}

fn function(out: &mut String, p: &Program, f: &Function) {
    let name = |v: &crate::mir::VarId| p.mir.vars[v.0 as usize].name.clone();
    let params: Vec<String> = f.params.iter().map(name).collect();
    let kind = match f.kind {
        FunctionKind::User => "function",
        FunctionKind::External => "external",
        FunctionKind::Entry => "entry",
    };
    let ret = f.ret.as_ref().map_or(String::new(), |t| format!(" -> {t}"));
    let _ = writeln!(out, "\n{kind} {}({}){ret}", f.name, params.join(", "));
    if f.kind == FunctionKind::External {
        return;
    }
    let locals: Vec<String> = f.locals.iter().map(name).collect();
    let _ = writeln!(out, "  locals: {}", locals.join(", "));
    for (i, b) in f.blocks.iter().enumerate() {
        let _ = writeln!(out, "  b{i}:");
        for op in &b.ops {
            for line in print_stmt(&p.mir, op).lines() {
                let _ = writeln!(out, "    {line}");
            }
        }
        let term = match &b.term {
            Terminator::Jump(t) => format!("jump b{}", t.0),
            Terminator::Branch {
                cond,
                then,
                otherwise,
            } => format!(
                "branch {} ? b{} : b{}",
                print_expr(&p.mir, cond),
                then.0,
                otherwise.0
            ),
            Terminator::Call {
                fun,
                args,
                ret,
                next,
            } => {
                let args: Vec<String> = args.iter().map(|a| print_expr(&p.mir, a)).collect();
                let callee = &p.functions[fun.0 as usize].name;
                let ret = ret.as_ref().map_or(String::new(), |v| {
                    format!("{} = ", p.mir.vars[v.0 as usize].name)
                });
                format!("call {ret}{callee}({}) then b{}", args.join(", "), next.0)
            }
            Terminator::Return(None) => "return".to_string(),
            Terminator::Return(Some(e)) => format!("return {}", print_expr(&p.mir, e)),
        };
        let _ = writeln!(out, "    {term}");
    }
}
