//! Run archives: `runs export RUN FILE` writes one tar file holding a run's record (`run.json`,
//! first, after its signature `run.seal` when a shared secret is set: `seal.rs`) and the entry
//! files its lines reference (`entries/<digest>`); `runs import FILE` reads one into this cache
//! (`runs import --adopt-cache` then puts the addresses back).
//!
//! An archive comes from someone else: import trusts nothing in it, writes nothing until
//! everything has been checked, and keeps memory bounded whatever the archive claims:
//! - members are read in one pass without interpreting tar extensions: `run.json` first (at
//!   most 16 MiB, every field checked, `manifest.rs`; with a shared secret, its signature must
//!   verify), then only the entry files it lists, each
//!   once; links, devices, directories, sparse files, extension headers, a second `run.json`,
//!   an unlisted or duplicated member are refused with an error naming the member;
//! - each entry file is streamed into a temporary file in `v1/tmp/` through SHA-256 (never held
//!   in memory), must match its checksum and verify as an entry of the key its lines name;
//! - a run that exists here with another record is refused before anything is staged;
//! - only then are the staged files renamed into place and the run recorded. An error before
//!   that removes the staged files: nothing was written.
//!
//! Memory: the manifest (≤ 16 MiB) and one entry's metadata (≤ 64 MiB, the entry format's
//! limit) at most, plus fixed buffers; a member's claimed size is never allocated.

mod export;
mod import;
mod manifest;
mod seal;

pub use export::{ExportReport, export_run};
pub use import::{ImportReport, MAX_MEMBER_LEN, import_run};
pub use manifest::{EXPORT_FORMAT, MANIFEST, MAX_LINES, MAX_MANIFEST_LEN, Manifest, ManifestError};
pub use seal::SEAL;
