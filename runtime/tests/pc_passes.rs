//! The PC IR passes, each shown before/after on a small program, with the
//! scalar PC runner agreeing with the structured interpreter at every
//! stage (see also pc_lowering.rs over the corpus).

use language::batch::pc::liveness::{self, CallEdges};
use language::batch::pc::sharing::Share;
use language::batch::pc::{self, Op, Program, Storage, Terminator};
use language::mir::VarId;

const RECURSIVE: &str = "
  functions {
    int fib(int n) { if (n < 2) return n; return fib(n - 1) + fib(n - 2); }
    int is_even(int n);
    int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
    int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }
    int twice(int n) { if (n <= 0) return 0; int a = twice(n - 1); int b = twice(0); return a + b + n; }
    int peeks(int n) { if (n <= 0) return 1; int a = peeks(n - 1); int b = peeks(n - 2); return a + b + n; }
    real walk_rng(real x) {
      real s = x; int k = 0;
      while (1) {
        k += 1;
        if (k > 50) break;
        if (k % 3 == 0) continue;
        s += normal_rng(0, 1);
        if (s > 3) return s;
      }
      return -s;
    }
    real sq(real x) { return x * x; }
    // The second argument reads the first parameter: argument temporaries,
    // drawn in source order.
    real swap_rng(real u, real v, int d) {
      if (d == 0) return u - v;
      return swap_rng(v + normal_rng(0, 1), u * normal_rng(1, 0.1), d - 1);
    }
    real rwalk_rng(real x, int d) {
      if (d == 0 || x > 2) return x;
      return rwalk_rng(x + normal_rng(0, 1), d - 1) + x * normal_rng(0, 0.1);
    }
  }
  parameters { real mu; }
  model { mu ~ normal(0, 1); }
  generated quantities {
    int f = fib(12);
    int e = is_even(7) || is_odd(fib(5));
    int t = twice(6) + peeks(7);
    real w = walk_rng(mu) + (e ? walk_rng(1) : 0) + sq(mu);
    real rw = rwalk_rng(mu, 30) + rwalk_rng(-mu, f % 7) + swap_rng(mu, 1, 5);
    array[4] real ws;
    for (i in 1:4) ws[i] = fib(i) > 1 ? walk_rng(i) : mu;
  }";

fn gq_program(source: &str) -> (runtime::Model, language::batch::cfg::Program) {
    let (mir, diags) = language::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = language::batch::lower_generated_quantities(&mir).unwrap();
    let data = language::data::DataFile::parse("{}").unwrap();
    let model = runtime::Model::new(&mir, &data).unwrap();
    (model, cfg)
}

/// The PC program gives the structured interpreter's draws.
fn assert_runs_like_structured(model: &runtime::Model, pc: &Program) {
    pc.validate().unwrap();
    for chain in 0..4 {
        let theta = [chain as f64 * 0.7 - 1.0];
        let rng = || runtime::Rng::new(42, chain, 3);
        let a = model.generated_quantities(&theta, rng()).unwrap();
        let b = model
            .generated_quantities_pc(pc, &theta, rng())
            .unwrap_or_else(|e| panic!("{e:?}\n{}", pc::print::print_pc(pc)));
        assert_eq!(a.values, b.values);
    }
}

fn var(p: &Program, name: &str) -> VarId {
    VarId(p.mir.vars.iter().position(|v| v.name == name).expect(name) as u32)
}

fn fun_blocks(p: &Program, name: &str) -> std::ops::Range<usize> {
    let f = p.functions.iter().find(|f| f.name == name).unwrap();
    f.first_block.0 as usize..(f.first_block.0 + f.num_blocks) as usize
}

/// The variables pushed at each call site of function `name`, in order.
fn saves(p: &Program, name: &str) -> Vec<Vec<String>> {
    fun_blocks(p, name)
        .filter(|&b| matches!(p.blocks[b].term, Terminator::PushJump { .. }))
        .map(|b| {
            p.blocks[b]
                .ops
                .iter()
                .filter_map(|op| match op {
                    Op::Push(v) => Some(p.var_name(*v).to_string()),
                    _ => None,
                })
                .collect()
        })
        .collect()
}

