//! Reading bytecode with MLIR where a crash cannot take the caller down.
//!
//! Our reader checks structure, counts, indices and value numbering first,
//! but MLIR's reader still builds attributes, types and properties from
//! bytes, and fuzzing showed it can crash or hang on some of them. A program
//! that must survive hostile input (the CLI) installs [`Isolation`]: MLIR's
//! reader then runs first in a child process, under a time bound, and the
//! caller reads the bytes itself only after the child read them and exited
//! normally. Without it (the library's default) bytecode is validated and
//! read in-process.

use std::io::{Read, Write};
use std::os::unix::process::ExitStatusExt;
use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

/// How to run MLIR's reader on bytecode out of process.
#[derive(Debug, Clone)]
pub struct Isolation {
    /// The program and arguments (the input's name is appended) that read
    /// bytecode from stdin with [`read_bytecode_child`](super::read_bytecode_child).
    pub program: PathBuf,
    pub args: Vec<String>,
    /// A fixed time bound; `None` for [`default_timeout`] of the input's size.
    pub timeout: Option<Duration>,
}

/// Exit status of the child when MLIR rejected the bytes cleanly.
pub(super) const REJECTED: i32 = 3;

/// The default time bound: 30 s, plus 1 s per MiB.
pub fn default_timeout(len: usize) -> Duration {
    Duration::from_secs(30) + Duration::from_millis((len as u64) >> 10)
}

static ISOLATION: OnceLock<Isolation> = OnceLock::new();

/// Makes every later bytecode read of this process go through a child
/// first. Only the first call counts.
pub fn isolate_bytecode_reads(isolation: Isolation) {
    let _ = ISOLATION.set(isolation);
}

/// Runs MLIR's reader on `bytes` in a child process, if isolation is
/// installed. `Ok` means the bytes are safe to read in-process; `Err` holds
/// the diagnostics (MLIR's, or why the child failed).
pub(super) fn check_in_child(bytes: &[u8], name: &str) -> Result<(), String> {
    let Some(isolation) = ISOLATION.get() else {
        return Ok(());
    };
    let mut child = Command::new(&isolation.program)
        .args(&isolation.args)
        .arg(name)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| {
            format!(
                "{name}: cannot start {} to read the bytecode: {e}",
                isolation.program.display()
            )
        })?;
    let limit = isolation
        .timeout
        .unwrap_or_else(|| default_timeout(bytes.len()));
    let (status, stdout, stderr) = std::thread::scope(|s| {
        let mut stdin = child.stdin.take();
        // A child that dies early closes its end: the write error is moot.
        s.spawn(move || stdin.as_mut().map(|w| w.write_all(bytes)));
        let stdout = s.spawn(drain(child.stdout.take()));
        let stderr = s.spawn(drain(child.stderr.take()));
        let status = wait_with_timeout(&mut child, limit);
        let text = |t: std::thread::ScopedJoinHandle<String>| t.join().unwrap_or_default();
        (status, text(stdout), text(stderr))
    });
    // What MLIR printed before it died (e.g. "LLVM ERROR: ..."), if anything.
    let last_words = stderr
        .lines()
        .rfind(|l| !l.trim().is_empty())
        .map(|l| format!("\n{}", l.chars().take(300).collect::<String>()))
        .unwrap_or_default();
    match status {
        Ok(Some(status)) if status.success() => Ok(()),
        Ok(Some(status)) if status.code() == Some(REJECTED) => Err(stdout),
        Ok(Some(status)) => Err(format!(
            "{name}: MLIR's bytecode reader {}: the bytecode is malformed in a way our \
             reader does not check{last_words}",
            describe(status)
        )),
        Ok(None) => Err(format!(
            "{name}: MLIR's bytecode reader did not finish within {} s, and was stopped",
            (limit.as_secs_f64() * 1000.0).round() / 1000.0
        )),
        Err(e) => Err(format!("{name}: waiting for the bytecode reader: {e}")),
    }
}

/// Reads a child's output, keeping the first MiB as text.
fn drain(pipe: Option<impl Read + Send>) -> impl FnOnce() -> String + Send {
    move || {
        let mut bytes = Vec::new();
        if let Some(mut pipe) = pipe {
            let _ = pipe.by_ref().take(1 << 20).read_to_end(&mut bytes);
            let _ = std::io::copy(&mut pipe, &mut std::io::sink());
        }
        String::from_utf8_lossy(&bytes).into_owned()
    }
}

/// Waits for `child`; kills it and returns `None` after `limit`.
fn wait_with_timeout(child: &mut Child, limit: Duration) -> std::io::Result<Option<ExitStatus>> {
    let start = Instant::now();
    let mut pause = Duration::from_millis(1);
    loop {
        if let Some(status) = child.try_wait()? {
            return Ok(Some(status));
        }
        if start.elapsed() >= limit {
            let _ = child.kill();
            let _ = child.wait();
            return Ok(None);
        }
        std::thread::sleep(pause);
        pause = (pause * 2).min(Duration::from_millis(50));
    }
}

fn describe(status: ExitStatus) -> String {
    match (status.signal(), status.code()) {
        (Some(signal), _) => {
            let name = match signal {
                4 => " (SIGILL)",
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                8 => " (SIGFPE)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                _ => "",
            };
            format!("crashed (signal {signal}{name})")
        }
        (None, Some(code)) => format!("failed (exit status {code})"),
        (None, None) => "failed".to_string(),
    }
}
