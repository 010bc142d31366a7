//! Settings of the cache, layered: defaults, then the `MLIR_CACHE_KEY_FLAGS` environment variable
//! (in the style of `NEURON_CC_FLAGS`), then explicit overrides (command-line options).
//!
//! Flags in the variable are separated by whitespace; single or double quotes group a value that
//! contains spaces (`--cache_dir="/tmp/my cache"`), a backslash escapes the next character.
//! A flag's value follows `=` or comes as the next word:
//!
//! | flag | meaning | default |
//! |---|---|---|
//! | `--cache_dir=DIR` | the cache directory | `/var/tmp/mlir-cache-key` |
//! | `--no_cache` | disable the cache | enabled |
//! | `--cache_size=SIZE` | size cap | `100G` (10^11 bytes) |
//! | `--cache_ttl=DAYS` | entries used within this many days are never evicted (decimals allowed) | `30` |
//! | `--retry_failed_compilation` | a remembered failure reads as a miss | off |
//! | `--no_direct` | `exec` looks nothing up by the input's raw bytes (direct mode off) | direct mode on |
//! | `--log_level=WARNING\|INFO\|ERROR` | log level (case-insensitive) | `WARNING` |
//! | `--cache_dir_mode=OCTAL` | mode of the directories created (`0700`, `0750`, `0770`, …; never any bit for others) | `0700` |
//! | `--remote=URL` | a shared remote tier: `redis://HOST:PORT/DB[/PREFIX]`, `s3://…`, `gcs://…` (see `remote/url.rs`) | none |
//! | `--remote_read_only` | read the remote, never write to it | off |
//! | `--remote_timeout=SECONDS` | bound on one remote operation (decimals allowed) | `2` |
//! | `--remote_retry_after=SECONDS` | after a remote failure, use the local cache only this long | `30` |
//! | `--remote_lease=SECONDS` | expiry of a compile lease, renewed while compiling | `30` |
//! | `--remote_secret_file=FILE` | a shared secret that authenticates every remote value (`remote/auth.rs`) | none |
//!
//! SIZE is a byte count with an optional unit, as ccache writes them: `k`, `M`, `G`, `T` are
//! decimal (×1000ⁿ), `Ki`, `Mi`, `Gi`, `Ti` binary (×1024ⁿ); a trailing `B` and the letter case
//! are ignored, a decimal fraction is allowed (`1.5G`). `0` is a valid cap (evict all that the TTL
//! does not protect).
//!
//! Unknown flags and bad values are errors that name the flag and where it came from.

mod config;

use std::path::PathBuf;
use std::time::Duration;

pub use config::{
    CONFIG_FILE, MAX_CONFIG_LEN, Resolved, SETTING_NAMES, Source, parse_config, read_config,
    set_config,
};

use serde::Serialize;

use super::error::SettingsError;
use super::remote::{RemoteSettings, RemoteUrl, Secret, redact};

/// The environment variable the settings are read from.
pub const FLAGS_VAR: &str = "MLIR_CACHE_KEY_FLAGS";
/// Default cache directory.
pub const DEFAULT_CACHE_DIR: &str = "/var/tmp/mlir-cache-key";
/// Default size cap: 100 GB.
pub const DEFAULT_CACHE_SIZE: u64 = 100_000_000_000;
/// Default time-to-live in days.
pub const DEFAULT_TTL_DAYS: u32 = 30;
/// Default mode of the directories the store creates.
pub const DEFAULT_DIR_MODE: u32 = 0o700;

const SECONDS_PER_DAY: f64 = 86_400.0;
const MAX_TTL_DAYS: f64 = 36_500.0;

/// The log level named by `--log_level`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "UPPERCASE")]
pub enum LogLevel {
    Error,
    Warning,
    Info,
    Debug,
}

impl LogLevel {
    /// The matching `tracing` level, for the CLI's subscriber.
    pub fn as_tracing(self) -> tracing::Level {
        match self {
            LogLevel::Error => tracing::Level::ERROR,
            LogLevel::Warning => tracing::Level::WARN,
            LogLevel::Debug => tracing::Level::DEBUG,
            LogLevel::Info => tracing::Level::INFO,
        }
    }
}

