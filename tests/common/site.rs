//! A working directory for the tests that run `exec`: a temporary directory holding the
//! counting compiler (`cc.sh`, see [`super::write_compiler`]), and the modules, outputs and cache
//! directories a test puts there.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The counting compiler's file name inside a [`Site`].
pub const COMPILER: &str = "cc.sh";

pub struct Site {
    pub dir: tempfile::TempDir,
}

impl Site {
    /// A fresh directory with the counting compiler, whose outputs end with `last_line`.
    pub fn new(last_line: &str) -> Site {
        let dir = tempfile::tempdir().expect("tempdir");
        super::write_compiler(&dir.path().join(COMPILER), last_line);
        Site { dir }
    }

    pub fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    /// The counting compiler.
    pub fn compiler(&self) -> PathBuf {
        self.path(COMPILER)
    }

    /// How many times a compiler of this site ran (the lines it appended to `runs`).
    pub fn runs(&self) -> usize {
        std::fs::read_to_string(self.path("runs")).map_or(0, |s| s.lines().count())
    }

    /// A copy of the corpus module `corpus_file` named `name`.
    pub fn module(&self, corpus_file: &str, name: &str) -> PathBuf {
        let path = self.path(name);
        std::fs::copy(super::corpus(corpus_file), &path)
            .unwrap_or_else(|e| panic!("copy {corpus_file}: {e}"));
        path
    }

    /// `mlir-cache-key` whose compilers count their runs in this site.
    pub fn bin(&self) -> Command {
        let mut c = super::bin();
        c.env("RUNS", self.path("runs"));
        c
    }
}

/// Ends an `exec` command: `--input INPUT --output OUTPUT -- COMPILER INPUT OUTPUT`.
pub fn compile<'c>(
    c: &'c mut Command,
    compiler: &Path,
    input: &Path,
    output: &Path,
) -> &'c mut Command {
    let (input, output) = (input.as_os_str(), output.as_os_str());
    let flag = OsStr::new;
    c.args([flag("--input"), input, flag("--output"), output])
        .args([flag("--"), compiler.as_os_str(), input, output])
}