#[test]
fn naive_lowering_saves_whole_frames_and_runs_like_the_interpreter() {
    let (model, cfg) = gq_program(RECURSIVE);
    let pc = pc::lower::lower(&cfg).unwrap();
    // Every call saves the caller's whole frame, even a non-recursive one.
    let entry_saves = saves(&pc, language::batch::GENERATED_QUANTITIES_ENTRY);
    assert!(
        entry_saves.iter().all(|s| s.contains(&"f".to_string())),
        "{entry_saves:?}"
    );
    assert!(
        pc.storage
            .iter()
            .any(|s| matches!(s, Storage::Stack { .. }))
    );
    assert_runs_like_structured(&model, &pc);
}

#[test]
fn liveness_knows_what_a_call_must_keep() {
    let (_, cfg) = gq_program(RECURSIVE);
    let pc = pc::lower::lower(&cfg).unwrap();
    let n = var(&pc, "n");
    let fib = fun_blocks(&pc, "fib");
    let caller = liveness::analyse(&pc, CallEdges::CallerFrame);
    let inter = liveness::analyse(&pc, CallEdges::Interprocedural);
    // `fib`'s parameter is live on entry in both views.
    assert!(caller.live_in[fib.start].contains(n));
    assert!(inter.live_in[fib.start].contains(n));
    // The first recursive call's block: in the caller's view `n` is still
    // needed after it (for `n - 2`); the second call's is the last use.
    let calls: Vec<usize> = fib
        .clone()
        .filter(|&b| matches!(pc.blocks[b].term, Terminator::PushJump { .. }))
        .collect();
    assert_eq!(calls.len(), 2);
    let ret = |b: usize| match pc.blocks[b].term {
        Terminator::PushJump { ret, .. } => ret.0 as usize,
        _ => unreachable!(),
    };
    let after = |b: usize| {
        let r = pc::BlockId(ret(b) as u32);
        let ops = &pc.block(r).ops;
        let last_pop = ops.iter().rposition(|o| matches!(o, Op::Pop(_))).unwrap();
        caller.after_ops(&pc, r)[last_pop].clone()
    };
    assert!(after(calls[0]).contains(n));
    assert!(!after(calls[1]).contains(n));
    // Interprocedurally the argument write kills the caller's `n`: not live
    // out of the call block except through the callee's entry.
    assert!(inter.live_out[calls[0]].contains(n));
    assert!(!caller.live_out[calls[1]].contains(n));
}

#[test]
fn prune_saves_keeps_only_values_live_across_recursive_calls() {
    let (model, cfg) = gq_program(RECURSIVE);
    let mut pc = pc::lower::lower(&cfg).unwrap();
    let before = pc.count_stack_ops();
    pc::prune_saves::run(&mut pc);
    assert!(
        pc.count_stack_ops() < before / 4,
        "{before} -> {}",
        pc.count_stack_ops()
    );
    // fib saves `n` around the first call and the first result around the
    // second; the non-recursive entry, `sq` and mutual recursion's tail
    // calls save nothing.
    let fib = saves(&pc, "fib");
    assert_eq!(fib[0], vec!["n"]);
    assert_eq!(fib[1].len(), 1);
    assert_ne!(fib[1][0], "n");
    for f in [
        language::batch::GENERATED_QUANTITIES_ENTRY,
        "is_odd",
        "is_even",
    ] {
        assert!(
            saves(&pc, f).iter().all(Vec::is_empty),
            "{f}: {:?}",
            saves(&pc, f)
        );
    }
    // walk_rng is not recursive: its loop variables need no save.
    assert_runs_like_structured(&model, &pc);
}

