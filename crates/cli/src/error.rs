//! CLI errors and exit codes.

use std::process::ExitCode;

/// Exit codes, one per kind of failure (documented in README.md and `--help`): the tool's own
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

impl Failure {
    pub fn code(self) -> u8 {
        self as u8
    }
}

/// The exit-code table, for `--help`.
pub const EXIT_CODES: &str = "\
Exit codes:
  0    success (`why` also exits 0 when the keys differ)
  64   bad command-line usage
  65   an input could not be parsed (MLIR, protobuf, JSON, kernel)
  66   an input file or the compiler does not exist or cannot be read
  70   other errors (internal, I/O outside the cache)
  74   the cache could not be opened or used (permissions, symlink, disk)
  75   a cache conflict at an address (resolve it, then rerun)
  other  exec: the compiler's own status, unchanged (128 + signal if it was killed)";

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
        let mut message = format!("{}", self.error);
        for cause in self.error.chain().skip(1) {
            message.push_str(&format!("\n  caused by: {cause}"));
        }
        eprintln!("mlir-cache-key: error: {message}");
        ExitCode::from(self.kind.code())
    }
}

impl From<mck_store::StoreError> for CliError {
    fn from(e: mck_store::StoreError) -> Self {
        Self {
            kind: match e {
                mck_store::StoreError::Settings(_) => Failure::Usage,
                _ => Failure::Cache,
            },
            error: e.into(),
        }
    }
}

impl From<mck_runs::RunsError> for CliError {
    fn from(e: mck_runs::RunsError) -> Self {
        use mck_runs::RunsError;
        // A refusal (a sealed run, an immutable record) is the request's fault, not the
        // cache's.
        let kind = match &e {
            RunsError::Store(mck_store::StoreError::Settings(_)) => Failure::Usage,
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
