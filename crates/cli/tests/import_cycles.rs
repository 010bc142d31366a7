//! No import cycle between the files of any workspace crate.
//!
//! Every package `cargo metadata` lists is checked, the root package included: each of its
//! targets whose root file is under the package's `src/` (a library, each binary) is one crate.
//! Its module tree is walked from that root through the `mod NAME;` declarations (`NAME.rs` or
//! `NAME/mod.rs` beside a `mod.rs` or a crate root, `parent/NAME.rs` beside `parent.rs`, a
//! `#[path = "…"]` file beside the declaring file), and every `.rs` file under `src/` must be
//! reached by some target, or the reader is wrong.
//!
//! File A refers to file B when A's code (outside comments and string literals) holds a path
//! starting with `crate::`, `self::` or `super::` (repeated) that names an item of B: the longest
//! prefix of the path that is a module with its own file. Groups are expanded
//! (`use crate::{a, b::{c, self}}` names `a`, `b::c` and `b`). `self` and `super` count from the
//! module the path is written in, inline modules included, so `use super::*` in a unit-test
//! module (`#[cfg(test)] mod tests { … }`) names its own file and is no edge; test modules are
//! otherwise code like any other, and a test that imports a file which imports back is a cycle.
//! Paths that start with a bare name (a child module, an extern crate) and re-exports are not
//! followed: `crate::Error` is an edge to the crate root even if the root re-exports it.
//!
//! A cycle is a strongly connected group of two or more files. Each is reported as a walk
//! through all its files, back to the first, with the line of each reference it takes.

use crate::workspace;

use std::collections::{BTreeMap, BTreeSet, VecDeque};
use std::path::{Path, PathBuf};

#[derive(Clone, Debug, PartialEq)]
enum Tok {
    Ident(String),
    Str(String),
    /// `::`
    Sep,
    Punct(char),
}

/// The tokens of Rust source that matter here, each with its line; comments are dropped and
/// literals kept whole, so neither can hold a path.
fn tokens(text: &str) -> Vec<(Tok, usize)> {
    let chars: Vec<char> = text.chars().collect();
    let mut out = Vec::new();
    let (mut i, mut line) = (0, 1);
    let ident_char = |c: char| c.is_alphanumeric() || c == '_';
    // Skips a quoted literal from its opening quote; returns its contents.
    let quoted = |i: &mut usize, line: &mut usize, hashes: Option<usize>| -> String {
        let start = *i + 1;
        *i += 1;
        loop {
            let Some(&c) = chars.get(*i) else {
                return chars[start..].iter().collect();
            };
            if c == '\n' {
                *line += 1;
            }
            match hashes {
                None if c == '\\' => {
                    *i += 1;
                    *line += usize::from(chars.get(*i) == Some(&'\n'));
                }
                None if c == '"' => break,
                Some(n) if c == '"' && (1..=n).all(|k| chars.get(*i + k) == Some(&'#')) => {
                    let s = chars[start..*i].iter().collect();
                    *i += n + 1;
                    return s;
                }
                _ => {}
            }
            *i += 1;
        }
        let s = chars[start..*i].iter().collect();
        *i += 1;
        s
    };
    while let Some(&c) = chars.get(i) {
        let next = chars.get(i + 1).copied();
        match c {
            '\n' => {
                line += 1;
                i += 1;
            }
            c if c.is_whitespace() => i += 1,
            '/' if next == Some('/') => {
                while i < chars.len() && chars[i] != '\n' {
                    i += 1;
                }
            }
            '/' if next == Some('*') => {
                let mut depth = 0;
                while i < chars.len() {
                    if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                        depth += 1;
                        i += 2;
                    } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                        depth -= 1;
                        i += 2;
                        if depth == 0 {
                            break;
                        }
                    } else {
                        line += usize::from(chars[i] == '\n');
                        i += 1;
                    }
                }
            }
            '"' => {
                let at = line;
                let s = quoted(&mut i, &mut line, None);
                out.push((Tok::Str(s), at));
            }
            '\'' => {
                // A character literal ('x', '\n', '\''), else a lifetime or label.
                if next == Some('\\') {
                    i += 3;
                    while i < chars.len() && chars[i] != '\'' {
                        i += 1;
                    }
                    i += 1;
                } else if chars.get(i + 2) == Some(&'\'') {
                    i += 3;
                } else {
                    i += 1;
                }
            }
            ':' if next == Some(':') => {
                out.push((Tok::Sep, line));
                i += 2;
            }
            c if ident_char(c) => {
                let start = i;
                while i < chars.len() && ident_char(chars[i]) {
                    i += 1;
                }
                let word: String = chars[start..i].iter().collect();
                let at = line;
                match (word.as_str(), chars.get(i)) {
                    // Raw strings: r"…", r#"…"#, br"…", cr"…".
                    ("r" | "br" | "cr", Some('#' | '"')) => {
                        let hashes = chars[i..].iter().take_while(|&&c| c == '#').count();
                        if chars.get(i + hashes) == Some(&'"') {
                            i += hashes;
                            let s = quoted(&mut i, &mut line, Some(hashes));
                            out.push((Tok::Str(s), at));
                        } else {
                            // A raw identifier, r#name.
                            i += 1;
                            let start = i;
                            while i < chars.len() && ident_char(chars[i]) {
                                i += 1;
                            }
                            out.push((Tok::Ident(chars[start..i].iter().collect()), at));
                        }
                    }
                    ("b" | "c", Some('"')) => {
                        let s = quoted(&mut i, &mut line, None);
                        out.push((Tok::Str(s), at));
                    }
                    ("b", Some('\'')) => {
                        i += 1 + usize::from(chars.get(i + 1) == Some(&'\\'));
                        i += 1;
                        while i < chars.len() && chars[i] != '\'' {
                            i += if chars[i] == '\\' { 2 } else { 1 };
                        }
                        i += 1;
                    }
                    _ => out.push((Tok::Ident(word), at)),
                }
            }
            c => {
                out.push((Tok::Punct(c), line));
                i += 1;
            }
        }
    }
    out
}

