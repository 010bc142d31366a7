//! Every setting, defined once: [`SETTINGS`] holds one entry per setting (name, kind, default,
//! doc, parser, shower), in the manner of ripgrep's flag table. The variable's parser, the
//! configuration file, `config show`, the command line's options, the man page and
//! docs/settings.md all read this table; adding a setting is one entry here (plus its use).

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use mck_remote::{RemoteTier, Secret};

use super::registry::parse_registry;
use super::values::{
    parse_cache_errors, parse_dir_mode, parse_log_level, parse_rate, parse_seconds, parse_size,
    parse_ttl_days, parse_wait,
};
use super::{CacheErrors, LogLevel, Settings};

/// What a parsed value does to the settings it is applied to.
pub type Setter = Arc<dyn Fn(&mut Settings) + Send + Sync>;

/// One setting.
pub struct Setting {
    /// `--NAME` in `MLIR_CACHE_KEY_FLAGS`, `NAME = …` in the configuration file, `--NAME` with
    /// dashes for underscores on the command line (both spellings are accepted everywhere).
    pub name: &'static str,
    pub kind: Kind,
    /// The default, as the documentation writes it (a test checks it parses to the default).
    pub default: &'static str,
    /// One sentence for `--help`, the man page and docs/settings.md.
    pub doc: &'static str,
    /// The value in force as the configuration file would write it (`None`: unset).
    pub show: fn(&Settings) -> Option<String>,
    /// False for `cache_dir`: the configuration file lives in the cache directory.
    pub in_config_file: bool,
    /// Whether the commands that use the cache take it as an option.
    pub command_line: CommandLine,
}

/// A switch, or the type of a setting's value with the field it sets: the parser and the value's
/// name in `--help` follow from the type.
#[derive(Clone, Copy)]
pub enum Kind {
    /// `--NAME` turns it on in the variable; `NAME = true|false` in the file.
    Switch(fn(&mut Settings, bool)),
    /// A directory (not empty).
    Dir(fn(&mut Settings, PathBuf)),
    /// A byte count ([`parse_size`]).
    Size(fn(&mut Settings, u64)),
    /// A number of days ([`parse_ttl_days`]).
    Days(fn(&mut Settings, Duration)),
    /// A number of seconds ([`parse_seconds`]), zero allowed when `zero_ok`.
    Seconds {
        zero_ok: bool,
        set: fn(&mut Settings, Duration),
    },
    /// A log level ([`parse_log_level`]).
    Level(fn(&mut Settings, LogLevel)),
    /// `warn` or `fail` ([`parse_cache_errors`]).
    CacheErrors(fn(&mut Settings, CacheErrors)),
    /// An octal directory mode ([`parse_dir_mode`]).
    Mode(fn(&mut Settings, u32)),
    /// The chain of remote tiers, the list it is kept in: each value adds a tier (or `[URL, …]`
    /// several); the first value of a source replaces the chain of the sources below
    /// ([`Kind::is_list`]). A URL may hold a password, so errors show it redacted.
    Remotes(fn(&mut Settings) -> &mut Vec<RemoteTier>),
    /// A file holding the remote's shared secret, read when parsed.
    SecretFile(fn(&mut Settings, Secret)),
    /// A file holding a password, read when parsed (mode checked as the secret's).
    PasswordFile(fn(&mut Settings, Secret)),
    /// A file read when it is used (a certificate, a key), by its path.
    File(fn(&mut Settings, PathBuf)),
    /// A sampling rate from 0 to 1 ([`parse_rate`], the hit audits' own check).
    Rate(fn(&mut Settings, f64)),
    /// A wait in seconds without an upper bound ([`parse_wait`]).
    Wait(fn(&mut Settings, Duration)),
    /// `local` or a PostgreSQL URL ([`parse_registry`]).
    Registry(fn(&mut Settings, Option<String>)),
}

