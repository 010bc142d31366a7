//! The persistent configuration file `mlir-cache-key.conf` in the cache directory, in the style
//! of ccache's `ccache.conf`: one `name = value` a line, `#` starts a comment line, blank lines
//! are ignored. Names are those of `MLIR_CACHE_KEY_FLAGS` without the dashes; switches take
//! `true` or `false`.
//!
//! Precedence, lowest first: defaults < this file < `MLIR_CACHE_KEY_FLAGS` < command line.
//! `cache_dir` cannot be set here (the file lives in the cache directory): it comes from the
//! variable or the command line only.
//!
//! The file is at most [`MAX_CONFIG_LEN`] bytes; it is written atomically (temporary file, then
//! rename) with mode 0600. An unknown name or a bad value is an error naming the file and line.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::Serialize;

use super::{Settings, SettingsOverrides, apply_flag};
use crate::error::{SettingsError, StoreError};

/// The configuration file's name, in the cache directory.
pub const CONFIG_FILE: &str = "mlir-cache-key.conf";
/// Largest configuration file read or written.
pub const MAX_CONFIG_LEN: u64 = 64 * 1024;

/// Every setting: its name and whether it is a switch (`true`/`false`).
pub const SETTING_NAMES: &[(&str, bool)] = &[
    ("cache_dir", false),
    ("no_cache", true),
    ("cache_size", false),
    ("cache_ttl", false),
    ("retry_failed_compilation", true),
    ("no_direct", true),
    ("log_level", false),
    ("cache_dir_mode", false),
    ("remote", false),
    ("remote_read_only", true),
    ("remote_timeout", false),
    ("remote_retry_after", false),
    ("remote_lease", false),
    ("remote_secret_file", false),
];

/// Where a setting's value came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Default,
    ConfigFile,
    Environment,
    CommandLine,
}

impl Source {
    /// How `config show` names the source.
    pub fn label(self) -> &'static str {
        match self {
            Source::Default => "default",
            Source::ConfigFile => "config file",
            Source::Environment => super::FLAGS_VAR,
            Source::CommandLine => "command line",
        }
    }
}

/// Settings after layering, with the source of each.
#[derive(Clone, Debug)]
pub struct Resolved {
    pub settings: Settings,
    /// The configuration file consulted (it may not exist).
    pub config_file: PathBuf,
    /// Source of every setting, by name.
    pub sources: BTreeMap<&'static str, Source>,
}

impl SettingsOverrides {
    /// The names of the settings this layer sets.
    pub fn names_set(&self) -> Vec<&'static str> {
        let mut names = Vec::new();
        let mut push = |set: bool, name| {
            if set {
                names.push(name);
            }
        };
        push(self.cache_dir.is_some(), "cache_dir");
        push(self.enabled.is_some(), "no_cache");
        push(self.max_size.is_some(), "cache_size");
        push(self.ttl.is_some(), "cache_ttl");
        push(
            self.retry_failed_compilation.is_some(),
            "retry_failed_compilation",
        );
        push(self.no_direct.is_some(), "no_direct");
        push(self.log_level.is_some(), "log_level");
        push(self.dir_mode.is_some(), "cache_dir_mode");
        push(self.remote_url.is_some(), "remote");
        push(self.remote_read_only.is_some(), "remote_read_only");
        push(self.remote_timeout.is_some(), "remote_timeout");
        push(self.remote_retry_after.is_some(), "remote_retry_after");
        push(self.remote_lease.is_some(), "remote_lease");
        push(self.remote_secret.is_some(), "remote_secret_file");
        names
    }
}

impl Settings {
    /// The value of setting `name` as the configuration file would write it (`None`: unset).
    pub fn value_of(&self, name: &str) -> Option<String> {
        Some(match name {
            "cache_dir" => self.cache_dir.display().to_string(),
            "no_cache" => (!self.enabled).to_string(),
            "cache_size" => self.max_size.to_string(),
            "cache_ttl" => format!("{}", self.ttl.as_secs_f64() / 86_400.0),
            "retry_failed_compilation" => self.retry_failed_compilation.to_string(),
            "no_direct" => self.no_direct.to_string(),
            "log_level" => format!("{:?}", self.log_level).to_ascii_uppercase(),
            "cache_dir_mode" => format!("{:04o}", self.dir_mode),
            "remote" => self.remote.url.as_ref()?.to_string(),
            "remote_read_only" => self.remote.read_only.to_string(),
            "remote_timeout" => format!("{}", self.remote.timeout.as_secs_f64()),
            "remote_retry_after" => format!("{}", self.remote.retry_after.as_secs_f64()),
            "remote_lease" => format!("{}", self.remote.lease.as_secs_f64()),
            "remote_secret_file" => self.remote.secret.as_ref()?.path().display().to_string(),
            _ => return None,
        })
    }

