//! `mlir-cache-key runs …`: the immutable records of what each run used, and
//! moving a run (with its artefacts) to another cache.

use super::error::CliError;
use super::output;
use super::output::{json_text, utc};
use super::settings::CacheOptions;
use crate::store::{Address, CacheKey, Digest, RunEntry, Store};
use anyhow::{Context as _, anyhow};
use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

/// Format of a `runs export` file's manifest.
const EXPORT_FORMAT: u32 = 1;
const MANIFEST: &str = "run.json";

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every run, oldest first, with its counts.
    List {
        #[arg(long)]
        json: bool,
    },
    /// One run's record: address → fingerprint, state, time.
    Show {
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// Write a run and its artefacts to one file (a tar with checksums).
    Export { run: String, file: PathBuf },
    /// Read a `runs export` file into this cache, verifying every checksum.
    Import {
        file: PathBuf,
        /// Also put the run's entries at their addresses here.
        #[arg(long)]
        adopt_cache: bool,
    },
    /// A run's outcome: counts, its conflicts grouped into address patterns, and the
    /// commands that resolve them.
    Status {
        run: String,
        #[arg(long)]
        json: bool,
    },
    /// Seal a run: its record never changes again (`exec --run RUN` is then refused).
    Close { run: String },
    /// Forget runs' records, so their artefacts may be evicted.
    Prune {
        #[arg(required = true)]
        runs: Vec<String>,
    },
}

/// The manifest of an export: the record and each artefact's checksum.
#[derive(Debug, Serialize, Deserialize)]
struct Manifest {
    format: u32,
    run: String,
    created_ms: i64,
    entries: Vec<RunEntry>,
    /// Entry file name → SHA-256 of its bytes.
    files: BTreeMap<String, String>,
}

pub fn run(command: Command, cache: &CacheOptions) -> Result<ExitCode, CliError> {
    let store = Store::open(&cache.settings()?)?;
    let registry = store.registry()?;
    let text = match command {
        Command::List { json } => {
            let runs = registry.runs()?;
            if json {
                json_text(&runs)?
            } else if runs.is_empty() {
                "no runs\n".to_string()
            } else {
                let mut out = format!(
                    "{:<40} {:<20}  {:>7} {:>6} {:>9}\n",
                    "run", "started", "entries", "failed", "conflicts"
                );
                for r in runs {
                    let _ = writeln!(
                        out,
                        "{:<40} {:<20}  {:>7} {:>6} {:>9}",
                        r.run,
                        utc(r.created_ms),
                        r.entries,
                        r.failed,
                        r.conflicts
                    );
                }
                out
            }
        }
        Command::Show { run, json } => {
            let lines = registry.run(&run)?.ok_or_else(|| no_run(&run))?;
            if json {
                json_text(&lines)?
            } else {
                let width = lines
                    .iter()
                    .map(|l| l.address.len())
                    .max()
                    .unwrap_or(7)
                    .max(7);
                let mut out = format!(
                    "{:<width$}  {:<8}  {:<20}  fingerprint\n",
                    "address", "state", "time"
                );
                for l in lines {
                    let _ = write!(
                        out,
                        "{:<width$}  {:<8}  {:<20}  {}",
                        l.address,
                        l.state,
                        utc(l.time_ms),
                        l.key
                    );
                    if let Some(cached) = &l.conflict_with {
                        let _ = write!(out, "  (address held {cached})");
                    }
                    out.push('\n');
                }
                out
            }
        }
        Command::Status { run, json } => {
            let status = super::run_status::status(&registry, &run, &cache.as_args())?;
            if json {
                json_text(&status)?
            } else {
                super::run_status::text(&status)
            }
        }
        Command::Close { run } => {
            registry.run(&run)?.ok_or_else(|| no_run(&run))?;
            if registry.close_run(&run, store.now())? {
                format!("closed run {run}: its record is sealed\n")
            } else {
                format!("run {run} was already closed\n")
            }
        }
        Command::Export { run, file } => export(&store, &run, &file)?,
        Command::Import { file, adopt_cache } => import(&store, &file, adopt_cache)?,
        Command::Prune { runs } => {
            let mut out = String::new();
            for run in runs {
                if registry.prune_run(&run)? {
                    let _ = writeln!(out, "pruned run {run}");
                } else {
                    return Err(no_run(&run));
                }
            }
            out
        }
    };
    output::stdout(text.as_bytes())?;
    Ok(ExitCode::SUCCESS)
}

fn no_run(run: &str) -> CliError {
    CliError::usage(anyhow!(
        "no run {run} in this cache (see `mlir-cache-key runs list`)"
    ))
}

