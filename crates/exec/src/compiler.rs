//! Running the compiler, with its stderr passed through and kept.

use crate::error::ExecError;
use anyhow::{Context as _, anyhow};
use std::ffi::OsString;
use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::Path;
use std::process::{Command, Stdio};

/// File mode of a compiler output restored from the cache or an audit (before the umask).
pub(crate) const OUTPUT_MODE: u32 = 0o644;

/// What running the compiler gave.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Exit status 0, and the output file's bytes.
    Success(Vec<u8>),
    /// A non-zero exit status, with the stderr it printed.
    Failed(mck_store::Failure),
    /// Killed by this signal: nothing to store or remember.
    Killed(i32),
}

impl Outcome {
    /// The compiler's own status (128 + signal when killed, as shells report).
    pub fn exit_code(&self) -> i32 {
        match self {
            Outcome::Success(_) => 0,
            Outcome::Failed(f) => f.exit_status.unwrap_or(1),
            Outcome::Killed(signal) => 128 + signal,
        }
    }
}

/// Runs `command`, passing its stderr through while keeping a copy; on success reads `output`.
pub fn run(command: &[OsString], output: &Path) -> Result<Outcome, ExecError> {
    let (program, args) = command
        .split_first()
        .ok_or_else(|| ExecError::input(anyhow!("no compiler command given")))?;
    let mut child = Command::new(program)
        .args(args)
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot run {}", program.to_string_lossy()))
        .map_err(ExecError::input)?;
    let mut captured = Vec::new();
    if let Some(mut pipe) = child.stderr.take() {
        let mut chunk = [0u8; 8192];
        while let Ok(n) = pipe.read(&mut chunk) {
            if n == 0 {
                break;
            }
            let _ = std::io::stderr().write_all(&chunk[..n]);
            captured.extend_from_slice(&chunk[..n]);
        }
    }
    let status = child
        .wait()
        .context("waiting for the compiler")
        .map_err(ExecError::other)?;
    if let Some(signal) = status.signal() {
        return Ok(Outcome::Killed(signal));
    }
    if !status.success() {
        return Ok(Outcome::Failed(mck_store::Failure {
            exit_status: status.code(),
            stderr: String::from_utf8_lossy(&captured).into_owned(),
        }));
    }
    let bytes = std::fs::read(output)
        .with_context(|| {
            format!(
                "{} exited successfully but {} cannot be read",
                program.to_string_lossy(),
                output.display()
            )
        })
        .map_err(ExecError::other)?;
    Ok(Outcome::Success(bytes))
}