/// A recursion that passes a parameter on unchanged (`scale`, as NUTS's
/// `build_tree` passes its step size and metric) needs no save of it; the
/// parameter it changes (`n`, live after the first call only) and the
/// value live across the second call (`a`) are still saved.
#[test]
fn parameters_passed_on_unchanged_need_no_save() {
    let source = "
      functions {
        real tree(int n, real scale, real x) {
          if (n == 0) return scale * x;
          real a = tree(n - 1, scale, x + 1);
          real b = tree(n - 1, scale, a);
          return a + b * scale;
        }
      }
      parameters { real mu; }
      model { mu ~ normal(0, 1); }
      generated quantities { real y = tree(3, 0.5 + mu, mu); }";
    let (model, cfg) = gq_program(source);
    let mut pc = pc::lower::lower(&cfg).unwrap();
    pc::prune_saves::run(&mut pc);
    let tree = saves(&pc, "tree");
    assert_eq!(tree, vec![vec!["n"], vec!["a"]], "{tree:?}");
    assert_runs_like_structured(&model, &pc);
    // Then the copies of `scale` onto itself go (one per recursive call).
    let args = |p: &Program| -> Vec<String> {
        fun_blocks(p, "tree")
            .flat_map(|b| p.blocks[b].ops.iter())
            .filter_map(|op| match op {
                Op::Arg { param, .. } => Some(p.var_name(*param).to_string()),
                _ => None,
            })
            .collect()
    };
    assert_eq!(args(&pc), ["n", "scale", "x", "n", "scale", "x"]);
    assert_eq!(pc::identity_args::run(&mut pc), 2);
    assert_eq!(args(&pc), ["n", "x", "n", "x"]);
    assert_runs_like_structured(&model, &pc);
    assert_runs_like_structured(&model, &pc::build(&cfg).unwrap());
}

#[test]
fn fuse_turns_pop_push_pairs_into_in_place_updates() {
    let (model, cfg) = gq_program(RECURSIVE);
    let mut pc = pc::lower::lower(&cfg).unwrap();
    pc::prune_saves::run(&mut pc);
    let ops_of = |p: &Program, f: &str| -> Vec<Op> {
        fun_blocks(p, f)
            .flat_map(|b| p.blocks[b].ops.clone())
            .collect()
    };
    // How many pushes, pops and peeks of function `f`'s parameter.
    let counts = |p: &Program, f: &str| {
        let n = p.functions.iter().find(|g| g.name == f).unwrap().params[0];
        let ops = ops_of(p, f);
        let count =
            |want: fn(&Op) -> Option<VarId>| ops.iter().filter(|o| want(o) == Some(n)).count();
        (
            count(|o| if let Op::Push(v) = o { Some(*v) } else { None }),
            count(|o| if let Op::Pop(v) = o { Some(*v) } else { None }),
            count(|o| if let Op::Peek(v) = o { Some(*v) } else { None }),
        )
    };
    // Before: `twice` and `peeks` pop `n` after the first call and push it
    // again for the second.
    assert_eq!(counts(&pc, "twice"), (2, 2, 0));
    assert_eq!(counts(&pc, "peeks"), (2, 2, 0));
    pc::fuse::run(&mut pc);
    // twice(0) overwrites `n` without reading it: the pair disappears.
    assert_eq!(counts(&pc, "twice"), (1, 1, 0));
    // peeks(n - 2) reads `n`: the pair becomes one Peek.
    assert_eq!(counts(&pc, "peeks"), (1, 1, 1));
    assert_runs_like_structured(&model, &pc);
}

/// Independent check of a `Temp`: in every block touching it, the first
/// touch is a whole write.
fn assert_block_local(p: &Program, v: VarId) {
    for (b, block) in p.blocks.iter().enumerate() {
        let touches: Vec<_> = block
            .ops
            .iter()
            .map(pc::effects::of_op)
            .chain([pc::effects::of_terminator(&block.term)])
            .filter(|e| e.reads.contains(&v) || e.writes.contains(&v))
            .collect();
        if let Some(first) = touches.first() {
            assert!(
                first.kills.contains(&v),
                "{} read first in b{b}",
                p.var_name(v)
            );
        }
    }
}

#[test]
fn temps_are_block_local_and_everything_else_keeps_storage() {
    let (model, cfg) = gq_program(RECURSIVE);
    let mut pc = pc::lower::lower(&cfg).unwrap();
    pc::prune_saves::run(&mut pc);
    pc::fuse::run(&mut pc);
    let before: Vec<Storage> = pc.storage.clone();
    pc::temps::run(&mut pc);
    let temps: Vec<VarId> = (0..pc.storage.len())
        .filter(|&i| pc.storage[i] == Storage::Temp)
        .map(|i| VarId(i as u32))
        .collect();
    assert!(!temps.is_empty());
    for v in &temps {
        assert_ne!(before[v.0 as usize], Storage::Input);
        assert_block_local(&pc, *v);
    }
    // Output variables and loop state are not temporaries.
    for name in ["f", "ws", "k", "s", "n"] {
        assert_ne!(
            pc.storage[var(&pc, name).0 as usize],
            Storage::Temp,
            "{name}"
        );
    }
    // A parameter is written by the `constrain_parameters` entry and read
    // by the later entries: stored, not an input, not a temporary.
    let mu = pc.storage[var(&pc, "mu").0 as usize];
    assert!(!matches!(mu, Storage::Input | Storage::Temp), "mu: {mu:?}");
    assert_runs_like_structured(&model, &pc);
}

