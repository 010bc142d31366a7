//! The persistent configuration file `mlir-cache-key.conf` in the cache directory, in the style
//! of ccache's `ccache.conf`: one `name = value` a line, `#` starts a comment line, blank lines
//! are ignored. Names are those of `MLIR_CACHE_KEY_FLAGS` without the dashes (underscores or
//! dashes between words); switches take `true` or `false`.
//!
//! Precedence, lowest first: defaults < this file < `MLIR_CACHE_KEY_FLAGS` < command line.
//! `cache_dir` cannot be set here (the file lives in the cache directory): it comes from the
//! variable or the command line only.
//!
//! The file is at most [`MAX_CONFIG_LEN`] bytes; it is written atomically (temporary file, then
//! rename) with mode 0600. An unknown name or a bad value is an error naming the file and line.

use std::path::{Path, PathBuf};

use mck_store::StoreError;

use super::defs::{Setting, find};
use super::layer::{Assignment, Layer};
use super::{ErrorKind, SETTINGS, SettingsError};

/// The configuration file's name, in the cache directory.
pub const CONFIG_FILE: &str = "mlir-cache-key.conf";
/// Largest configuration file read or written.
pub const MAX_CONFIG_LEN: u64 = 64 * 1024;

/// Why `config set|unset` failed: a bad name or value (a usage error) or the cache directory.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(transparent)]
    Settings(#[from] SettingsError),
    #[error(transparent)]
    Store(#[from] StoreError),
}

fn config_error(path: &Path, line: usize, text: &str, message: String) -> SettingsError {
    SettingsError {
        source_name: format!("{}:{line}", path.display()),
        flag: text.trim().to_owned(),
        message,
        kind: ErrorKind::Invalid,
    }
}

/// Reads the configuration file at `path` (absent: no settings).
pub fn read_config(path: &Path) -> Result<Layer, SettingsError> {
    let text = match read_bounded(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(Layer::default()),
        Err((kind, message)) => {
            return Err(SettingsError {
                source_name: path.display().to_string(),
                flag: CONFIG_FILE.to_owned(),
                message,
                kind,
            });
        }
    };
    parse_config(path, &text)
}

/// The file's text (`None`: absent); an error says whether the file could not be read
/// (permissions: the cache's problem) or holds no valid text (the user's).
fn read_bounded(path: &Path) -> Result<Option<String>, (ErrorKind, String)> {
    use std::io::Read as _;
    let unreadable = |e: std::io::Error| (ErrorKind::Unreadable, format!("cannot read it: {e}"));
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(unreadable(e)),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(unreadable)?;
    if bytes.len() as u64 > MAX_CONFIG_LEN {
        return Err((
            ErrorKind::Invalid,
            format!("larger than {MAX_CONFIG_LEN} bytes"),
        ));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| (ErrorKind::Invalid, "not valid UTF-8".to_owned()))
}

/// Parses the text of a configuration file; `path` names it in errors.
pub fn parse_config(path: &Path, text: &str) -> Result<Layer, SettingsError> {
    let mut layer = Layer::default();
    for (i, line) in text.lines().enumerate() {
        let t = line.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        let Some((name, value)) = t.split_once('=') else {
            return Err(config_error(
                path,
                i + 1,
                line,
                "expected NAME = VALUE".to_owned(),
            ));
        };
        let (name, value) = (name.trim(), value.trim());
        // A remote URL may carry a password: never echo it.
        let shown = match find(name) {
            Some(setting) if setting.is_secret() => {
                format!("{} = {}", setting.name, setting.shown_value(value))
            }
            _ => line.to_owned(),
        };
        let assignment =
            file_assignment(name, value).map_err(|m| config_error(path, i + 1, &shown, m))?;
        layer.push(assignment);
    }
    Ok(layer)
}

/// The setting `name` of the file, if it may be set there.
fn file_setting(name: &str) -> Result<&'static Setting, String> {
    match find(name) {
        Some(setting) if setting.in_config_file => Ok(setting),
        Some(setting) => Err(format!(
            "{} cannot be set in the file inside the cache directory: use --{} or MLIR_CACHE_KEY_FLAGS",
            setting.name,
            setting.dashed()
        )),
        None => {
            let known: Vec<&str> = SETTINGS
                .iter()
                .filter(|s| s.in_config_file)
                .map(|s| s.name)
                .collect();
            Err(format!(
                "unknown setting {name:?} (known: {})",
                known.join(", ")
            ))
        }
    }
}

/// One `name = value` of the file.
fn file_assignment(name: &str, value: &str) -> Result<Assignment, String> {
    let setting = file_setting(name)?;
    if value.is_empty() && !setting.is_switch() {
        return Err("missing value".to_owned());
    }
    Assignment::parse(setting, value)
}

/// Sets (`Some`) or removes (`None`) setting `name` in the configuration file of `cache_dir`,
/// validating the value first; other lines (and comments) are kept. Returns the file's path.
pub fn set_config(
    cache_dir: &Path,
    name: &str,
    value: Option<&str>,
    dir_mode: u32,
) -> Result<PathBuf, ConfigError> {
    let path = cache_dir.join(CONFIG_FILE);
    let settings_err = |message: String| SettingsError {
        source_name: "config".to_owned(),
        flag: name.to_owned(),
        message,
        kind: ErrorKind::Invalid,
    };
    let setting = file_setting(name).map_err(settings_err)?;
    if let Some(v) = value {
        let v = v.trim();
        if v.contains('\n') || v.contains('\r') {
            return Err(settings_err("a value may not span lines".to_owned()).into());
        }
        file_assignment(name, v).map_err(settings_err)?;
    }
    let old = read_bounded(&path)
        .map_err(|(_, m)| settings_err(format!("{}: {m}", path.display())))?
        .unwrap_or_default();
    let mut lines: Vec<String> = Vec::new();
    let mut done = false;
    for line in old.lines() {
        // Either spelling of the name is this setting's line.
        let this = line
            .split_once('=')
            .is_some_and(|(n, _)| find(n.trim()).is_some_and(|s| s.name == setting.name))
            && !line.trim_start().starts_with('#');
        if !this {
            lines.push(line.to_owned());
        } else if let (Some(v), false) = (value, done) {
            lines.push(format!("{} = {}", setting.name, v.trim()));
            done = true;
        }
    }
    if let (Some(v), false) = (value, done) {
        lines.push(format!("{} = {}", setting.name, v.trim()));
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    if text.len() as u64 > MAX_CONFIG_LEN {
        return Err(settings_err(format!("the file would exceed {MAX_CONFIG_LEN} bytes")).into());
    }
    // The whole file must still parse.
    parse_config(&path, &text)?;
    mck_store::ensure_private_dir(cache_dir, dir_mode)?;
    mck_store::write_file(&path, text.as_bytes(), 0o600)?;
    Ok(path)
}
