//! The SRA pass on CFG IR: what is split, what is left whole and why, and
//! what the PC IR then saves across a recursive call.

use crate::batch::cfg::{Function, Program};
use crate::batch::pc;

fn lowered(source: &str) -> Program {
    let (mir, diags) = crate::compile_model(source, "t");
    let mir = mir.unwrap_or_else(|| panic!("{diags:?}"));
    let cfg = crate::batch::lower(&mir, &[("gq", &mir.generated_quantities)], 0).expect("lowers");
    cfg.validate().unwrap();
    cfg
}

fn function<'p>(cfg: &'p Program, name: &str) -> &'p Function {
    cfg.functions.iter().find(|f| f.name == name).unwrap()
}

fn local_names(cfg: &Program, f: &Function) -> Vec<String> {
    f.locals
        .iter()
        .map(|v| cfg.mir.vars[v.0 as usize].name.clone())
        .collect()
}

/// The recursion of the module docs: `a` (first sub-result) is live across
/// the second call, but only its components 1 and 3; `a` is returned whole
/// on one path.
const WALK: &str = "functions {
  tuple(real, vector, int) walk(int d, vector x, real s) {
    if (d == 0) {
      return (s + 1, x * 2, 1);
    }
    tuple(real, vector[rows(x)], int) a = walk(d - 1, x, s);
    if (a.3 > 5) {
      return a;
    }
    tuple(real, vector[rows(x)], int) b = walk(d - 1, a.2, a.1);
    return (a.1 + b.1, b.2, a.3 + b.3);
  }
}
generated quantities { real r = walk(3, [1, 2]', 0.5).1; }";

#[test]
fn declared_tuple_locals_are_split_and_call_temporaries_stay_whole() {
    let cfg = lowered(WALK);
    let walk = function(&cfg, "walk");
    let names = local_names(&cfg, walk);
    for split in ["a.1", "a.2", "a.3", "b.1", "b.2", "b.3"] {
        assert!(names.contains(&split.to_string()), "{names:?}");
    }
    assert!(!names.contains(&"a".to_string()), "{names:?}");
    assert!(!names.contains(&"b".to_string()), "{names:?}");
    // The call results are written whole by the call: left whole.
    assert_eq!(names.iter().filter(|n| n.starts_with("cfg__")).count(), 2);
    let text = crate::batch::print_cfg(&cfg);
    assert!(text.contains("return (a.1, a.2, a.3)"), "{text}");
    assert!(text.contains("walk(subtract(d, 1), a.2, a.1)"), "{text}");
}

#[test]
fn only_the_components_live_across_the_recursive_call_are_saved() {
    let p = pc::build(&lowered(WALK)).unwrap();
    let walk = p.functions.iter().find(|f| f.name == "walk").unwrap();
    let saved: Vec<&str> = p.blocks
        [walk.first_block.0 as usize..(walk.first_block.0 + walk.num_blocks) as usize]
        .iter()
        .flat_map(|b| &b.ops)
        .filter_map(|op| match op {
            pc::Op::Push(v) => Some(p.var_name(*v)),
            _ => None,
        })
        .collect();
    // Second call: a.1 and a.3 are read after it, a.2 only as an argument.
    assert!(
        saved.contains(&"a.1") && saved.contains(&"a.3"),
        "{saved:?}"
    );
    assert!(!saved.contains(&"a.2"), "{saved:?}");
    assert!(!saved.contains(&"a"), "{saved:?}");
}

#[test]
fn nested_tuples_are_split_component_by_component() {
    let cfg = lowered(
        "functions {
           real f(vector x) {
             tuple(real, tuple(int, vector[rows(x)])) n = (1.5, (2, x));
             tuple(int, vector[rows(x)]) inner = n.2;
             return n.1 + inner.1 + sum(n.2.2);
           }
         }
         generated quantities { real r = f([1, 2]'); }",
    );
    let names = local_names(&cfg, function(&cfg, "f"));
    assert_eq!(
        names,
        ["n.1", "n.2.1", "n.2.2", "inner.1", "inner.2"],
        "{}",
        crate::batch::print_cfg(&cfg)
    );
}

#[test]
fn tuples_defined_otherwise_or_reading_themselves_stay_whole() {
    let cfg = lowered(
        "functions {
           real g(tuple(real, real) p, int c) {
             tuple(real, real) chosen = c ? p : (2.0, 3.0);
             tuple(real, real) swapped = p;
             swapped = (swapped.2, swapped.1);
             tuple(real, real) copy = p;
             return chosen.1 + swapped.1 + copy.2 + p.1;
           }
         }
         generated quantities { real r = g((1.0, 2.0), 1); }",
    );
    let f = function(&cfg, "g");
    let names = local_names(&cfg, f);
    // `chosen` is defined by a conditional, `swapped` from itself, `p` is
    // a parameter; `copy` (a copy of a parameter) is split.
    assert!(names.contains(&"chosen".to_string()), "{names:?}");
    assert!(names.contains(&"swapped".to_string()), "{names:?}");
    assert!(names.contains(&"copy.1".to_string()), "{names:?}");
    assert!(!names.contains(&"copy".to_string()), "{names:?}");
    let params: Vec<&str> = f
        .params
        .iter()
        .map(|v| cfg.mir.vars[v.0 as usize].name.as_str())
        .collect();
    assert_eq!(params, ["p", "c"]);
}

#[test]
fn components_can_be_assigned_in_place() {
    let cfg = lowered(
        "functions {
           vector h(vector x) {
             tuple(real, vector[rows(x)]) t = (1.0, x);
             t.2[1] = 5;
             t.1 += 2;
             return t.2 * t.1;
           }
         }
         generated quantities { vector[2] r = h([1, 2]'); }",
    );
    let text = crate::batch::print_cfg(&cfg);
    let names = local_names(&cfg, function(&cfg, "h"));
    assert_eq!(names, ["t.1", "t.2"], "{text}");
}

#[test]
fn declared_without_value_then_assigned_whole_is_split() {
    let cfg = lowered(
        "functions {
           tuple(real, real) pair(real y) { return (y, 2 * y); }
           real k(real y) {
             tuple(real, real) u;
             u = pair(y);
             return u.1 * u.2;
           }
         }
         generated quantities { real r = k(1.5); }",
    );
    let text = crate::batch::print_cfg(&cfg);
    let names = local_names(&cfg, function(&cfg, "k"));
    // The call's temporary stays whole; `u` is assigned from it per component.
    assert!(names.contains(&"u.1".to_string()), "{text}");
    assert!(!names.contains(&"u".to_string()), "{text}");
    assert!(text.contains("u.2 = cfg__"), "{text}");
}