/// The lowering and passes (a), (e), (b) and (c), in `build`'s order.
fn through_registers(cfg: &language::batch::cfg::Program) -> Program {
    let mut pc = pc::lower::lower(cfg).unwrap();
    pc::prune_saves::run(&mut pc);
    pc::fuse::run(&mut pc);
    pc::temps::run(&mut pc);
    pc::registers::run(&mut pc);
    pc
}

#[test]
fn registers_replace_stacks_except_across_recursion_and_tops_are_cached() {
    let (model, cfg) = gq_program(RECURSIVE);
    let mut pc = through_registers(&cfg);
    let stacked: Vec<&str> = (0..pc.storage.len())
        .filter(|&i| matches!(pc.storage[i], Storage::Stack { .. }))
        .map(|i| pc.mir.vars[i].name.as_str())
        .collect();
    // Exactly what is live across a recursive call: the parameter `n` of
    // fib, twice and peeks (each its own variable), their first results
    // (`a`, fib's temporary) and rwalk_rng's `x`.
    let param = |f: &str, i: usize| {
        let v = pc.functions.iter().find(|g| g.name == f).unwrap().params[i];
        pc.storage[v.0 as usize]
    };
    let stack = Storage::Stack { cached_top: false };
    for f in ["fib", "twice", "peeks", "rwalk_rng"] {
        assert_eq!(param(f, 0), stack, "{f}");
    }
    assert_eq!(param("rwalk_rng", 1), Storage::Register);
    assert_eq!(param("walk_rng", 0), Storage::Register);
    assert_eq!(param("is_odd", 0), Storage::Register);
    let mut names = stacked.clone();
    names.sort();
    assert_eq!(names.len(), 7, "{stacked:?}");
    assert_eq!(
        names.iter().filter(|n| **n == "a").count(),
        2,
        "{stacked:?}"
    );
    for name in ["k", "s", "f"] {
        assert!(!stacked.contains(&name), "{name} in {stacked:?}");
    }
    assert_eq!(pc.stack_vars().len(), stacked.len());
    pc::cached_tops::run(&mut pc);
    assert!(
        pc.storage
            .iter()
            .all(|s| *s != Storage::Stack { cached_top: false })
    );
    assert_runs_like_structured(&model, &pc);
}

/// `Let`s of `function`'s blocks that copy some function's result variable.
fn result_copies(p: &Program, function: &str) -> Vec<String> {
    let results: Vec<VarId> = p.functions.iter().filter_map(|f| f.result).collect();
    fun_blocks(p, function)
        .flat_map(|b| p.blocks[b].ops.iter())
        .filter_map(|op| match op {
            Op::Stmt(language::mir::Stmt {
                kind: language::mir::StmtKind::Let { var, value },
                ..
            }) if matches!(value.kind, language::mir::ExprKind::Var(r) if results.contains(&r)) => {
                Some(p.var_name(*var).to_string())
            }
            _ => None,
        })
        .collect()
}