/// The cache's settings after layering.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Settings {
    pub cache_dir: PathBuf,
    /// False after `--no_cache`: the caller should neither look up nor store.
    pub enabled: bool,
    /// Size cap in bytes (whole entry files: header, metadata and artefact).
    pub max_size: u64,
    /// Entries whose last use is within this long are never evicted.
    #[serde(serialize_with = "serialize_days")]
    pub ttl: Duration,
    pub retry_failed_compilation: bool,
    /// `exec` goes through the canonical key only: no manifest from the input's raw bytes.
    pub no_direct: bool,
    pub log_level: LogLevel,
    /// Mode of the directories the store creates (files get the same bits minus execute).
    pub dir_mode: u32,
    /// fsync artefacts and directories when publishing (power-loss safety). Not a flag: only
    /// benchmarks turn it off. A killed process never needs it: rename is atomic regardless.
    pub fsync: bool,
    /// The shared remote tier, if any.
    pub remote: RemoteSettings,
}

fn serialize_days<S: serde::Serializer>(ttl: &Duration, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_f64(ttl.as_secs_f64() / SECONDS_PER_DAY)
}

impl Default for Settings {
    fn default() -> Self {
        Settings {
            cache_dir: PathBuf::from(DEFAULT_CACHE_DIR),
            enabled: true,
            max_size: DEFAULT_CACHE_SIZE,
            ttl: Duration::from_secs(u64::from(DEFAULT_TTL_DAYS) * 86_400),
            retry_failed_compilation: false,
            no_direct: false,
            log_level: LogLevel::Warning,
            dir_mode: DEFAULT_DIR_MODE,
            fsync: true,
            remote: RemoteSettings::default(),
        }
    }
}

/// Explicit values that win over the environment variable (`None`: keep the layer below).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SettingsOverrides {
    pub cache_dir: Option<PathBuf>,
    pub enabled: Option<bool>,
    pub max_size: Option<u64>,
    pub ttl: Option<Duration>,
    pub retry_failed_compilation: Option<bool>,
    pub no_direct: Option<bool>,
    pub log_level: Option<LogLevel>,
    pub dir_mode: Option<u32>,
    pub remote_url: Option<RemoteUrl>,
    pub remote_read_only: Option<bool>,
    pub remote_timeout: Option<Duration>,
    pub remote_retry_after: Option<Duration>,
    pub remote_lease: Option<Duration>,
    pub remote_secret: Option<Secret>,
}

impl SettingsOverrides {
    /// Parses overrides written in the variable's flag syntax (e.g. collected command-line
    /// options); `source_name` names them in errors (`"command line"`).
    pub fn parse_flags(source_name: &str, text: &str) -> Result<SettingsOverrides, SettingsError> {
        let mut o = SettingsOverrides::default();
        let words = split_words(text).map_err(|message| SettingsError {
            source_name: source_name.to_owned(),
            flag: text.to_owned(),
            message,
        })?;
        let mut words = words.into_iter();
        while let Some(word) = words.next() {
            apply_flag(&mut o, source_name, &word, &mut words)?;
        }
        Ok(o)
    }

    /// Applies `self` on top of `base`.
    pub fn apply_to(&self, base: &mut Settings) {
        if let Some(v) = &self.cache_dir {
            base.cache_dir = v.clone();
        }
        if let Some(v) = self.enabled {
            base.enabled = v;
        }
        if let Some(v) = self.max_size {
            base.max_size = v;
        }
        if let Some(v) = self.ttl {
            base.ttl = v;
        }
        if let Some(v) = self.retry_failed_compilation {
            base.retry_failed_compilation = v;
        }
        if let Some(v) = self.no_direct {
            base.no_direct = v;
        }
        if let Some(v) = self.log_level {
            base.log_level = v;
        }
        if let Some(v) = self.dir_mode {
            base.dir_mode = v;
        }
        if let Some(v) = &self.remote_url {
            base.remote.url = Some(v.clone());
        }
        if let Some(v) = self.remote_read_only {
            base.remote.read_only = v;
        }
        if let Some(v) = self.remote_timeout {
            base.remote.timeout = v;
        }
        if let Some(v) = self.remote_retry_after {
            base.remote.retry_after = v;
        }
        if let Some(v) = self.remote_lease {
            base.remote.lease = v;
        }
        if let Some(v) = &self.remote_secret {
            base.remote.secret = Some(v.clone());
        }
    }
}

