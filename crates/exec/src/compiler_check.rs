//! What stands for the compiler in the key, in the spirit of ccache's `compiler_check`:
//! by default the executable's content, plus the script when the executable is a known
//! interpreter whose first argument is a file (`bash cc.sh`, `python3 compile.py`), so editing
//! the script misses. Content digests are remembered by (path, size, mtime, ctime, inode) in the
//! cache directory, so a large compiler is not re-read on every call.

use crate::error::ExecError;
use anyhow::{Context as _, anyhow};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::ffi::OsString;
use std::io::Read;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

/// How the compiler is identified in the key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum CompilerCheck {
    /// The executable's content (and an interpreted script's).
    #[default]
    Content,
    /// The executable's size and modification time (and the script's): cheaper, less strict.
    Mtime,
    /// Nothing: only the arguments and the module (the user vouches for the compiler).
    None,
    /// This string (e.g. a version the user manages).
    String(String),
    /// The standard output of this shell command (e.g. `cc --version`).
    Command(String),
}

impl FromStr for CompilerCheck {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Ok(match text {
            "content" => CompilerCheck::Content,
            "mtime" => CompilerCheck::Mtime,
            "none" => CompilerCheck::None,
            _ => match text.split_once(':') {
                Some(("string", value)) => CompilerCheck::String(value.to_string()),
                Some(("command", cmd)) if !cmd.trim().is_empty() => {
                    CompilerCheck::Command(cmd.to_string())
                }
                _ => {
                    return Err(format!(
                        "expected content, mtime, none, string:VALUE or command:CMD, got {text:?}"
                    ));
                }
            },
        })
    }
}

/// Interpreters whose first argument, when it is a file, is the real compiler.
const INTERPRETERS: &[&str] = &[
    "sh", "bash", "dash", "zsh", "ksh", "python", "python3", "perl", "ruby", "node",
];

fn is_interpreter(path: &Path) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    // python3.12, pypy3…: the family counts.
    INTERPRETERS.contains(&name)
        || name
            .strip_prefix("python")
            .is_some_and(|v| v.chars().all(|c| c.is_ascii_digit() || c == '.'))
}

/// The compiler's identity string for the key (`sha256:…`, `mtime:…`, …).
pub fn identify(
    check: &CompilerCheck,
    command: &[OsString],
    digest_cache: Option<&Path>,
) -> Result<String, ExecError> {
    let program = command
        .first()
        .ok_or_else(|| ExecError::input(anyhow!("no compiler command given")))?;
    let path = resolve(Path::new(program)).ok_or_else(|| {
        ExecError::Missing(anyhow!("command not found: {}", program.to_string_lossy()))
    })?;
    let mut files = vec![path.clone()];
    let interpreted = is_interpreter(&path)
        || std::fs::canonicalize(&path).is_ok_and(|real| is_interpreter(&real));
    if interpreted && let Some(script) = command.get(1).map(PathBuf::from).filter(|p| p.is_file()) {
        files.push(script);
    }
    match check {
        CompilerCheck::Content => files
            .iter()
            .map(|f| content_digest(f, digest_cache).map(|d| format!("sha256:{d}")))
            .collect::<Result<Vec<_>, _>>()
            .map(|parts| parts.join("+")),
        CompilerCheck::Mtime => files
            .iter()
            .map(|f| {
                let m = std::fs::metadata(f)
                    .with_context(|| format!("cannot read {}", f.display()))
                    .map_err(ExecError::Missing)?;
                Ok(format!(
                    "mtime:{}:{}:{}",
                    m.size(),
                    m.mtime(),
                    m.mtime_nsec()
                ))
            })
            .collect::<Result<Vec<_>, ExecError>>()
            .map(|parts| parts.join("+")),
        CompilerCheck::None => Ok("none".into()),
        CompilerCheck::String(value) => Ok(format!("string:{value}")),
        CompilerCheck::Command(cmd) => {
            let out = std::process::Command::new("sh")
                .args(["-c", cmd])
                .stderr(std::process::Stdio::inherit())
                .output()
                .with_context(|| format!("cannot run the compiler check {cmd:?}"))
                .map_err(ExecError::input)?;
            if !out.status.success() {
                return Err(ExecError::input(anyhow!(
                    "the compiler check {cmd:?} failed ({})",
                    out.status
                )));
            }
            Ok(format!(
                "command:{}",
                hex::encode(Sha256::digest(&out.stdout))
            ))
        }
    }
}

/// The compiler's version line, when `check` gives one: a `string:` check's value, or the
/// first line a `command:` check prints (run again, once per new entry); `None` otherwise.
pub fn version_line(check: &CompilerCheck) -> Option<String> {
    match check {
        CompilerCheck::String(value) => Some(value.clone()),
        CompilerCheck::Command(cmd) => {
            let out = std::process::Command::new("sh")
                .args(["-c", cmd])
                .stderr(std::process::Stdio::null())
                .output()
                .ok()
                .filter(|out| out.status.success())?;
            let text = String::from_utf8_lossy(&out.stdout);
            text.lines()
                .map(str::trim)
                .find(|line| !line.is_empty())
                .map(str::to_string)
        }
        CompilerCheck::Content | CompilerCheck::Mtime | CompilerCheck::None => None,
    }
}

