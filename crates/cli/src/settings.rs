//! Cache settings: `MLIR_CACHE_KEY_FLAGS`, then these command-line options.

use crate::error::CliError;
use mck_store::{
    Resolved, Settings, SettingsOverrides, parse_dir_mode, parse_seconds, parse_size,
    parse_ttl_days,
};
use std::path::PathBuf;
use std::time::Duration;

/// Cache options of the commands that use the cache (`exec`, `cache`, `runs`); they override
/// the variable.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct CacheOptions {
    /// Cache directory [default: /var/tmp/mlir-cache-key].
    #[arg(long, alias = "cache_dir", global = true, value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Do not look up or store anything.
    #[arg(long, alias = "no_cache", global = true)]
    pub no_cache: bool,
    /// Size cap, e.g. 100G, 512Mi [default: 100G].
    #[arg(long, alias = "cache_size", global = true, value_name = "BYTES", value_parser = parse_size)]
    pub cache_size: Option<u64>,
    /// Entries used within this many days are never evicted [default: 30].
    #[arg(long, alias = "cache_ttl", global = true, value_name = "DAYS", value_parser = parse_ttl_days)]
    pub cache_ttl: Option<Duration>,
    /// Mode of the directories the cache creates: the owner always has rwx, others nothing;
    /// 0750 or 0770 share the cache with the group, e.g. --cache-dir-mode 0770 [default: 0700].
    #[arg(long, alias = "cache_dir_mode", global = true, value_name = "OCTAL", value_parser = parse_dir_mode)]
    pub cache_dir_mode: Option<u32>,
    /// Compile again instead of replaying a remembered failure.
    #[arg(long, alias = "retry_failed_compilation", global = true)]
    pub retry_failed_compilation: bool,
    /// A remote tier shared by hosts: redis://HOST:PORT/DB[/PREFIX] (or s3://, gcs:// in
    /// builds with those features).
    #[arg(long, global = true, value_name = "URL")]
    pub remote: Option<String>,
    /// Read the remote tier, never write to it.
    #[arg(long, alias = "remote_read_only", global = true)]
    pub remote_read_only: bool,
    /// Bound on one remote operation [default: 2].
    #[arg(long, alias = "remote_timeout", global = true, value_name = "SECONDS",
          value_parser = |s: &str| parse_seconds(s, false))]
    pub remote_timeout: Option<Duration>,
    /// A file holding the secret that authenticates every remote value (never the secret
    /// itself on a command line).
    #[arg(long, alias = "remote_secret_file", global = true, value_name = "FILE")]
    pub remote_secret_file: Option<PathBuf>,
}

impl CacheOptions {
    /// Defaults, then the configuration file, then the environment variable, then these options.
    pub fn settings(&self) -> Result<Settings, CliError> {
        Ok(self.resolved()?.settings)
    }

    /// As [`CacheOptions::settings`], with the source of every setting.
    pub fn resolved(&self) -> Result<Resolved, CliError> {
        Settings::resolve_env(&self.overrides()?).map_err(CliError::usage)
    }

    /// These options as the top layer of the settings.
    pub fn overrides(&self) -> Result<SettingsOverrides, CliError> {
        let mut overrides = SettingsOverrides {
            cache_dir: self.cache_dir.clone(),
            enabled: self.no_cache.then_some(false),
            max_size: self.cache_size,
            dir_mode: self.cache_dir_mode,
            ttl: self.cache_ttl,
            retry_failed_compilation: self.retry_failed_compilation.then_some(true),
            remote_read_only: self.remote_read_only.then_some(true),
            remote_timeout: self.remote_timeout,
            ..SettingsOverrides::default()
        };
        if let Some(url) = &self.remote {
            // Parsed here rather than by clap so that an error never echoes a password.
            let mut words = String::from("--remote=");
            words.push_str(&quote(url));
            overrides.remote_url = SettingsOverrides::parse_flags("command line", &words)
                .map_err(CliError::usage)?
                .remote_url;
        }
        if let Some(file) = &self.remote_secret_file {
            let words = format!("--remote_secret_file={}", quote(&file.to_string_lossy()));
            overrides.remote_secret = SettingsOverrides::parse_flags("command line", &words)
                .map_err(CliError::usage)?
                .remote_secret;
        }
        Ok(overrides)
    }
}

impl CacheOptions {
    /// The options given, as command-line words (for commands printed to paste).
    pub fn as_args(&self) -> String {
        let mut words = Vec::new();
        if let Some(dir) = &self.cache_dir {
            words.push(format!("--cache-dir {}", quote(&dir.to_string_lossy())));
        }
        // Never the remote: its URL may hold a password, and conflicts live in the local cache.
        words.join(" ")
    }
}

/// `text` single-quoted for the flag syntax (a quote inside ends, escapes, reopens).
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}
