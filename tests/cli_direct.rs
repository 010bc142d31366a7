//! Direct mode of `exec`: a manifest from the input's raw bytes to the canonical key serves a
//! hit without parsing, never a key the canonical path would not give, and degrades to the
//! canonical path when the manifest or its target is unusable.

use crate::common::{self, Site, bin, success};
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A site (`common::Site`) with the counting compiler and a module compiled to `out.bin`.
struct Setup {
    site: Site,
    module: PathBuf,
    out: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let site = Site::new("compiled-by-1");
        Setup {
            module: site.module("cpu/mlp.a.generic.mlir", "mlp.mlir"),
            out: site.path("out.bin"),
            site,
        }
    }

    fn runs(&self) -> usize {
        self.site.runs()
    }

    /// Runs exec and asserts that it was a direct hit.
    fn assert_direct_hit(&self) {
        let (_, log, _) = self.run(&[]);
        assert!(log.contains("direct hit"), "{log}");
    }

    fn exec(&self, extra: &[&str]) -> Command {
        let mut command = self.site.bin();
        command
            .env("MLIR_CACHE_KEY_FLAGS", "--log_level=INFO")
            .arg("exec")
            .arg("--cache-dir")
            .arg(self.site.path("cache"))
            .args(extra);
        common::compile(&mut command, &self.site.compiler(), &self.module, &self.out);
        command
    }

    /// Runs exec; its status, stderr, and output (removed afterwards).
    fn run(&self, extra: &[&str]) -> (Option<i32>, String, Option<Vec<u8>>) {
        let Output { status, stderr, .. } = self.exec(extra).output().expect("run");
        let out = std::fs::read(&self.out).ok();
        let _ = std::fs::remove_file(&self.out);
        (status.code(), String::from_utf8_lossy(&stderr).into(), out)
    }

    fn stats(&self) -> serde_json::Value {
        let mut c = bin();
        c.args(["cache", "stats", "--json", "--cache-dir"])
            .arg(self.site.path("cache"));
        serde_json::from_slice(&success(&mut c)).expect("stats json")
    }

    /// Entry files of the cache: (path, is a manifest).
    fn entries(&self) -> Vec<(PathBuf, bool)> {
        let mut found = Vec::new();
        walk(&self.site.path("cache/v1/entries"), &mut found);
        found
            .into_iter()
            .filter(|p| p.file_name().is_some_and(|n| n.len() == 64))
            .map(|p| {
                let bytes = std::fs::read(&p).expect("read entry");
                let manifest = bytes.windows(19).any(|w| w == b"direct_manifest_for");
                (p, manifest)
            })
            .collect()
    }
}

fn walk(dir: &Path, found: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = e.path();
        if path.is_dir() {
            walk(&path, found);
        } else if path.is_file() {
            found.push(path);
        }
    }
}

/// The digest of the last entry a log says it served.
fn served_digest(log: &str) -> Option<String> {
    log.lines()
        .filter(|l| l.contains("Using a cached artefact at"))
        .filter_map(|l| l.rsplit('/').next())
        .map(|d| d.trim().to_string())
        .next_back()
}

#[test]
fn a_repeated_exec_is_a_direct_hit() {
    let s = Setup::new();
    let (code, _, first) = s.run(&[]);
    assert_eq!(code, Some(0));
    let (code, log, again) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("direct hit"), "{log}");
    assert_eq!(again, first);
    assert_eq!(s.runs(), 1);
    assert_eq!(s.stats()["direct_hits"], 1);
    let (_, log, _) = s.run(&["--no-direct"]);
    assert!(!log.contains("direct hit"), "{log}");
    assert_eq!(s.stats()["direct_hits"], 1);
}

#[test]
fn the_no_direct_setting_turns_direct_mode_off() {
    let s = Setup::new();
    let mut set = bin();
    set.args(["config", "set", "no_direct", "true", "--cache-dir"])
        .arg(s.site.path("cache"));
    success(&mut set);
    s.run(&[]);
    let (code, log, out) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(out.is_some());
    assert!(!log.contains("direct hit"), "{log}");
    assert_eq!(s.runs(), 1, "a canonical hit");
    assert!(
        s.entries().iter().all(|(_, manifest)| !manifest),
        "no manifest is stored with direct mode off"
    );
    assert_eq!(s.stats()["direct_hits"], 0);
    let mut unset = bin();
    unset
        .args(["config", "unset", "no_direct", "--cache-dir"])
        .arg(s.site.path("cache"));
    success(&mut unset);
    s.run(&[]);
    s.assert_direct_hit();
}

#[test]
fn changed_bytes_take_the_canonical_path_then_hit_directly() {
    let s = Setup::new();
    s.run(&[]);
    let mut bytes = std::fs::read(&s.module).expect("read");
    bytes.extend_from_slice(b"\n// a comment\n");
    std::fs::write(&s.module, &bytes).expect("write");
    let (code, log, _) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("direct hit"), "{log}");
    assert_eq!(s.runs(), 1, "the canonical key is the same");
    s.assert_direct_hit();
}

#[test]
fn a_manifest_whose_entry_is_gone_is_a_miss() {
    let s = Setup::new();
    s.run(&[]);
    let entries = s.entries();
    assert_eq!(entries.len(), 2, "{entries:?}");
    for (path, manifest) in &entries {
        if !manifest {
            std::fs::remove_file(path).expect("evict");
        }
    }
    let (code, log, out) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("direct hit"), "{log}");
    assert!(out.is_some());
    assert_eq!(s.runs(), 2, "compiled again");
}