/// The paths of the tree that starts at `toks[i]` (`a::b`, `a::{b, c::*}`, `a::{self, b}`),
/// each with `prefix` before it; returns the index after the tree.
fn path_tree(
    toks: &[(Tok, usize)],
    mut i: usize,
    mut prefix: Vec<String>,
    out: &mut Vec<Vec<String>>,
) -> usize {
    loop {
        match toks.get(i).map(|t| &t.0) {
            Some(Tok::Ident(s)) => {
                // In a group, `self` is the path before the group.
                if s != "self" || prefix.is_empty() {
                    prefix.push(s.clone());
                }
                i += 1;
            }
            Some(Tok::Punct('{')) => {
                i += 1;
                loop {
                    match toks.get(i).map(|t| &t.0) {
                        None => return i,
                        Some(Tok::Punct('}')) => return i + 1,
                        Some(Tok::Punct(',')) => i += 1,
                        _ => {
                            let after = path_tree(toks, i, prefix.clone(), out);
                            i = after.max(i + 1);
                        }
                    }
                }
            }
            Some(Tok::Punct('*')) => {
                i += 1;
                break;
            }
            _ => break,
        }
        if toks.get(i).map(|t| &t.0) == Some(&Tok::Sep) {
            i += 1;
        } else {
            break;
        }
    }
    if toks.get(i).map(|t| &t.0) == Some(&Tok::Ident("as".into())) {
        i += 2;
    }
    out.push(prefix);
    i
}

/// What one file says: its `mod NAME;` declarations and the `crate::`/`self::`/`super::`
/// paths in it, each made absolute (from the crate root) where it is written.
#[derive(Debug, Default)]
struct Reading {
    /// (inline modules around it, name, `#[path]`) of each `mod NAME;`.
    declared: Vec<(Vec<String>, String, Option<String>)>,
    /// (absolute path, line, the path as written).
    paths: Vec<(Vec<String>, usize, String)>,
}

