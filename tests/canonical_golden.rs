//! Pinned canonical digests: a REGRESSION PIN, NOT A CORRECTNESS ORACLE.
//!
//! `tests/data/golden/canonical-digests.txt` records, for every file of
//! `tests/data/corpus` and every pinned option set, the digest
//! `mlir-cache-key canon --digest` printed when the file was written (or
//! `unreadable`), and the producer string the CLI writes into canonical
//! bytecode. Whether those digests are *right* is checked elsewhere (a/b
//! pairs, JAX's recorded keys, the lit tests); this test only catches canonical
//! bytes that *change*.
//!
//! The producer-string rule: the producer (`mlir-cache-key/N`, `PRODUCER` in
//! src/mlir/emit.rs) promises stable canonical bytes. If any pinned
//! digest changes while the producer string is unchanged — an MLIR or melior
//! upgrade, a canonicalisation change — this test fails and says to bump the
//! producer and regenerate the golden file with `scripts/regen-golden.sh`
//! (a developer command; no environment variable rewrites the file).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Mutex;

const GOLDEN: &str = "tests/data/golden/canonical-digests.txt";
const CORPUS: &str = "tests/data/corpus";
const REGENERATE: &str = "scripts/regen-golden.sh";

/// The option sets pinned (the same list as in scripts/regen-golden.sh).
const OPTION_SETS: &[(&str, &[&str])] = &[
    ("default", &[]),
    ("keep-locations", &["--keep-locations"]),
    ("kernels-keep", &["--kernels", "keep"]),
    (
        "ignore-custom-partitioning",
        &["--ignore-custom-partitioning"],
    ),
];

/// What one (option set, file) gives: a digest, or `unreadable`.
type Pins = BTreeMap<(String, String), String>;

#[derive(Debug, Clone, PartialEq, Eq)]
struct Golden {
    producer: String,
    pins: Pins,
}

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn parse_golden(text: &str) -> Golden {
    let mut producer = None;
    let mut pins = Pins::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(p) = line.strip_prefix("producer ") {
            assert!(
                producer.is_none(),
                "{GOLDEN}:{}: second producer line",
                n + 1
            );
            producer = Some(p.to_string());
            continue;
        }
        let words: Vec<&str> = line.split_whitespace().collect();
        let [set, file, value] = words[..] else {
            panic!(
                "{GOLDEN}:{}: expected `OPTION-SET FILE DIGEST`: {line}",
                n + 1
            )
        };
        assert!(
            value == "unreadable"
                || (value.len() == 64 && value.bytes().all(|b| b.is_ascii_hexdigit())),
            "{GOLDEN}:{}: not a digest: {value}",
            n + 1
        );
        let previous = pins.insert((set.to_string(), file.to_string()), value.to_string());
        assert!(previous.is_none(), "{GOLDEN}:{}: pinned twice", n + 1);
    }
    Golden {
        producer: producer.unwrap_or_else(|| panic!("{GOLDEN}: no `producer` line")),
        pins,
    }
}

/// Every corpus file, relative to the corpus folder, `/`-separated.
fn corpus_files() -> Vec<String> {
    fn walk(dir: &Path, base: &Path, out: &mut Vec<String>) {
        for entry in std::fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
            let path = entry.unwrap().path();
            if path.is_dir() {
                walk(&path, base, out);
            } else if path.extension().is_none_or(|e| e != "md") {
                let rel = path.strip_prefix(base).unwrap();
                out.push(
                    rel.components()
                        .map(|c| c.as_os_str().to_string_lossy().into_owned())
                        .collect::<Vec<_>>()
                        .join("/"),
                );
            }
        }
    }
    let base = root().join(CORPUS);
    let mut out = Vec::new();
    walk(&base, &base, &mut out);
    out.sort();
    assert!(out.len() >= 20, "corpus looks empty: {out:?}");
    out
}

fn cli() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mlir-cache-key"));
    command.env_remove("MLIR_CACHE_KEY_FLAGS");
    command
}

