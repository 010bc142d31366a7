//! The documentation against the code: docs/settings.md holds the settings table
//! (`mck_settings::SETTINGS`), docs/exit-codes.md the exit-code table of `Failure`, `--help`'s
//! table names every code, every relative link in README.md, docs/*.md, python/README.md
//! and BENCHMARKS.md points at a file that exists, and docs/architecture.md names every
//! workspace package, cites only paths that exist and counts no lines.

use crate::workspace;

use std::path::{Path, PathBuf};

use mck_cli::error::{Failure, exit_codes_help, exit_codes_markdown};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// Checks that `page` holds `generated` between the line that starts with `start` and the
/// line `end`; with `MCK_REGENERATE_DOCS=1` it writes it there instead.
fn check_generated(page: &str, start: &str, end: &str, generated: &str) {
    let path = repo().join(page);
    let doc = std::fs::read_to_string(&path).unwrap();
    let from = doc.find(start).expect("the start marker");
    let from = from + doc[from..].find('\n').unwrap() + 1;
    let to = doc.find(end).expect("the end marker");
    if std::env::var_os("MCK_REGENERATE_DOCS").is_some() {
        std::fs::write(&path, format!("{}{generated}{}", &doc[..from], &doc[to..])).unwrap();
        return;
    }
    assert_eq!(
        doc[from..to],
        *generated,
        "{page} disagrees with the code: run MCK_REGENERATE_DOCS=1 cargo test -p mck-cli --test tests docs::"
    );
}

#[test]
fn docs_settings_md_holds_the_settings_table() {
    check_generated(
        "docs/settings.md",
        "<!-- settings table: generated from crates/settings/src/defs.rs",
        "<!-- end of settings table -->",
        &mck_settings::markdown_table(),
    );
}

#[test]
fn docs_exit_codes_md_holds_the_failure_table() {
    check_generated(
        "docs/exit-codes.md",
        "<!-- exit codes: generated from crates/cli/src/error.rs",
        "<!-- end of exit codes -->",
        &exit_codes_markdown(),
    );
}

#[test]
fn help_lists_every_exit_code() {
    let help = exit_codes_help();
    assert!(help.starts_with("Exit codes:\n  0    success"), "{help}");
    for failure in Failure::ALL {
        let row = format!("\n  {}   {}", failure.code(), failure.meaning());
        assert!(help.contains(&row), "{failure:?} missing:\n{help}");
    }
}

/// The targets of `[text](target)` links in `markdown` (outside code spans and blocks).
fn links(markdown: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut in_block = false;
    for line in markdown.lines() {
        if line.trim_start().starts_with("```") {
            in_block = !in_block;
            continue;
        }
        if in_block {
            continue;
        }
        let mut rest = line;
        while let Some(at) = rest.find("](") {
            let after = &rest[at + 2..];
            let Some(close) = after.find(')') else { break };
            found.push(after[..close].to_owned());
            rest = &after[close..];
        }
    }
    found
}

#[test]
fn every_relative_link_resolves() {
    let root = repo();
    let mut pages = vec![
        root.join("README.md"),
        root.join("BENCHMARKS.md"),
        root.join("python/README.md"),
    ];
    for entry in std::fs::read_dir(root.join("docs")).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_some_and(|e| e == "md") {
            pages.push(path);
        }
    }
    let mut broken = Vec::new();
    for page in &pages {
        let text = std::fs::read_to_string(page).unwrap();
        for target in links(&text) {
            if target.contains("://") || target.starts_with('#') || target.starts_with("mailto:") {
                continue;
            }
            let file = target.split('#').next().unwrap();
            if !page.parent().unwrap().join(file).exists() {
                broken.push(format!("{}: {target}", page.display()));
            }
        }
    }
    assert!(broken.is_empty(), "broken links:\n{}", broken.join("\n"));
}