#[test]
fn forward_results_reads_tuple_results_in_place() {
    // `a` and `b` are split by SRA from call temporaries read only in the
    // return blocks, and `total_rng` projects its call's value there:
    // those temporaries go.
    let (model, cfg) = gq_program(
        "functions {
           tuple(real, int) pair_rng(int d) {
             if (d == 0) return (normal_rng(0, 1), 1);
             tuple(real, int) a = pair_rng(d - 1);
             tuple(real, int) b = pair_rng(d - (a.2 > 0 ? 1 : 2));
             return (a.1 * b.1 + a.1, a.2 + b.2);
           }
           real total_rng(int d) {
             real s = pair_rng(d).1;
             if (s > 0) return s;
             return -s;
           }
           // Its return reads the call's value while writing its own
           // result variable: that read keeps its copy.
           real sum_rng(real x, int d) {
             if (d == 0) return x;
             return sum_rng(x + normal_rng(0, 1), d - 1) + x;
           }
         }
         parameters { real mu; } model { mu ~ normal(0, 1); }
         generated quantities { real t = total_rng(4) + mu + sum_rng(mu, 3); }",
    );
    let mut pc = pc::lower::lower(&cfg).unwrap();
    // The naive lowering saves the temporaries too (pass (a) drops that).
    pc::prune_saves::run(&mut pc);
    assert_runs_like_structured(&model, &pc);
    let before = result_copies(&pc, "pair_rng");
    assert_eq!(before.len(), 2, "{before:?}");
    let forwarded = pc::forward_results::run(&mut pc);
    assert!(forwarded >= 2, "{forwarded}");
    assert_eq!(result_copies(&pc, "pair_rng"), Vec::<String>::new());
    assert_eq!(result_copies(&pc, "total_rng"), Vec::<String>::new());
    assert_eq!(result_copies(&pc, "sum_rng").len(), 1);
    for name in &before {
        let v = var(&pc, name);
        assert!(
            !pc.blocks
                .iter()
                .flat_map(|b| b.ops.iter().map(pc::effects::of_op))
                .any(|e| e.reads.contains(&v) || e.writes.contains(&v)),
            "{name} still occurs"
        );
    }
    assert_runs_like_structured(&model, &pc);
    // The whole pipeline with the pass, and the recursive corpus.
    assert_runs_like_structured(&model, &pc::build(&cfg).unwrap());
    let (model, cfg) = gq_program(RECURSIVE);
    assert_runs_like_structured(&model, &pc::build(&cfg).unwrap());
}

/// Blocks without ops that only jump, reachable from an entry by jumps,
/// branches, calls and returns.
fn reachable_empty_jumps(p: &Program) -> Vec<usize> {
    let mut seen = vec![false; p.blocks.len()];
    let mut todo: Vec<usize> = p
        .functions
        .iter()
        .filter(|f| f.kind == pc::FunctionKind::Entry)
        .map(|f| f.first_block.0 as usize)
        .collect();
    while let Some(b) = todo.pop() {
        if std::mem::replace(&mut seen[b], true) {
            continue;
        }
        match &p.blocks[b].term {
            Terminator::Jump(t) => todo.push(t.0 as usize),
            Terminator::Branch {
                then, otherwise, ..
            } => todo.extend([then.0 as usize, otherwise.0 as usize]),
            Terminator::PushJump { ret, target, .. } => {
                todo.extend([ret.0 as usize, target.0 as usize])
            }
            Terminator::Return => {}
        }
    }
    (0..p.blocks.len())
        .filter(|&b| {
            seen[b] && p.blocks[b].ops.is_empty() && matches!(p.blocks[b].term, Terminator::Jump(_))
        })
        .collect()
}

#[test]
fn thread_jumps_skips_empty_jump_blocks() {
    let (model, cfg) = gq_program(RECURSIVE);
    let mut pc = through_registers(&cfg);
    pc::cached_tops::run(&mut pc);
    let before = reachable_empty_jumps(&pc);
    assert!(!before.is_empty());
    let blocks = pc.blocks.len();
    let changed = pc::thread_jumps::run(&mut pc);
    assert!(changed >= before.len(), "{changed} < {before:?}");
    assert_eq!(pc.blocks.len(), blocks);
    // Left reachable: only function entries (call targets stay).
    let entries: Vec<usize> = pc
        .functions
        .iter()
        .map(|f| f.first_block.0 as usize)
        .collect();
    for b in reachable_empty_jumps(&pc) {
        assert!(entries.contains(&b), "b{b} still reached");
    }
    assert_runs_like_structured(&model, &pc);
    // A chain of empty jumps that loops on itself is left as it is: make
    // one of the empty blocks jump to itself before threading.
    let mut pc = pc::lower::lower(&cfg).unwrap();
    let e = reachable_empty_jumps(&pc)[0];
    pc.blocks[e].term = Terminator::Jump(pc::BlockId(e as u32));
    let into_e = |p: &Program| {
        p.blocks
            .iter()
            .filter(|b| matches!(b.term, Terminator::Jump(t) | Terminator::Branch { then: t, .. } if t.0 as usize == e))
            .count()
    };
    let before = into_e(&pc);
    pc::thread_jumps::run(&mut pc);
    assert_eq!(into_e(&pc), before);
    pc.validate().unwrap();
}

