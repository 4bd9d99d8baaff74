//! The workspace's crates depend on each other without cycles, counting
//! dev- and build-dependencies too (docs/architecture.md): a crate's tests
//! or benchmarks that need a crate above it belong in that crate or in the
//! root crate. The two compiled executors share the code generator, not
//! each other. Read from `cargo metadata --no-deps` (offline, no
//! resolution).

use std::collections::BTreeMap;
use std::process::Command;

/// Each workspace crate with the workspace crates it depends on (any kind).
fn workspace_graph() -> BTreeMap<String, Vec<(String, String)>> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let output = Command::new(cargo)
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo metadata runs");
    assert!(
        output.status.success(),
        "cargo metadata failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let packages = metadata["packages"].as_array().unwrap();
    let names: Vec<String> = packages
        .iter()
        .map(|p| p["name"].as_str().unwrap().to_string())
        .collect();
    packages
        .iter()
        .map(|p| {
            let deps = p["dependencies"]
                .as_array()
                .unwrap()
                .iter()
                .filter_map(|d| {
                    let name = d["name"].as_str().unwrap();
                    let kind = d["kind"].as_str().unwrap_or("normal");
                    names
                        .iter()
                        .any(|n| n == name)
                        .then(|| (name.to_string(), kind.to_string()))
                })
                .collect();
            (p["name"].as_str().unwrap().to_string(), deps)
        })
        .collect()
}

/// A path of crates from `from` back to itself, if there is one.
fn cycle_through(
    graph: &BTreeMap<String, Vec<(String, String)>>,
    from: &str,
) -> Option<Vec<String>> {
    fn visit(
        graph: &BTreeMap<String, Vec<(String, String)>>,
        target: &str,
        at: &str,
        path: &mut Vec<String>,
        seen: &mut Vec<String>,
    ) -> bool {
        for (next, kind) in &graph[at] {
            path.push(format!("{next} ({kind})"));
            if next == target {
                return true;
            }
            if !seen.contains(next) {
                seen.push(next.clone());
                if visit(graph, target, next, path, seen) {
                    return true;
                }
            }
            path.pop();
        }
        false
    }
    let mut path = vec![from.to_string()];
    visit(graph, from, from, &mut path, &mut Vec::new()).then_some(path)
}

#[test]
fn no_crate_depends_on_itself() {
    let graph = workspace_graph();
    for name in [
        "language",
        "runtime",
        "codegen",
        "backend-cpu",
        "backend-native",
        "backend-cuda",
    ] {
        assert!(graph.contains_key(name), "no crate {name} in the workspace");
    }
    let cycles: Vec<String> = graph
        .keys()
        .filter_map(|name| cycle_through(&graph, name))
        .map(|path| path.join(" -> "))
        .collect();
    assert!(
        cycles.is_empty(),
        "dependency cycles:\n{}",
        cycles.join("\n")
    );
}

#[test]
fn the_compiled_executors_share_the_code_generator_not_each_other() {
    let graph = workspace_graph();
    let depends = |a: &str, b: &str| graph[a].iter().any(|(name, _)| name == b);
    for (a, b) in [
        ("backend-native", "backend-cuda"),
        ("backend-cuda", "backend-native"),
        ("codegen", "backend-native"),
        ("codegen", "backend-cuda"),
        ("backend-cpu", "codegen"),
        ("backend-cpu", "backend-native"),
        ("backend-cpu", "backend-cuda"),
    ] {
        assert!(!depends(a, b), "{a} depends on {b}");
    }
    assert!(depends("backend-native", "codegen"));
    assert!(depends("backend-cuda", "codegen"));
}