/// `canon --digest` of one corpus file under one option set.
fn digest(flags: &[&str], file: &str) -> String {
    let path = root().join(CORPUS).join(file);
    let out = cli()
        .args(["canon", "--digest"])
        .args(flags)
        .arg(&path)
        .output()
        .expect("run mlir-cache-key");
    let stderr = String::from_utf8_lossy(&out.stderr);
    if !out.status.success() {
        assert!(
            stderr.contains("cannot parse"),
            "canon --digest {flags:?} {file} failed, not as unreadable input:\n{stderr}"
        );
        return "unreadable".into();
    }
    let digest = String::from_utf8(out.stdout).expect("utf-8");
    let digest = digest.trim();
    assert_eq!(digest.len(), 64, "{file}: {digest:?}");
    digest.to_string()
}

/// The producer string the CLI writes into canonical bytecode (after the magic
/// and the version varint, NUL-terminated).
fn actual_producer() -> String {
    let bytes = crate::common::success(
        cli()
            .arg("canon")
            .arg(root().join(CORPUS).join("cpu/mlp.a.generic.mlir")),
    );
    assert_eq!(&bytes[..4], b"ML\xefR", "not MLIR bytecode");
    // The version (6) is a one-byte varint.
    assert_eq!(bytes[4] & 1, 1, "version varint longer than one byte");
    let rest = &bytes[5..];
    let end = rest
        .iter()
        .position(|&b| b == 0)
        .expect("NUL after producer");
    String::from_utf8(rest[..end].to_vec()).expect("utf-8 producer")
}

/// Every pin computed now, two CLI processes at a time.
fn actual_pins(files: &[String]) -> Pins {
    let jobs: Vec<(&str, &[&str], &str)> = OPTION_SETS
        .iter()
        .flat_map(|&(set, flags)| files.iter().map(move |f| (set, flags, f.as_str())))
        .collect();
    let next = Mutex::new(0usize);
    let pins = Mutex::new(Pins::new());
    std::thread::scope(|scope| {
        for _ in 0..2 {
            scope.spawn(|| {
                loop {
                    let job = {
                        let mut n = next.lock().unwrap();
                        let job = jobs.get(*n).copied();
                        *n += 1;
                        job
                    };
                    let Some((set, flags, file)) = job else { break };
                    let value = digest(flags, file);
                    pins.lock()
                        .unwrap()
                        .insert((set.to_string(), file.to_string()), value);
                }
            });
        }
    });
    pins.into_inner().unwrap()
}

/// The comparison and its message: `Ok` when the golden file holds, else why
/// not and what to do. Pure, so the rule itself is tested below.
fn verdict(golden: &Golden, actual: &Golden) -> Result<(), String> {
    let expected_keys: BTreeSet<_> = golden.pins.keys().collect();
    let actual_keys: BTreeSet<_> = actual.pins.keys().collect();
    let mut problems = Vec::new();
    for (set, file) in actual_keys.difference(&expected_keys) {
        problems.push(format!("  not pinned: {set} {file}"));
    }
    for (set, file) in expected_keys.difference(&actual_keys) {
        problems.push(format!("  pinned but gone from the corpus: {set} {file}"));
    }
    let changed: Vec<String> = golden
        .pins
        .iter()
        .filter_map(|(key, was)| {
            let now = actual.pins.get(key)?;
            (now != was).then(|| format!("  {} {}: pinned {was}, now {now}", key.0, key.1))
        })
        .collect();
    if problems.is_empty() && changed.is_empty() && golden.producer == actual.producer {
        return Ok(());
    }
    let mut message = String::new();
    if !changed.is_empty() {
        message += &format!(
            "{} of {} pinned canonical digests changed:\n{}\n",
            changed.len(),
            golden.pins.len(),
            changed.join("\n")
        );
        if golden.producer == actual.producer {
            message += &format!(
                "The producer string is still {:?}, which promises the same canonical bytes. \
                 {GOLDEN} is a regression pin, not a correctness oracle: if the change is \
                 intended (an MLIR or melior upgrade, a canonicalisation change), bump PRODUCER \
                 in src/mlir/emit.rs (mlir-cache-key/N -> N+1) and regenerate the golden file \
                 with `{REGENERATE}`; if it is not intended, it is a regression.\n",
                actual.producer
            );
        }
    }
    if golden.producer != actual.producer {
        message += &format!(
            "The CLI writes producer {:?}, {GOLDEN} records {:?}: regenerate it with \
             `{REGENERATE}`.\n",
            actual.producer, golden.producer
        );
    }
    if !problems.is_empty() {
        message += &format!(
            "The corpus and the golden file disagree:\n{}\nRegenerate with `{REGENERATE}` \
             (new files need no producer bump).\n",
            problems.join("\n")
        );
    }
    Err(message)
}