#[test]
fn non_recursive_programs_have_no_variable_stacks() {
    let (model, cfg) = gq_program(
        "functions { real sq(real x) { return x * x; }
                     real quad(real x) { real y = sq(x); return sq(y) + sq(x); } }
         parameters { real mu; } model { mu ~ normal(0, 1); }
         generated quantities { real q = quad(mu) + sq(2); }",
    );
    let pc = pc::build(&cfg).unwrap();
    assert_eq!(pc.count_stack_ops(), 0, "{}", pc::print::print_pc(&pc));
    assert!(pc.stack_vars().is_empty());
    assert!(
        !pc.storage
            .iter()
            .any(|s| matches!(s, Storage::Stack { .. }))
    );
    assert_runs_like_structured(&model, &pc);
}

fn gradient_pc(source: &str) -> Program {
    let (mir, diags) = language::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let g = language::ad::gradient(&mir).expect("gradient");
    let cfg = language::batch::lower_gradient(&g).unwrap();
    pc::build(&cfg).unwrap()
}

#[test]
fn data_is_shared_and_parameters_batched() {
    let pc = gradient_pc(
        "data { int N; vector[N] x; matrix[N, 2] X; }
         transformed data { vector[N] x2 = 2 * x; }
         parameters { real mu; vector[2] beta; }
         model {
           vector[N] scaled = 3 * x2;
           vector[N] eta = X * beta;
           real acc = 0;
           for (n in 1:N) acc += scaled[n];
           target += -mu^2 + acc + sum(eta);
         }",
    );
    let s = pc.sharing.as_ref().unwrap();
    assert!(s.lanes_in_step, "{}", pc::print::print_pc(&pc));
    for name in ["x", "X", "x2", "scaled", "acc", "n"] {
        assert_eq!(s.var(var(&pc, name)), Share::Shared, "{name}");
    }
    for name in ["mu", "beta", "eta"] {
        assert_eq!(s.var(var(&pc, name)), Share::Batched, "{name}");
    }
    // The op computing `scaled` is shared; the one computing `eta` batched.
    let op_share = |name: &str| {
        let v = var(&pc, name);
        pc.blocks
            .iter()
            .enumerate()
            .flat_map(|(b, blk)| blk.ops.iter().enumerate().map(move |(i, o)| (b, i, o)))
            .find(|(_, _, o)| pc::effects::of_op(o).kills.contains(&v))
            .map(|(b, i, _)| s.ops[b][i])
            .unwrap()
    };
    assert_eq!(op_share("scaled"), Share::Shared);
    assert_eq!(op_share("eta"), Share::Batched);
}

#[test]
fn values_under_per_lane_branches_are_batched() {
    let pc = gradient_pc(
        "data { int N; vector[N] x; }
         parameters { real mu; }
         model {
           real s = 0;
           real d = sum(x);
           if (mu > 0) s = d;
           real acc = 0;
           for (n in 1:N) acc += x[n];
           target += -mu^2 + s + acc;
         }",
    );
    let s = pc.sharing.as_ref().unwrap();
    assert!(!s.lanes_in_step);
    assert!(s.branches.contains(&Some(Share::Batched)));
    // `s` is assigned data under a per-lane branch; the loop counter and
    // accumulator may be at different iterations on different lanes.
    for name in ["s", "n", "acc", "mu"] {
        assert_eq!(s.var(var(&pc, name)), Share::Batched, "{name}");
    }
    // Written once from data: the same for every lane at any time.
    assert_eq!(s.var(var(&pc, "d")), Share::Shared);
    assert!(s.divergent.iter().any(|d| *d));
}

