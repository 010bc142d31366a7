//! `mlir-cache-key runs …`: the immutable records of what each run used, and
//! moving a run (with its artefacts) to another cache (`mck_store::archive`).

use super::output;
use super::output::{Reported, json_text, pad, utc};
use super::progress::Progress;
use crate::error::CliError;
use crate::settings::CacheOptions;
use anyhow::anyhow;
use mck_remote::Secret;
use mck_remote::Tiered;
use mck_runs::{Registry, RunState, RunsError, archive};
use mck_store::{CacheKey, Store};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Every run, oldest first, with its counts.
    #[command(after_help = "Example:\n  mlir-cache-key runs list --json")]
    List {
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// One run's record: address → fingerprint, state, time.
    #[command(after_help = "Example:\n  mlir-cache-key runs show nightly-0412 --json")]
    Show {
        /// The run's name (as given to `exec --run`).
        run: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Write a run and its artefacts to one file (a tar with checksums), signed with the
    /// shared secret (remote_secret_file) when one is set.
    #[command(after_help = "Example:\n  mlir-cache-key runs export nightly-0412 nightly.tar")]
    Export {
        /// The run's name.
        run: String,
        /// The file to write (a tar with checksums).
        file: PathBuf,
        /// Print JSON (schema mlir-cache-key.export.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Read a `runs export` file into this cache, verifying every checksum; with a shared
    /// secret (remote_secret_file), only a file signed with it.
    #[command(after_help = "Example:\n  mlir-cache-key runs import nightly.tar --adopt-cache")]
    Import {
        /// A file written by `runs export`.
        file: PathBuf,
        /// Also put the run's entries at their addresses here.
        #[arg(long)]
        adopt_cache: bool,
        /// Print JSON (schema mlir-cache-key.import.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// A run's outcome: counts, its conflicts grouped into address patterns, and the
    /// commands that resolve them.
    #[command(after_help = "Example:\n  mlir-cache-key runs status nightly-0412")]
    Status {
        /// The run's name.
        run: String,
        /// Print JSON instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Seal a run: its record never changes again (`exec --run RUN` is then refused).
    #[command(after_help = "Example:\n  mlir-cache-key runs close nightly-0412")]
    Close {
        /// The run's name.
        run: String,
        /// Print JSON (schema mlir-cache-key.close.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
    /// Forget runs' records, so their artefacts may be evicted.
    #[command(after_help = "Example:\n  mlir-cache-key runs prune nightly-0401 nightly-0402")]
    Prune {
        /// The runs' names.
        #[arg(required = true)]
        runs: Vec<String>,
        /// Print JSON (schema mlir-cache-key.prune.v1) instead of text.
        #[arg(long)]
        json: bool,
    },
}

pub fn run(command: Command, cache: &CacheOptions) -> Result<(), CliError> {
    let tiers = cache.open_to_manage()?;
    let store = tiers.local();
    // Archives are signed, and must be signed, with the secret that authenticates remote values.
    let secret = tiers.remote_settings().secret.as_ref();
    let registry = cache.open_registry(store)?;
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
                    .map(|l| l.address.chars().count())
                    .max()
                    .unwrap_or(7)
                    .max(7);
                let mut out = format!(
                    "{}  {:<8}  {:<20}  fingerprint\n",
                    pad("address", width),
                    "state",
                    "time"
                );
                for l in lines {
                    let _ = write!(
                        out,
                        "{}  {:<8}  {:<20}  {}",
                        pad(&l.address, width),
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
            super::output::text_or_versioned(json, "status", &status, super::run_status::text)?
        }
        Command::Close { run, json } => {
            registry.run(&run)?.ok_or_else(|| no_run(&run))?;
            let closed = registry.close_run(&run, store.now())?;
            Reported {
                text: if closed {
                    format!("closed run {run}: its record is sealed\n")
                } else {
                    format!("run {run} was already closed\n")
                },
                json: serde_json::json!({ "run": run, "closed_now": closed }),
            }
            .render("close", json)?
        }
        Command::Export { run, file, json } => {
            let progress = Progress::spinner("exporting", json);
            fetch_from_tiers(&tiers, &registry, &run)?;
            let report = export(store, &registry, &run, &file, secret)?;
            drop(progress);
            report.render("export", json)?
        }
        Command::Import {
            file,
            adopt_cache,
            json,
        } => {
            let progress = Progress::spinner("importing", json);
            let report = import(store, &registry, &file, adopt_cache, secret)?;
            drop(progress);
            report.render("import", json)?
        }
        Command::Prune { runs, json } => {
            let mut out = String::new();
            for run in &runs {
                if registry.prune_run(run)? {
                    let _ = writeln!(out, "pruned run {run}");
                } else {
                    return Err(no_run(run));
                }
            }
            Reported {
                text: out,
                json: serde_json::json!({ "pruned": runs }),
            }
            .render("prune", json)?
        }
    };
    output::stdout(text.as_bytes())?;
    Ok(())
}

fn no_run(run: &str) -> CliError {
    let run = mck_runs::address::shorten(run);
    CliError::usage(anyhow!(
        "no run {run} in this cache (see `mlir-cache-key runs list`)"
    ))
}

/// A run of a shared registry may have been compiled on other hosts: the artefacts this cache
/// lacks are looked up in the remote tiers first, which copy a hit here as any hit is copied.
/// What no tier has is then named by the export itself.
fn fetch_from_tiers(tiers: &Tiered, registry: &Registry, run: &str) -> Result<(), CliError> {
    let Some(lines) = registry.run(run)? else {
        return Ok(());
    };
    if tiers.remotes().is_empty() {
        return Ok(());
    }
    for line in lines.iter().filter(|l| l.state != RunState::Conflict) {
        let key = CacheKey::parse(&line.key)?;
        if tiers.local().read_metadata(key.digest())?.is_none() {
            tiers.get(&key)?;
        }
    }
    tiers.settle();
    Ok(())
}

fn export(
    store: &Store,
    registry: &Registry,
    run: &str,
    file: &Path,
    secret: Option<&Secret>,
) -> Result<Reported, CliError> {
    let report =
        archive::export_run(store, registry, run, file, secret)?.ok_or_else(|| no_run(run))?;
    Ok(Reported {
        text: format!(
            "exported run {run}: {} lines, {} artefacts, to {}{}\n",
            report.lines,
            report.artefacts,
            file.display(),
            signed_mark(report.signed)
        ),
        json: serde_json::json!({
            "run": run,
            "lines": report.lines,
            "artefacts": report.artefacts,
            "file": file,
            "signed": report.signed,
        }),
    })
}

/// How a text report says that an archive was signed (export) or its signature verified
/// (import).
fn signed_mark(signed: bool) -> &'static str {
    if signed {
        " (signed with the shared secret)"
    } else {
        ""
    }
}

fn import(
    store: &Store,
    registry: &Registry,
    file: &Path,
    adopt_cache: bool,
    secret: Option<&Secret>,
) -> Result<Reported, CliError> {
    let report = archive::import_run(store, registry, file, secret).map_err(|e| match e {
        RunsError::Archive { .. } => CliError::input(e),
        e => e.into(),
    })?;
    let mut out = format!(
        "imported run {}: {} lines, {} artefacts{}\n",
        report.run,
        report.lines,
        report.artefacts,
        signed_mark(report.signed)
    );
    let mut json = serde_json::json!({
        "run": report.run,
        "lines": report.lines,
        "artefacts": report.artefacts,
        "signed": report.signed,
    });
    if adopt_cache {
        let adopted = super::addresses::adopt(store, registry, &report.run)?;
        out.push_str(&adopted.text);
        json["adopt"] = adopted.json;
    }
    Ok(Reported { text: out, json })
}
