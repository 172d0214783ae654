//! The crates' shape as rules: no module of a crate reaches back into a
//! module that reaches it (the import graph of every host crate and of the
//! SDK has no circle), and the pipeline crate knows no plugin runtime.
//! `.ci/run` checks the crate graph itself with `cargo tree`.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Every `.rs` file under `src`, as its module path (`plugin::set`), with
/// its text up to its test module and without comments.
fn modules(src: &Path) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).unwrap().with_extension("");
            let mut name = rel.to_string_lossy().replace('/', "::");
            if let Some(parent) = name.strip_suffix("::mod") {
                name = parent.to_string();
            }
            if name == "lib" || name == "main" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            let code = text.split("#[cfg(test)]").next().unwrap_or("");
            let code: String =
                code.lines().filter(|l| !l.trim_start().starts_with("//")).collect::<Vec<_>>().join("\n");
            out.insert(name, code);
        }
    }
    out
}

/// Which modules each module names through `crate::` (the longest module
/// path a reference starts with), and `super::` for nested modules.
fn edges(mods: &BTreeMap<String, String>) -> BTreeMap<String, BTreeSet<String>> {
    let mut by_length: Vec<&String> = mods.keys().collect();
    by_length.sort_by_key(|m| std::cmp::Reverse(m.len()));
    let mut graph = BTreeMap::new();
    for (module, code) in mods {
        let mut to = BTreeSet::new();
        for piece in code.split("crate::").skip(1) {
            let path: String = piece
                .chars()
                .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || *c == '_' || *c == ':')
                .collect();
            let path = path.trim_end_matches(':');
            if let Some(target) = by_length.iter().find(|m| path == m.as_str() || path.starts_with(&format!("{m}::"))) {
                if *target != module && !module.starts_with(&format!("{target}::")) {
                    to.insert((*target).clone());
                }
            }
        }
        graph.insert(module.clone(), to);
    }
    graph
}

/// A circle in `graph`, if there is one.
fn circle(graph: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    #[derive(Clone, Copy, PartialEq)]
    enum Mark {
        Open,
        Done,
    }
    fn visit(
        node: &str,
        graph: &BTreeMap<String, BTreeSet<String>>,
        marks: &mut BTreeMap<String, Mark>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        match marks.get(node) {
            Some(Mark::Done) => return None,
            Some(Mark::Open) => {
                let start = path.iter().position(|p| p == node).unwrap();
                let mut found = path[start..].to_vec();
                found.push(node.to_string());
                return Some(found);
            }
            None => {}
        }
        marks.insert(node.to_string(), Mark::Open);
        path.push(node.to_string());
        for next in graph.get(node).into_iter().flatten() {
            if let Some(found) = visit(next, graph, marks, path) {
                return Some(found);
            }
        }
        path.pop();
        marks.insert(node.to_string(), Mark::Done);
        None
    }
    let mut marks = BTreeMap::new();
    graph.keys().find_map(|node| visit(node, graph, &mut marks, &mut Vec::new()))
}

#[test]
fn no_crate_has_a_circle_of_modules() {
    let crates = ["host/bpe", "host/core", "host/wasm", "host/proem", "host/serve", "host/cli", "host/full", "sdk"];
    for krate in crates {
        let mods = modules(&repo().join(krate).join("src"));
        assert!(!mods.is_empty(), "{krate}: no modules found");
        if let Some(found) = circle(&edges(&mods)) {
            panic!("{krate}: modules in a circle: {}", found.join(" -> "));
        }
    }
}

#[test]
fn the_circle_finder_finds_circles() {
    let mut mods = BTreeMap::new();
    mods.insert("a".to_string(), "use crate::b::x;".to_string());
    mods.insert("b".to_string(), "fn f() { crate::c::y() }".to_string());
    mods.insert("c".to_string(), "use crate::a;".to_string());
    mods.insert("d".to_string(), "use crate::a;".to_string());
    assert_eq!(circle(&edges(&mods)).unwrap(), ["a", "b", "c", "a"]);
    mods.insert("c".to_string(), "use crate::d;".to_string());
    assert_eq!(circle(&edges(&mods)).unwrap(), ["a", "b", "c", "d", "a"]);
    mods.insert("c".to_string(), "fn z() {}".to_string());
    assert_eq!(circle(&edges(&mods)), None);
}

#[test]
fn the_pipeline_crate_names_no_plugin_runtime() {
    let manifest = std::fs::read_to_string(repo().join("host/core/Cargo.toml")).unwrap();
    for forbidden in ["wasmtime", "tokio", "axum", "hyper", "oci-client", "cranelift"] {
        assert!(!manifest.contains(forbidden), "host/core/Cargo.toml names {forbidden}");
    }
    for (name, code) in modules(&repo().join("host/core/src")) {
        assert!(!code.contains("wasmtime::"), "core's {name} reaches into wasmtime");
    }
}