fn read(text: &str, module: &[String]) -> Reading {
    let toks = tokens(text);
    let ident = |i: usize| match toks.get(i) {
        Some((Tok::Ident(s), _)) => Some(s.as_str()),
        _ => None,
    };
    let punct = |i: usize, c: char| matches!(toks.get(i), Some((Tok::Punct(p), _)) if *p == c);
    let mut reading = Reading::default();
    // Inline modules around the current token; whether each open brace opened one.
    let mut inline: Vec<String> = Vec::new();
    let mut braces: Vec<bool> = Vec::new();
    let mut opens_module = false;
    let mut i = 0;
    while i < toks.len() {
        match &toks[i].0 {
            Tok::Punct('{') => {
                braces.push(std::mem::take(&mut opens_module));
            }
            Tok::Punct('}') => {
                let closes_module = braces.pop() == Some(true);
                if closes_module {
                    inline.pop();
                }
            }
            Tok::Ident(kw) if kw == "mod" => {
                if let Some(name) = ident(i + 1) {
                    if punct(i + 2, '{') {
                        inline.push(name.to_owned());
                        opens_module = true;
                    } else if punct(i + 2, ';') {
                        let path = path_attribute(&toks, i);
                        reading
                            .declared
                            .push((inline.clone(), name.to_owned(), path));
                    }
                }
            }
            Tok::Ident(kw)
                if matches!(kw.as_str(), "crate" | "self" | "super")
                    && toks.get(i + 1).map(|t| &t.0) == Some(&Tok::Sep)
                    && (i == 0 || toks[i - 1].0 != Tok::Sep) =>
            {
                let line = toks[i].1;
                let mut found = Vec::new();
                let end = path_tree(&toks, i, Vec::new(), &mut found);
                let here: Vec<String> = module.iter().chain(&inline).cloned().collect();
                for written in found {
                    if let Some(absolute) = absolute(&written, &here) {
                        reading.paths.push((absolute, line, written.join("::")));
                    }
                }
                i = end;
                continue;
            }
            _ => {}
        }
        i += 1;
    }
    reading
}

/// The `#[path = "…"]` among the attributes before the `mod` at `toks[at]`.
fn path_attribute(toks: &[(Tok, usize)], at: usize) -> Option<String> {
    let mut i = at;
    // Visibility: `pub`, `pub(crate)`, `pub(in …)`.
    if i > 0 && toks[i - 1].0 == Tok::Punct(')') {
        while i > 0 && toks[i - 1].0 != Tok::Punct('(') {
            i -= 1;
        }
        i = i.saturating_sub(1);
    }
    if i > 0 && toks[i - 1].0 == Tok::Ident("pub".into()) {
        i -= 1;
    }
    // Attributes, `#[…]`, from the last one back.
    while i >= 2 && toks[i - 1].0 == Tok::Punct(']') {
        let close = i - 1;
        let mut open = close;
        let mut depth = 0;
        loop {
            match toks[open].0 {
                Tok::Punct(']') => depth += 1,
                Tok::Punct('[') => depth -= 1,
                _ => {}
            }
            if depth == 0 || open == 0 {
                break;
            }
            open -= 1;
        }
        if let [
            (Tok::Ident(name), _),
            (Tok::Punct('='), _),
            (Tok::Str(path), _),
        ] = &toks[open + 1..close]
            && name == "path"
        {
            return Some(path.clone());
        }
        i = open.saturating_sub(1);
    }
    None
}

/// `written` (starting with `crate`, `self` or `super`) from the crate root, when written in
/// module `here`; `None` when it climbs above the root.
fn absolute(written: &[String], here: &[String]) -> Option<Vec<String>> {
    let mut base = match written.first().map(String::as_str) {
        Some("crate") => Vec::new(),
        _ => here.to_vec(),
    };
    let mut rest = written;
    if rest.first().is_some_and(|s| s == "crate") {
        rest = &rest[1..];
    }
    while let Some(first) = rest.first() {
        match first.as_str() {
            "self" => {}
            "super" => {
                base.pop()?;
            }
            _ => break,
        }
        rest = &rest[1..];
    }
    base.extend(rest.iter().cloned());
    Some(base)
}

/// One file of a crate.
#[derive(Debug)]
struct File {
    path: PathBuf,
    reading: Reading,
}