#[test]
fn deep_recursion_stops_with_the_function_and_depth() {
    let (model, cfg) = gq_program(
        "functions { int down(int n) { return down(n + 1); } }
         parameters { real mu; } model { mu ~ normal(0, 1); }
         generated quantities { int d = down(0); }",
    );
    let pc = pc::build(&cfg).unwrap();
    let rng = || runtime::Rng::new(1, 0, 0);
    let a = model.generated_quantities(&[0.1], rng()).unwrap_err();
    let b = model
        .generated_quantities_pc(&pc, &[0.1], rng())
        .unwrap_err();
    assert_eq!(a.message, b.message);
    assert!(
        b.message.contains("`down`") && b.message.contains("100"),
        "{}",
        b.message
    );
}

#[test]
fn the_full_pipeline_runs_like_the_interpreter() {
    let (model, cfg) = gq_program(RECURSIVE);
    let pc = pc::build(&cfg).unwrap();
    assert!(pc.sharing.is_some());
    assert_runs_like_structured(&model, &pc);
    let text = pc::print::print_pc(&pc);
    assert!(
        text.contains("stack (cached top)") && text.contains("push_jump"),
        "{text}"
    );
}

#[test]
fn recursion_out_of_step_makes_parameters_batched() {
    // Called with data only, but fib branches on its (stacked, so per
    // lane) parameter: lanes fall out of step, and a mutually recursive
    // parameter changes value at every depth — never shared.
    let (_, cfg) = gq_program(RECURSIVE);
    let pc = pc::build(&cfg).unwrap();
    let s = pc.sharing.as_ref().unwrap();
    assert!(!s.lanes_in_step);
    for f in ["fib", "is_odd", "is_even", "twice"] {
        let n = pc.functions.iter().find(|g| g.name == f).unwrap().params[0];
        assert_eq!(s.var(n), Share::Batched, "{f}");
    }
    // Lanes in step (no per-lane branch): the same mutual recursion on
    // data is shared.
    let (_, cfg) = gq_program(
        "functions {
           int is_even(int n);
           int is_odd(int n) { if (n == 0) return 0; return is_even(n - 1); }
           int is_even(int n) { if (n == 0) return 1; return is_odd(n - 1); }
         }
         parameters { real mu; } model { mu ~ normal(0, 1); }
         generated quantities { int e = is_even(7); real m = e * mu; }",
    );
    let pc = pc::build(&cfg).unwrap();
    let s = pc.sharing.as_ref().unwrap();
    assert!(s.lanes_in_step, "{}", pc::print::print_pc(&pc));
    assert_eq!(s.var(var(&pc, "e")), Share::Shared);
    assert_eq!(s.var(var(&pc, "m")), Share::Batched);
}

#[test]
fn per_lane_while_loop_gradient_runs_like_the_interpreter() {
    let source = "
      data { int N; vector[N] y; }
      parameters { real mu; }
      model {
        real s = 0;
        real c = sum(y);
        while (s < mu * mu + 1) { s += 0.25 * c; }
        for (n in 1:N) y[n] ~ normal(mu, 1);
        target += -s;
      }";
    let (mir, diags) = language::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let g = language::ad::gradient(&mir).expect("gradient");
    let cfg = language::batch::lower_gradient(&g).unwrap();
    let pc = pc::build(&cfg).unwrap();
    let data = language::data::DataFile::parse(r#"{"N": 3, "y": [0.5, 1.5, -0.25]}"#).unwrap();
    let model = runtime::Model::new(&mir, &data).unwrap();
    for theta in [[-2.0], [0.3], [1.7]] {
        let a = model.log_density_gradient(&g, &theta, true).unwrap();
        let b = model.log_density_gradient_pc(&pc, &theta, true).unwrap();
        assert_eq!(a.0.to_bits(), b.0.to_bits());
        assert_eq!(a.1, b.1);
    }
    let s = pc.sharing.as_ref().unwrap();
    assert!(!s.lanes_in_step);
    // The trip count is per lane: so are `s` and, out of step, the later
    // loop's counter; `c` is written once from data.
    assert_eq!(s.var(var(&pc, "s")), Share::Batched);
    assert_eq!(s.var(var(&pc, "n")), Share::Batched);
    assert_eq!(s.var(var(&pc, "c")), Share::Shared);
    assert_eq!(pc.count_stack_ops(), 0);
}