/// Finds `command` like the shell would.
pub fn resolve(command: &Path) -> Option<PathBuf> {
    if command.components().count() > 1 {
        return command.is_file().then(|| command.to_path_buf());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(command))
        .find(|p| p.is_file())
}

/// A remembered content digest and the file state it belongs to.
#[derive(Debug, Serialize, Deserialize)]
struct Remembered {
    path: PathBuf,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    inode: u64,
    device: u64,
    sha256: String,
}

impl Remembered {
    fn state_of(path: &Path, m: &std::fs::Metadata) -> Remembered {
        Remembered {
            path: path.to_path_buf(),
            size: m.size(),
            mtime_ns: i128::from(m.mtime()) * 1_000_000_000 + i128::from(m.mtime_nsec()),
            ctime_ns: i128::from(m.ctime()) * 1_000_000_000 + i128::from(m.ctime_nsec()),
            inode: m.ino(),
            device: m.dev(),
            sha256: String::new(),
        }
    }

    /// Everything but the digest is equal: the file has not changed since it was hashed.
    fn same_file_state(&self, other: &Remembered) -> bool {
        (
            &self.path,
            self.size,
            self.mtime_ns,
            self.ctime_ns,
            self.inode,
            self.device,
        ) == (
            &other.path,
            other.size,
            other.mtime_ns,
            other.ctime_ns,
            other.inode,
            other.device,
        )
    }
}

/// SHA-256 of `path`'s content, remembered in `cache_dir` by the file's state.
fn content_digest(path: &Path, cache_dir: Option<&Path>) -> Result<String, ExecError> {
    let metadata = std::fs::metadata(path)
        .with_context(|| format!("cannot read the compiler {}", path.display()))
        .map_err(ExecError::Missing)?;
    let mut state = Remembered::state_of(path, &metadata);
    let note = cache_dir.map(|dir| {
        let name = hex::encode(Sha256::digest(path.as_os_str().as_encoded_bytes()));
        dir.join(name)
    });
    if let Some(note) = &note
        && let Ok(text) = std::fs::read(note)
        && text.len() < 64 * 1024
        && let Ok(known) = serde_json::from_slice::<Remembered>(&text)
        && known.sha256.len() == 64
        && known.same_file_state(&state)
    {
        return Ok(known.sha256);
    }
    state.sha256 = hash_file(path)?;
    if let Some(note) = &note
        && let Some(dir) = note.parent()
        && std::os::unix::fs::DirBuilderExt::mode(std::fs::DirBuilder::new().recursive(true), 0o700)
            .create(dir)
            .is_ok()
        && let Ok(json) = serde_json::to_vec(&state)
        && let Err(e) = mck_store::write_file(note, &json, 0o600)
    {
        tracing::debug!(
            "cannot remember the compiler's digest at {}: {e}",
            note.display()
        );
    }
    Ok(state.sha256)
}

fn hash_file(path: &Path) -> Result<String, ExecError> {
    let mut file = std::fs::File::open(path)
        .with_context(|| format!("cannot read the compiler {}", path.display()))
        .map_err(ExecError::Missing)?;
    let mut hasher = Sha256::new();
    let mut buffer = vec![0u8; 1 << 16];
    loop {
        let n = file
            .read(&mut buffer)
            .with_context(|| format!("cannot read the compiler {}", path.display()))
            .map_err(ExecError::Missing)?;
        if n == 0 {
            break;
        }
        hasher.update(&buffer[..n]);
    }
    Ok(hex::encode(hasher.finalize()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form_and_refuses_others() {
        assert_eq!("content".parse(), Ok(CompilerCheck::Content));
        assert_eq!("mtime".parse(), Ok(CompilerCheck::Mtime));
        assert_eq!("none".parse(), Ok(CompilerCheck::None));
        assert_eq!("string:v1".parse(), Ok(CompilerCheck::String("v1".into())));
        assert_eq!(
            "command:cc --version".parse(),
            Ok(CompilerCheck::Command("cc --version".into()))
        );
        assert!("command:".parse::<CompilerCheck>().is_err());
        assert!("sha1".parse::<CompilerCheck>().is_err());
    }

    #[test]
    fn interpreters_are_recognized() {
        for name in ["/bin/sh", "/usr/bin/bash", "python3", "/usr/bin/python3.12"] {
            assert!(is_interpreter(Path::new(name)), "{name}");
        }
        for name in ["/usr/bin/mlir-opt", "pythonic", "cc"] {
            assert!(!is_interpreter(Path::new(name)), "{name}");
        }
    }

    #[test]
    fn a_remembered_digest_follows_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("cc");
        let notes = dir.path().join("notes");
        std::fs::write(&file, b"one").unwrap();
        let first = content_digest(&file, Some(&notes)).unwrap();
        assert_eq!(first, hex::encode(Sha256::digest(b"one")));
        assert_eq!(std::fs::read_dir(&notes).unwrap().count(), 1);
        assert_eq!(content_digest(&file, Some(&notes)).unwrap(), first);
        // A changed file (size and times move) is hashed again.
        std::fs::write(&file, b"two!").unwrap();
        assert_eq!(
            content_digest(&file, Some(&notes)).unwrap(),
            hex::encode(Sha256::digest(b"two!"))
        );
    }
}