/// The files of the crate whose root is `root`, by module path, found through its `mod`
/// declarations; `source` reads a file (`None`: there is none).
fn crate_files(
    root: &Path,
    source: &dyn Fn(&Path) -> Option<String>,
) -> BTreeMap<Vec<String>, File> {
    let mut files = BTreeMap::new();
    // (module path, file, the directory its `mod NAME;` children are in).
    let mut todo = vec![(
        Vec::<String>::new(),
        root.to_owned(),
        root.parent().unwrap().to_owned(),
    )];
    while let Some((module, path, children)) = todo.pop() {
        let text = source(&path).unwrap_or_else(|| panic!("{}: no such file", path.display()));
        let reading = read(&text, &module);
        for (inline, name, attribute) in &reading.declared {
            let mut child_module = module.clone();
            child_module.extend(inline.iter().cloned());
            child_module.push(name.clone());
            let mut dir = children.clone();
            dir.extend(inline);
            let (file, its_children) = match attribute {
                Some(relative) if inline.is_empty() => {
                    let file = path.parent().unwrap().join(relative);
                    let dir = file.parent().unwrap().to_owned();
                    (file, dir)
                }
                Some(relative) => (dir.join(relative), dir.clone()),
                None => {
                    let flat = dir.join(format!("{name}.rs"));
                    if source(&flat).is_some() {
                        (flat, dir.join(name))
                    } else {
                        (dir.join(name).join("mod.rs"), dir.join(name))
                    }
                }
            };
            todo.push((child_module, file, its_children));
        }
        files.insert(module, File { path, reading });
    }
    files
}

/// An edge: the file referred to, and where (line, the path as written).
type Edges = BTreeMap<PathBuf, BTreeMap<PathBuf, (usize, String)>>;

/// Which file of the crate refers to which, with the first reference of each pair.
fn edges(files: &BTreeMap<Vec<String>, File>) -> Edges {
    let mut edges = Edges::new();
    for file in files.values() {
        let out = edges.entry(file.path.clone()).or_default();
        for (absolute, line, written) in &file.reading.paths {
            let target = (0..=absolute.len())
                .rev()
                .find_map(|n| files.get(&absolute[..n]))
                .expect("the crate root is a prefix of every path");
            if target.path != file.path {
                out.entry(target.path.clone())
                    .or_insert_with(|| (*line, written.clone()));
            }
        }
    }
    edges
}

/// The strongly connected groups of two or more files (Tarjan's algorithm).
fn knots(edges: &Edges) -> Vec<BTreeSet<PathBuf>> {
    struct Walk<'e> {
        edges: &'e Edges,
        index: BTreeMap<&'e PathBuf, usize>,
        low: BTreeMap<&'e PathBuf, usize>,
        stack: Vec<&'e PathBuf>,
        out: Vec<BTreeSet<PathBuf>>,
    }
    fn visit<'e>(w: &mut Walk<'e>, v: &'e PathBuf) {
        let n = w.index.len();
        w.index.insert(v, n);
        w.low.insert(v, n);
        w.stack.push(v);
        for u in w.edges[v].keys() {
            if !w.index.contains_key(u) {
                visit(w, u);
                let low = w.low[v].min(w.low[u]);
                w.low.insert(v, low);
            } else if w.stack.contains(&u) {
                let low = w.low[v].min(w.index[u]);
                w.low.insert(v, low);
            }
        }
        if w.low[v] == w.index[v] {
            let mut group = BTreeSet::new();
            while let Some(u) = w.stack.pop() {
                group.insert(u.clone());
                if u == v {
                    break;
                }
            }
            if group.len() > 1 {
                w.out.push(group);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        out: Vec::new(),
    };
    for v in edges.keys() {
        if !walk.index.contains_key(v) {
            visit(&mut walk, v);
        }
    }
    walk.out
}

