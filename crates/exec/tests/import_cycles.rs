//! No import cycle among the modules of this crate (as crates/cli/tests/import_cycles.rs does
//! for mck-cli): each file's `crate::` references are read from its source, and a depth-first
//! search looks for a path back to where it started. An exec request walks run → audit →
//! fingerprint, and nothing of those imports back into `run`.

use std::collections::BTreeMap;
use std::path::Path;

/// Module name -> the other modules of this crate its file refers to as `crate::NAME`.
fn edges() -> BTreeMap<String, Vec<String>> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let sources: BTreeMap<String, String> = std::fs::read_dir(&src)
        .expect("src")
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "rs"))
        .map(|path| {
            let name = path
                .file_stem()
                .expect("stem")
                .to_string_lossy()
                .into_owned();
            (name, std::fs::read_to_string(&path).expect("read"))
        })
        .filter(|(name, _)| name != "lib")
        .collect();
    let mut edges = BTreeMap::new();
    for (name, text) in &sources {
        let code: String = text
            .lines()
            .map(|line| line.split("//").next().unwrap_or(""))
            .collect::<Vec<_>>()
            .join("\n");
        let mut used = Vec::new();
        for (at, _) in code.match_indices("crate::") {
            let rest = &code[at + "crate::".len()..];
            // `crate::name` or `crate::{a, b::c}`.
            let names: Vec<&str> = match rest.strip_prefix('{') {
                Some(group) => group[..group.find('}').unwrap_or(group.len())]
                    .split(',')
                    .map(|item| item.trim().split("::").next().unwrap_or(""))
                    .collect(),
                None => vec![
                    rest.split(|c: char| !c.is_alphanumeric() && c != '_')
                        .next()
                        .unwrap_or(""),
                ],
            };
            for used_name in names {
                if used_name != name
                    && sources.contains_key(used_name)
                    && !used.iter().any(|u| u == used_name)
                {
                    used.push(used_name.to_string());
                }
            }
        }
        used.sort();
        edges.insert(name.clone(), used);
    }
    edges
}

/// The first cycle found, as the path that closes it.
fn find_cycle(edges: &BTreeMap<String, Vec<String>>) -> Option<Vec<String>> {
    fn visit(
        node: &str,
        edges: &BTreeMap<String, Vec<String>>,
        path: &mut Vec<String>,
        done: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        if let Some(start) = path.iter().position(|p| p == node) {
            let mut cycle = path[start..].to_vec();
            cycle.push(node.to_string());
            return Some(cycle);
        }
        if done.iter().any(|d| d == node) {
            return None;
        }
        path.push(node.to_string());
        for next in &edges[node] {
            if let Some(cycle) = visit(next, edges, path, done) {
                return Some(cycle);
            }
        }
        path.pop();
        done.push(node.to_string());
        None
    }
    let mut done = Vec::new();
    edges
        .keys()
        .find_map(|node| visit(node, edges, &mut Vec::new(), &mut done))
}

#[test]
fn no_module_imports_back_into_one_that_imports_it() {
    let edges = edges();
    assert!(
        edges["run"].contains(&"audit".to_string()),
        "the reader lost an edge: {edges:?}"
    );
    assert_eq!(find_cycle(&edges), None, "{edges:#?}");
}

#[test]
fn an_audit_needs_nothing_of_run_or_direct() {
    let edges = edges();
    for module in ["audit", "fingerprint", "compiler"] {
        for caller in ["run", "direct"] {
            assert!(
                !edges[module].contains(&caller.to_string()),
                "{module} imports {caller}: {edges:?}"
            );
        }
    }
}
