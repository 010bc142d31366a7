//! Hosts sharing one remote, for the remote-tier tests: one [`Site`] (one compiler, one run
//! counter, one set of modules: a.mlir, b.mlir and the same program renamed c, d, e), a cache
//! directory per host, every command pointed at the same `--remote`.
#![allow(dead_code)]

use std::path::PathBuf;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::{self, Site, read, success};
use crate::redis::{self, Target};

pub struct Team {
    pub site: Site,
    /// The `--remote` URL, or several separated by spaces: a chain, fastest first.
    pub remote: String,
}

impl Team {
    pub fn new(remote: String) -> Team {
        let site = Site::new("compiled");
        site.module("cpu/mlp.a.generic.mlir", "a.mlir");
        site.module("cpu/mlp.a_batch5.generic.mlir", "b.mlir");
        // More distinct modules: the same program under other names.
        let a = std::fs::read_to_string(site.path("a.mlir")).expect("read");
        for name in ["c", "d", "e"] {
            let renamed = a.replace(
                "sym_name = \"jit_mlp\"",
                &format!("sym_name = \"jit_{name}\""),
            );
            std::fs::write(site.path(&format!("{name}.mlir")), renamed).expect("write module");
        }
        Team { site, remote }
    }

    /// A team on the shared server under the prefix `test`; `None` when skipping.
    pub fn shared(test: &str) -> Option<(Target, Team)> {
        let target = redis::shared(test)?;
        let team = Team::new(target.url());
        Some((target, team))
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.site.path(name)
    }

    pub fn cache(&self, host: &str) -> PathBuf {
        self.path(&format!("cache-{host}"))
    }

    pub fn runs(&self) -> usize {
        self.site.runs()
    }

    pub fn out(&self, host: &str, module: &str) -> PathBuf {
        self.path(&format!("{host}-{module}.out"))
    }

    /// Asserts that host `b` got the same `module` output as host `a`.
    pub fn assert_same_output(&self, a: &str, b: &str, module: &str) {
        assert_eq!(read(&self.out(b, module)), read(&self.out(a, module)));
    }

    /// `mlir-cache-key ARGS… --cache-dir cache-HOST --remote URL…` (compiles counted).
    pub fn mck(&self, host: &str, args: &[&str]) -> Command {
        let mut c = self.site.bin();
        c.args(args).arg("--cache-dir").arg(self.cache(host));
        for url in self.remote.split_whitespace() {
            c.arg("--remote").arg(url);
        }
        c
    }

    /// `exec` on `host` compiling `module` (a.mlir …) through the remote.
    pub fn exec(&self, host: &str, module: &str) -> Command {
        self.exec_with(host, module, &[])
    }

    /// As `exec`, with more options.
    pub fn exec_with(&self, host: &str, module: &str, options: &[&str]) -> Command {
        // Counts here are of canonical entries (direct mode: tests/cli_direct.rs).
        let mut c = self.mck(host, &["exec", "--no-direct"]);
        c.args(options);
        let (input, output) = (self.path(module), self.out(host, module));
        common::compile(&mut c, &self.site.compiler(), &input, &output);
        c
    }

    /// `cache stats --json` of `host` with more options.
    pub fn stats_with(&self, host: &str, options: &[&str]) -> Value {
        let mut args = vec!["cache", "stats", "--json"];
        args.extend_from_slice(options);
        serde_json::from_slice(&success(&mut self.mck(host, &args))).expect("stats json")
    }

    pub fn stats(&self, host: &str) -> Value {
        self.stats_with(host, &[])
    }

    /// `exec` of `module` on every host at once, each compile taking `sleep` seconds; their
    /// outputs, each asserted a success.
    pub fn race(&self, hosts: &[&str], module: &str, sleep: &str) -> Vec<Output> {
        let children: Vec<Child> = hosts
            .iter()
            .map(|h| spawn_slow(&mut self.exec(h, module), sleep))
            .collect();
        wait_all_succeed(children)
    }

    pub fn stats_text(&self, host: &str) -> String {
        String::from_utf8(success(&mut self.mck(host, &["cache", "stats"]))).expect("utf-8")
    }
}

/// Waits for every child; their outputs, each asserted a success.
pub fn wait_all_succeed(children: Vec<Child>) -> Vec<Output> {
    let outputs: Vec<Output> = children
        .into_iter()
        .map(|c| c.wait_with_output().expect("wait"))
        .collect();
    for o in &outputs {
        assert!(o.status.success(), "{}", common::stderr(o));
    }
    outputs
}

/// Starts `exec` with a compile that takes `sleep` seconds, its stderr piped.
pub fn spawn_slow(exec: &mut Command, sleep: &str) -> Child {
    exec.env("SLEEP", sleep)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("spawn {exec:?}: {e}"))
}

/// Runs `command`, asserting success; its stderr and how long it took.
pub fn timed_success(command: &mut Command) -> (String, Duration) {
    let start = Instant::now();
    let stderr = common::success_stderr(command);
    (stderr, start.elapsed())
}