/// A walk through every file of `knot` and back to the first, each step the shortest path to
/// the nearest file not yet visited.
fn walk_through(knot: &BTreeSet<PathBuf>, edges: &Edges) -> Vec<PathBuf> {
    let first = knot.first().expect("a knot has files").clone();
    let mut walk = vec![first.clone()];
    let mut seen = BTreeSet::from([first.clone()]);
    loop {
        let done = seen.len() == knot.len();
        let from = walk.last().unwrap().clone();
        let is_goal = |u: &PathBuf| if done { *u == first } else { !seen.contains(u) };
        // Breadth first inside the knot.
        let mut before: BTreeMap<PathBuf, PathBuf> = BTreeMap::new();
        let mut visited = BTreeSet::from([from.clone()]);
        let mut queue = VecDeque::from([from.clone()]);
        let mut goal = None;
        'search: while let Some(v) = queue.pop_front() {
            for u in edges[&v].keys().filter(|u| knot.contains(*u)) {
                if visited.insert(u.clone()) {
                    before.insert(u.clone(), v.clone());
                    if is_goal(u) {
                        goal = Some(u.clone());
                        break 'search;
                    }
                    queue.push_back(u.clone());
                }
            }
        }
        let mut steps = vec![goal.expect("a strongly connected group reaches each of its files")];
        while before[steps.last().unwrap()] != from {
            steps.push(before[steps.last().unwrap()].clone());
        }
        for step in steps.into_iter().rev() {
            seen.insert(step.clone());
            walk.push(step);
        }
        if done {
            return walk;
        }
    }
}

/// The report of each cycle: the walk, then each reference it takes.
fn describe(name: &str, knot: &BTreeSet<PathBuf>, edges: &Edges, repo: &Path) -> String {
    let shown = |p: &Path| p.strip_prefix(repo).unwrap_or(p).display().to_string();
    let walk = walk_through(knot, edges);
    let mut text = format!(
        "{name}: {}\n",
        walk.iter()
            .map(|p| shown(p))
            .collect::<Vec<_>>()
            .join(" → ")
    );
    for pair in walk.windows(2) {
        let (line, written) = &edges[&pair[0]][&pair[1]];
        text += &format!("    {}:{line}: {written}\n", shown(&pair[0]));
    }
    text
}

/// Every `.rs` file under `dir`.
fn rust_files(dir: &Path, out: &mut BTreeSet<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten() {
        let path = entry.expect("a directory entry").path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.insert(path);
        }
    }
}

#[test]
fn no_file_of_any_workspace_crate_imports_back_into_one_that_imports_it() {
    let repo = workspace::repo();
    let mut report = Vec::new();
    let mut edge_count = 0;
    let mut reached = BTreeSet::new();
    let mut on_disk = BTreeSet::new();
    let mut reported = BTreeSet::new();
    for package in workspace::packages() {
        let src = package.dir.join("src");
        rust_files(&src, &mut on_disk);
        for root in package.roots.iter().filter(|r| r.starts_with(&src)) {
            let files = crate_files(root, &|p| std::fs::read_to_string(p).ok());
            reached.extend(files.values().map(|f| f.path.clone()));
            let edges = edges(&files);
            edge_count += edges.values().map(BTreeMap::len).sum::<usize>();
            for knot in knots(&edges) {
                // A library and a binary may share files: one report per knot.
                if reported.insert(knot.clone()) {
                    report.push(describe(&package.name, &knot, &edges, &repo));
                }
            }
        }
    }
    let unread: Vec<_> = on_disk.difference(&reached).collect();
    assert!(
        unread.is_empty(),
        "files under a src/ that no crate's module tree reaches (a `mod` the reader missed, or a \
         dead file): {unread:#?}"
    );
    assert!(edge_count > 100, "the reader lost the edges: {edge_count}");
    assert!(
        report.is_empty(),
        "{} import cycle(s) between files (each a walk through all its files, then the \
         reference behind each step):\n{}",
        report.len(),
        report.concat()
    );
}

#[test]
fn the_hand_over_module_is_a_leaf() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let files = crate_files(&src.join("lib.rs"), &|p| std::fs::read_to_string(p).ok());
    let edges = edges(&files);
    assert_eq!(edges[&src.join("handover.rs")], BTreeMap::new());
}

/// A crate held in memory: file path → text.
fn fake(files: &[(&str, &str)]) -> Edges {
    let files: BTreeMap<PathBuf, String> = files
        .iter()
        .map(|(p, t)| (PathBuf::from(p), t.to_string()))
        .collect();
    edges(&crate_files(Path::new("src/lib.rs"), &|p| {
        files.get(p).cloned()
    }))
}

