//! CLI errors and exit codes (docs/exit-codes.md is checked against [`Failure::ALL`]).

use std::process::ExitCode;

/// Exit codes, one per kind of failure (documented in docs/exit-codes.md and `--help`): the tool's own
/// failures use the sysexits range 64–78, so they cannot be confused with a compiler's status,
/// which `exec` passes through unchanged.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Bad command-line usage (EX_USAGE).
    Usage = 64,
    /// An input could not be parsed (MLIR, JSON, protobuf, kernel) (EX_DATAERR).
    Input = 65,
    /// An input file, or the compiler, does not exist or cannot be read (EX_NOINPUT).
    NoInput = 66,
    /// Any other error: internal, or I/O outside the cache (EX_SOFTWARE).
    Other = 70,
    /// The cache could not be opened or used: permissions, symlink, disk (EX_IOERR).
    Cache = 74,
    /// A cache conflict: the address holds, or is compiling, another fingerprint (EX_TEMPFAIL:
    /// resolve it, then retry).
    Conflict = 75,
}

/// A status as a process exit code: 0 stays 0, anything else is clamped to 1–255.
pub fn exit_code(status: i32) -> ExitCode {
    if status == 0 {
        ExitCode::SUCCESS
    } else {
        ExitCode::from(status.clamp(1, 255) as u8)
    }
}

/// An exit code as its number, for a caller that is not `main` (the Python package's command
/// line returns it to the interpreter). `ExitCode` keeps its number private; its equality
/// gives it back.
pub fn exit_number(code: ExitCode) -> u8 {
    (0..=u8::MAX)
        .find(|&n| ExitCode::from(n) == code)
        .unwrap_or(Failure::Other.code())
}

impl Failure {
    /// Every failure, in the order of the exit-code table.
    pub const ALL: [Failure; 6] = [
        Failure::Usage,
        Failure::Input,
        Failure::NoInput,
        Failure::Other,
        Failure::Cache,
        Failure::Conflict,
    ];

    pub fn code(self) -> u8 {
        self as u8
    }

    /// The row of docs/exit-codes.md: what the code means, and its sysexits name.
    pub fn meaning(self) -> &'static str {
        match self {
            Failure::Usage => "bad command-line usage (EX_USAGE)",
            Failure::Input => {
                "an input could not be parsed: MLIR, protobuf, JSON, kernel (EX_DATAERR)"
            }
            Failure::NoInput => {
                "an input file, or the compiler, does not exist or cannot be read (EX_NOINPUT)"
            }
            Failure::Other => "other errors: internal, I/O outside the cache (EX_SOFTWARE)",
            Failure::Cache => {
                "the cache could not be opened or used: permissions, symlink, disk (EX_IOERR); exec and wrap bypass the cache instead unless cache_errors=fail"
            }
            Failure::Conflict => {
                "a cache conflict at an address: resolve it, then rerun (EX_TEMPFAIL)"
            }
        }
    }
}

/// Every exit status with its meaning: success, each [`Failure`], and what `exec` passes on.
fn exit_code_rows() -> Vec<(String, &'static str)> {
    let mut rows = vec![(
        "0".to_owned(),
        "success (`why` also exits 0 when the keys differ)",
    )];
    rows.extend(Failure::ALL.map(|f| (f.code().to_string(), f.meaning())));
    rows.push((
        "other".to_owned(),
        "`exec`: the compiler's own status, unchanged (128 + signal if it was killed)",
    ));
    rows
}

/// The exit-code table of docs/exit-codes.md.
pub fn exit_codes_markdown() -> String {
    let mut out = String::from("| code | meaning |\n|---|---|\n");
    for (code, meaning) in exit_code_rows() {
        out.push_str(&format!("| {code} | {meaning} |\n"));
    }
    out
}

/// The exit-code table, for `--help`.
pub fn exit_codes_help() -> String {
    let mut out = String::from("Exit codes:");
    for (code, meaning) in exit_code_rows() {
        out.push_str(&format!("\n  {code:<4} {meaning}"));
    }
    out
}

#[derive(Debug)]
pub struct CliError {
    pub kind: Failure,
    pub error: anyhow::Error,
}