impl Settings {
    /// Defaults, then the configuration file of the cache directory ([`CONFIG_FILE`]), then
    /// `MLIR_CACHE_KEY_FLAGS` from the process environment, then `overrides`.
    pub fn from_env_and(overrides: &SettingsOverrides) -> Result<Settings, SettingsError> {
        Ok(Settings::resolve_env(overrides)?.settings)
    }

    /// As [`Settings::from_env_and`], with the source of every setting (for `config show`).
    pub fn resolve_env(overrides: &SettingsOverrides) -> Result<Resolved, SettingsError> {
        let env = std::env::var(FLAGS_VAR).map_err(|e| match e {
            std::env::VarError::NotPresent => None,
            std::env::VarError::NotUnicode(_) => Some(SettingsError {
                source_name: FLAGS_VAR.to_owned(),
                flag: FLAGS_VAR.to_owned(),
                message: "the variable is not valid UTF-8".to_owned(),
            }),
        });
        match env {
            Ok(text) => Settings::resolve(Some(&text), overrides),
            Err(None) => Settings::resolve(None, overrides),
            Err(Some(e)) => Err(e),
        }
    }

    /// Defaults, then the variable's value given explicitly (`None`: unset), then `overrides`;
    /// no configuration file (so it can be tested without touching the process environment or
    /// the file system).
    pub fn from_flags_and(
        env_value: Option<&str>,
        overrides: &SettingsOverrides,
    ) -> Result<Settings, SettingsError> {
        let mut s = Settings::default();
        if let Some(text) = env_value {
            SettingsOverrides::parse_flags(FLAGS_VAR, text)?.apply_to(&mut s);
        }
        overrides.apply_to(&mut s);
        Ok(s)
    }
}

const KNOWN_FLAGS: &str = "--cache_dir, --no_cache, --cache_size, --cache_ttl, \
--retry_failed_compilation, --no_direct, --log_level, --cache_dir_mode, --remote, --remote_read_only, \
--remote_timeout, --remote_retry_after, --remote_lease, --remote_secret_file";

fn apply_flag(
    o: &mut SettingsOverrides,
    source_name: &str,
    word: &str,
    rest: &mut impl Iterator<Item = String>,
) -> Result<(), SettingsError> {
    let err = |flag: &str, message: String| SettingsError {
        source_name: source_name.to_owned(),
        flag: flag.to_owned(),
        message,
    };
    let (name, inline) = match word.split_once('=') {
        Some((n, v)) => (n, Some(v.to_owned())),
        None => (word, None),
    };
    let takes_value = matches!(
        name,
        "--cache_dir"
            | "--cache_size"
            | "--cache_ttl"
            | "--log_level"
            | "--cache_dir_mode"
            | "--remote"
            | "--remote_timeout"
            | "--remote_retry_after"
            | "--remote_lease"
            | "--remote_secret_file"
    );
    let is_switch = matches!(
        name,
        "--no_cache" | "--retry_failed_compilation" | "--no_direct" | "--remote_read_only"
    );
    if !takes_value && !is_switch {
        return Err(err(
            word,
            format!("unknown flag (known flags: {KNOWN_FLAGS})"),
        ));
    }
    if is_switch {
        if inline.is_some() {
            return Err(err(word, "this flag takes no value".to_owned()));
        }
        match name {
            "--no_cache" => o.enabled = Some(false),
            "--remote_read_only" => o.remote_read_only = Some(true),
            "--no_direct" => o.no_direct = Some(true),
            _ => o.retry_failed_compilation = Some(true),
        }
        return Ok(());
    }
    let value = match inline {
        Some(v) => v,
        None => rest
            .next()
            .ok_or_else(|| err(name, "missing value".to_owned()))?,
    };
    // A remote URL may carry a password: never echo it.
    let shown = if name == "--remote" {
        format!("{name}={}", redact(&value))
    } else {
        format!("{name}={value}")
    };
    match name {
        "--cache_dir" => {
            if value.is_empty() {
                return Err(err(&shown, "the directory may not be empty".to_owned()));
            }
            o.cache_dir = Some(PathBuf::from(value));
        }
        "--cache_size" => o.max_size = Some(parse_size(&value).map_err(|m| err(&shown, m))?),
        "--cache_ttl" => o.ttl = Some(parse_ttl_days(&value).map_err(|m| err(&shown, m))?),
        "--log_level" => o.log_level = Some(parse_log_level(&value).map_err(|m| err(&shown, m))?),
        "--remote" => {
            o.remote_url =
                Some(RemoteUrl::parse_supported(&value).map_err(|e| err(&shown, e.to_string()))?)
        }
        "--remote_timeout" => {
            o.remote_timeout = Some(parse_seconds(&value, false).map_err(|m| err(&shown, m))?)
        }
        "--remote_retry_after" => {
            o.remote_retry_after = Some(parse_seconds(&value, true).map_err(|m| err(&shown, m))?)
        }
        "--remote_lease" => {
            o.remote_lease = Some(parse_seconds(&value, false).map_err(|m| err(&shown, m))?)
        }
        "--remote_secret_file" => {
            o.remote_secret =
                Some(Secret::read(std::path::Path::new(&value)).map_err(|m| err(&shown, m))?)
        }
        _ => o.dir_mode = Some(parse_dir_mode(&value).map_err(|m| err(&shown, m))?),
    }
    Ok(())
}