fn knots_of(edges: &Edges) -> Vec<Vec<String>> {
    knots(edges)
        .iter()
        .map(|k| {
            walk_through(k, edges)
                .iter()
                .map(|p| p.display().to_string())
                .collect()
        })
        .collect()
}

#[test]
fn groups_repeated_super_self_and_nested_files_are_followed() {
    let edges = fake(&[
        (
            "src/lib.rs",
            "pub mod a; mod b; mod c; mod d;\npub struct Root;",
        ),
        ("src/a.rs", "use crate::{d, b::{self as bee, X}};\n"),
        (
            "src/b.rs",
            "mod inner;\npub struct X;\nfn f() { self::inner::g() }\n",
        ),
        ("src/b/inner.rs", "pub fn g() { super::super::c::h() }\n"),
        (
            "src/c.rs",
            "// use crate::d;\n/* crate::d */ pub fn h() { let _ = \"crate::d::x\"; \
             let _ = r#\"super::d\"#; let _ = 'c'; super::a::k::<u8>(); }\n",
        ),
        (
            "src/d.rs",
            "use crate::Root;\n#[cfg(test)]\nmod tests {\n    use super::*;\n}\n",
        ),
    ]);
    let targets = |f: &str| -> Vec<String> {
        edges[Path::new(f)]
            .keys()
            .map(|p| p.display().to_string())
            .collect()
    };
    assert_eq!(targets("src/a.rs"), ["src/b.rs", "src/d.rs"]);
    assert_eq!(targets("src/b.rs"), ["src/b/inner.rs"]);
    assert_eq!(targets("src/b/inner.rs"), ["src/c.rs"]);
    assert_eq!(
        targets("src/c.rs"),
        ["src/a.rs"],
        "comments and literals hold no path"
    );
    assert_eq!(
        targets("src/d.rs"),
        ["src/lib.rs"],
        "a test's `super::*` is its own file"
    );
    assert_eq!(edges[Path::new("src/a.rs")][Path::new("src/b.rs")].0, 1);
    assert_eq!(
        knots_of(&edges),
        [[
            "src/a.rs",
            "src/b.rs",
            "src/b/inner.rs",
            "src/c.rs",
            "src/a.rs"
        ]]
    );
}

#[test]
fn mod_rs_inline_modules_and_path_attributes() {
    let edges = fake(&[
        (
            "src/lib.rs",
            "mod x;\nmod t { mod u; }\n#[cfg(test)]\n#[path = \"z_tests.rs\"]\nmod z;",
        ),
        (
            "src/x/mod.rs",
            "mod y;\npub use self::y::Y;\npub struct W;\n",
        ),
        ("src/x/y.rs", "pub struct Y(super::W);\n"),
        ("src/t/u.rs", "mod tests { use super::super::super::x::W; }"),
        ("src/z_tests.rs", "use super::t;"),
    ]);
    assert_eq!(
        knots_of(&edges),
        [["src/x/mod.rs", "src/x/y.rs", "src/x/mod.rs"]]
    );
    assert!(edges[Path::new("src/t/u.rs")].contains_key(Path::new("src/x/mod.rs")));
    assert!(edges[Path::new("src/z_tests.rs")].contains_key(Path::new("src/lib.rs")));
}

#[test]
fn a_knot_of_more_files_than_one_circle_is_walked_whole() {
    // a ⇄ b and a ⇄ c: no single circle holds all three.
    let edges = fake(&[
        ("src/lib.rs", "mod a; mod b; mod c;"),
        ("src/a.rs", "use crate::b; use crate::c;"),
        ("src/b.rs", "use crate::a;"),
        ("src/c.rs", "use crate::a;"),
        ("src/d.rs", ""),
    ]);
    assert_eq!(
        knots_of(&edges),
        [["src/a.rs", "src/b.rs", "src/a.rs", "src/c.rs", "src/a.rs"]]
    );
    assert!(
        fake(&[("src/lib.rs", "mod a;"), ("src/a.rs", "use crate::a;")])
            .values()
            .all(BTreeMap::is_empty)
    );
}
