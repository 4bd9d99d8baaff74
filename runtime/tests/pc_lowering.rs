//! The PC IR built from every posteriordb model's gradient program and
//! generated quantities (and the examples') runs — with explicit stacks
//! and no host recursion — exactly, bit for bit, like the structured
//! interpreter, both as lowered (naive caller-saves) and after the five
//! optimization passes; and a program without recursion ends up with no
//! variable stack at all. Models whose gradient program cannot be built
//! yet (ad_gradients_exceptions.txt) are skipped by name.

mod common;

use language::batch::pc;
use std::path::Path;

fn same(a: f64, b: f64) -> bool {
    a.to_bits() == b.to_bits() || (a.is_nan() && b.is_nan())
}

/// Whether some function of `p` can call itself (directly or not).
fn has_recursion(p: &pc::Program) -> bool {
    let n = p.functions.len();
    let mut calls = vec![vec![false; n]; n];
    for b in &p.blocks {
        if let pc::Terminator::PushJump { callee, .. } = b.term {
            calls[b.function.0 as usize][callee.0 as usize] = true;
        }
    }
    for k in 0..n {
        for i in 0..n {
            for j in 0..n {
                calls[i][j] |= calls[i][k] && calls[k][j];
            }
        }
    }
    (0..n).any(|i| calls[i][i])
}

fn check_storage(p: &pc::Program) -> Result<(), String> {
    p.validate()?;
    if !has_recursion(p) && (p.count_stack_ops() > 0 || !p.stack_vars().is_empty()) {
        return Err(format!(
            "non-recursive program keeps {} stack ops",
            p.count_stack_ops()
        ));
    }
    if p.sharing.is_none() {
        return Err("no sharing analysis".into());
    }
    Ok(())
}

fn check(name: &str, model: &Path, data: &Path) -> Result<(), String> {
    let loaded = common::load(name, model, data, Path::new("/nonexistent"))?;
    check_generated_quantities(&loaded)?;
    let g = language::ad::gradient(&loaded.program).map_err(|ds| {
        ds.iter()
            .map(|d| d.message.clone())
            .collect::<Vec<_>>()
            .join("; ")
    })?;
    let cfg = language::batch::lower_gradient(&g).map_err(|ds| format!("{ds:?}"))?;
    let naive = pc::lower::lower(&cfg).map_err(|e| e.to_string())?;
    let optimized = pc::build(&cfg).map_err(|e| e.to_string())?;
    check_storage(&optimized)?;
    let n = loaded.model.num_unconstrained();
    for k in 0..3 {
        let theta: Vec<f64> = (0..n)
            .map(|i| ((i * 7 + k * 13) % 19) as f64 / 10.0 - 0.9)
            .collect();
        for jacobian in [true, false] {
            let structured = loaded.model.log_density_gradient(&g, &theta, jacobian);
            for (stage, p) in [("naive", &naive), ("optimized", &optimized)] {
                let run = loaded.model.log_density_gradient_pc(p, &theta, jacobian);
                match (&structured, run) {
                    (Ok((lp1, g1)), Ok((lp2, g2))) => {
                        if !same(*lp1, lp2) {
                            return Err(format!("lp {lp1} vs {stage} pc {lp2} at point {k}"));
                        }
                        for (i, (a, b)) in g1.iter().zip(&g2).enumerate() {
                            if !same(*a, *b) {
                                return Err(format!("grad[{i}] {a} vs {stage} pc {b} at {k}"));
                            }
                        }
                    }
                    (Err(a), Err(b)) if a.message == b.message => {}
                    (a, b) => return Err(format!("structured {a:?} vs {stage} pc {b:?}")),
                }
            }
        }
    }
    check_shared_values(&loaded, &optimized)?;
    Ok(())
}

/// Two lanes (different parameters) write the same values to every
/// variable the analysis calls shared: the same sequence when lanes run in
/// step, else the same value for the whole run.
fn check_shared_values(loaded: &common::Loaded, p: &pc::Program) -> Result<(), String> {
    let n = loaded.model.num_unconstrained();
    let lane = |k: usize| {
        let theta: Vec<f64> = (0..n)
            .map(|i| ((i + 3 * k) % 7) as f64 / 7.0 - 0.3)
            .collect();
        loaded.model.log_density_gradient_pc_traced(p, &theta, true)
    };
    let (Ok((_, _, a)), Ok((_, _, b))) = (lane(0), lane(1)) else {
        return Ok(()); // a lane rejected: nothing to compare
    };
    let sharing = p.sharing.as_ref().unwrap();
    if sharing.lanes_in_step {
        if format!("{a:?}") != format!("{b:?}") {
            let at = a
                .iter()
                .zip(&b)
                .position(|(x, y)| format!("{x:?}") != format!("{y:?}"));
            let which = at.map(|i| p.var_name(a[i].0).to_string());
            return Err(format!("shared values differ between lanes at {which:?}"));
        }
    } else {
        for (v, value) in a.iter().chain(&b) {
            let first = a.iter().chain(&b).find(|(w, _)| w == v).unwrap();
            if format!("{:?}", first.1) != format!("{value:?}") {
                return Err(format!("shared `{}` changes value", p.var_name(*v)));
            }
        }
    }
    Ok(())
}