#[test]
fn a_damaged_manifest_is_quarantined() {
    let s = Setup::new();
    s.run(&[]);
    let (manifest, _) = s
        .entries()
        .into_iter()
        .find(|(_, m)| *m)
        .expect("a manifest");
    let mut bytes = std::fs::read(&manifest).expect("read");
    let last = bytes.len() - 2;
    bytes[last] ^= 0x20;
    std::fs::write(&manifest, &bytes).expect("damage");
    let (code, log, out) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("direct hit"), "{log}");
    assert!(out.is_some());
    assert_eq!(s.runs(), 1, "the canonical path still hits");
    assert_eq!(s.stats()["quarantined_files"], 1);
}

#[test]
fn a_changed_compiler_misses() {
    let s = Setup::new();
    s.run(&[]);
    common::write_compiler(&s.site.compiler(), "compiled-by-2");
    let (code, log, out) = s.run(&[]);
    assert_eq!(code, Some(0), "{log}");
    assert!(!log.contains("direct hit"), "{log}");
    assert!(String::from_utf8_lossy(&out.expect("output")).contains("compiled-by-2"));
    assert_eq!(s.runs(), 2);
}

/// Every byte change either misses the manifest or gives the canonical path's key.
#[test]
fn a_direct_hit_never_differs_from_the_canonical_path() {
    let s = Setup::new();
    let original = std::fs::read(&s.module).expect("read");
    s.run(&[]);
    let mut state: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut direct_hits = 0;
    for round in 0..16 {
        let mut bytes = original.clone();
        let at = (next() % bytes.len() as u64) as usize;
        // Half the mutants keep the canonical form (a space becomes a newline, or a comment).
        bytes[at] = match round % 4 {
            0 => b' ',
            1 => b'\n',
            _ => (next() % 256) as u8,
        };
        std::fs::write(&s.module, &bytes).expect("write mutant");
        let (first, log1, out1) = s.run(&[]);
        let (direct, log2, out2) = s.run(&[]);
        let (canonical, log3, out3) = s.run(&["--no-direct"]);
        assert_eq!(direct, canonical, "round {round}: {log2}\n{log3}");
        assert_eq!(out2, out3, "round {round}");
        if log2.contains("direct hit") {
            direct_hits += 1;
            assert_eq!(served_digest(&log2), served_digest(&log3), "round {round}");
        }
        let _ = (first, log1, out1);
    }
    assert!(direct_hits > 0, "no mutant was served directly");
}

/// The key is computed without the canonical text; a miss still keeps it in the new entry.
#[test]
fn a_miss_keeps_the_canonical_text() {
    let s = Setup::new();
    s.run(&["--no-direct"]);
    let (entry, _) = s
        .entries()
        .into_iter()
        .find(|(_, m)| !*m)
        .expect("the entry");
    let bytes = std::fs::read(entry).expect("read");
    // The module's canonical text, as recorded.
    const NEEDLE: &[u8] = br#""text":"\"builtin.module"#;
    assert!(
        bytes.windows(NEEDLE.len()).any(|w| w == NEEDLE),
        "no text kept"
    );
}

/// An input that can be read only once (a named pipe) is read once, by the process that keys
/// it: the front binary does not hash it first, and a repeat is still a direct hit.
#[test]
fn a_pipe_input_is_read_once_and_hits_directly() {
    let s = Setup::new();
    let fifo = s.site.path("module.pipe");
    let made = Command::new("mkfifo").arg(&fifo).status().expect("mkfifo");
    assert!(made.success());
    let compiler = s.site.path("constant.sh");
    common::write_script(
        &compiler,
        "#!/bin/sh\necho run >> \"$RUNS\"\necho compiled > \"$2\"\n",
    );
    let run = || {
        // The writer: one copy of the module through the pipe, then EOF.
        let mut writer = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "cat '{}' > '{}'",
                s.module.display(),
                fifo.display()
            ))
            .spawn()
            .expect("writer");
        let mut exec = s.site.bin();
        exec.env("MLIR_CACHE_KEY_FLAGS", "--log_level=INFO")
            .arg("exec")
            .arg("--cache-dir")
            .arg(s.site.path("cache"));
        let mut exec = common::compile(&mut exec, &compiler, &fifo, &s.out)
            .stderr(std::process::Stdio::piped())
            .spawn()
            .expect("run");
        // A process that read the pipe twice would wait for a writer forever: a failure.
        let started = std::time::Instant::now();
        while exec.try_wait().expect("wait").is_none() {
            if started.elapsed() > std::time::Duration::from_secs(60) {
                let _ = exec.kill();
                let _ = writer.kill();
                panic!("exec hung on the pipe (read it twice?)");
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        let out = exec.wait_with_output().expect("output");
        let _ = writer.kill();
        let _ = writer.wait();
        let _ = std::fs::remove_file(&s.out);
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, log) = run();
    assert_eq!(code, Some(0), "{log}");
    let (code, log) = run();
    assert_eq!(code, Some(0), "{log}");
    assert!(log.contains("direct hit"), "{log}");
    assert_eq!(s.runs(), 1);
}
