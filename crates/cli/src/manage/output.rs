//! Writing results: to a file, or to standard output where a closed pipe
//! (`| head`) is a normal end, not an error.

use crate::error::CliError;
use anyhow::Context as _;
use std::io::{ErrorKind, Write};
use std::path::Path;

/// Writes `bytes` to `path`, or to stdout when `path` is `None` or `-`.
pub fn write(path: Option<&Path>, bytes: &[u8]) -> Result<(), CliError> {
    match path {
        Some(path) if path != Path::new("-") => std::fs::write(path, bytes)
            .with_context(|| format!("cannot write {}", path.display()))
            .map_err(CliError::other),
        _ => stdout(bytes),
    }
}

/// Writes to stdout; a broken pipe ends quietly.
pub fn stdout(bytes: &[u8]) -> Result<(), CliError> {
    let mut out = std::io::stdout().lock();
    match out.write_all(bytes).and_then(|()| out.flush()) {
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        other => other
            .context("cannot write to standard output")
            .map_err(CliError::other),
    }
}

/// A value as pretty JSON with a final newline.
pub fn json_text<T: serde::Serialize>(value: &T) -> Result<String, CliError> {
    let mut text = serde_json::to_string_pretty(value).map_err(CliError::other)?;
    text.push('\n');
    Ok(text)
}

/// A report as pretty JSON with its versioned shape, `"schema": "mlir-cache-key.NAME.v1"`
/// (documented in docs/command-line.md).
pub fn versioned<T: serde::Serialize>(name: &str, value: &T) -> Result<String, CliError> {
    let mut v = serde_json::to_value(value).map_err(CliError::other)?;
    if let serde_json::Value::Object(map) = &mut v {
        map.insert(
            "schema".to_owned(),
            serde_json::Value::String(format!("mlir-cache-key.{name}.v1")),
        );
    }
    json_text(&v)
}

/// `value` for people (`text` renders it), or as pretty JSON with `--json`.
pub fn text_or_json<T: serde::Serialize>(
    json: bool,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<String, CliError> {
    if json {
        json_text(value)
    } else {
        Ok(text(value))
    }
}

/// [`text_or_json`], the JSON with its versioned shape (see [`versioned`]).
pub fn text_or_versioned<T: serde::Serialize>(
    json: bool,
    name: &str,
    value: &T,
    text: impl FnOnce(&T) -> String,
) -> Result<String, CliError> {
    if json {
        versioned(name, value)
    } else {
        Ok(text(value))
    }
}

/// A command's result both ways: text for people, a value for `--json`.
pub struct Reported {
    pub text: String,
    pub json: serde_json::Value,
}

impl Reported {
    /// The text, or the JSON with schema `mlir-cache-key.NAME.v1`.
    pub fn render(self, name: &str, json: bool) -> Result<String, CliError> {
        if json {
            versioned(name, &self.json)
        } else {
            Ok(self.text)
        }
    }
}

/// Milliseconds since the epoch as an RFC 3339 UTC time.
pub fn utc(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + std::time::Duration::from_millis(ms.max(0) as u64);
    humantime::format_rfc3339_seconds(time).to_string()
}

/// The widest column a table pads to: a longer value (an address may be 4 KiB) overflows it.
pub const MAX_COLUMN: usize = 80;

/// `text` left-aligned in a column `width` characters wide (at most [`MAX_COLUMN`]). Widths
/// derived from input never reach a format string, where above 65,535 they panic.
pub fn pad(text: &str, width: usize) -> String {
    let len = text.chars().count();
    let mut out = String::with_capacity(text.len() + width.min(MAX_COLUMN));
    out.push_str(text);
    out.extend(std::iter::repeat_n(
        ' ',
        width.min(MAX_COLUMN).saturating_sub(len),
    ));
    out
}