/// Generated quantities (user functions, `_rng`, loops) through the PC IR
/// give the structured interpreter's draw, same random stream.
fn check_generated_quantities(loaded: &common::Loaded) -> Result<(), String> {
    let cfg = language::batch::lower_generated_quantities(&loaded.program)
        .map_err(|ds| format!("{ds:?}"))?;
    let p = pc::build(&cfg).map_err(|e| e.to_string())?;
    check_storage(&p)?;
    let n = loaded.model.num_unconstrained();
    let theta: Vec<f64> = (0..n).map(|i| (i % 5) as f64 / 5.0 - 0.4).collect();
    let rng = || runtime::Rng::new(7, 3, 11);
    let structured = loaded.model.generated_quantities(&theta, rng());
    let run = loaded.model.generated_quantities_pc(&p, &theta, rng());
    match (structured, run) {
        (Ok(a), Ok(b)) if format!("{:?}", a.values) == format!("{:?}", b.values) => Ok(()),
        (Err(a), Err(b)) if a.message == b.message => Ok(()),
        (a, b) => Err(format!("generated quantities differ: {a:?} vs pc {b:?}")),
    }
}

#[test]
fn pc_runs_like_the_structured_interpreter() {
    let exceptions = common::ad_exceptions();
    let mut failures = Vec::new();
    let mut checked = 0;
    let dirs = common::posteriordb_dirs();
    for dir in dirs {
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if exceptions.contains(&name) {
            continue;
        }
        checked += 1;
        if let Err(e) = check(&name, &dir.join("model.stan"), &dir.join("data.json")) {
            failures.push(format!("{name}: {e}"));
        }
    }
    let examples = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples");
    for entry in std::fs::read_dir(&examples).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "bat") {
            let stem = path.file_stem().unwrap().to_string_lossy().to_string();
            let data = path.with_extension("data.json");
            if exceptions.contains(&format!("examples/{stem}")) || !data.is_file() {
                continue;
            }
            checked += 1;
            if let Err(e) = check(&stem, &path, &data) {
                failures.push(format!("examples/{stem}: {e}"));
            }
        }
    }
    assert!(checked >= 20, "only {checked} models checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Storage classes hold what they promise, checked op by op: in every
/// block that touches a `Temp`, it is written before it is read (its value
/// never crosses a block boundary); an
/// `Input` is never written; only stacked variables are pushed.
fn check_storage_classes(p: &pc::Program) -> Result<(), String> {
    for (b, block) in p.blocks.iter().enumerate() {
        let mut seen = vec![false; p.storage.len()];
        let effects = block
            .ops
            .iter()
            .map(|op| (Some(op), pc::effects::of_op(op)))
            .chain([(None, pc::effects::of_terminator(&block.term))]);
        for (op, e) in effects {
            for v in e.reads.iter().chain(&e.writes) {
                let i = v.0 as usize;
                match p.storage[i] {
                    pc::Storage::Temp => {
                        if !seen[i] && !e.kills.contains(v) {
                            return Err(format!("temp `{}` read first in b{b}", p.var_name(*v)));
                        }
                        seen[i] = true;
                    }
                    pc::Storage::Input if e.writes.contains(v) => {
                        return Err(format!("input `{}` written", p.var_name(*v)));
                    }
                    _ => {}
                }
            }
            if let Some(pc::Op::Push(v) | pc::Op::Pop(v) | pc::Op::Peek(v)) = op
                && !matches!(
                    p.storage[v.0 as usize],
                    pc::Storage::Stack { cached_top: true }
                )
            {
                return Err(format!("`{}` saved but has no stack", p.var_name(*v)));
            }
        }
    }
    Ok(())
}

/// Every posteriordb model (with or without data) whose gradient program
/// builds: the PC IR of its gradient and generated quantities keeps its
/// invariants and storage promises, and has no variable stacks.
#[test]
fn pc_storage_of_every_posteriordb_model() {
    let dir = common::posteriordb().join("../posteriordb-models");
    let mut built = 0;
    let mut failures = Vec::new();
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "stan"))
        .collect();
    files.sort();
    for path in files {
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        let source = std::fs::read_to_string(&path).unwrap();
        let Ok(program) = common::compile(&source, &name) else {
            continue;
        };
        let Ok(g) = language::ad::gradient(&program) else {
            continue;
        };
        let cfgs = [
            language::batch::lower_gradient(&g),
            language::batch::lower_generated_quantities(&program),
        ];
        for cfg in cfgs {
            let cfg = cfg.map_err(|ds| format!("{ds:?}"));
            let result = cfg.and_then(|cfg| pc::build(&cfg).map_err(|e| e.to_string()));
            let checked = result.and_then(|p| {
                check_storage(&p)?;
                check_storage_classes(&p)
            });
            match checked {
                Ok(()) => built += 1,
                Err(e) => failures.push(format!("{name}: {e}")),
            }
        }
    }
    assert!(built >= 100, "only {built} programs built");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