    /// Defaults, then the configuration file of the cache directory (chosen by the variable and
    /// `cli`), then the variable `env_value`, then `cli`; with the source of every setting.
    pub fn resolve(
        env_value: Option<&str>,
        cli: &SettingsOverrides,
    ) -> Result<Resolved, SettingsError> {
        let env = match env_value {
            Some(text) => SettingsOverrides::parse_flags(super::FLAGS_VAR, text)?,
            None => SettingsOverrides::default(),
        };
        let cache_dir = cli
            .cache_dir
            .clone()
            .or_else(|| env.cache_dir.clone())
            .unwrap_or_else(|| PathBuf::from(super::DEFAULT_CACHE_DIR));
        let config_file = cache_dir.join(CONFIG_FILE);
        let file = read_config(&config_file)?;
        let mut settings = Settings::default();
        let mut sources: BTreeMap<&'static str, Source> = SETTING_NAMES
            .iter()
            .map(|(n, _)| (*n, Source::Default))
            .collect();
        for (layer, source) in [
            (&file, Source::ConfigFile),
            (&env, Source::Environment),
            (cli, Source::CommandLine),
        ] {
            layer.apply_to(&mut settings);
            for name in layer.names_set() {
                sources.insert(name, source);
            }
        }
        Ok(Resolved {
            settings,
            config_file,
            sources,
        })
    }
}

fn config_error(path: &Path, line: usize, text: &str, message: String) -> SettingsError {
    SettingsError {
        source_name: format!("{}:{line}", path.display()),
        flag: text.trim().to_owned(),
        message,
    }
}

/// Reads the configuration file at `path` (absent: no settings).
pub fn read_config(path: &Path) -> Result<SettingsOverrides, SettingsError> {
    let text = match read_bounded(path) {
        Ok(Some(text)) => text,
        Ok(None) => return Ok(SettingsOverrides::default()),
        Err(message) => {
            return Err(SettingsError {
                source_name: path.display().to_string(),
                flag: CONFIG_FILE.to_owned(),
                message,
            });
        }
    };
    parse_config(path, &text)
}

fn read_bounded(path: &Path) -> Result<Option<String>, String> {
    use std::io::Read as _;
    let file = match std::fs::File::open(path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(format!("cannot read it: {e}")),
    };
    let mut bytes = Vec::new();
    file.take(MAX_CONFIG_LEN + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read it: {e}"))?;
    if bytes.len() as u64 > MAX_CONFIG_LEN {
        return Err(format!("larger than {MAX_CONFIG_LEN} bytes"));
    }
    String::from_utf8(bytes)
        .map(Some)
        .map_err(|_| "not valid UTF-8".to_owned())
}

/// Parses the text of a configuration file; `path` names it in errors.
pub fn parse_config(path: &Path, text: &str) -> Result<SettingsOverrides, SettingsError> {
    let mut o = SettingsOverrides::default();
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
        // A remote URL may carry a password: never echo it.
        let shown = if name.trim() == "remote" {
            format!("remote = {}", super::redact(value.trim()))
        } else {
            line.to_owned()
        };
        apply_setting(&mut o, name.trim(), value.trim())
            .map_err(|message| config_error(path, i + 1, &shown, message))?;
    }
    Ok(o)
}

/// Applies one `name = value` of the file to `o`.
fn apply_setting(o: &mut SettingsOverrides, name: &str, value: &str) -> Result<(), String> {
    let Some((_, switch)) = SETTING_NAMES.iter().find(|(n, _)| *n == name) else {
        let known: Vec<&str> = SETTING_NAMES[1..].iter().map(|(n, _)| *n).collect();
        return Err(format!(
            "unknown setting {name:?} (known: {})",
            known.join(", ")
        ));
    };
    if name == "cache_dir" {
        return Err(
            "cache_dir cannot be set in the file inside the cache directory: use --cache-dir or MLIR_CACHE_KEY_FLAGS"
                .to_owned(),
        );
    }
    if *switch {
        let on = match value.to_ascii_lowercase().as_str() {
            "true" | "yes" | "on" | "1" => true,
            "false" | "no" | "off" | "0" => false,
            _ => return Err(format!("expected true or false, got {value:?}")),
        };
        match name {
            "no_cache" => o.enabled = Some(!on),
            "remote_read_only" => o.remote_read_only = Some(on),
            "no_direct" => o.no_direct = Some(on),
            _ => o.retry_failed_compilation = Some(on),
        }
        return Ok(());
    }
    if value.is_empty() {
        return Err("missing value".to_owned());
    }
    apply_flag(o, "", &format!("--{name}={value}"), &mut std::iter::empty()).map_err(|e| e.message)
}