impl Kind {
    /// What `--help` calls the value; `None` for a switch.
    pub fn value_name(self) -> Option<&'static str> {
        Some(match self {
            Kind::Switch(_) => return None,
            Kind::Dir(_) => "DIR",
            Kind::Size(_) => "SIZE",
            Kind::Days(_) => "DAYS",
            Kind::Seconds { .. } | Kind::Wait(_) => "SECONDS",
            Kind::Level(_) => "LEVEL",
            Kind::CacheErrors(_) => "warn|fail",
            Kind::Mode(_) => "OCTAL",
            Kind::Remotes(_) => "URL",
            Kind::Registry(_) => "local|URL",
            Kind::SecretFile(_) | Kind::PasswordFile(_) | Kind::File(_) => "FILE",
            Kind::Rate(_) => "RATE",
        })
    }

    /// Parses a value given as text (a switch's is `true` or `false`, as in the configuration
    /// file); the error says what was expected.
    pub fn parse(self, text: &str) -> Result<Setter, String> {
        fn with<T: Clone + Send + Sync + 'static>(set: fn(&mut Settings, T), value: T) -> Setter {
            Arc::new(move |s| set(s, value.clone()))
        }
        Ok(match self {
            Kind::Switch(set) => with(set, parse_switch(text)?),
            Kind::Dir(set) => {
                if text.is_empty() {
                    return Err("the directory may not be empty".to_owned());
                }
                with(set, PathBuf::from(text))
            }
            Kind::Size(set) => with(set, parse_size(text)?),
            Kind::Days(set) => with(set, parse_ttl_days(text)?),
            Kind::Seconds { zero_ok, set } => with(set, parse_seconds(text, zero_ok)?),
            Kind::Level(set) => with(set, parse_log_level(text)?),
            Kind::CacheErrors(set) => with(set, parse_cache_errors(text)?),
            Kind::Mode(set) => with(set, parse_dir_mode(text)?),
            Kind::Remotes(list) => {
                let tiers = mck_remote::parse_chain(text).map_err(|e| e.to_string())?;
                Arc::new(move |s| list(s).extend(tiers.iter().cloned()))
            }
            Kind::SecretFile(set) => with(set, Secret::read(Path::new(text))?),
            Kind::PasswordFile(set) => with(set, Secret::read_password(Path::new(text))?),
            Kind::File(set) => {
                if text.is_empty() {
                    return Err("the file may not be empty".to_owned());
                }
                with(set, PathBuf::from(text))
            }
            Kind::Rate(set) => with(set, parse_rate(text)?),
            Kind::Wait(set) => with(set, parse_wait(text)?),
            Kind::Registry(set) => with(set, parse_registry(text)?),
        })
    }
}

impl Kind {
    /// True when values add up within one source (`--remote` given twice is a chain of two).
    pub fn is_list(self) -> bool {
        matches!(self, Kind::Remotes(_))
    }

    /// Empties a list setting (before the first value of a source that sets it).
    pub fn clear_list(self, settings: &mut Settings) {
        if let Kind::Remotes(list) = self {
            list(settings).clear();
        }
    }
}

fn parse_switch(text: &str) -> Result<bool, String> {
    match text.to_ascii_lowercase().as_str() {
        "true" | "yes" | "on" | "1" => Ok(true),
        "false" | "no" | "off" | "0" => Ok(false),
        _ => Err(format!("expected true or false, got {text:?}")),
    }
}

/// How the command line mirrors a setting: whether it is an option, of which commands, and
/// who parses its value. The command line builds its options from this (`mck_cli::settings`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CommandLine {
    /// Not an option.
    Absent,
    /// An option of every command that uses the cache, whose value clap parses with
    /// [`Kind::parse`].
    Option,
    /// As [`CommandLine::Option`], of the named commands only (`exec`).
    OptionOf(&'static [&'static str]),
    /// An option of every command that uses the cache, parsed after clap, so that an error
    /// never echoes a password the way clap's errors echo the value, or because parsing reads
    /// a file.
    ParsedLater,
    /// An option of the program, before or after any command (`--log-level`): read before the
    /// settings are (for the log of reading them), it outranks the variable and the file.
    Program,
}

impl CommandLine {
    /// True when `command` (a subcommand's name) takes the setting as an option with the cache
    /// options; a [`CommandLine::Program`] option is the program's, not a command's.
    pub fn of_command(self, command: &str) -> bool {
        match self {
            CommandLine::Option | CommandLine::ParsedLater => true,
            CommandLine::OptionOf(commands) => commands.contains(&command),
            CommandLine::Absent | CommandLine::Program => false,
        }
    }

