//! The documentation against the code: docs/settings.md holds the settings table
//! (`mck_settings::SETTINGS`), docs/exit-codes.md the exit-code table of `Failure`, `--help`'s
//! table names every code, and every relative link in README.md, docs/*.md, python/README.md
//! and BENCHMARKS.md points at a file that exists.

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
