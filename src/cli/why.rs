//! `why`'s MLIR half: a module side keyed now, and the operation inside a kernel where two
//! canonical modules first differ (`why_kernel`). The command itself is mck-cli's.

use super::error::CliError;
use super::key::record_for;
use super::module::ReadModule as _;
use crate::key::KeyRecord;
use mck_cli::why::{Args, Mlir, ReadsMlir};
use std::path::Path;
use std::process::ExitCode;

struct Linked;

impl ReadsMlir for Linked {
    fn apply_limits(&self, args: &Args) -> Result<(), CliError> {
        args.module.apply_limits()
    }

    fn record_for(&self, path: &Path, args: &Args) -> Result<KeyRecord, CliError> {
        record_for(
            Some(&path.to_path_buf()),
            None,
            None,
            &args.module.canon,
            &args.key,
            true,
        )
    }

    fn kernel_details(&self, a: &str, b: &str) -> Option<Vec<String>> {
        super::why_kernel::kernel_details(a, b)
    }
}

pub fn run(args: Args) -> Result<ExitCode, CliError> {
    mck_cli::why::run(args, Mlir::Linked(&Linked))
}
