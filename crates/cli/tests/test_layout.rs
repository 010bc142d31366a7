//! Each package of the workspace links its integration tests into one binary: its Cargo.toml
//! turns `autotests` off and declares the one `[[test]]` target `tests` (`tests/tests.rs`), which
//! declares every other file directly under `tests/` as a module. With `autotests = false` cargo
//! no longer finds a new `tests/*.rs` by itself: a file left out of `tests/tests.rs` would never
//! be compiled or run, so this test names it.

use std::path::{Path, PathBuf};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The directories of the workspace's members, from the root Cargo.toml's `members = [...]`.
fn members() -> Vec<PathBuf> {
    let manifest = std::fs::read_to_string(repo().join("Cargo.toml")).expect("Cargo.toml");
    let line = manifest
        .lines()
        .find(|line| line.trim_start().starts_with("members = ["))
        .expect("a one-line `members = [...]` in the root Cargo.toml");
    let list = &line[line.find('[').unwrap() + 1..line.rfind(']').expect("`]`")];
    let members: Vec<PathBuf> = list
        .split(',')
        .map(|item| item.trim().trim_matches('"'))
        .filter(|item| !item.is_empty())
        .map(|item| repo().join(item))
        .collect();
    assert!(members.len() > 1, "members = [{list}]");
    members
}

/// The names of the `.rs` files directly under `dir`, without `.rs`.
fn rust_files(dir: &Path) -> Vec<String> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut names: Vec<String> = entries
        .map(|entry| entry.expect("entry").path())
        .filter(|path| path.is_file() && path.extension().is_some_and(|e| e == "rs"))
        .map(|path| path.file_stem().unwrap().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[test]
fn every_package_has_one_integration_test_binary() {
    let mut wrong = Vec::new();
    for member in members() {
        let manifest = std::fs::read_to_string(member.join("Cargo.toml")).expect("Cargo.toml");
        let lines: Vec<&str> = manifest.lines().map(str::trim).collect();
        let tests = rust_files(&member.join("tests"));
        let targets = lines.iter().filter(|l| **l == "[[test]]").count();
        let what = member.strip_prefix(repo()).unwrap_or(&member).display();
        if tests.is_empty() {
            if targets != 0 {
                wrong.push(format!("{what}: a [[test]] target but no tests/*.rs"));
            }
            continue;
        }
        if !lines.contains(&"autotests = false") {
            wrong.push(format!("{what}: tests/*.rs without `autotests = false`"));
        }
        let declared = lines.windows(3).any(|w| {
            w == [
                "[[test]]",
                r#"name = "tests""#,
                r#"path = "tests/tests.rs""#,
            ]
        });
        if targets != 1 || !declared {
            wrong.push(format!(
                "{what}: {targets} [[test]] targets; want exactly one, \
                 `name = \"tests\"` then `path = \"tests/tests.rs\"`"
            ));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn every_file_under_tests_is_a_module_of_tests_rs() {
    let mut missing = Vec::new();
    for member in members() {
        let dir = member.join("tests");
        let files = rust_files(&dir);
        if files.is_empty() {
            continue;
        }
        let root = std::fs::read_to_string(dir.join("tests.rs")).unwrap_or_default();
        let declared: Vec<&str> = root
            .lines()
            .filter_map(|l| l.trim().strip_prefix("mod ")?.strip_suffix(';'))
            .collect();
        for file in files.iter().filter(|f| *f != "tests") {
            if !declared.contains(&file.as_str()) {
                let what = dir.strip_prefix(repo()).unwrap_or(&dir).display();
                missing.push(format!("{what}/{file}.rs: no `mod {file};` in tests.rs"));
            }
        }
    }
    assert!(
        missing.is_empty(),
        "never compiled, never run:\n{}",
        missing.join("\n")
    );
}
