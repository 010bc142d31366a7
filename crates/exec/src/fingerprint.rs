//! The unkeyed environment of a compile: what the exec key leaves out that could still change
//! the output. Recorded with each entry exec stores (`exec.fingerprint` in its ingredients) and
//! taken again when a hit is audited, so a false hit can name what differs between the storing
//! run and this one. Values are kept as digests (an environment may hold secrets), sizes bounded.

use crate::compiler_check;
use crate::key::DEFAULT_ENV;
use crate::request::ExecRequest;
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::io::Read as _;
use std::path::{Path, PathBuf};

/// Most environment variables recorded (in name order); a longer environment is cut.
const MAX_ENV_VARS: usize = 1024;
/// Longest variable name recorded.
const MAX_NAME_LEN: usize = 256;
/// Most files named on the command line that are digested.
const MAX_FILES: usize = 64;
/// Bytes of a file (or compiler) digested; a larger one is digested up to here (its size too).
const MAX_DIGESTED: u64 = 256 << 20;
/// Our own variables (the audit's seed, the settings) do not change a compiler's output.
const OWN_PREFIX: &str = "MLIR_CACHE_KEY_";
/// A shell's bookkeeping, which changes between any two runs (the working directory is
/// recorded on its own).
const SHELL_BOOKKEEPING: &[&str] = &["_", "OLDPWD", "PWD", "SHLVL"];

/// What the key leaves out, as recorded.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Fingerprint {
    /// Every variable not in the key, by name: SHA-256 of its value.
    pub env: BTreeMap<String, String>,
    pub cwd: Option<PathBuf>,
    /// The compiler as resolved, and the SHA-256 of its file.
    pub compiler_path: Option<PathBuf>,
    pub compiler_sha256: Option<String>,
    /// Every existing file named by an argument (besides input and output): its digest.
    pub files: BTreeMap<String, FileDigest>,
}

/// A file's size and the SHA-256 of its first [`MAX_DIGESTED`] bytes.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileDigest {
    pub size: u64,
    pub sha256: String,
}

impl Fingerprint {
    /// The fingerprint of running `request` now.
    pub fn take(request: &ExecRequest) -> Fingerprint {
        let keyed =
            |name: &str| DEFAULT_ENV.contains(&name) || request.env.iter().any(|e| e == name);
        let env = std::env::vars_os()
            .filter_map(|(name, value)| {
                let name = name.into_string().ok()?;
                let unkeyed = !keyed(&name)
                    && !name.starts_with(OWN_PREFIX)
                    && !SHELL_BOOKKEEPING.contains(&name.as_str());
                (unkeyed && name.len() <= MAX_NAME_LEN)
                    .then(|| (name, hex::encode(Sha256::digest(value.as_encoded_bytes()))))
            })
            .collect::<BTreeMap<_, _>>()
            .into_iter()
            .take(MAX_ENV_VARS)
            .collect();
        let compiler_path = request
            .command
            .first()
            .and_then(|program| compiler_check::resolve(Path::new(program)))
            .and_then(|path| std::path::absolute(path).ok());
        let compiler_sha256 = compiler_path
            .as_deref()
            .and_then(digest_file)
            .map(|d| d.sha256);
        Fingerprint {
            env,
            cwd: std::env::current_dir().ok(),
            compiler_path,
            compiler_sha256,
            files: named_files(request),
        }
    }

    /// The fingerprint recorded in an entry's ingredients, if it has one.
    pub fn recorded(ingredients: &serde_json::Value) -> Option<Fingerprint> {
        let value = ingredients.get("exec")?.get("fingerprint")?;
        serde_json::from_value(value.clone()).ok()
    }

    /// What differs between `stored` (the run that stored the entry) and `self` (this one),
    /// one line each, with what to do about it where there is something.
    pub fn differences(&self, stored: &Fingerprint) -> Vec<String> {
        let mut lines = Vec::new();
        for (name, how) in changes(&stored.env, &self.env, ENV_CHANGES) {
            lines.push(format!(
                "{name}: {how} and not in the key; add `--env {name}`"
            ));
        }
        if self.cwd != stored.cwd {
            lines.push(format!(
                "working directory: {} when the entry was stored, {} now (not in the key)",
                shown(stored.cwd.as_deref()),
                shown(self.cwd.as_deref())
            ));
        }
        if self.compiler_path != stored.compiler_path
            || self.compiler_sha256 != stored.compiler_sha256
        {
            lines.push(format!(
                "compiler: {} ({}) when the entry was stored, {} ({}) now; use --compiler-check content",
                shown(stored.compiler_path.as_deref()),
                short(stored.compiler_sha256.as_deref()),
                shown(self.compiler_path.as_deref()),
                short(self.compiler_sha256.as_deref()),
            ));
        }
        for (file, how) in changes(&stored.files, &self.files, FILE_CHANGES) {
            lines.push(format!(
                "{file}: {how}; the key holds its name, not its contents (pass a digest of it with --custom-hook)"
            ));
        }
        lines
    }
}