fn export(store: &Store, run: &str, file: &Path) -> Result<String, CliError> {
    let registry = store.registry()?;
    let entries = registry.run(run)?.ok_or_else(|| no_run(run))?;
    let created_ms = registry
        .runs()?
        .into_iter()
        .find(|r| r.run == run)
        .map_or(0, |r| r.created_ms);
    let mut blobs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for line in entries.iter().filter(|l| l.state != "conflict") {
        let key = CacheKey::parse(&line.key)?;
        let bytes = store.export_entry(&key)?.ok_or_else(|| {
            CliError::other(anyhow!(
                "the artefact of {} ({}) is no longer in the cache",
                line.address,
                line.key
            ))
        })?;
        blobs.insert(format!("entries/{}", key.digest()), bytes);
    }
    let manifest = Manifest {
        format: EXPORT_FORMAT,
        run: run.to_string(),
        created_ms,
        files: blobs
            .iter()
            .map(|(name, bytes)| (name.clone(), hex::encode(Sha256::digest(bytes))))
            .collect(),
        entries,
    };
    let write = || -> anyhow::Result<()> {
        let parent = file
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let temp = tempfile::NamedTempFile::new_in(parent)?;
        {
            let mut tar = tar::Builder::new(temp.as_file());
            let mut add = |name: &str, bytes: &[u8]| -> std::io::Result<()> {
                let mut header = tar::Header::new_gnu();
                header.set_size(bytes.len() as u64);
                header.set_mode(0o600);
                header.set_cksum();
                tar.append_data(&mut header, name, bytes)
            };
            add(MANIFEST, &serde_json::to_vec_pretty(&manifest)?)?;
            for (name, bytes) in &blobs {
                add(name, bytes)?;
            }
            tar.finish()?;
        }
        temp.as_file().sync_all()?;
        temp.persist(file)?;
        Ok(())
    };
    write()
        .with_context(|| format!("cannot write {}", file.display()))
        .map_err(CliError::other)?;
    Ok(format!(
        "exported run {run}: {} lines, {} artefacts, to {}\n",
        manifest.entries.len(),
        blobs.len(),
        file.display()
    ))
}

/// Largest member of an export we read (a manifest or one entry file).
const MAX_MEMBER: u64 = 64 << 30;

fn import(store: &Store, file: &Path, adopt_cache: bool) -> Result<String, CliError> {
    let bad = |what: String| CliError::input(anyhow!("{}: {what}", file.display()));
    let handle = std::fs::File::open(file)
        .with_context(|| format!("cannot read {}", file.display()))
        .map_err(CliError::input)?;
    let mut archive = tar::Archive::new(handle);
    let mut manifest: Option<Manifest> = None;
    let mut blobs: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for member in archive
        .entries()
        .map_err(|e| bad(format!("not a run export: {e}")))?
    {
        let mut member = member.map_err(|e| bad(format!("damaged archive: {e}")))?;
        let name = member
            .path()
            .map_err(|e| bad(format!("damaged archive: {e}")))?
            .to_string_lossy()
            .into_owned();
        if member.size() > MAX_MEMBER {
            return Err(bad(format!("{name} is too large")));
        }
        let mut bytes = Vec::new();
        member
            .read_to_end(&mut bytes)
            .map_err(|e| bad(format!("damaged archive at {name}: {e}")))?;
        if name == MANIFEST {
            manifest = Some(
                serde_json::from_slice(&bytes).map_err(|e| bad(format!("bad {MANIFEST}: {e}")))?,
            );
        } else {
            blobs.insert(name, bytes);
        }
    }
    let manifest = manifest.ok_or_else(|| bad(format!("no {MANIFEST}: not a run export")))?;
    if manifest.format != EXPORT_FORMAT {
        return Err(bad(format!(
            "export format {} is not supported (expected {EXPORT_FORMAT})",
            manifest.format
        )));
    }
    crate::store::address::check_run_id(&manifest.run).map_err(|e| bad(format!("run id: {e}")))?;
    // Every checksum first, then anything is written.
    for (name, sum) in &manifest.files {
        let bytes = blobs
            .get(name)
            .ok_or_else(|| bad(format!("{name} is missing")))?;
        if hex::encode(Sha256::digest(bytes)) != *sum {
            return Err(bad(format!("{name} does not match its checksum")));
        }
    }
    for line in &manifest.entries {
        Address::parse(&line.address).map_err(|e| bad(e.to_string()))?;
        Digest::parse(&line.digest).map_err(|e| bad(e.to_string()))?;
    }
    let mut imported = 0;
    for bytes in blobs.values() {
        store.import_entry(bytes)?;
        imported += 1;
    }
    let registry = store.registry()?;
    registry.import_run(&manifest.run, manifest.created_ms, &manifest.entries)?;
    let mut out = format!(
        "imported run {}: {} lines, {imported} artefacts\n",
        manifest.run,
        manifest.entries.len()
    );
    if adopt_cache {
        out.push_str(&super::addresses::adopt(store, &manifest.run)?);
    }
    Ok(out)
}