#[test]
fn the_link_finder_sees_links() {
    assert_eq!(
        links("see [a](docs/a.md) and [b](b.md#x)\n```\n[c](c.md)\n```\n"),
        ["docs/a.md", "b.md#x"]
    );
}

/// The paths docs/architecture.md cites: in each code span (outside fenced blocks), each
/// whitespace-separated word made only of `A-Z a-z 0-9 . _ - / *` that holds a `/` or ends in a
/// source or text extension, with its paragraph and its offset there. Absolute paths (the
/// system's) and `target/…` (build output) are not cited paths; another project's file is
/// written outside a code span.
fn cited_paths(markdown: &str) -> Vec<(String, usize, String)> {
    const EXTENSIONS: [&str; 12] = [
        ".rs", ".md", ".toml", ".py", ".sh", ".txt", ".json", ".cpp", ".h", ".c", ".yml", ".tsv",
    ];
    let mut in_block = false;
    let prose: Vec<&str> = markdown
        .lines()
        .map(|line| {
            if line.trim_start().starts_with("```") {
                in_block = !in_block;
                return "";
            }
            if in_block { "" } else { line }
        })
        .collect();
    let mut found = Vec::new();
    for paragraph in prose.join("\n").split("\n\n") {
        let mut offset = 0;
        for (i, piece) in paragraph.split('`').enumerate() {
            if i % 2 == 1 {
                let mut at = offset;
                for word in piece.split(|c: char| c.is_ascii_whitespace()) {
                    let path_like = !word.is_empty()
                        && word
                            .chars()
                            .all(|c| c.is_ascii_alphanumeric() || "._-/*".contains(c))
                        && (word.contains('/') || EXTENSIONS.iter().any(|e| word.ends_with(e)));
                    if path_like && !word.starts_with('/') && !word.starts_with("target/") {
                        found.push((paragraph.to_owned(), at, word.to_owned()));
                    }
                    at += word.len() + 1;
                }
            }
            offset += piece.len() + 1;
        }
    }
    found
}

/// Whether `path` (relative to `base`; `*` matches any part of one name) names something that
/// exists.
fn exists(base: &Path, path: &str) -> bool {
    fn matches(pattern: &str, name: &str) -> bool {
        match pattern.split_once('*') {
            None => pattern == name,
            Some((head, tail)) => {
                name.starts_with(head)
                    && (head.len()..=name.len())
                        .any(|i| name.is_char_boundary(i) && matches(tail, &name[i..]))
            }
        }
    }
    let mut here = vec![base.to_owned()];
    for part in path.split('/').filter(|p| !p.is_empty()) {
        here = here
            .iter()
            .flat_map(|dir| -> Vec<PathBuf> {
                if !part.contains('*') {
                    return vec![dir.join(part)];
                }
                std::fs::read_dir(dir)
                    .into_iter()
                    .flatten()
                    .map(|e| e.expect("a directory entry").path())
                    .filter(|p| matches(part, &p.file_name().unwrap().to_string_lossy()))
                    .collect()
            })
            .filter(|p| p.exists())
            .collect();
    }
    !here.is_empty()
}

/// Where `word` occurs in `text` as a whole word (its neighbours are not `A-Z a-z 0-9 _ -`).
fn word_at(text: &str, word: &str) -> Vec<usize> {
    let part = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric() || "_-".contains(c));
    text.match_indices(word)
        .map(|(at, _)| at)
        .filter(|&at| {
            !part(text[..at].chars().next_back()) && !part(text[at + word.len()..].chars().next())
        })
        .collect()
}

