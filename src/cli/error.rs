//! CLI errors and exit codes.

use std::process::ExitCode;

/// Exit codes, one per kind of failure (documented in README.md).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// Any other error (I/O, internal).
    Other = 1,
    /// Bad command-line usage.
    Usage = 2,
    /// An input could not be read or parsed (MLIR, JSON, protobuf, kernel).
    Input = 3,
    /// The cache could not be opened or used (permissions, symlink, disk).
    Cache = 4,
    /// A cache conflict: the address holds another fingerprint.
    Conflict = 5,
}

impl Failure {
    pub fn code(self) -> u8 {
        self as u8
    }
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

impl From<crate::store::StoreError> for CliError {
    fn from(e: crate::store::StoreError) -> Self {
        Self {
            kind: Failure::Cache,
            error: e.into(),
        }
    }
}

impl From<crate::canon::CanonError> for CliError {
    fn from(e: crate::canon::CanonError) -> Self {
        Self::input(e)
    }
}