/// How an environment variable changed, in the words [`changes`] takes.
const ENV_CHANGES: [&str; 3] = [
    "set differently",
    "set now, unset when the entry was stored,",
    "unset now, set when the entry was stored,",
];

/// How a file named on the command line changed, in the words [`changes`] takes.
const FILE_CHANGES: [&str; 3] = [
    "its contents changed",
    "it exists now, not when the entry was stored",
    "it is gone now",
];

/// The names whose values differ between `then` and `now`, in name order, each with the word
/// for how: `[set differently, there only now, there only then]`.
fn changes<'a, V: PartialEq>(
    then: &'a BTreeMap<String, V>,
    now: &'a BTreeMap<String, V>,
    [different, appeared, vanished]: [&'static str; 3],
) -> Vec<(&'a str, &'static str)> {
    let names: std::collections::BTreeSet<&String> = then.keys().chain(now.keys()).collect();
    names
        .into_iter()
        .filter_map(|name| {
            let change = match (then.get(name), now.get(name)) {
                (Some(a), Some(b)) if a == b => return None,
                (Some(_), Some(_)) => different,
                (None, Some(_)) => appeared,
                (Some(_), None) => vanished,
                (None, None) => return None,
            };
            Some((name.as_str(), change))
        })
        .collect()
}

/// Digests of the existing regular files the arguments name (`PATH` or `--flag=PATH`).
fn named_files(request: &ExecRequest) -> BTreeMap<String, FileDigest> {
    let skip = [request.input.as_path(), request.output.as_path()];
    let mut files = BTreeMap::new();
    for arg in request.command.iter().skip(1) {
        if files.len() >= MAX_FILES {
            break;
        }
        let Some(arg) = arg.to_str() else { continue };
        let path = arg.split_once('=').map_or(arg, |(_, value)| value);
        if path.is_empty() || skip.contains(&Path::new(path)) || files.contains_key(path) {
            continue;
        }
        if let Some(digest) = digest_file(Path::new(path)) {
            files.insert(path.to_owned(), digest);
        }
    }
    files
}

/// A regular file's size and digest (`None`: not a readable regular file).
fn digest_file(path: &Path) -> Option<FileDigest> {
    let file = std::fs::File::open(path).ok()?;
    let meta = file.metadata().ok()?;
    if !meta.is_file() {
        return None;
    }
    let mut hasher = Sha256::new();
    std::io::copy(&mut file.take(MAX_DIGESTED), &mut hasher).ok()?;
    Some(FileDigest {
        size: meta.len(),
        sha256: hex::encode(hasher.finalize()),
    })
}

fn shown(path: Option<&Path>) -> String {
    path.map_or_else(|| "unknown".to_owned(), |p| p.display().to_string())
}

fn short(digest: Option<&str>) -> &str {
    digest.map_or("no digest", |d| &d[..d.len().min(12)])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn differences_name_the_variable_and_the_file() {
        let mut stored = Fingerprint::default();
        stored.env.insert("MODEL_SCALE".into(), "a".into());
        stored.env.insert("HOME".into(), "h".into());
        stored.files.insert(
            "weights.bin".into(),
            FileDigest {
                size: 1,
                sha256: "x".into(),
            },
        );
        let mut now = stored.clone();
        now.env.insert("MODEL_SCALE".into(), "b".into());
        now.files.get_mut("weights.bin").unwrap().sha256 = "y".into();
        assert_eq!(
            now.differences(&stored),
            [
                "MODEL_SCALE: set differently and not in the key; add `--env MODEL_SCALE`",
                "weights.bin: its contents changed; the key holds its name, not its contents \
                 (pass a digest of it with --custom-hook)"
            ]
        );
        assert!(stored.differences(&stored).is_empty());
    }
}