    /// True when clap parses the value with the setting's parser.
    pub fn parsed_by_clap(self) -> bool {
        matches!(
            self,
            CommandLine::Option | CommandLine::OptionOf(_) | CommandLine::Program
        )
    }
}

impl Setting {
    /// The name with dashes, as the command line spells it.
    pub fn dashed(&self) -> String {
        self.name.replace('_', "-")
    }

    /// True for a switch.
    pub fn is_switch(&self) -> bool {
        matches!(self.kind, Kind::Switch(_))
    }

    /// Parses a value for this setting (see [`Kind::parse`]).
    pub fn parse(&self, text: &str) -> Result<Setter, String> {
        self.kind.parse(text)
    }

    /// True when the value may hold a password.
    pub fn is_secret(&self) -> bool {
        matches!(self.kind, Kind::Remotes(_))
    }

    /// `text` as errors may show it: a value that may hold a password is redacted.
    pub fn shown_value(&self, text: &str) -> String {
        if self.is_secret() {
            mck_remote::redact(text)
        } else {
            text.to_owned()
        }
    }
}

/// The setting called `name`, spelled with underscores or with dashes.
pub fn find(name: &str) -> Option<&'static Setting> {
    let name = name.replace('-', "_");
    SETTINGS.iter().find(|s| s.name == name)
}

/// The chain as the configuration file writes it: one URL, or `[URL, URL]`.
fn show_chain(tiers: &[RemoteTier]) -> Option<String> {
    let shown: Vec<String> = tiers.iter().map(ToString::to_string).collect();
    match shown.as_slice() {
        [] => None,
        [one] => Some(one.clone()),
        many => Some(format!("[{}]", many.join(", "))),
    }
}

fn seconds(d: std::time::Duration) -> Option<String> {
    Some(format!("{}", d.as_secs_f64()))
}