impl CliError {
    pub fn input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Failure::Input,
            error: error.into(),
        }
    }

    pub fn no_input(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Failure::NoInput,
            error: error.into(),
        }
    }

    pub fn usage(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Failure::Usage,
            error: error.into(),
        }
    }

    pub fn other(error: impl Into<anyhow::Error>) -> Self {
        Self {
            kind: Failure::Other,
            error: error.into(),
        }
    }

    /// Prints the error (with its causes) once and returns the exit code.
    pub fn report(self) -> ExitCode {
        ExitCode::from(self.report_code())
    }

    /// As [`CliError::report`], the exit code as a number (for a caller that is not `main`).
    pub fn report_code(self) -> u8 {
        let mut message = format!("{}", self.error);
        for cause in self.error.chain().skip(1) {
            message.push_str(&format!("\n  caused by: {cause}"));
        }
        eprintln!("mlir-cache-key: error: {message}");
        self.kind.code()
    }
}

impl From<mck_store::StoreError> for CliError {
    fn from(e: mck_store::StoreError) -> Self {
        Self {
            kind: Failure::Cache,
            error: e.into(),
        }
    }
}

/// A bad setting is a usage error; a configuration file or cache directory that cannot be
/// read (permissions, no home directory) is the cache's.
impl From<mck_settings::SettingsError> for CliError {
    fn from(e: mck_settings::SettingsError) -> Self {
        match e.kind {
            mck_settings::ErrorKind::Invalid => CliError::usage(e),
            mck_settings::ErrorKind::Unreadable => CliError {
                kind: Failure::Cache,
                error: e.into(),
            },
        }
    }
}

/// `config set|unset`: a bad name or value is a usage error, the cache directory's are the
/// cache's.
impl From<mck_settings::ConfigError> for CliError {
    fn from(e: mck_settings::ConfigError) -> Self {
        match e {
            mck_settings::ConfigError::Settings(e) => e.into(),
            mck_settings::ConfigError::Store(e) => e.into(),
        }
    }
}

impl From<mck_runs::RunsError> for CliError {
    fn from(e: mck_runs::RunsError) -> Self {
        use mck_runs::RunsError;
        // A refusal (a sealed run, an immutable record) is the request's fault, not the
        // cache's.
        let kind = match &e {
            _ if e.is_refusal() => Failure::Usage,
            RunsError::Archive { .. } => Failure::Input,
            _ => Failure::Cache,
        };
        CliError {
            kind,
            error: e.into(),
        }
    }
}

impl From<mck_exec::ExecError> for CliError {
    fn from(e: mck_exec::ExecError) -> Self {
        use mck_exec::ExecError;
        let kind = match &e {
            ExecError::Input(_) => Failure::Input,
            ExecError::Missing(_) => Failure::NoInput,
            ExecError::Cache(_) => Failure::Cache,
            ExecError::Runs(e) if e.is_refusal() => Failure::Usage,
            ExecError::Runs(_) => Failure::Cache,
            ExecError::RunConflict(_) => Failure::Conflict,
            ExecError::Other(_) => Failure::Other,
        };
        CliError {
            kind,
            error: e.into(),
        }
    }
}

/// What a process without MLIR cannot do (`what`: the command, as a user would name it). The
/// front binary hands such a command to the MLIR binary; the Python package's command line,
/// which has none beside it, refuses it with this message (exit 64).
#[derive(Debug)]
pub struct NeedsMlir(pub String);

impl std::fmt::Display for NeedsMlir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} needs the full build: this command line (the Python package's) has no MLIR: it \
             runs `cache`, `runs`, `config`, `why` of stored keys and reports, `completions`, \
             `man` and direct-mode hits; build the full one from the repository (`cargo install \
             --path .`, with LLVM/MLIR 22)",
            self.0
        )
    }
}

impl std::error::Error for NeedsMlir {}

impl CliError {
    /// `what` needs MLIR, which this process lacks (a usage error).
    pub fn needs_mlir(what: impl Into<String>) -> Self {
        CliError::usage(NeedsMlir(what.into()))
    }

    /// Whether this is [`CliError::needs_mlir`]: what the front binary hands over.
    pub fn is_needs_mlir(&self) -> bool {
        self.error.downcast_ref::<NeedsMlir>().is_some()
    }
}