/// docs/architecture.md describes the workspace as it is:
/// - every package `cargo metadata` lists is named in it;
/// - every path it cites (see [`cited_paths`]) exists, from the repository root; a path without
///   `/`, or one not found there, may instead be relative to the `src/` or the directory of the
///   package named last before it in its paragraph (\"In `mck-store`, `index.rs` holds…\");
/// - it counts no lines (\"N lines\", \"N-line\"), which the code outgrows silently.
#[test]
fn docs_architecture_md_names_every_package_and_only_paths_that_exist() {
    let root = workspace::repo();
    let doc = std::fs::read_to_string(root.join("docs/architecture.md")).unwrap();
    let packages = workspace::packages();
    let mut wrong = Vec::new();
    for package in &packages {
        if word_at(&doc, &package.name).is_empty() {
            wrong.push(format!("the package {} is not named", package.name));
        }
    }
    for (paragraph, offset, path) in cited_paths(&doc) {
        let named_last = packages
            .iter()
            .filter_map(|p| {
                let last = word_at(&paragraph[..offset], &p.name).into_iter().max()?;
                Some((last, p))
            })
            .max_by_key(|(at, _)| *at)
            .map(|(_, p)| p);
        let found = exists(&root, &path)
            || named_last
                .is_some_and(|p| exists(&p.dir.join("src"), &path) || exists(&p.dir, &path));
        if !found {
            let relative = named_last.map_or(String::new(), |p| {
                format!(" (nor in {}, named before it)", p.name)
            });
            wrong.push(format!("`{path}` does not exist{relative}"));
        }
    }
    for count in line_counts(&doc) {
        wrong.push(format!("a line count: {count:?}"));
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md disagrees with the workspace:\n{}",
        wrong.join("\n")
    );
}

/// Every \"N lines\" / \"N-line\" in `text` (N in digits, maybe with `,` or `_`; the words may
/// be on two lines).
fn line_counts(text: &str) -> Vec<String> {
    let lower = text.to_lowercase();
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_alphanumeric());
    lower
        .match_indices("line")
        .filter_map(|(at, _)| {
            let after = lower[at + 4..]
                .strip_prefix('s')
                .unwrap_or(&lower[at + 4..]);
            if alnum(lower[..at].chars().next_back()) || alnum(after.chars().next()) {
                return None;
            }
            let before = lower[..at].trim_end_matches([' ', '-', '\n']);
            let number = before.len()
                - before
                    .trim_end_matches(|c: char| c.is_ascii_digit() || c == ',' || c == '_')
                    .len();
            let start = before.len() - number;
            let digits = lower[start..before.len()]
                .chars()
                .any(|c| c.is_ascii_digit());
            (digits && !alnum(lower[..start].chars().next_back()))
                .then(|| text[start..lower.len() - after.len()].replace('\n', " "))
        })
        .collect()
}

#[test]
fn the_architecture_rules_see_what_they_check() {
    let doc = "In `mck-store`, `index.rs` and `bash scripts/test.sh`; `/usr/lib` `target/x.so`\n\
               `mlir_cache_key::{bytecode}` `\"a/b\"` `src/*.rs`\n\n```\n`a/b.rs`\n```\nnext `x.py`";
    let cited = cited_paths(doc);
    assert_eq!(
        cited.iter().map(|c| c.2.as_str()).collect::<Vec<_>>(),
        ["index.rs", "scripts/test.sh", "src/*.rs", "x.py"]
    );
    let (paragraph, offset, _) = &cited[0];
    assert_eq!(&paragraph[*offset..*offset + 8], "index.rs");
    assert_eq!(
        word_at("mck-store-x mck-store, mck_store", "mck-store"),
        [12]
    );
    let root = workspace::repo();
    assert!(exists(&root, "crates/cli/src/*.rs") && exists(&root, "src/cli/"));
    assert!(!exists(&root, "crates/cli/src/*.nope"));
    assert_eq!(line_counts("none over 300\nlines."), ["300 lines"]);
    assert_eq!(
        line_counts("a 1,200-line file, 40 Lines"),
        ["1,200-line", "40 Lines"]
    );
    assert_eq!(
        line_counts("its 16 trace lines, line 2, one field a line, a v2 line, 3 pipelines"),
        Vec::<String>::new()
    );
}