fn golden() -> Golden {
    let text = std::fs::read_to_string(root().join(GOLDEN))
        .unwrap_or_else(|e| panic!("{GOLDEN}: {e}; write it with `{REGENERATE}`"));
    parse_golden(&text)
}

#[test]
fn every_corpus_file_and_option_set_is_pinned() {
    let golden = golden();
    let files = corpus_files();
    let expected: BTreeSet<(String, String)> = OPTION_SETS
        .iter()
        .flat_map(|(set, _)| files.iter().map(|f| (set.to_string(), f.clone())))
        .collect();
    let pinned: BTreeSet<(String, String)> = golden.pins.keys().cloned().collect();
    assert_eq!(
        pinned, expected,
        "{GOLDEN} must pin every corpus file under every option set; regenerate with `{REGENERATE}`"
    );
    // Most of the corpus is readable: a golden file of `unreadable` pins
    // would pin nothing.
    let readable = golden.pins.values().filter(|v| *v != "unreadable").count();
    assert!(readable >= 4 * 18, "only {readable} readable pins");
}

#[test]
fn canonical_digests_match_the_golden_file() {
    let golden = golden();
    let actual = Golden {
        producer: actual_producer(),
        pins: actual_pins(&corpus_files()),
    };
    if let Err(message) = verdict(&golden, &actual) {
        panic!("\n{message}");
    }
}

// The rule itself, on made-up pins (no CLI): the test can fail, and says why.

fn made_up(producer: &str, digest: &str) -> Golden {
    let mut pins = Pins::new();
    pins.insert(("default".into(), "cpu/a.mlir".into()), digest.into());
    pins.insert(("default".into(), "cpu/b.mlir".into()), "unreadable".into());
    Golden {
        producer: producer.into(),
        pins,
    }
}

/// The verdict's message when the CLI's pins are the made-up golden file's with `file` pinned
/// to `digest` (a file made readable, or a new one).
fn message_with_pin(file: &str, digest: String) -> String {
    let golden = made_up("mlir-cache-key/1", &"a".repeat(64));
    let mut actual = golden.clone();
    actual.pins.insert(("default".into(), file.into()), digest);
    verdict(&golden, &actual).unwrap_err()
}

#[test]
fn same_bytes_same_producer_passes() {
    let a = made_up("mlir-cache-key/1", &"a".repeat(64));
    assert_eq!(verdict(&a, &a.clone()), Ok(()));
}

#[test]
fn a_changed_digest_under_the_same_producer_fails_and_asks_for_a_bump() {
    let golden = made_up("mlir-cache-key/1", &"a".repeat(64));
    let actual = made_up("mlir-cache-key/1", &"b".repeat(64));
    let message = verdict(&golden, &actual).unwrap_err();
    assert!(
        message.contains("1 of 2 pinned canonical digests changed"),
        "{message}"
    );
    assert!(message.contains("bump PRODUCER"), "{message}");
    assert!(message.contains(REGENERATE), "{message}");
}

#[test]
fn a_file_becoming_readable_is_a_change_too() {
    let message = message_with_pin("cpu/b.mlir", "c".repeat(64));
    assert!(message.contains("bump PRODUCER"), "{message}");
}

#[test]
fn a_bumped_producer_fails_until_the_golden_file_is_regenerated() {
    let golden = made_up("mlir-cache-key/1", &"a".repeat(64));
    let actual = made_up("mlir-cache-key/2", &"b".repeat(64));
    let message = verdict(&golden, &actual).unwrap_err();
    assert!(!message.contains("bump PRODUCER"), "{message}");
    assert!(
        message.contains("records \"mlir-cache-key/1\""),
        "{message}"
    );
    assert!(message.contains(REGENERATE), "{message}");
}

#[test]
fn a_new_corpus_file_fails_until_pinned() {
    let message = message_with_pin("cpu/new.mlir", "d".repeat(64));
    assert!(
        message.contains("not pinned: default cpu/new.mlir"),
        "{message}"
    );
    assert!(!message.contains("bump PRODUCER"), "{message}");
}

#[test]
fn the_golden_file_says_what_it_is() {
    let text = std::fs::read_to_string(root().join(GOLDEN)).unwrap();
    assert!(text.contains("REGRESSION PIN, NOT A CORRECTNESS ORACLE"));
    assert!(text.contains(REGENERATE));
}