/// Parses a size such as `100G`, `512Mi`, `1.5GB`, `1000000` (see the module doc).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let bad = || {
        format!(
            "expected a byte count such as 100G, 512Mi or 1000000 (k/M/G/T decimal, Ki/Mi/Gi/Ti binary), got {text:?}"
        )
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    if number.is_empty() || number.starts_with('.') || number.ends_with('.') {
        return Err(bad());
    }
    let unit = unit.trim().to_ascii_lowercase();
    let unit = unit.strip_suffix('b').unwrap_or(&unit);
    let multiplier: u64 = match unit {
        "" => 1,
        "k" => 1_000,
        "m" => 1_000_000,
        "g" => 1_000_000_000,
        "t" => 1_000_000_000_000,
        "ki" => 1 << 10,
        "mi" => 1 << 20,
        "gi" => 1 << 30,
        "ti" => 1 << 40,
        _ => return Err(bad()),
    };
    let (int_part, frac_part) = number.split_once('.').unwrap_or((number, ""));
    if frac_part.contains('.') {
        return Err(bad());
    }
    let int: u64 = int_part.parse().map_err(|_| bad())?;
    let whole = int
        .checked_mul(multiplier)
        .ok_or_else(|| format!("{text:?} is larger than 2^64 bytes"))?;
    // The fraction, exactly in integers: frac_digits / 10^len * multiplier, rounded down.
    let mut frac_bytes: u128 = 0;
    if !frac_part.is_empty() {
        if frac_part.len() > 18 {
            return Err(bad());
        }
        let digits: u128 = frac_part.parse().map_err(|_| bad())?;
        let scale = 10u128.pow(u32::try_from(frac_part.len()).map_err(|_| bad())?);
        frac_bytes = digits * u128::from(multiplier) / scale;
    }
    let total = u128::from(whole) + frac_bytes;
    u64::try_from(total).map_err(|_| format!("{text:?} is larger than 2^64 bytes"))
}

/// Parses a TTL in days: a non-negative decimal number up to 36500.
pub fn parse_ttl_days(text: &str) -> Result<Duration, String> {
    let bad =
        || format!("expected a number of days between 0 and 36500 (e.g. 30 or 0.5), got {text:?}");
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let days: f64 = t.parse().map_err(|_| bad())?;
    if !days.is_finite() || !(0.0..=MAX_TTL_DAYS).contains(&days) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(days * SECONDS_PER_DAY))
}

