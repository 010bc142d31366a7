//! What `cache show` says about an entry stored by `exec` (or `wrap`): the compiler (its path
//! as resolved, its identity in the key, its version line when known), the arguments with
//! their `{input}`/`{output}` placeholders, the declared environment, the XLA flags and the
//! input's canonical digest. All but the path and the version line are read from the key
//! record itself, so entries stored before those were recorded show the rest.

use mck_key::{KeyRecord, Readable};
use serde::Serialize;
use serde_json::{Map, Value};
use std::fmt::Write as _;

/// An exec entry's compilation, as `cache show` prints it (`exec` in `--json`).
#[derive(Debug, Serialize)]
pub(super) struct ExecShown {
    compiler: Compiler,
    /// The command's arguments (not the compiler itself), with the input and output paths as
    /// `{input}` and `{output}`; `--ignore-arg` ones and XLA flags are not among them.
    arguments: Vec<String>,
    /// `--env` variables and their values (`null`: unset when the entry was stored).
    environment: Map<String, Value>,
    /// XLA flags in the key (`XLA_FLAGS`, `LIBTPU_INIT_ARGS`, `--xla…` arguments), and the
    /// ones JAX's filter leaves out.
    xla_flags: Vec<String>,
    xla_flags_left_out: Vec<String>,
    input: Input,
}

#[derive(Debug, Serialize)]
struct Compiler {
    /// As resolved when the entry was stored (`null`: not recorded).
    path: Option<String>,
    /// What stands for the compiler in the key (`sha256:…`, `mtime:…`, `string:…`, …).
    identity: String,
    /// The version line its compiler check gave (`null`: not known).
    version: Option<String>,
}

#[derive(Debug, Serialize)]
struct Input {
    /// SHA-256 of the canonical module (the key's computation entry).
    canonical_sha256: String,
    canonical_bytes: u64,
}

impl ExecShown {
    /// The exec part of `ingredients`; `None` for an entry not stored by exec (JAX's, `cache
    /// put`'s) or without a key record.
    pub(super) fn of(ingredients: &Value) -> Option<Self> {
        let record: KeyRecord = serde_json::from_value(ingredients.clone()).ok()?;
        let readable = |index: usize| record.entries.get(index).map(|e| &e.readable);
        let Some(Readable::CompileOptions { format, hashed, .. }) = readable(4) else {
            return None;
        };
        // Exec's compile options are the command line as JSON: {"argv": [...], "env": {...}}.
        let command_line: Value = (format == "json")
            .then(|| serde_json::from_str(hashed).ok())
            .flatten()?;
        let arguments = command_line
            .get("argv")?
            .as_array()?
            .iter()
            .map(|arg| arg.as_str().map(str::to_string))
            .collect::<Option<Vec<_>>>()?;
        let environment = command_line
            .get("env")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let identity = match readable(1) {
            Some(Readable::CompilerVersion { version }) => version.clone(),
            _ => return None,
        };
        let (xla_flags, xla_flags_left_out) = match readable(3) {
            Some(Readable::Flags { included, excluded }) => (included.clone(), excluded.clone()),
            _ => (Vec::new(), Vec::new()),
        };
        let input = match (record.entries.first(), readable(0)) {
            (Some(entry), Some(Readable::Computation { bytes, .. })) => Input {
                canonical_sha256: entry.entry_sha256.clone(),
                canonical_bytes: *bytes,
            },
            _ => return None,
        };
        let recorded = |field: &str| {
            ingredients
                .pointer(&format!("/exec/compiler/{field}"))
                .and_then(Value::as_str)
                .map(str::to_string)
        };
        Some(Self {
            compiler: Compiler {
                path: recorded("path"),
                identity,
                version: recorded("version"),
            },
            arguments,
            environment,
            xla_flags,
            xla_flags_left_out,
            input,
        })
    }

    /// The text lines of `cache show`, after the entry's own.
    pub(super) fn text(&self) -> String {
        let compiler = &self.compiler;
        let environment: Vec<String> = self
            .environment
            .iter()
            .map(|(name, value)| match value.as_str() {
                Some(value) => format!("{name}={}", words(&[value.to_string()])),
                None => format!("{name} unset"),
            })
            .collect();
        let mut rows = vec![
            (
                "compiler",
                compiler
                    .path
                    .clone()
                    .unwrap_or_else(|| "(path not recorded)".into()),
            ),
            ("  identity", compiler.identity.clone()),
            (
                "  version",
                compiler.version.clone().unwrap_or_else(|| {
                    "not known (the compiler check gives no version line)".into()
                }),
            ),
            ("arguments", words(&self.arguments)),
            (
                "environment",
                if environment.is_empty() {
                    "none declared (--env)".into()
                } else {
                    environment.join(", ")
                },
            ),
            ("XLA flags", words(&self.xla_flags)),
        ];
        if !self.xla_flags_left_out.is_empty() {
            rows.push(("  left out", words(&self.xla_flags_left_out)));
        }
        rows.push((
            "input",
            format!(
                "canonical sha256 {} ({} bytes)",
                self.input.canonical_sha256, self.input.canonical_bytes
            ),
        ));
        let mut out = String::new();
        for (label, value) in rows {
            let _ = writeln!(out, "{label:<12} {value}");
        }
        out
    }
}

/// Words joined by spaces, `none` when there are none; a word with a space is quoted.
fn words(items: &[String]) -> String {
    if items.is_empty() {
        return "none".into();
    }
    items
        .iter()
        .map(|item| {
            if item.contains(char::is_whitespace) || item.is_empty() {
                format!("{item:?}")
            } else {
                item.clone()
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}
