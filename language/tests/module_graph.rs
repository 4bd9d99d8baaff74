//! The crate's top-level modules import each other in pipeline order only:
//! the graph of `crate::` paths between them (test code included, comments
//! not) has no cycle. A module that needs a later one is a sign that a
//! function lives away from the concept it belongs to.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// The top-level modules that `text` names through `crate::` paths
/// (`crate::a::x`, `crate::{b, c::y}`), comments ignored.
fn crate_paths(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.find("//").map_or(l, |i| &l[..i]))
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let preceded_by_ident = rest[..i]
            .chars()
            .next_back()
            .is_some_and(|c| c.is_alphanumeric() || c == '_');
        rest = &rest[i + "crate::".len()..];
        if preceded_by_ident {
            continue;
        }
        if let Some(group) = rest.strip_prefix('{') {
            // Names at the group's top level: after `{` or `,`.
            let mut depth = 0;
            let mut at_name = true;
            let mut name = String::new();
            for c in group.chars() {
                if at_name && depth == 0 && (c.is_alphanumeric() || c == '_') {
                    name.push(c);
                    continue;
                }
                if !name.is_empty() {
                    found.insert(std::mem::take(&mut name));
                    at_name = false;
                }
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => break,
                    '}' => depth -= 1,
                    ',' if depth == 0 => at_name = true,
                    _ => {}
                }
            }
            if !name.is_empty() {
                found.insert(name);
            }
        } else {
            let name: String = rest
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_')
                .collect();
            found.insert(name);
        }
    }
    found
}

fn rust_files(path: &Path, out: &mut Vec<PathBuf>) {
    if path.is_dir() {
        for entry in std::fs::read_dir(path).unwrap() {
            rust_files(&entry.unwrap().path(), out);
        }
    } else if path.extension().is_some_and(|e| e == "rs") {
        out.push(path.to_path_buf());
    }
}

/// Module → the other top-level modules its files name.
fn module_graph() -> BTreeMap<String, BTreeSet<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut modules = BTreeMap::new();
    for entry in std::fs::read_dir(&src).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if name == "lib" || !(path.is_dir() || path.extension().is_some_and(|e| e == "rs")) {
            continue;
        }
        let mut files = Vec::new();
        rust_files(&path, &mut files);
        let used: BTreeSet<String> = files
            .iter()
            .flat_map(|f| crate_paths(&std::fs::read_to_string(f).unwrap()))
            .collect();
        modules.insert(name, used);
    }
    let names: BTreeSet<String> = modules.keys().cloned().collect();
    for (name, used) in &mut modules {
        used.retain(|u| u != name && names.contains(u));
    }
    modules
}

/// A cycle through `graph`, as the modules along it, if there is one.
fn find_cycle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        m: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        done: &mut BTreeSet<String>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == m) {
            let mut cycle = path[start..].to_vec();
            cycle.push(m.to_string());
            return Some(cycle);
        }
        if done.contains(m) {
            return None;
        }
        path.push(m.to_string());
        for next in graph.get(m).into_iter().flatten() {
            if let Some(c) = visit(next, graph, done, path) {
                return Some(c);
            }
        }
        path.pop();
        done.insert(m.to_string());
        None
    }
    let mut done = BTreeSet::new();
    graph
        .keys()
        .find_map(|m| visit(m, graph, &mut done, &mut Vec::new()))
}

#[test]
fn crate_paths_are_read_from_uses_and_expressions_not_comments() {
    let text = "use crate::{mir::{self, Expr}, span::Span};\n\
                use crate::types::Type;\n\
                let x = crate::ad::gradient(&p); // crate::batch\n\
                /// [`crate::simplify`]\n\
                let y = other_crate::data::f();\n\
                use crate::{\n    check,\n    syntax::ast,\n};\n";
    let names: Vec<String> = crate_paths(text).into_iter().collect();
    assert_eq!(names, ["ad", "check", "mir", "span", "syntax", "types"]);
}

#[test]
fn a_cycle_is_found_and_a_chain_is_not() {
    let graph = |edges: &[(&str, &str)]| {
        let mut g: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (a, b) in edges {
            g.entry(a.to_string()).or_default().insert(b.to_string());
            g.entry(b.to_string()).or_default();
        }
        g
    };
    assert_eq!(
        find_cycle(&graph(&[("a", "b"), ("b", "c"), ("a", "c")])),
        None
    );
    assert_eq!(
        find_cycle(&graph(&[("a", "b"), ("b", "c"), ("c", "a")])),
        Some(vec!["a".into(), "b".into(), "c".into(), "a".into()])
    );
}

#[test]
fn the_modules_import_each_other_without_cycles() {
    let graph = module_graph();
    // The reading works: the pipeline's known dependencies are there.
    for (from, to) in [
        ("check", "syntax"),
        ("mir", "check"),
        ("ad", "mir"),
        ("batch", "mir"),
    ] {
        assert!(
            graph[from].contains(to),
            "{from} should import {to}: {graph:?}"
        );
    }
    if let Some(cycle) = find_cycle(&graph) {
        panic!(
            "modules import each other in a circle: {}",
            cycle.join(" → ")
        );
    }
}
