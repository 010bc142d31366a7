//! `mlir-cache-key report`: why the cache recompiled over a time window, from the lookup
//! history of this cache and of any others named (a team's view): text, `--json`
//! (`mlir-cache-key.report.v1`, docs/report.md) or a self-contained page (`--html FILE`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, anyhow};

use super::output::{self, json_text};
use crate::error::CliError;
use crate::settings::CacheOptions;

#[derive(Debug, clap::Args)]
#[command(after_help = "Examples:\n  mlir-cache-key report\n  \
                        mlir-cache-key report --since 30d --html report.html\n  \
                        mlir-cache-key report --since all --json /mnt/host-a/cache /mnt/host-b/cache")]
pub struct Args {
    #[command(flatten)]
    pub cache: CacheOptions,
    /// The window: events this long before now (e.g. 7d, 12h, 90min), or `all`.
    #[arg(long, default_value = "7d", value_name = "DURATION", value_parser = parse_since)]
    pub since: Since,
    /// Print a JSON object (schema mlir-cache-key.report.v1) instead of text.
    #[arg(long)]
    pub json: bool,
    /// Also write the report as one self-contained HTML page (plots, no network) to FILE.
    #[arg(long, value_name = "FILE")]
    pub html: Option<PathBuf>,
    /// More cache directories whose histories join this cache's (other hosts' caches, e.g.
    /// mounted or copied): one report covers them all.
    #[arg(value_name = "CACHE_DIR")]
    pub caches: Vec<PathBuf>,
}

/// How far back a report looks.
#[derive(Clone, Copy, Debug)]
pub enum Since {
    All,
    Ago(Duration),
}

/// `7d`, `12h`, `90min`… or `all` (the `--since` of `report`, and Python's `Cache.report`).
pub fn parse_since(text: &str) -> Result<Since, String> {
    if text == "all" {
        return Ok(Since::All);
    }
    humantime::parse_duration(text)
        .map(Since::Ago)
        .map_err(|e| format!("expected a duration such as 7d, 12h or 90min, or `all`: {e}"))
}

pub fn run(args: Args) -> Result<(), CliError> {
    let settings = args.cache.settings()?;
    let report = report_of(&settings, args.caches, args.since)?;
    if let Some(path) = &args.html {
        write_html(&report, path)?;
    }
    let out = match args.json {
        true => json_text(&report)?,
        false => mck_report::text::text(&report),
    };
    output::stdout(out.as_bytes())
}

/// The report over the cache `settings` open and the caches `more`, from `since` to now.
pub fn report_of(
    settings: &mck_store::Settings,
    more: Vec<PathBuf>,
    since: Since,
) -> Result<mck_report::Report, CliError> {
    let mut sources = vec![mck_report::Source {
        cache_dir: settings.cache_dir.clone(),
        cache_size: Some(settings.max_size),
    }];
    for dir in more {
        if !sources.iter().any(|s| s.cache_dir == dir) {
            sources.push(mck_report::Source {
                cache_dir: dir,
                cache_size: None,
            });
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX));
    let since = match since {
        Since::All => 0,
        Since::Ago(ago) => now.saturating_sub(i64::try_from(ago.as_millis()).unwrap_or(i64::MAX)),
    };
    mck_report::report(&sources, since, now).map_err(|e| match e {
        mck_report::ReportError::NotACache { .. } => CliError::no_input(e),
        mck_report::ReportError::Read { .. } => CliError {
            kind: crate::error::Failure::Cache,
            error: anyhow!(e),
        },
    })
}

/// Writes `report` as its HTML page to `path`.
pub fn write_html(report: &mck_report::Report, path: &std::path::Path) -> Result<(), CliError> {
    std::fs::write(path, mck_report::html::html(report))
        .with_context(|| format!("cannot write the HTML report to {}", path.display()))
        .map_err(CliError::other)
}