/// Parses a duration in seconds: a decimal number up to one day; zero only when `zero_ok`.
pub fn parse_seconds(text: &str, zero_ok: bool) -> Result<Duration, String> {
    let bad = || {
        format!(
            "expected a number of seconds {} and 86400 (e.g. 2 or 0.5), got {text:?}",
            if zero_ok {
                "between 0"
            } else {
                "above 0, up to"
            }
        )
    };
    let t = text.trim();
    if t.is_empty() || !t.chars().all(|c| c.is_ascii_digit() || c == '.') {
        return Err(bad());
    }
    let secs: f64 = t.parse().map_err(|_| bad())?;
    if !secs.is_finite() || !(0.0..=86_400.0).contains(&secs) || (!zero_ok && secs < 0.001) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

/// Parses `ERROR`, `WARNING` (or `WARN`), `INFO` or `DEBUG`, in any case: the same words the
/// command line's `--log-level` takes.
pub fn parse_log_level(text: &str) -> Result<LogLevel, String> {
    match text.trim().to_ascii_uppercase().as_str() {
        "WARNING" | "WARN" => Ok(LogLevel::Warning),
        "INFO" => Ok(LogLevel::Info),
        "ERROR" => Ok(LogLevel::Error),
        "DEBUG" => Ok(LogLevel::Debug),
        _ => Err(format!(
            "expected ERROR, WARNING, INFO or DEBUG, got {text:?}"
        )),
    }
}

/// Parses an octal directory mode: owner must have rwx, others nothing (`0700`, `0750`, `0770`).
pub fn parse_dir_mode(text: &str) -> Result<u32, String> {
    let bad = || {
        format!(
            "expected an octal mode that gives the owner rwx and others nothing (0700, 0750, 0770), got {text:?}"
        )
    };
    let t = text.trim();
    let digits = t.strip_prefix("0o").unwrap_or(t);
    if digits.is_empty() || digits.len() > 4 {
        return Err(bad());
    }
    let mode = u32::from_str_radix(digits, 8).map_err(|_| bad())?;
    if mode > 0o777 || mode & 0o700 != 0o700 || mode & 0o007 != 0 {
        return Err(bad());
    }
    Ok(mode)
}

/// Splits the variable into words: whitespace separates, quotes group, backslash escapes.
fn split_words(text: &str) -> Result<Vec<String>, String> {
    let mut words = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        match c {
            c if c.is_whitespace() => {
                if in_word {
                    words.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated single quote".to_owned()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some('\\') => match chars.next() {
                            Some(ch) => cur.push(ch),
                            None => return Err("unterminated double quote".to_owned()),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated double quote".to_owned()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match chars.next() {
                    Some(ch) => cur.push(ch),
                    None => return Err("trailing backslash".to_owned()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        words.push(cur);
    }
    Ok(words)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(text: &str) -> Result<Settings, SettingsError> {
        Settings::from_flags_and(Some(text), &SettingsOverrides::default())
    }

    #[test]
    fn defaults() {
        let s = Settings::from_flags_and(None, &SettingsOverrides::default()).unwrap();
        assert_eq!(s.cache_dir, PathBuf::from("/var/tmp/mlir-cache-key"));
        assert!(s.enabled);
        assert_eq!(s.max_size, 100_000_000_000);
        assert_eq!(s.ttl, Duration::from_secs(30 * 86_400));
        assert!(!s.retry_failed_compilation);
        assert!(!s.no_direct);
        assert_eq!(s.log_level, LogLevel::Warning);
        assert_eq!(s.dir_mode, 0o700);
    }

    #[test]
    fn all_flags_from_the_variable() {
        let s = env(
            "  --cache_dir=/tmp/c --no_cache --cache_size=10G --cache_ttl 7 \
             --retry_failed_compilation --no_direct --log_level=info --cache_dir_mode=0750 ",
        )
        .unwrap();
        assert_eq!(s.cache_dir, PathBuf::from("/tmp/c"));
        assert!(!s.enabled);
        assert_eq!(s.max_size, 10_000_000_000);
        assert_eq!(s.ttl, Duration::from_secs(7 * 86_400));
        assert!(s.retry_failed_compilation);
        assert!(s.no_direct);
        assert_eq!(s.log_level, LogLevel::Info);
        assert_eq!(s.dir_mode, 0o750);
    }

    #[test]
    fn quotes_group_a_path_with_spaces() {
        let s = env(r#"--cache_size='1 Ki'"#).unwrap();
        assert_eq!(
            s.max_size, 1024,
            "the unit may follow after a space inside quotes"
        );
        let s = env(r#"--cache_dir="/tmp/my cache""#).unwrap();
        assert_eq!(s.cache_dir, PathBuf::from("/tmp/my cache"));
        let s = env(r"--cache_dir=/tmp/a\ b").unwrap();
        assert_eq!(s.cache_dir, PathBuf::from("/tmp/a b"));
    }

    #[test]
    fn overrides_win_over_the_variable() {
        let o = SettingsOverrides {
            cache_dir: Some("/o".into()),
            enabled: Some(true),
            max_size: Some(5),
            ..Default::default()
        };
        let s = Settings::from_flags_and(Some("--cache_dir=/e --no_cache --cache_size=1k"), &o)
            .unwrap();
        assert_eq!(s.cache_dir, PathBuf::from("/o"));
        assert!(s.enabled);
        assert_eq!(s.max_size, 5);
        let cli = SettingsOverrides::parse_flags("command line", "--cache_ttl=0.5").unwrap();
        let s = Settings::from_flags_and(Some("--cache_ttl=3"), &cli).unwrap();
        assert_eq!(s.ttl, Duration::from_secs(43_200));
    }

    #[test]
    fn sizes() {
        let cases = [
            ("0", 0),
            ("1000000", 1_000_000),
            ("10G", 10_000_000_000),
            ("10g", 10_000_000_000),
            ("10GB", 10_000_000_000),
            ("512M", 512_000_000),
            ("512Mi", 512 << 20),
            ("512MiB", 512 << 20),
            ("1.5G", 1_500_000_000),
            ("1.5Ki", 1536),
            ("2T", 2_000_000_000_000),
            ("3k", 3000),
            ("7B", 7),
        ];
        for (text, want) in cases {
            assert_eq!(parse_size(text), Ok(want), "{text}");
        }
        for bad in [
            "",
            "G",
            "-1",
            "1.2.3",
            "1.",
            ".5",
            "10X",
            "1e9",
            "99999999999999999999",
            "20000000000T",
            "1 0",
        ] {
            assert!(parse_size(bad).is_err(), "{bad:?} must be rejected");
        }
    }

    #[test]
    fn remote_flags() {
        let s = env(
            "--remote=redis://127.0.0.1:7000/2 --remote_read_only --remote_timeout=0.5 \
             --remote_retry_after 0 --remote_lease=10",
        )
        .unwrap();
        assert_eq!(
            s.remote.url.as_ref().map(ToString::to_string).as_deref(),
            Some("redis://127.0.0.1:7000/2")
        );
        assert!(s.remote.read_only);
        assert_eq!(s.remote.timeout, Duration::from_millis(500));
        assert_eq!(s.remote.retry_after, Duration::ZERO);
        assert_eq!(s.remote.lease, Duration::from_secs(10));
        let d = Settings::from_flags_and(None, &SettingsOverrides::default()).unwrap();
        assert_eq!(d.remote.url, None);
        assert_eq!(d.remote.timeout, Duration::from_secs(2));
    }

    #[test]
    fn a_bad_remote_url_names_the_flag_and_hides_the_password() {
        let e = env("--remote=redis://u:hunter2@h:1/x")
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("MLIR_CACHE_KEY_FLAGS: --remote=redis://***@h:1/x: "),
            "{e}"
        );
        assert!(e.contains("database number"), "{e}");
        assert!(!e.contains("hunter2"), "{e}");
        let e = SettingsOverrides::parse_flags("command line", "--remote=ftp://h")
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("command line: --remote=ftp://h: "), "{e}");
        for bad in [
            "--remote_timeout=0",
            "--remote_timeout=x",
            "--remote_lease=-1",
        ] {
            let e = env(bad).expect_err(bad).to_string();
            assert!(e.contains(bad), "{e}");
        }
    }

    #[test]
    fn bad_values_name_the_flag_and_the_variable() {
        let cases = [
            ("--cache_size=lots", "--cache_size=lots"),
            ("--cache_ttl=-1", "--cache_ttl=-1"),
            ("--cache_ttl=NaN", "--cache_ttl=NaN"),
            ("--cache_ttl=99999", "--cache_ttl=99999"),
            ("--log_level=LOUD", "--log_level=LOUD"),
            ("--cache_dir_mode=0777", "--cache_dir_mode=0777"),
            ("--cache_dir_mode=0600", "--cache_dir_mode=0600"),
            ("--cache_dir=", "--cache_dir="),
            ("--no_cache=1", "--no_cache=1"),
            ("--frobnicate", "--frobnicate"),
            ("--cache-dir=/x", "--cache-dir=/x"),
            ("--cache_size", "--cache_size"),
            ("'unterminated", "'unterminated"),
        ];
        for (text, flag) in cases {
            let e = env(text).expect_err(text);
            let msg = e.to_string();
            assert!(msg.starts_with("MLIR_CACHE_KEY_FLAGS: "), "{msg}");
            assert!(msg.contains(flag), "{msg} should name {flag}");
        }
        let e = SettingsOverrides::parse_flags("command line", "--cache_ttl=x").unwrap_err();
        assert!(
            e.to_string().starts_with("command line: --cache_ttl=x: "),
            "{e}"
        );
    }
}