/// Sets (`Some`) or removes (`None`) setting `name` in the configuration file of `cache_dir`,
/// validating the value first; other lines (and comments) are kept. Returns the file's path.
pub fn set_config(
    cache_dir: &Path,
    name: &str,
    value: Option<&str>,
    dir_mode: u32,
) -> Result<PathBuf, StoreError> {
    let path = cache_dir.join(CONFIG_FILE);
    let settings_err = |message: String| {
        StoreError::Settings(SettingsError {
            source_name: "config".to_owned(),
            flag: name.to_owned(),
            message,
        })
    };
    if let Some(v) = value {
        let v = v.trim();
        if v.contains('\n') || v.contains('\r') {
            return Err(settings_err("a value may not span lines".to_owned()));
        }
        apply_setting(&mut SettingsOverrides::default(), name, v).map_err(settings_err)?;
    } else if !SETTING_NAMES.iter().any(|(n, _)| *n == name) || name == "cache_dir" {
        apply_setting(&mut SettingsOverrides::default(), name, "").map_err(settings_err)?;
    }
    let old = read_bounded(&path)
        .map_err(|m| settings_err(format!("{}: {m}", path.display())))?
        .unwrap_or_default();
    let mut lines: Vec<String> = Vec::new();
    let mut done = false;
    for line in old.lines() {
        let this = line
            .split_once('=')
            .map(|(n, _)| n.trim() == name)
            .unwrap_or(false)
            && !line.trim_start().starts_with('#');
        if !this {
            lines.push(line.to_owned());
        } else if let (Some(v), false) = (value, done) {
            lines.push(format!("{name} = {}", v.trim()));
            done = true;
        }
    }
    if let (Some(v), false) = (value, done) {
        lines.push(format!("{name} = {}", v.trim()));
    }
    let mut text = lines.join("\n");
    if !text.is_empty() {
        text.push('\n');
    }
    if text.len() as u64 > MAX_CONFIG_LEN {
        return Err(settings_err(format!(
            "the file would exceed {MAX_CONFIG_LEN} bytes"
        )));
    }
    // The whole file must still parse.
    parse_config(&path, &text).map_err(StoreError::Settings)?;
    crate::fsutil::ensure_private_dir(cache_dir, dir_mode)?;
    crate::atomic::write_file(&path, text.as_bytes(), 0o600)?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(text: &str) -> Result<SettingsOverrides, SettingsError> {
        parse_config(Path::new("/c/mlir-cache-key.conf"), text)
    }

    #[test]
    fn parses_names_values_comments_and_switches() {
        let o = parse(
            "# a comment\n\ncache_size = 100K\n  cache_ttl=2\nremote_read_only = true\nno_cache = false\nlog_level = info\nno_direct = yes\n",
        )
        .unwrap();
        assert_eq!(o.no_direct, Some(true));
        assert_eq!(o.max_size, Some(100_000));
        assert_eq!(o.ttl, Some(std::time::Duration::from_secs(2 * 86_400)));
        assert_eq!(o.remote_read_only, Some(true));
        assert_eq!(o.enabled, Some(true));
        assert_eq!(o.log_level, Some(super::super::LogLevel::Info));
    }

    #[test]
    fn errors_name_the_file_and_line() {
        for (text, line) in [
            ("cache_size = 1G\nfrobnicate = 3\n", 2),
            ("cache_size = lots\n", 1),
            ("\n\nno_cache = maybe\n", 3),
            ("cache_dir = /x\n", 1),
            ("just words\n", 1),
            ("remote = redis://u:hunter2@h:1/x\n", 1),
        ] {
            let e = parse(text).expect_err(text).to_string();
            assert!(
                e.starts_with(&format!("/c/mlir-cache-key.conf:{line}: ")),
                "{text:?}: {e}"
            );
            assert!(!e.contains("hunter2"), "{e}");
        }
    }

    #[test]
    fn the_file_sits_between_defaults_and_the_variable() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join(CONFIG_FILE),
            "cache_size = 1k\ncache_ttl = 2\nlog_level = error\n",
        )
        .unwrap();
        let cli = SettingsOverrides {
            cache_dir: Some(dir.path().to_owned()),
            ttl: Some(std::time::Duration::from_secs(86_400)),
            ..Default::default()
        };
        let r = Settings::resolve(Some("--cache_ttl=3 --log_level=info"), &cli).unwrap();
        assert_eq!(r.settings.max_size, 1000);
        assert_eq!(r.sources["cache_size"], Source::ConfigFile);
        assert_eq!(r.settings.log_level, super::super::LogLevel::Info);
        assert_eq!(r.sources["log_level"], Source::Environment);
        assert_eq!(r.settings.ttl, std::time::Duration::from_secs(86_400));
        assert_eq!(r.sources["cache_ttl"], Source::CommandLine);
        assert_eq!(r.sources["remote_timeout"], Source::Default);
    }

    #[test]
    fn set_and_unset_keep_other_lines() {
        let dir = tempfile::tempdir().unwrap();
        let path = set_config(dir.path(), "cache_size", Some("5M"), 0o700).unwrap();
        set_config(dir.path(), "cache_ttl", Some("1"), 0o700).unwrap();
        set_config(dir.path(), "cache_size", Some("6M"), 0o700).unwrap();
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "cache_size = 6M\ncache_ttl = 1\n"
        );
        use std::os::unix::fs::PermissionsExt as _;
        assert_eq!(
            std::fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        set_config(dir.path(), "cache_size", None, 0o700).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "cache_ttl = 1\n");
        assert!(set_config(dir.path(), "cache_size", Some("lots"), 0o700).is_err());
        assert!(set_config(dir.path(), "nope", Some("1"), 0o700).is_err());
        assert!(set_config(dir.path(), "nope", None, 0o700).is_err());
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "cache_ttl = 1\n");
    }
}