/// The table. Its order is the order of `config show`, `--help` and the docs.
pub static SETTINGS: &[Setting] = &[
    Setting {
        name: "cache_dir",
        kind: Kind::Dir(|s, dir| s.store.cache_dir = dir),
        default: "$XDG_CACHE_HOME/mlir-cache-key",
        doc: "The cache directory (not in the configuration file, which lives in it); by default the user's own: $XDG_CACHE_HOME/mlir-cache-key when XDG_CACHE_HOME is an absolute path, else ~/.cache/mlir-cache-key.",
        show: |s| Some(s.store.cache_dir.display().to_string()),
        in_config_file: false,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "no_cache",
        kind: Kind::Switch(|s, on| s.store.enabled = !on),
        default: "false",
        doc: "Disable the cache: look up nothing, store nothing.",
        show: |s| Some((!s.store.enabled).to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "cache_size",
        kind: Kind::Size(|s, bytes| s.store.max_size = bytes),
        default: "100G",
        doc: "Size cap, e.g. 100G, 512Mi or 1000000 (k/M/G/T decimal, Ki/Mi/Gi/Ti binary); 0 evicts all that the TTL does not protect.",
        show: |s| Some(s.store.max_size.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "cache_ttl",
        kind: Kind::Days(|s, ttl| s.store.ttl = ttl),
        default: "30",
        doc: "Entries used within this many days are never evicted (decimals allowed).",
        show: |s| Some(format!("{}", s.store.ttl.as_secs_f64() / 86_400.0)),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "history_size",
        kind: Kind::Size(|s, bytes| s.store.history_size = bytes),
        default: "16Mi",
        doc: "Bytes the lookup history (`history.log`, what `report` reads) may take; 0 keeps none.",
        show: |s| Some(s.store.history_size.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "history_days",
        kind: Kind::Days(|s, age| s.store.history_age = age),
        default: "90",
        doc: "Lookup history older than this many days is dropped (decimals allowed).",
        show: |s| Some(format!("{}", s.store.history_age.as_secs_f64() / 86_400.0)),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "retry_failed_compilation",
        kind: Kind::Switch(|s, on| s.store.retry_failed_compilation = on),
        default: "false",
        doc: "Compile again instead of replaying a remembered failure (it reads as a miss).",
        show: |s| Some(s.store.retry_failed_compilation.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "no_direct",
        kind: Kind::Switch(|s, on| s.no_direct = on),
        default: "false",
        doc: "Do not use direct mode (a manifest from the input's raw bytes to the canonical key that serves a hit without parsing the module): `exec` keys on the canonical module only, no manifest looked up or stored.",
        show: |s| Some(s.no_direct.to_string()),
        in_config_file: true,
        command_line: CommandLine::OptionOf(&["exec"]),
    },
    Setting {
        name: "verify_hits",
        kind: Kind::Rate(|s, rate| s.verify_hits = rate),
        default: "0",
        doc: "The fraction of `exec` and `wrap` hits audited: the compiler runs again and its output is compared with the stored one; a false hit serves the fresh output, stops serving the entry and names what the key left out (0 never, 1 always).",
        show: |s| Some(s.verify_hits.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "lock_timeout",
        kind: Kind::Wait(|s, wait| s.lock_timeout = wait),
        default: "600",
        doc: "Seconds `exec`, `wrap` and Python's `Cache.compile_once` wait for another process compiling the same key before compiling anyway (decimals allowed, no upper bound).",
        show: |s| seconds(s.lock_timeout),
        in_config_file: true,
        command_line: CommandLine::OptionOf(&["exec"]),
    },
    Setting {
        name: "registry",
        kind: Kind::Registry(|s, url| s.registry.shared = url),
        default: "local",
        doc: "Where addresses, running marks and run records live: `local` (registry.sqlite in the cache directory) or a PostgreSQL schema a team shares, `postgres://user@host[:port]/database[?schema=NAME]` (schema `mlir_cache_key` by default; the password comes from registry_password_file or PGPASSFILE, never the URL).",
        show: |s| {
            Some(
                s.registry
                    .shared
                    .clone()
                    .unwrap_or_else(|| "local".to_owned()),
            )
        },
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "registry_password_file",
        kind: Kind::PasswordFile(|s, password| s.registry.password = Some(password)),
        default: "none",
        doc: "A file holding the password of the shared registry's user, so it is never in a URL, a command line or a log (without it, PGPASSFILE or ~/.pgpass is read).",
        show: |s| Some(s.registry.password.as_ref()?.path().display().to_string()),
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "registry_ca_file",
        kind: Kind::File(|s, file| s.registry.ca_file = Some(file)),
        default: "none",
        doc: "The CA certificate (PEM) that signed the shared registry's server certificate: its connections then use TLS, verified against it (`sslmode=require` in the URL verifies against the system's roots instead).",
        show: |s| Some(s.registry.ca_file.as_ref()?.display().to_string()),
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "registry_lease",
        kind: Kind::Seconds {
            zero_ok: false,
            set: |s, lease| s.registry.lease = lease,
        },
        default: "30",
        doc: "Seconds a compile's `running` mark in a shared registry stays live without its process renewing it (every third of it): a host that dies holds its addresses this long at most.",
        show: |s| seconds(s.registry.lease),
        in_config_file: true,
        command_line: CommandLine::Absent,
    },
    Setting {
        name: "no_inode_cache",
        kind: Kind::Switch(|s, on| s.no_inode_cache = on),
        default: "false",
        doc: "Direct mode hashes every input anew: no digest remembered by the file's device, inode, size, mtime and ctime (for a filesystem whose ctime cannot be trusted; network and FUSE filesystems are never remembered).",
        show: |s| Some(s.no_inode_cache.to_string()),
        in_config_file: true,
        command_line: CommandLine::Absent,
    },
    Setting {
        name: "log_level",
        kind: Kind::Level(|s, level| s.log_level = level),
        default: "WARNING",
        doc: "Log level: ERROR, WARNING, INFO or DEBUG (or WARN), any case.",
        show: |s| Some(s.log_level.name().to_owned()),
        in_config_file: true,
        command_line: CommandLine::Program,
    },
    Setting {
        name: "cache_errors",
        kind: Kind::CacheErrors(|s, what| s.cache_errors = what),
        default: "warn",
        doc: "When the cache cannot be opened or used, `exec`, `wrap` and the compiler symlinks warn once and run the compiler as if the cache were not there (warn), or fail with exit 74 without compiling (fail).",
        show: |s| Some(s.cache_errors.name().to_owned()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "read_only",
        kind: Kind::Switch(|s, on| s.store.read_only = on),
        default: "false",
        doc: "Use the cache read-only: serve hits, compile misses without storing them, record no use (also chosen by itself when the cache directory is not writable).",
        show: |s| Some(s.store.read_only.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "cache_dir_mode",
        kind: Kind::Mode(|s, mode| s.store.dir_mode = mode),
        default: "0700",
        doc: "Mode of the directories the cache creates (files get the same bits without x): the owner always has rwx, others nothing; 0750 or 0770 share the cache with the group (directories of a group member are then accepted).",
        show: |s| Some(format!("{:04o}", s.store.dir_mode)),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "remote",
        kind: Kind::Remotes(|s| &mut s.remote.tiers),
        default: "none",
        doc: "A remote tier shared by hosts: redis://HOST:PORT/DB[/PREFIX] (rediss:// with TLS), redis-cluster://HOST:PORT,HOST:PORT[/PREFIX] (rediss-cluster:// with TLS; or s3://, gcs:// in builds with those features); given more than once (or [URL, URL] in the configuration file), a chain, fastest first; ?read_only=1 makes one tier read-only.",
        show: |s| show_chain(&s.remote.tiers),
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "remote_read_only",
        kind: Kind::Switch(|s, on| s.remote.read_only = on),
        default: "false",
        doc: "Read the remote tier, never write to it.",
        show: |s| Some(s.remote.read_only.to_string()),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "remote_timeout",
        kind: Kind::Seconds {
            zero_ok: false,
            set: |s, timeout| s.remote.timeout = timeout,
        },
        default: "2",
        doc: "Bound on one remote operation (decimals allowed).",
        show: |s| seconds(s.remote.timeout),
        in_config_file: true,
        command_line: CommandLine::Option,
    },
    Setting {
        name: "remote_retry_after",
        kind: Kind::Seconds {
            zero_ok: true,
            set: |s, pause| s.remote.retry_after = pause,
        },
        default: "30",
        doc: "After a remote failure, use the local cache only this long.",
        show: |s| seconds(s.remote.retry_after),
        in_config_file: true,
        command_line: CommandLine::Absent,
    },
    Setting {
        name: "remote_lease",
        kind: Kind::Seconds {
            zero_ok: false,
            set: |s, lease| s.remote.lease = lease,
        },
        default: "30",
        doc: "Expiry of a compile lease, renewed while compiling.",
        show: |s| seconds(s.remote.lease),
        in_config_file: true,
        command_line: CommandLine::Absent,
    },
    Setting {
        name: "remote_secret_file",
        kind: Kind::SecretFile(|s, secret| s.remote.secret = Some(secret)),
        default: "none",
        doc: "A file holding the shared secret that authenticates every remote value (never the secret itself on a command line).",
        show: |s| Some(s.remote.secret.as_ref()?.path().display().to_string()),
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "remote_password_file",
        kind: Kind::PasswordFile(|s, password| s.remote.credentials.password = Some(password)),
        default: "none",
        doc: "A file holding the password of the remote's server (Redis: with the ACL user of the URL), so it is never in a URL, a command line or a log.",
        show: |s| {
            Some(
                s.remote
                    .credentials
                    .password
                    .as_ref()?
                    .path()
                    .display()
                    .to_string(),
            )
        },
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "remote_ca_file",
        kind: Kind::File(|s, file| s.remote.credentials.ca_file = Some(file)),
        default: "none",
        doc: "The CA certificate (PEM) that signed the remote's server certificate (rediss://); by default the system's roots.",
        show: |s| Some(s.remote.credentials.ca_file.as_ref()?.display().to_string()),
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "remote_cert_file",
        kind: Kind::File(|s, file| s.remote.credentials.cert_file = Some(file)),
        default: "none",
        doc: "The client certificate (PEM) for mutual TLS with the remote's server, with remote_key_file.",
        show: |s| {
            Some(
                s.remote
                    .credentials
                    .cert_file
                    .as_ref()?
                    .display()
                    .to_string(),
            )
        },
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
    Setting {
        name: "remote_key_file",
        kind: Kind::File(|s, file| s.remote.credentials.key_file = Some(file)),
        default: "none",
        doc: "The client certificate's private key (PEM) for mutual TLS, with remote_cert_file.",
        show: |s| {
            Some(
                s.remote
                    .credentials
                    .key_file
                    .as_ref()?
                    .display()
                    .to_string(),
            )
        },
        in_config_file: true,
        command_line: CommandLine::ParsedLater,
    },
];
